/* SPDX-License-Identifier: MIT */
/* What pool.c and exec_pool.c share: the pools of one worker. */
#ifndef VGPU_POOL_STATE_H
#define VGPU_POOL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "vgpu/proto.h"

#define POOL_MAX_ID	(1u << 22)

struct mempool {
	uint32_t id;			/* 0 once destroyed */
	uint32_t dev;			/* ordinal within the session */
	uint32_t handle_types;		/* CUmemPoolProps.handleTypes */
	uint32_t ckpt_id;		/* its id in a checkpoint file */
	uint64_t max_size;		/* 0: the window bounds it */
	uint64_t threshold;		/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	bool follow, opportunistic, internal;	/* reuse policies */
	bool destroyed;			/* live blocks keep it (a zombie) */
	uint64_t reserved, used;	/* bytes held from the window / handed out */
	uint64_t reserved_high, used_high;
	bool imported;			/* another process's (pool_ipc.c): no allocations */
};

enum { BLOCK_LIVE = 1, BLOCK_CACHED, BLOCK_GRAPH };

struct pool_block {
	CUdeviceptr addr;
	uint64_t size;			/* its size class */
	struct mempool *pool;		/* NULL: graph memory */
	uint8_t state;			/* BLOCK_* */
	uint32_t free_stream;		/* cached: the stream id that freed it */
	CUevent ev;			/* cached: recorded at the free; NULL: done */
	uint32_t graph;			/* graph memory: the graph id (0: capturing) */
	uint64_t capture;		/* graph memory: the capture that made it */
	uint32_t dev;			/* graph memory: its device */
	bool graph_freed;		/* graph memory: a captured free names it */
	bool outside_freed;		/* graph memory: freed since the last launch */
	bool launched;			/* graph memory: a launch allocated it */
	uint64_t seq;			/* cached: the free's place among all frees */
};

/* An event recorded on @stream once frees up to @seq had been submitted
 * (event 0: no mark). */
struct pool_mark {
	uint32_t event, stream;
	uint64_t seq;
};

/* @stream waited for an event of @of: its frees up to @seq come first. */
struct pool_know {
	uint32_t stream, of;
	uint64_t seq;
};

struct pool_graph {
	uint32_t graph;
	uint32_t refs;			/* the graph + its live instances */
};

struct pool_exec {
	uint32_t exec, graph;
};

struct pools {
	struct mempool **p;		/* by id; default pools are 1..devices */
	uint32_t cap;
	struct mempool **zombies;
	size_t nzombies;
	struct pool_block *b;		/* sorted by address */
	size_t nb, cb;
	CUevent *spare;			/* events of released blocks, for reuse */
	size_t nspare, cspare;
	bool synced;			/* a sync point passed since the last settle */
	struct pool_graph *graphs;
	size_t ngraphs, cgraphs;
	struct pool_exec *execs;
	size_t nexecs, cexecs;
	uint64_t free_seq;		/* frees submitted so far */
	struct pool_mark *marks;	/* by event id */
	size_t cmarks;
	struct pool_know *know;
	size_t nknow, cknow;
	uint64_t graph_used[VGPU_MAX_DEVICES];	/* bytes graphs hold, per device */
	uint64_t graph_used_high[VGPU_MAX_DEVICES], graph_reserved_high[VGPU_MAX_DEVICES];
	/* Sharing between processes (pool_ipc.c), set once something is
	 * shared: a block freed by the program (its exports end), a pool
	 * destroyed (its descriptor's server, or its import, ends). */
	void (*ipc_block_freed)(struct worker *w, CUdeviceptr p);
	void (*ipc_pool_gone)(struct worker *w, struct mempool *mp);
};

uint64_t pool_class(uint64_t bytes);
struct mempool *pool_by_id(struct worker *w, uint64_t id);
struct mempool *pool_new(struct worker *w, uint32_t id, uint32_t dev);
long pool_block_find(struct pools *ps, CUdeviceptr p);
struct pool_block *pool_block_add(struct pools *ps, CUdeviceptr p, uint64_t size,
				  struct mempool *mp);
CUresult pool_trim(struct worker *w, struct mempool *mp, uint64_t keep, bool wait);
CUresult pool_alloc(struct worker *w, struct mempool *mp, uint64_t bytes, CUstream st,
		    uint32_t sid, CUdeviceptr *out);
CUresult pool_free_block(struct worker *w, long i, CUstream st, uint32_t sid);
CUresult pool_window_alloc(struct worker *w, uint32_t dev, uint64_t bytes, CUdeviceptr *p);
void pool_graph_note(struct pools *ps, uint32_t dev, int64_t d);
/* A pool whose memory may go to other processes: each block its own
 * exportable allocation of whole granules (pool_ipc.c). */
bool pool_shareable(const struct mempool *mp);

#endif
