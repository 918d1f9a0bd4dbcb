// SPDX-License-Identifier: MIT
/*
 * Device resources, the first steps towards green contexts: what SMs a
 * device or context has, how they split into groups, and a descriptor of
 * groups. The resources are the backend's own structs (the real driver
 * keeps internal bytes in them), passed back and forth whole; the backend
 * checks them. Green contexts themselves are not created (the runtime
 * refuses cuGreenCtxCreate), so a descriptor is only checked here.
 */
#include <string.h>

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

const struct op_desc exec_green_ops[] = {
	OP(DEV_RESOURCE, OPF_SYNC_ONLY, op_dev_resource),
	OP(SM_RESOURCE_SPLIT, OPF_SYNC_ONLY, op_split),
	OP(RESOURCE_DESC, OPF_SYNC_ONLY, op_desc),
	{ 0 },
};
