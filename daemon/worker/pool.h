/* SPDX-License-Identifier: MIT */
/*
 * Stream-ordered memory pools (cuMemAllocAsync & co.), emulated over the
 * session's device window: every block a pool holds is a vmem allocation,
 * so a checkpoint brings pools back at the same addresses with their
 * contents. A pool keeps freed blocks (cached) for reuse; a cached block is
 * handed out again only when its free is known complete or ordered before
 * the allocation (an event recorded at the free), and memory above the
 * release threshold goes back to the window at the next pool call after a
 * synchronization point.
 *
 * During stream capture an allocation becomes the graph's: a fresh block,
 * fixed for the graph's life and released only once the graph and every
 * instance made from it are gone, so memory a graph uses is never handed
 * to anyone else. Frees captured for it are bookkeeping only.
 */
#ifndef VGPU_POOL_H
#define VGPU_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

struct worker;
struct pools;

/* Default pools of devices 0..n-1 under ids 1..n. 0 or -ENOMEM. */
int pools_init(struct worker *w);
void pools_destroy(struct worker *w);

/* Sync points (stream, context, event synchronize): memory above the
 * release threshold is returned at the next pool call. */
void pools_sync_point(struct worker *w);
/* That return, due since the last sync point: every pool call makes it,
 * and so do the calls that ask for memory or count it (cuMemAlloc,
 * cuMemGetInfo), which would otherwise miss what the pools gave back. */
void pools_settle(struct worker *w);

/*
 * Stream order the program sets up with events (exec_stream.c), for the
 * CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES policy: an event
 * recorded after frees, and a stream made to wait for it, may take those
 * frees' memory without a dependency of the pool's own. Ids as the
 * client gave them; @st the stream itself (captured work orders nothing now).
 */
void pools_event_recorded(struct worker *w, uint32_t event, uint32_t stream, CUstream st);
void pools_stream_waited(struct worker *w, uint32_t stream, uint32_t event, CUstream st);
void pools_event_gone(struct worker *w, uint32_t event);
void pools_stream_gone(struct worker *w, uint32_t stream);

/* cuMemFree of @p: true when @p was a pool block (then handled, *rc set). */
bool pools_mem_free(struct worker *w, CUdeviceptr p, CUresult *rc);

/* Graph hooks (exec_graph.c). @cid is the capture's id as the driver
 * gave it before the end; @graph 0 when the capture failed. */
uint64_t pools_capture_id(struct worker *w, CUstream st);
void pools_capture_end(struct worker *w, uint64_t cid, uint32_t graph);
void pools_graph_instantiated(struct worker *w, uint32_t graph, uint32_t exec);
void pools_graph_gone(struct worker *w, uint32_t graph, uint32_t exec);
void pools_graph_launched(struct worker *w, uint32_t exec);

/* Checkpoint: the records of ckpt.h's POOLS and POOL_BLOCKS sections, in
 * malloc'd arrays. 0 or -ENOMEM. */
struct vgpu_ckpt_pool;
struct vgpu_ckpt_pool_block;
int pools_save(struct worker *w, struct vgpu_ckpt_pool **p, size_t *np,
	       struct vgpu_ckpt_pool_block **b, size_t *nb);
/* Restore: the blocks' memory is back already (ALLOCS); this rebuilds the
 * pools around it. Every record is checked. 0, or -EBADMSG with @why. */
int pools_load(struct worker *w, const struct vgpu_ckpt_pool *p, size_t np,
	       const struct vgpu_ckpt_pool_block *b, size_t nb, const char **why);

#endif
