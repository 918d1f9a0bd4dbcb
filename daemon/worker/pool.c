// SPDX-License-Identifier: MIT
/* Stream-ordered memory pools over the session's device window (pool.h). */
#include "pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pool_state.h"
#include "vgpu/ckpt.h"
#include "worker.h"

/* Blocks come in size classes so a freed one fits the next request of its
 * class exactly: powers of two up to 1 MiB, then 2 MiB steps. */
uint64_t pool_class(uint64_t bytes)
{
	uint64_t c = 512;

	if (bytes > (1u << 20))
		return (bytes + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
	while (c < bytes)
		c <<= 1;
	return c;
}

struct mempool *pool_by_id(struct worker *w, uint64_t id)
{
	struct pools *ps = w->pools;

	if (!id || id >= POOL_MAX_ID || id >= ps->cap || !ps->p[id] || ps->p[id]->destroyed)
		return NULL;
	return ps->p[id];
}

static int put_pool(struct pools *ps, struct mempool *mp)
{
	if (mp->id >= ps->cap) {
		uint32_t cap = ps->cap ? ps->cap : 64;
		struct mempool **n;

		while (cap <= mp->id)
			cap *= 2;
		n = realloc(ps->p, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + ps->cap, 0, (cap - ps->cap) * sizeof(*n));
		ps->p = n;
		ps->cap = cap;
	}
	ps->p[mp->id] = mp;
	return 0;
}

struct mempool *pool_new(struct worker *w, uint32_t id, uint32_t dev)
{
	struct mempool *mp = calloc(1, sizeof(*mp));

	if (!mp)
		return NULL;
	mp->id = id;
	mp->dev = dev;
	mp->opportunistic = mp->internal = mp->follow = true;	/* the driver's defaults */
	if (put_pool(w->pools, mp)) {
		free(mp);
		return NULL;
	}
	return mp;
}

int pools_init(struct worker *w)
{
	w->pools = calloc(1, sizeof(*w->pools));
	if (!w->pools)
		return -ENOMEM;
	for (int d = 0; d < w->device_count; d++)
		if (!pool_new(w, (uint32_t)d + 1, (uint32_t)d))
			return -ENOMEM;
	return 0;
}

void pools_destroy(struct worker *w)
{
	struct pools *ps = w->pools;

	if (!ps)
		return;
	for (uint32_t i = 0; ps->ipc_pool_gone && i < ps->cap; i++)
		if (ps->p[i])
			ps->ipc_pool_gone(w, ps->p[i]);
	for (size_t i = 0; i < ps->nb; i++)
		if (ps->b[i].ev)
			w->B.cuEventDestroy_v2(ps->b[i].ev);
	for (uint32_t i = 0; i < ps->cap; i++)
		free(ps->p[i]);
	for (size_t i = 0; i < ps->nzombies; i++)
		free(ps->zombies[i]);
	for (size_t i = 0; i < ps->nspare; i++)
		w->B.cuEventDestroy_v2(ps->spare[i]);
	free(ps->zombies);
	free(ps->spare);
	free(ps->p);
	free(ps->b);
	free(ps->graphs);
	free(ps->execs);
	free(ps->marks);
	free(ps->know);
	free(ps);
	w->pools = NULL;
}

/* ---- blocks, sorted by address ------------------------------------------ */

long pool_block_find(struct pools *ps, CUdeviceptr p)
{
	size_t lo = 0, hi = ps->nb;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ps->b[mid].addr == p)
			return (long)mid;
		if (ps->b[mid].addr < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

struct pool_block *pool_block_add(struct pools *ps, CUdeviceptr p, uint64_t size,
				  struct mempool *mp)
{
	size_t i = 0, lo = 0, hi = ps->nb;

	if (ps->nb == ps->cb) {
		size_t cap = ps->cb ? ps->cb * 2 : 64;
		struct pool_block *n = realloc(ps->b, cap * sizeof(*n));

		if (!n)
			return NULL;
		ps->b = n;
		ps->cb = cap;
	}
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ps->b[mid].addr < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;
	memmove(&ps->b[i + 1], &ps->b[i], (ps->nb - i) * sizeof(*ps->b));
	ps->nb++;
	memset(&ps->b[i], 0, sizeof(ps->b[i]));
	ps->b[i].addr = p;
	ps->b[i].size = size;
	ps->b[i].pool = mp;
	return &ps->b[i];
}

/* Keeps @ev for the next free: creating one per free would cost a call. */
static void spare_event(struct worker *w, CUevent ev)
{
	struct pools *ps = w->pools;

	if (ps->nspare == ps->cspare) {
		size_t cap = ps->cspare ? ps->cspare * 2 : 16;
		CUevent *n = realloc(ps->spare, cap * sizeof(*n));

		if (!n) {
			w->B.cuEventDestroy_v2(ev);
			return;
		}
		ps->spare = n;
		ps->cspare = cap;
	}
	ps->spare[ps->nspare++] = ev;
}

/* The block leaves the table; its event goes back to the spares. */
static void block_drop(struct worker *w, size_t i)
{
	struct pools *ps = w->pools;

	if (ps->b[i].ev)
		spare_event(w, ps->b[i].ev);
	memmove(&ps->b[i], &ps->b[i + 1], (ps->nb - i - 1) * sizeof(*ps->b));
	ps->nb--;
}

/* A pool destroyed while it held live blocks lives on until the last goes. */
static void zombie_check(struct worker *w, struct mempool *mp)
{
	struct pools *ps = w->pools;

	if (!mp->destroyed || mp->reserved)
		return;
	for (size_t i = 0; i < ps->nzombies; i++)
		if (ps->zombies[i] == mp) {
			ps->zombies[i] = ps->zombies[--ps->nzombies];
			free(mp);
			return;
		}
}

/* Gives the block's memory back to the window (its free is complete). */
static CUresult block_release(struct worker *w, size_t i)
{
	struct pools *ps = w->pools;
	struct pool_block *b = &ps->b[i];
	struct mempool *mp = b->pool;
	CUresult rc = vmem_free(&w->vmem, b->addr);

	if (rc)
		vlog_warn("pool: block %#llx cannot be released: %d",
			  (unsigned long long)b->addr, rc);
	mp->reserved -= b->size;
	block_drop(w, i);
	return rc;
}

/* The free of a cached block has happened on the device. An event that
 * cannot be asked any more went with its context, and so did the work. */
static bool free_done(struct worker *w, const struct pool_block *b)
{
	return !b->ev || w->B.cuEventQuery(b->ev) != CUDA_ERROR_NOT_READY;
}

/* Releases cached blocks of @mp whose free is complete while more than
 * @keep bytes are reserved; @wait: wait for frees still on their way.
 * A destroyed pool left with nothing is freed: @mp is gone then. */
CUresult pool_trim(struct worker *w, struct mempool *mp, uint64_t keep, bool wait)
{
	struct pools *ps = w->pools;
	CUresult rc = CUDA_SUCCESS;

	for (size_t i = ps->nb; i-- > 0 && mp->reserved > keep && mp->reserved > mp->used;) {
		struct pool_block *b = &ps->b[i];

		if (b->pool != mp || b->state != BLOCK_CACHED)
			continue;
		if (wait && b->ev)
			w->B.cuEventSynchronize(b->ev);	/* free_done judges a failure */
		if (free_done(w, b))
			block_release(w, i);
	}
	zombie_check(w, mp);
	return rc;
}

void pools_sync_point(struct worker *w)
{
	if (w->pools)
		w->pools->synced = true;
}

/* What every pool call does first: the release threshold after a sync. */
void pools_settle(struct worker *w)
{
	struct pools *ps = w->pools;

	if (!ps || !ps->synced)
		return;
	ps->synced = false;
	for (uint32_t i = 1; i < ps->cap; i++)
		if (ps->p[i] && ps->p[i]->reserved > ps->p[i]->threshold)
			pool_trim(w, ps->p[i], ps->p[i]->threshold, false);
	for (size_t z = ps->nzombies; z-- > 0;)
		pool_trim(w, ps->zombies[z], 0, false);
}

static void note_used(struct mempool *mp, int64_t d_used, int64_t d_reserved)
{
	mp->used += d_used;
	mp->reserved += d_reserved;
	if (mp->used > mp->used_high)
		mp->used_high = mp->used;
	if (mp->reserved > mp->reserved_high)
		mp->reserved_high = mp->reserved;
}

/* ---- stream order the program made ------------------------------------------ */

/* Marks are kept by event id (ids are small and reused): no search on the
 * path of every event record. */
static struct pool_mark *mark_of(struct pools *ps, uint32_t event)
{
	if (event >= ps->cmarks || !ps->marks[event].event)
		return NULL;
	return &ps->marks[event];
}

static bool capturing(struct worker *w, CUstream st)
{
	return w->captures && pools_capture_id(w, st);
}

void pools_event_gone(struct worker *w, uint32_t event)
{
	struct pools *ps = w->pools;
	struct pool_mark *m = ps ? mark_of(ps, event) : NULL;

	if (m)
		memset(m, 0, sizeof(*m));
}

void pools_event_recorded(struct worker *w, uint32_t event, uint32_t stream, CUstream st)
{
	struct pools *ps = w->pools;

	if (!ps || !event || event >= POOL_MAX_ID)
		return;
	/* Before any free a mark orders nothing; a captured record happens at
	 * a launch, not now. */
	if (!ps->free_seq || capturing(w, st)) {
		pools_event_gone(w, event);
		return;
	}
	if (event >= ps->cmarks) {
		size_t cap = ps->cmarks ? ps->cmarks : 64;
		struct pool_mark *n;

		while (cap <= event)
			cap *= 2;
		n = realloc(ps->marks, cap * sizeof(*n));
		if (!n)
			return;		/* no mark: no reuse by it */
		memset(n + ps->cmarks, 0, (cap - ps->cmarks) * sizeof(*n));
		ps->marks = n;
		ps->cmarks = cap;
	}
	ps->marks[event] = (struct pool_mark){ .event = event, .stream = stream,
					       .seq = ps->free_seq };
}

static struct pool_know *know_of(struct pools *ps, uint32_t stream, uint32_t of)
{
	for (size_t i = 0; i < ps->nknow; i++)
		if (ps->know[i].stream == stream && ps->know[i].of == of)
			return &ps->know[i];
	return NULL;
}

void pools_stream_waited(struct worker *w, uint32_t stream, uint32_t event, CUstream st)
{
	struct pools *ps = w->pools;
	struct pool_mark *m = ps ? mark_of(ps, event) : NULL;
	struct pool_know *k;

	if (!m || m->stream == stream || capturing(w, st))
		return;
	k = know_of(ps, stream, m->stream);
	if (!k) {
		if (ps->nknow == ps->cknow) {
			size_t cap = ps->cknow ? ps->cknow * 2 : 16;
			struct pool_know *n = realloc(ps->know, cap * sizeof(*n));

			if (!n)
				return;
			ps->know = n;
			ps->cknow = cap;
		}
		k = &ps->know[ps->nknow++];
		*k = (struct pool_know){ .stream = stream, .of = m->stream };
	}
	if (m->seq > k->seq)
		k->seq = m->seq;
}

/* What a stream knew must not pass to a new stream under its id. */
void pools_stream_gone(struct worker *w, uint32_t stream)
{
	struct pools *ps = w->pools;

	for (size_t i = ps ? ps->nknow : 0; i-- > 0;)
		if (ps->know[i].stream == stream)
			ps->know[i] = ps->know[--ps->nknow];
}

/* The free of @b is ordered before work submitted to stream @sid from now. */
static bool ordered_before(struct pools *ps, const struct pool_block *b, uint32_t sid)
{
	struct pool_know *k = know_of(ps, sid, b->free_stream);

	return k && k->seq >= b->seq;
}

/*
 * A cached block of @cls that an allocation on @st (stream id @sid) may
 * take: one whose free is complete (opportunistic reuse), one whose free
 * the program ordered before @st with events (following dependencies), or,
 * when the pool may add dependencies or the free was on the same stream,
 * any other: @st then waits for the free's event, so the new owner's work
 * runs after it.
 */
static long find_cached(struct worker *w, struct mempool *mp, uint64_t cls, CUstream st,
			uint32_t sid)
{
	struct pools *ps = w->pools;
	long pending = -1;

	if (mp->reserved == mp->used)
		return -1;	/* nothing cached: no search */
	for (size_t i = 0; i < ps->nb; i++) {
		struct pool_block *b = &ps->b[i];

		if (b->pool != mp || b->state != BLOCK_CACHED || b->size != cls)
			continue;
		if (mp->opportunistic && free_done(w, b))
			return (long)i;
		if (mp->follow && ordered_before(ps, b, sid))
			return (long)i;
		if (pending < 0 && (b->free_stream == sid || mp->internal))
			pending = (long)i;
	}
	/* No event: the free was complete when the session was restored. */
	if (pending >= 0 && ps->b[pending].ev &&
	    w->B.cuStreamWaitEvent(st, ps->b[pending].ev, 0))
		return -1;
	return pending;
}

/*
 * New memory from the window. Mapping it is no work of any capture: with
 * one under way the thread is relaxed meanwhile, so that a global-mode
 * capture does not refuse the driver calls (cuMemAllocAsync is allowed
 * during one, as the driver's own pools are).
 */
CUresult pool_window_alloc(struct worker *w, uint32_t dev, uint64_t bytes, CUdeviceptr *p)
{
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	CUresult rc;

	if (!w->captures)
		return vmem_alloc(&w->vmem, w->devices[dev], bytes, p);
	w->B.cuThreadExchangeStreamCaptureMode(&mode);
	rc = vmem_alloc(&w->vmem, w->devices[dev], bytes, p);
	w->B.cuThreadExchangeStreamCaptureMode(&mode);
	return rc;
}

bool pool_shareable(const struct mempool *mp)
{
	return mp && (mp->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) && !mp->imported;
}

/* New memory for @mp: a shareable pool's blocks are whole granules, each
 * its own physical allocation another process can map. */
static CUresult block_new(struct worker *w, struct mempool *mp, uint64_t cls, CUdeviceptr *p)
{
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	CUresult rc;

	if (!pool_shareable(mp))
		return pool_window_alloc(w, mp->dev, cls, p);
	if (w->captures)
		w->B.cuThreadExchangeStreamCaptureMode(&mode);
	rc = vmem_alloc_shareable(&w->vmem, w->devices[mp->dev], cls, p);
	if (w->captures)
		w->B.cuThreadExchangeStreamCaptureMode(&mode);
	return rc;
}

CUresult pool_alloc(struct worker *w, struct mempool *mp, uint64_t bytes, CUstream st,
		    uint32_t sid, CUdeviceptr *out)
{
	struct pools *ps = w->pools;
	uint64_t cls = pool_class(bytes);

	if (pool_shareable(mp))
		cls = (cls + w->vmem.gran - 1) / w->vmem.gran * w->vmem.gran;
	long i = find_cached(w, mp, cls, st, sid);
	CUdeviceptr p;
	CUresult rc;

	if (i >= 0) {
		ps->b[i].state = BLOCK_LIVE;
		note_used(mp, (int64_t)cls, 0);
		*out = ps->b[i].addr;
		return CUDA_SUCCESS;
	}
	if (mp->max_size && mp->reserved + cls > mp->max_size) {
		pool_trim(w, mp, cls < mp->max_size ? mp->max_size - cls : 0, false);
		if (mp->reserved + cls > mp->max_size)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = block_new(w, mp, cls, &p);
	if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
		/* What the pools keep cached is the first to give back. */
		for (uint32_t k = 1; k < ps->cap; k++)
			if (ps->p[k])
				pool_trim(w, ps->p[k], 0, true);
		rc = block_new(w, mp, cls, &p);
	}
	if (rc)
		return rc;
	if (!pool_block_add(ps, p, cls, mp)) {
		vmem_free(&w->vmem, p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	ps->b[pool_block_find(ps, p)].state = BLOCK_LIVE;
	note_used(mp, (int64_t)cls, (int64_t)cls);
	*out = p;
	return CUDA_SUCCESS;
}

static CUevent take_event(struct worker *w)
{
	struct pools *ps = w->pools;
	CUevent ev = NULL;

	if (ps->nspare)
		return ps->spare[--ps->nspare];
	if (w->B.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING))
		return NULL;
	return ev;
}

/* The block at @i goes back to its pool once @st reaches this point. */
CUresult pool_free_block(struct worker *w, long i, CUstream st, uint32_t sid)
{
	struct pools *ps = w->pools;
	struct pool_block *b = &ps->b[i];
	CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;

	/*
	 * Without the event nothing would tell when the free happens: the block
	 * stays the program's and the free fails. An event kept from before may
	 * belong to another context (or one since destroyed): a fresh one then.
	 */
	if (!b->ev)
		b->ev = take_event(w);
	if (b->ev)
		rc = w->B.cuEventRecordWithFlags(b->ev, st, 0);
	if (rc && b->ev) {
		w->B.cuEventDestroy_v2(b->ev);
		if (w->B.cuEventCreate(&b->ev, CU_EVENT_DISABLE_TIMING))
			b->ev = NULL;
		else
			rc = w->B.cuEventRecordWithFlags(b->ev, st, 0);
	}
	if (rc)
		return rc;
	if (ps->ipc_block_freed)
		ps->ipc_block_freed(w, b->addr);
	b->state = BLOCK_CACHED;
	b->free_stream = sid;
	b->seq = ++ps->free_seq;
	note_used(b->pool, -(int64_t)b->size, 0);
	if (b->pool->destroyed)
		pool_trim(w, b->pool, 0, false);
	return rc;
}

bool pools_mem_free(struct worker *w, CUdeviceptr p, CUresult *rc)
{
	struct pools *ps = w->pools;
	long i = ps ? pool_block_find(ps, p) : -1;
	struct mempool *mp;

	if (i < 0)
		return false;
	if (ps->b[i].state != BLOCK_LIVE) {
		/* Freed already, or a graph's: not the program's to free. */
		*rc = CUDA_ERROR_INVALID_VALUE;
		return true;
	}
	/* cuMemFree waits for the device; the block is free at once. */
	*rc = w->B.cuCtxSynchronize();
	if (*rc)
		return true;
	mp = ps->b[i].pool;
	if (ps->ipc_block_freed)
		ps->ipc_block_freed(w, p);
	note_used(mp, -(int64_t)ps->b[i].size, 0);
	ps->b[i].state = BLOCK_CACHED;
	ps->b[i].free_stream = 0;
	/* An event of an earlier free has completed by now. */
	if (mp->destroyed || mp->reserved > mp->threshold)
		pool_trim(w, mp, mp->destroyed ? 0 : mp->threshold, false);
	return true;
}

/* ---- graphs ---------------------------------------------------------------- */

uint64_t pools_capture_id(struct worker *w, CUstream st)
{
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	cuuint64_t cid = 0;

	if (w->B.cuStreamGetCaptureInfo_v3(st, &cs, &cid, NULL, NULL, NULL, NULL) ||
	    cs == CU_STREAM_CAPTURE_STATUS_NONE)
		return 0;
	return cid;
}

static struct pool_graph *graph_find(struct pools *ps, uint32_t graph)
{
	for (size_t i = 0; i < ps->ngraphs; i++)
		if (ps->graphs[i].graph == graph)
			return &ps->graphs[i];
	return NULL;
}

/* The graph's blocks go back to the window: nothing uses them any more. */
static void graph_release(struct worker *w, uint32_t graph, uint64_t cid)
{
	struct pools *ps = w->pools;
	bool synced = false;

	for (size_t i = ps->nb; i-- > 0;) {
		struct pool_block *b = &ps->b[i];

		if (b->state != BLOCK_GRAPH || b->graph != graph || (!graph && b->capture != cid))
			continue;
		/* An instance may still run: a launch is not waited for. */
		if (!synced && w->B.cuCtxSynchronize())
			vlog_warn("pool: releasing graph memory after a failed synchronize");
		synced = true;
		pool_graph_note(ps, b->dev, -(int64_t)b->size);
		if (b->launched && !b->graph_freed && !b->outside_freed) {
			/* The last launch allocated it and nobody freed it: it
			 * outlives the graph, as the driver's does, and is the
			 * program's to free. Its device's default pool holds it. */
			b->state = BLOCK_LIVE;
			b->pool = ps->p[b->dev + 1];
			note_used(b->pool, (int64_t)b->size, (int64_t)b->size);
			continue;
		}
		vmem_free(&w->vmem, b->addr);
		block_drop(w, i);
	}
}

void pools_capture_end(struct worker *w, uint64_t cid, uint32_t graph)
{
	struct pools *ps = w->pools;
	struct pool_graph *g;
	bool any = false;

	if (!ps || !cid)
		return;
	for (size_t i = 0; i < ps->nb; i++)
		if (ps->b[i].state == BLOCK_GRAPH && !ps->b[i].graph && ps->b[i].capture == cid) {
			any = true;
			if (graph)
				ps->b[i].graph = graph;
		}
	if (!any)
		return;
	if (!graph) {
		graph_release(w, 0, cid);
		return;
	}
	if (ps->ngraphs == ps->cgraphs) {
		size_t cap = ps->cgraphs ? ps->cgraphs * 2 : 8;
		struct pool_graph *n = realloc(ps->graphs, cap * sizeof(*n));

		if (!n) {
			/* Kept for the session's life rather than lost track of. */
			vlog_warn("pool: graph %u keeps its memory until the session ends", graph);
			return;
		}
		ps->graphs = n;
		ps->cgraphs = cap;
	}
	g = &ps->graphs[ps->ngraphs++];
	g->graph = graph;
	g->refs = 1;
}

void pools_graph_instantiated(struct worker *w, uint32_t graph, uint32_t exec)
{
	struct pools *ps = w->pools;
	struct pool_graph *g = ps ? graph_find(ps, graph) : NULL;

	if (!g)
		return;
	if (ps->nexecs == ps->cexecs) {
		size_t cap = ps->cexecs ? ps->cexecs * 2 : 8;
		struct pool_exec *n = realloc(ps->execs, cap * sizeof(*n));

		if (!n) {
			g->refs++;	/* never dropped: kept rather than freed early */
			return;
		}
		ps->execs = n;
		ps->cexecs = cap;
	}
	ps->execs[ps->nexecs++] = (struct pool_exec){ .exec = exec, .graph = graph };
	g->refs++;
}

void pool_graph_note(struct pools *ps, uint32_t dev, int64_t d)
{
	ps->graph_used[dev] += d;
	if (ps->graph_used[dev] > ps->graph_used_high[dev])
		ps->graph_used_high[dev] = ps->graph_used[dev];
	if (ps->graph_used[dev] > ps->graph_reserved_high[dev])
		ps->graph_reserved_high[dev] = ps->graph_used[dev];
}

/* A launch allocates the graph's memory again: the program may free what
 * the graph does not free itself once more. */
void pools_graph_launched(struct worker *w, uint32_t exec)
{
	struct pools *ps = w->pools;
	uint32_t graph = 0;

	for (size_t i = 0; i < ps->nexecs && !graph; i++)
		if (ps->execs[i].exec == exec)
			graph = ps->execs[i].graph;
	for (size_t i = 0; graph && i < ps->nb; i++)
		if (ps->b[i].state == BLOCK_GRAPH && ps->b[i].graph == graph) {
			ps->b[i].outside_freed = false;
			ps->b[i].launched = true;
		}
}

void pools_graph_gone(struct worker *w, uint32_t graph, uint32_t exec)
{
	struct pools *ps = w->pools;
	struct pool_graph *g;

	if (!ps)
		return;
	if (exec) {
		graph = 0;
		for (size_t i = 0; i < ps->nexecs; i++)
			if (ps->execs[i].exec == exec) {
				graph = ps->execs[i].graph;
				ps->execs[i] = ps->execs[--ps->nexecs];
				break;
			}
	}
	g = graph ? graph_find(ps, graph) : NULL;
	if (!g || --g->refs)
		return;
	*g = ps->graphs[--ps->ngraphs];
	graph_release(w, graph, 0);
}

/* ---- checkpoint -------------------------------------------------------------- */

static uint32_t pool_flags(const struct mempool *mp)
{
	return (mp->destroyed ? VGPU_CKPT_POOL_DESTROYED : 0) |
	       (mp->follow ? VGPU_CKPT_POOL_FOLLOW : 0) |
	       (mp->opportunistic ? VGPU_CKPT_POOL_OPPORTUNISTIC : 0) |
	       (mp->internal ? VGPU_CKPT_POOL_INTERNAL : 0);
}

/* Zombies get ids above every live one in the file: they have no handle. */
int pools_save(struct worker *w, struct vgpu_ckpt_pool **out, size_t *np,
	       struct vgpu_ckpt_pool_block **bout, size_t *nb)
{
	struct pools *ps = w->pools;
	struct vgpu_ckpt_pool *p = calloc(ps->cap + ps->nzombies + 1, sizeof(*p));
	struct vgpu_ckpt_pool_block *b = calloc(ps->nb + 1, sizeof(*b));
	size_t n = 0, k = 0;

	if (!p || !b) {
		free(p);
		free(b);
		return -ENOMEM;
	}
	for (uint32_t i = 1; i < ps->cap; i++)
		if (ps->p[i])
			ps->p[i]->ckpt_id = i;
	for (size_t z = 0; z < ps->nzombies; z++)
		ps->zombies[z]->ckpt_id = ps->cap + (uint32_t)z;
	for (uint32_t i = 1; i < ps->cap + ps->nzombies; i++) {
		struct mempool *mp = i < ps->cap ? ps->p[i] : ps->zombies[i - ps->cap];

		if (!mp)
			continue;
		p[n++] = (struct vgpu_ckpt_pool){
			.id = mp->ckpt_id, .device = mp->dev, .handle_types = mp->handle_types,
			.flags = pool_flags(mp), .threshold = mp->threshold,
			.max_size = mp->max_size, .reserved_high = mp->reserved_high,
			.used_high = mp->used_high,
		};
	}
	for (size_t i = 0; i < ps->nb; i++) {
		const struct pool_block *pb = &ps->b[i];

		/* Graph memory needs its graph, which a checkpoint refuses. */
		if (pb->state == BLOCK_GRAPH)
			continue;
		b[k++] = (struct vgpu_ckpt_pool_block){
			.addr = pb->addr, .size = pb->size, .pool = pb->pool->ckpt_id,
			.state = pb->state == BLOCK_LIVE ? VGPU_CKPT_BLOCK_LIVE
							 : VGPU_CKPT_BLOCK_CACHED,
		};
	}
	*out = p;
	*np = n;
	*bout = b;
	*nb = k;
	return 0;
}

static struct mempool *loaded(struct mempool **made, size_t nmade, uint32_t id)
{
	for (size_t i = 0; i < nmade; i++)
		if (made[i]->ckpt_id == id)
			return made[i];
	return NULL;
}

static int load_pools(struct worker *w, const struct vgpu_ckpt_pool *p, size_t np,
		      struct mempool **made, const char **why)
{
	struct pools *ps = w->pools;

	for (size_t i = 0; i < np; i++) {
		const struct vgpu_ckpt_pool *r = &p[i];
		struct mempool *mp;
		bool dead = r->flags & VGPU_CKPT_POOL_DESTROYED;

		if (!r->id || r->id >= POOL_MAX_ID || r->device >= (uint32_t)w->device_count ||
		    (r->flags & ~VGPU_CKPT_POOL_FLAGS) || r->reserved[0] || r->reserved[1] ||
		    loaded(made, i, r->id)) {
			*why = "a pool record is malformed";
			return -EBADMSG;
		}
		if (dead) {
			struct mempool **z = realloc(ps->zombies, (ps->nzombies + 1) * sizeof(*z));

			mp = z ? calloc(1, sizeof(*mp)) : NULL;
			if (z)
				ps->zombies = z;
			if (!mp) {
				*why = "out of memory";
				return -ENOMEM;
			}
			ps->zombies[ps->nzombies++] = mp;
			mp->destroyed = true;
		} else if (r->id <= (uint32_t)w->device_count) {
			mp = ps->p[r->id];	/* a default pool: it exists already */
			if (r->device != r->id - 1) {
				*why = "a default pool record names another device";
				return -EBADMSG;
			}
		} else if (r->id < ps->cap && ps->p[r->id]) {
			*why = "a pool record names a pool that exists";
			return -EBADMSG;
		} else if (!(mp = pool_new(w, r->id, r->device))) {
			*why = "out of memory";
			return -ENOMEM;
		}
		mp->id = dead ? 0 : r->id;
		mp->ckpt_id = r->id;
		mp->dev = r->device;
		mp->handle_types = r->handle_types;
		mp->threshold = r->threshold;
		mp->max_size = r->max_size;
		mp->follow = r->flags & VGPU_CKPT_POOL_FOLLOW;
		mp->opportunistic = r->flags & VGPU_CKPT_POOL_OPPORTUNISTIC;
		mp->internal = r->flags & VGPU_CKPT_POOL_INTERNAL;
		mp->reserved_high = r->reserved_high;
		mp->used_high = r->used_high;
		made[i] = mp;
	}
	return 0;
}

int pools_load(struct worker *w, const struct vgpu_ckpt_pool *p, size_t np,
	       const struct vgpu_ckpt_pool_block *b, size_t nb, const char **why)
{
	struct pools *ps = w->pools;
	struct mempool **made = calloc(np + 1, sizeof(*made));
	int ret;

	if (!made) {
		*why = "out of memory";
		return -ENOMEM;
	}
	ret = load_pools(w, p, np, made, why);
	for (size_t i = 0; !ret && i < nb; i++) {
		const struct vgpu_ckpt_pool_block *r = &b[i];
		struct mempool *mp = loaded(made, np, r->pool);
		struct pool_block *pb;
		CUdeviceptr base = 0;
		size_t size = 0;

		/* The block must be one whole allocation the ALLOCS brought back. */
		if (!mp || r->reserved || r->size != pool_class(r->size) ||
		    (r->state != VGPU_CKPT_BLOCK_LIVE && r->state != VGPU_CKPT_BLOCK_CACHED) ||
		    vmem_range_of(&w->vmem, r->addr, &base, &size) || base != r->addr ||
		    size != r->size || pool_block_find(ps, r->addr) >= 0) {
			*why = "a pool block record does not match the session's memory";
			ret = -EBADMSG;
			break;
		}
		if (!(pb = pool_block_add(ps, r->addr, r->size, mp))) {
			*why = "out of memory";
			ret = -ENOMEM;
			break;
		}
		/* Quiesced when written: every free had happened. */
		pb->state = r->state == VGPU_CKPT_BLOCK_LIVE ? BLOCK_LIVE : BLOCK_CACHED;
		mp->reserved += r->size;
		if (pb->state == BLOCK_LIVE)
			mp->used += r->size;
	}
	for (size_t i = 0; !ret && i < np; i++)
		if (made[i]->destroyed && !made[i]->reserved) {
			*why = "a destroyed pool holds no memory";
			ret = -EBADMSG;
		}
	free(made);
	return ret;
}
