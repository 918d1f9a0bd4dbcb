// SPDX-License-Identifier: MIT
/*
 * Stream-ordered allocation and memory pools: the opcodes. The pools
 * themselves (blocks, reuse, release, graph memory) are pool.c's.
 */
#include <stdlib.h>

#include "log.h"
#include "pool_state.h"
#include "worker.h"

static CUresult dev_ok(struct worker *w, uint64_t dev)
{
	return dev < (uint64_t)w->device_count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static uint32_t ctx_dev(struct worker *w)
{
	struct obj_entry *e = obj_get(&w->ctxs, w->cur_ctx);

	return e ? (uint32_t)e->aux : 0;
}

/* arg0 pool id (issued by the client), arg1 device, arg2 handle types, arg3 max size */
static enum op_status op_pool_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct mempool *mp;
	CUresult rc = dev_ok(w, s->arg[1]);

	pools_settle(w);
	if (!rc && (s->arg[0] <= (uint64_t)w->device_count || s->arg[0] >= POOL_MAX_ID ||
		    (s->arg[0] < w->pools->cap && w->pools->p[s->arg[0]]) ||
		    s->arg[2] > UINT32_MAX))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && !(mp = pool_new(w, (uint32_t)s->arg[0], (uint32_t)s->arg[1])))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc) {
		mp->handle_types = (uint32_t)s->arg[2];
		mp->max_size = s->arg[3];
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* The driver lets a pool with live allocations go: they stay valid until
 * freed, and the pool's memory goes with the last of them. */
static enum op_status op_pool_destroy(struct worker *w, struct op_call *call)
{
	struct pools *ps = w->pools;
	uint64_t id = call->sqe->arg[0];
	struct mempool *mp = pool_by_id(w, id);
	struct mempool **z;

	pools_settle(w);
	if (!mp || id <= (uint64_t)w->device_count) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	if (ps->ipc_pool_gone)
		ps->ipc_pool_gone(w, mp);
	ps->p[id] = NULL;
	mp->id = 0;
	pool_trim(w, mp, 0, true);
	if (!mp->reserved) {
		free(mp);
		return OP_DONE;
	}
	z = realloc(ps->zombies, (ps->nzombies + 1) * sizeof(*z));
	if (!z) {
		/* Kept under its id rather than freed under its blocks. */
		ps->p[id] = mp;
		mp->id = (uint32_t)id;
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	mp->destroyed = true;
	ps->zombies = z;
	ps->zombies[ps->nzombies++] = mp;
	return OP_DONE;
}

/* arg0 pool, arg1 CUmemPool_attribute, arg2 value (ints as 0/1) */
static enum op_status op_pool_set_attr(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct mempool *mp = pool_by_id(w, s->arg[0]);
	uint64_t v = s->arg[2];
	CUresult rc = CUDA_SUCCESS;

	pools_settle(w);
	if (!mp) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	switch (s->arg[1]) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		mp->follow = v != 0;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		mp->opportunistic = v != 0;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		mp->internal = v != 0;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		mp->threshold = v;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		/* Only a reset to zero, which starts it again from now. */
		if (v)
			rc = CUDA_ERROR_INVALID_VALUE;
		else
			mp->reserved_high = mp->reserved;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (v)
			rc = CUDA_ERROR_INVALID_VALUE;
		else
			mp->used_high = mp->used;
		break;
	default:
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_pool_get_attr(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct mempool *mp = pool_by_id(w, s->arg[0]);
	uint64_t v = 0;

	pools_settle(w);
	if (!mp) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	switch (s->arg[1]) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		v = mp->follow;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		v = mp->opportunistic;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		v = mp->internal;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		v = mp->threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		v = mp->reserved;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		v = mp->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		v = mp->used;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		v = mp->used_high;
		break;
	default:
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	call->cqe->val[0] = v;
	return OP_DONE;
}

/* arg0 pool, arg1 bytes to keep */
static enum op_status op_pool_trim(struct worker *w, struct op_call *call)
{
	struct mempool *mp = pool_by_id(w, call->sqe->arg[0]);

	pools_settle(w);
	call->cqe->result = mp ? pool_trim(w, mp, call->sqe->arg[1], false)
			       : CUDA_ERROR_INVALID_VALUE;
	return OP_DONE;
}

/* Captured: a block the graph keeps for its life (pool.h). */
static CUresult graph_alloc(struct worker *w, CUstream st, uint64_t cid, uint64_t bytes,
			    CUdeviceptr *out)
{
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	uint64_t cls = pool_class(bytes);
	uint32_t dev = ctx_dev(w);
	struct pool_block *b;
	CUdeviceptr p;
	CUresult rc;

	if (w->B.cuStreamGetCaptureInfo_v3(st, &cs, NULL, NULL, NULL, NULL, NULL) ||
	    cs != CU_STREAM_CAPTURE_STATUS_ACTIVE)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	rc = pool_window_alloc(w, dev, cls, &p);
	if (rc)
		return rc;
	b = pool_block_add(w->pools, p, cls, NULL);
	if (!b) {
		vmem_free(&w->vmem, p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	b->state = BLOCK_GRAPH;
	b->capture = cid;
	b->dev = dev;
	pool_graph_note(w->pools, dev, (int64_t)cls);
	*out = p;
	return CUDA_SUCCESS;
}

/* sqe.stream, arg0 pool id, arg1 bytes; R: val0 address */
static enum op_status op_alloc_async(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct mempool *mp = pool_by_id(w, s->arg[0]);
	CUdeviceptr p = 0;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);
	uint64_t cid = 0;

	pools_settle(w);
	/* An imported pool has no memory of its own to give (the driver's
	 * rule: it cannot allocate). */
	if (!rc && (!mp || !s->arg[1] || mp->imported))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && mp->dev != ctx_dev(w))
		rc = CUDA_ERROR_INVALID_VALUE;	/* the stream's device must be the pool's */
	if (!rc && s->arg[1] > w->vmem.size)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc) {
		cid = w->captures ? pools_capture_id(w, st) : 0;
		rc = cid ? graph_alloc(w, st, cid, s->arg[1], &p)
			 : pool_alloc(w, mp, s->arg[1], st, s->stream, &p);
	}
	call->cqe->result = rc;
	call->cqe->val[0] = p;
	call->cqe->val[1] = !rc && cid;	/* a graph's memory */
	return OP_DONE;
}

/* A graph's block named by a free: captured, the graph frees it; outside,
 * the program frees what a launch allocated. The block stays the graph's. */
static CUresult graph_free(struct pool_block *b, bool captured)
{
	bool *freed = captured ? &b->graph_freed : &b->outside_freed;

	if (*freed || (!captured && b->graph_freed))
		return CUDA_ERROR_INVALID_VALUE;
	*freed = true;
	return CUDA_SUCCESS;
}

/* Memory from cuMemAlloc: the free cannot wait in the stream, so it
 * waits for the device, as cuMemFree does. */
static CUresult free_plain(struct worker *w, CUdeviceptr p)
{
	CUdeviceptr base = 0;
	size_t size = 0;
	CUresult rc;

	if (vmem_range_of(&w->vmem, p, &base, &size) || base != p)
		return CUDA_ERROR_INVALID_VALUE;
	rc = w->B.cuCtxSynchronize();
	return rc ? rc : vmem_free(&w->vmem, p);
}

/* sqe.stream, arg0 address (asynchronous) */
static enum op_status op_free_async(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct pools *ps = w->pools;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);
	long i = pool_block_find(ps, s->arg[0]);
	bool captured = !rc && w->captures && pools_capture_id(w, st);

	pools_settle(w);
	if (rc)
		;
	else if (i < 0 && !captured && graph_mem_free(w, s->arg[0], st, true, &rc))
		;	/* a graph allocation node's, outside its graph */
	else if (i < 0)
		rc = captured ? CUDA_ERROR_INVALID_VALUE : free_plain(w, s->arg[0]);
	else if (ps->b[i].state == BLOCK_GRAPH)
		rc = graph_free(&ps->b[i], captured);
	else if (ps->b[i].state != BLOCK_LIVE || captured)
		rc = CUDA_ERROR_INVALID_VALUE;	/* freed twice, or not a graph's */
	else
		rc = pool_free_block(w, i, st, s->stream);
	call->cqe->result = rc;
	return OP_DONE;
}

/* arg0 device, arg1 CUgraphMem_attribute, arg2 1: set, arg3 value */
static enum op_status op_graph_mem_attr(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct pools *ps = w->pools;
	CUresult rc = dev_ok(w, s->arg[0]);
	uint32_t d = (uint32_t)s->arg[0];
	uint64_t v = 0;

	if (rc)
		;
	else if (s->arg[2]) {
		if (s->arg[3])
			rc = CUDA_ERROR_INVALID_VALUE;	/* only a reset to zero */
		else if (s->arg[1] == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
			ps->graph_used_high[d] = ps->graph_used[d];
		else if (s->arg[1] == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
			ps->graph_reserved_high[d] = ps->graph_used[d];
		else
			rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		switch (s->arg[1]) {
		case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
		case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
			v = ps->graph_used[d];	/* graph memory is never cached here */
			break;
		case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
			v = ps->graph_used_high[d];
			break;
		case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
			v = ps->graph_reserved_high[d];
			break;
		default:
			rc = CUDA_ERROR_INVALID_VALUE;
		}
	}
	call->cqe->result = rc;
	call->cqe->val[0] = v;
	return OP_DONE;
}

/* Graph memory is released as soon as its graphs are gone, so nothing is
 * cached to trim; the device must still be one of the session's. */
static enum op_status op_graph_mem_trim(struct worker *w, struct op_call *call)
{
	call->cqe->result = dev_ok(w, call->sqe->arg[0]);
	return OP_DONE;
}

const struct op_desc exec_pool_ops[] = {
	OP(POOL_CREATE, OPF_SYNC_ONLY, op_pool_create),
	OP(POOL_DESTROY, OPF_SYNC_ONLY, op_pool_destroy),
	OP(POOL_SET_ATTR, OPF_SYNC_ONLY, op_pool_set_attr),
	OP(POOL_GET_ATTR, OPF_SYNC_ONLY, op_pool_get_attr),
	OP(POOL_TRIM, OPF_SYNC_ONLY, op_pool_trim),
	OP(MEM_ALLOC_ASYNC, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_alloc_async),
	OP(MEM_FREE_ASYNC, OPF_NEEDS_CTX, op_free_async),
	OP(GRAPH_MEM_ATTR, OPF_SYNC_ONLY, op_graph_mem_attr),
	OP(GRAPH_MEM_TRIM, OPF_SYNC_ONLY, op_graph_mem_trim),
	{ 0 },
};
