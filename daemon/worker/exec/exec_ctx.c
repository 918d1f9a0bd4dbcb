// SPDX-License-Identifier: MIT
/* Contexts and device-wide queries (the context limits are generated: exec_gen.c). */
#include "log.h"
#include "worker.h"

static enum op_status op_nop(struct worker *w, struct op_call *call)
{
	(void)w;
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

static int valid_device(struct worker *w, uint64_t dev)
{
	return dev < (uint64_t)w->device_count;
}

static enum op_status op_primary_retain(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t dev = s->arg[1];
	struct obj_entry *e;

	if (!valid_device(w, dev)) {
		call->cqe->result = CUDA_ERROR_INVALID_DEVICE;
		return OP_DONE;
	}
	e = obj_get(&w->ctxs, s->arg[0]);
	if (e && e->obj == w->primary[dev]) {
		w->primary_refs[dev]++;
		call->cqe->result = CUDA_SUCCESS;
		return OP_DONE;
	}
	if (obj_insert(&w->ctxs, s->arg[0], w->primary[dev], dev | CTX_AUX_PRIMARY, NULL)) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	w->primary_refs[dev]++;
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

static enum op_status op_primary_release(struct worker *w, struct op_call *call)
{
	struct obj_entry *e = obj_get(&w->ctxs, call->sqe->arg[0]);
	uint32_t dev;

	if (!e || CTX_AUX_KIND(e->aux) != CTX_AUX_PRIMARY) {
		call->cqe->result = CUDA_ERROR_INVALID_CONTEXT;
		return OP_DONE;
	}
	dev = (uint32_t)e->aux;
	/* The real context stays retained by the worker, warm for reuse. */
	if (w->primary_refs[dev] && !--w->primary_refs[dev]) {
		if (w->cur_ctx == call->sqe->arg[0])
			w->cur_ctx = 0;
		obj_remove(&w->ctxs, call->sqe->arg[0]);
	}
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

static enum op_status op_primary_set_flags(struct worker *w, struct op_call *call)
{
	uint64_t dev = call->sqe->arg[0];

	if (!valid_device(w, dev)) {
		call->cqe->result = CUDA_ERROR_INVALID_DEVICE;
		return OP_DONE;
	}
	call->cqe->result = w->B.cuDevicePrimaryCtxSetFlags_v2(w->devices[dev],
								(unsigned int)call->sqe->arg[1]);
	return OP_DONE;
}

static enum op_status op_primary_reset(struct worker *w, struct op_call *call)
{
	uint64_t dev = call->sqe->arg[0];
	CUcontext prev = NULL;

	if (!valid_device(w, dev)) {
		call->cqe->result = CUDA_ERROR_INVALID_DEVICE;
		return OP_DONE;
	}
	/* Work in flight finishes first; the runtime frees the objects it
	 * owned in this context before asking. */
	w->B.cuCtxSetCurrent(w->primary[dev]);
	call->cqe->result = w->B.cuCtxSynchronize();
	w->cur_ctx = 0;
	/* The program starts over: earlier errors are no longer its news.
	 * (A GPU context poisoned by a fault stays so: see the issue notes.) */
	w->deferred = CUDA_SUCCESS;
	(void)prev;
	return OP_DONE;
}

static enum op_status op_ctx_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t dev = s->arg[1];
	CUcontext ctx;
	CUresult rc;

	if (!valid_device(w, dev)) {
		call->cqe->result = CUDA_ERROR_INVALID_DEVICE;
		return OP_DONE;
	}
	if (obj_get(&w->ctxs, s->arg[0])) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	rc = w->B.cuCtxCreate_v4(&ctx, NULL, (unsigned int)s->arg[2], w->devices[dev]);
	if (!rc && obj_insert(&w->ctxs, s->arg[0], ctx, dev, NULL)) {
		w->B.cuCtxDestroy_v2(ctx);
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	/* cuCtxCreate made it current here; the ring decides what is current. */
	if (!rc)
		w->cur_ctx = s->arg[0];
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_ctx_destroy(struct worker *w, struct op_call *call)
{
	uint32_t id = call->sqe->arg[0];
	struct obj_entry *e = obj_get(&w->ctxs, id);

	if (!e || CTX_AUX_KIND(e->aux)) {	/* primary and green ones: not so */
		call->cqe->result = CUDA_ERROR_INVALID_CONTEXT;
		return OP_DONE;
	}
	call->cqe->result = w->B.cuCtxDestroy_v2(e->obj);
	obj_remove(&w->ctxs, id);
	if (w->cur_ctx == id)
		w->cur_ctx = 0;
	return OP_DONE;
}

static enum op_status op_ctx_synchronize(struct worker *w, struct op_call *call)
{
	/* The legacy stream's tail is often a few kernels: a waiter thread
	 * woken for it would answer later than a few polls do. */
	CUresult rc = waiter_poll(w, NULL);

	pools_sync_point(w);
	/* Nothing queued anywhere answers at once; otherwise wait off-ring. */
	if (rc == CUDA_SUCCESS) {
		call->cqe->result = w->B.cuCtxSynchronize();
		return OP_DONE;
	}
	worker_fold_deferred(w, call->cqe);
	waiter_after_ctx_sync(w, call->sqe->ctx, call->cqe);
	return OP_LATER;
}

static enum op_status op_cache_config(struct worker *w, struct op_call *call)
{
	call->cqe->result = w->B.cuCtxSetCacheConfig((CUfunc_cache)call->sqe->arg[0]);
	return OP_DONE;
}

static enum op_status op_shmem_config(struct worker *w, struct op_call *call)
{
	(void)w;
	/* Hopper has no shared-memory bank configuration; CUDA accepts and
	 * ignores valid values. */
	call->cqe->result = call->sqe->arg[0] <= 2 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	return OP_DONE;
}

static enum op_status op_mem_get_info(struct worker *w, struct op_call *call)
{
	size_t free_b = 0, total = 0;

	pools_settle(w);
	call->cqe->result = w->B.cuMemGetInfo_v2(&free_b, &total);
	call->cqe->val[0] = free_b;
	call->cqe->val[1] = total;
	return OP_DONE;
}

const struct op_desc exec_ctx_ops[] = {
	OP(NOP, OPF_NO_PRINT, op_nop),
	OP(PRIMARY_RETAIN, OPF_NO_FOLD, op_primary_retain),
	OP(PRIMARY_RELEASE, OPF_NO_FOLD, op_primary_release),
	OP(PRIMARY_SET_FLAGS, OPF_NO_FOLD, op_primary_set_flags),
	OP(PRIMARY_RESET, 0, op_primary_reset),
	OP(CTX_CREATE, OPF_NO_FOLD, op_ctx_create),
	OP(CTX_DESTROY, OPF_NO_FOLD, op_ctx_destroy),
	OP(CTX_SYNCHRONIZE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_ctx_synchronize),
	OP(CTX_SET_CACHE_CONFIG, OPF_NEEDS_CTX, op_cache_config),
	OP(CTX_SET_SHMEM_CONFIG, OPF_NEEDS_CTX, op_shmem_config),
	OP(MEM_GET_INFO, OPF_NEEDS_CTX | OPF_SYNC_ONLY | OPF_NO_PRINT, op_mem_get_info),
	{ 0 },
};
