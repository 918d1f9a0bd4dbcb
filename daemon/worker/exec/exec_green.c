// SPDX-License-Identifier: MIT
/*
 * Device resources and green contexts: what SMs a device or context has,
 * how they split into groups, a descriptor of groups, and green contexts
 * made from one. The resources are the backend's own structs (the real
 * driver keeps internal bytes in them), passed back and forth whole; the
 * backend checks them. A descriptor is made again from the resources at
 * each creation, so none is kept between calls.
 *
 * A green context has a green id (w->greens, whose entry's aux is the
 * context id) and its CUcontext a context id of its own in w->ctxs (aux:
 * device | CTX_AUX_GREEN), so streams, events, modules and launches reach
 * it as any context. Checkpoints refuse sessions holding one
 * (ckpt_run_drain).
 */
#include <stdlib.h>
#include <string.h>

#include "retained.h"
#include "worker.h"

static enum op_status op_dev_resource(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *c = s->arg[2] ? obj_get(&w->ctxs, s->ctx) : NULL;
	CUdevResource r;
	CUresult rc;

	if (s->arg[2]) {	/* the entry's context */
		rc = c ? w->B.cuCtxGetDevResource(c->obj, &r, (CUdevResourceType)s->arg[1])
		       : CUDA_ERROR_INVALID_CONTEXT;
	} else if (s->arg[0] >= (uint64_t)w->device_count) {
		rc = CUDA_ERROR_INVALID_DEVICE;
	} else {
		rc = w->B.cuDeviceGetDevResource(w->devices[s->arg[0]], &r,
						 (CUdevResourceType)s->arg[1]);
	}
	if (!rc) {
		memcpy(call->reply, &r, sizeof(r));
		call->cqe->val[2] = sizeof(r);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_split(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	static CUdevResource out[1 + VGPU_MAX_SM_GROUPS];
	CUdevResource in;
	unsigned int n = (unsigned int)s->arg[0];
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	_Static_assert(sizeof(out) <= (64u << 10), "split answer fits a reply slot");
	if (call->len == sizeof(in) && s->arg[0] <= VGPU_MAX_SM_GROUPS && s->arg[1] <= UINT32_MAX &&
	    s->arg[2] <= UINT32_MAX && s->arg[3] <= 1) {
		memcpy(&in, call->payload, sizeof(in));
		memset(&out[0], 0, sizeof(out[0]));	/* a count may leave it unwritten */
		rc = w->B.cuDevSmResourceSplitByCount(s->arg[3] ? out + 1 : NULL, &n, &in, out,
						      (unsigned int)s->arg[1],
						      (unsigned int)s->arg[2]);
	}
	if (!rc && n > (s->arg[3] ? s->arg[0] : VGPU_MAX_SM_GROUPS))
		rc = CUDA_ERROR_UNKNOWN;	/* the backend wrote past the room it had */
	if (!rc) {
		size_t bytes = (1 + (s->arg[3] ? n : 0)) * sizeof(out[0]);

		memcpy(call->reply, out, bytes);
		call->cqe->val[0] = n;
		call->cqe->val[2] = bytes;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_desc(struct worker *w, struct op_call *call)
{
	static CUdevResource res[VGPU_MAX_RESOURCES];
	uint64_t n = call->sqe->arg[0];
	CUdevResourceDesc d;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (n && n <= VGPU_MAX_RESOURCES && call->len == n * sizeof(res[0])) {
		memcpy(res, call->payload, call->len);
		rc = w->B.cuDevResourceGenerateDesc(&d, res, (unsigned int)n);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- green contexts ------------------------------------------------------ */

static bool fresh_id(struct obj_table *t, uint64_t id)
{
	return id && id < OBJ_MAX_ID && !obj_get(t, (uint32_t)id);
}

static CUresult green_make(struct worker *w, const struct vgpu_sqe *s, const void *payload,
			   CUgreenCtx *g, CUcontext *ctx)
{
	static CUdevResource res[VGPU_MAX_RESOURCES];
	uint64_t n = s->arg[4];
	CUdevResourceDesc desc;
	CUresult rc;

	memcpy(res, payload, n * sizeof(res[0]));
	rc = w->B.cuDevResourceGenerateDesc(&desc, res, (unsigned int)n);
	if (!rc)
		rc = w->B.cuGreenCtxCreate(g, desc, w->devices[s->arg[2]], (unsigned int)s->arg[3]);
	if (rc)
		return rc;
	rc = w->B.cuCtxFromGreenCtx(ctx, *g);
	if (rc)
		w->B.cuGreenCtxDestroy(*g);
	return rc;
}

static enum op_status op_green_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t n = s->arg[4];
	CUcontext ctx;
	CUgreenCtx g;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (s->arg[2] >= (uint64_t)w->device_count)
		rc = CUDA_ERROR_INVALID_DEVICE;
	else if (fresh_id(&w->greens, s->arg[0]) && fresh_id(&w->ctxs, s->arg[1]) &&
		 s->arg[3] <= UINT32_MAX && n && n <= VGPU_MAX_RESOURCES &&
		 call->len == n * sizeof(CUdevResource))
		rc = green_make(w, s, call->payload, &g, &ctx);
	if (rc) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	if (obj_insert(&w->greens, (uint32_t)s->arg[0], g, s->arg[1], NULL)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (obj_insert(&w->ctxs, (uint32_t)s->arg[1], ctx, s->arg[2] | CTX_AUX_GREEN,
			      NULL)) {
		obj_remove(&w->greens, (uint32_t)s->arg[0]);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (rc)		/* made, not mapped */
		w->B.cuGreenCtxDestroy(g);
	call->cqe->result = rc;
	return OP_DONE;
}

/* Its streams stay mapped: the driver fails their calls from now on. */
static enum op_status op_green_destroy(struct worker *w, struct op_call *call)
{
	uint32_t id = (uint32_t)call->sqe->arg[0];
	struct obj_entry *e = call->sqe->arg[0] <= UINT32_MAX ? obj_get(&w->greens, id) : NULL;
	uint32_t ctx_id;

	if (!e) {
		call->cqe->result = CUDA_ERROR_INVALID_CONTEXT;
		return OP_DONE;
	}
	ctx_id = (uint32_t)e->aux;
	call->cqe->result = w->B.cuGreenCtxDestroy(e->obj);
	obj_remove(&w->greens, id);
	obj_remove(&w->ctxs, ctx_id);
	if (w->cur_ctx == ctx_id)
		w->cur_ctx = 0;
	return OP_DONE;
}

static CUgreenCtx green_of(struct worker *w, uint64_t id, CUresult *rc)
{
	struct obj_entry *e = id <= UINT32_MAX ? obj_get(&w->greens, (uint32_t)id) : NULL;

	*rc = e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
	return e ? e->obj : NULL;
}

static enum op_status op_green_resource(struct worker *w, struct op_call *call)
{
	CUresult rc;
	CUgreenCtx g = green_of(w, call->sqe->arg[0], &rc);
	CUdevResource r;

	if (!rc)
		rc = w->B.cuGreenCtxGetDevResource(g, &r, (CUdevResourceType)call->sqe->arg[1]);
	if (!rc) {
		memcpy(call->reply, &r, sizeof(r));
		call->cqe->val[2] = sizeof(r);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_green_stream_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct retained_stream *info = NULL;
	CUresult rc;
	CUgreenCtx g = green_of(w, s->arg[0], &rc);
	CUstream st;

	if (!rc && (!fresh_id(&w->streams, s->arg[1]) || s->arg[2] > UINT32_MAX))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && !(info = malloc(sizeof(*info))))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc)
		rc = w->B.cuGreenCtxStreamCreate(&st, g, (unsigned int)s->arg[2],
						 (int)(int64_t)s->arg[3]);
	if (rc) {
		free(info);
		call->cqe->result = rc;
		return OP_DONE;
	}
	*info = (struct retained_stream){ (uint32_t)s->arg[2], (int32_t)s->arg[3] };
	/* The stream's context is the green context's own. */
	if (obj_insert(&w->streams, (uint32_t)s->arg[1], st, obj_get(&w->greens,
			(uint32_t)s->arg[0])->aux, info)) {
		w->B.cuStreamDestroy_v2(st);
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_green_event(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *e = s->arg[1] <= UINT32_MAX ? obj_get(&w->events, (uint32_t)s->arg[1])
						      : NULL;
	CUresult rc;
	CUgreenCtx g = green_of(w, s->arg[0], &rc);

	if (!rc && !e)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (!rc && s->opcode == VGPU_OP_GREEN_RECORD_EVENT)
		rc = w->B.cuGreenCtxRecordEvent(g, e->obj);
	else if (!rc)
		rc = w->B.cuGreenCtxWaitEvent(g, e->obj);
	call->cqe->result = rc;
	return OP_DONE;
}

const struct op_desc exec_green_ops[] = {
	OP(DEV_RESOURCE, OPF_SYNC_ONLY, op_dev_resource),
	OP(SM_RESOURCE_SPLIT, OPF_SYNC_ONLY, op_split),
	OP(RESOURCE_DESC, OPF_SYNC_ONLY, op_desc),
	OP(GREEN_CREATE, OPF_SYNC_ONLY | OPF_NO_FOLD, op_green_create),
	OP(GREEN_DESTROY, OPF_SYNC_ONLY, op_green_destroy),
	OP(GREEN_RESOURCE, OPF_SYNC_ONLY, op_green_resource),
	OP(GREEN_STREAM_CREATE, 0, op_green_stream_create),
	OP(GREEN_RECORD_EVENT, 0, op_green_event),
	OP(GREEN_WAIT_EVENT, 0, op_green_event),
	{ 0 },
};
