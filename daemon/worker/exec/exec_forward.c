// SPDX-License-Identifier: MIT
/* The worker's side of the generated calls' wire format (forward.h). */
#include <stdio.h>
#include <string.h>

#include "exec_forward.h"
#include "log.h"

CUresult fwd_args(const struct op_call *call, void *args, size_t len, uint64_t *extra)
{
	*extra = 0;
	if (!call->sqe->payload_len && len <= sizeof(call->sqe->arg)) {
		memcpy(args, call->sqe->arg, len);
		return CUDA_SUCCESS;
	}
	/* Anything else must have come as a payload the same client side
	 * would have built: the struct whole, then an array. */
	if (call->len < len || (len <= sizeof(call->sqe->arg) && call->len == len))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(args, call->payload, len);
	*extra = call->len - len;
	return CUDA_SUCCESS;
}

const void *fwd_extra(const struct op_call *call, size_t args_len)
{
	return (const uint8_t *)call->payload + args_len;
}

static CUresult obj(struct obj_table *t, uint32_t id, void **out)
{
	struct obj_entry *e = id ? obj_get(t, id) : NULL;

	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = e->obj;
	return CUDA_SUCCESS;
}

CUresult fwd_ctx(struct worker *w, const struct op_call *call, uint32_t id, CUcontext *out)
{
	(void)call;
	return obj(&w->ctxs, id, (void **)out);
}

CUresult fwd_stream(struct worker *w, const struct op_call *call, uint32_t id, CUstream *out)
{
	if (id != call->sqe->stream)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!id) {
		*out = NULL;	/* the legacy default stream */
		return CUDA_SUCCESS;
	}
	return obj(&w->streams, id, (void **)out);
}

CUresult fwd_event(struct worker *w, const struct op_call *call, uint32_t id, CUevent *out)
{
	(void)call;
	return obj(&w->events, id, (void **)out);
}

CUresult fwd_func(struct worker *w, const struct op_call *call, uint32_t id, CUfunction *out)
{
	(void)call;
	return obj(&w->funcs, id, (void **)out);
}

CUresult fwd_graph(struct worker *w, const struct op_call *call, uint32_t id, CUgraph *out)
{
	(void)call;
	return obj(&w->graphs, id, (void **)out);
}

CUresult fwd_exec(struct worker *w, const struct op_call *call, uint32_t id, CUgraphExec *out)
{
	(void)call;
	return obj(&w->graph_execs, id, (void **)out);
}

CUresult fwd_node(struct worker *w, const struct op_call *call, uint32_t id, CUgraphNode *out)
{
	(void)call;
	*out = graph_node_obj(w, id);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult fwd_module(struct worker *w, const struct op_call *call, uint32_t id, CUmodule *out)
{
	(void)call;
	return obj(&w->modules, id, (void **)out);
}

CUresult fwd_gen(struct worker *w, const struct op_call *call, uint32_t id,
		 enum vgpu_gen_kind kind, void **out)
{
	struct obj_entry *e = id && id < OBJ_MAX_ID ? obj_get(&w->gen_objs, id) : NULL;

	(void)call;
	if (!e || e->aux != (uint64_t)kind)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = e->obj;
	return CUDA_SUCCESS;
}

CUresult fwd_gen_fresh(struct worker *w, uint32_t id)
{
	if (!id || id >= OBJ_MAX_ID || obj_get(&w->gen_objs, id))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult fwd_gen_keep(struct worker *w, uint32_t id, enum vgpu_gen_kind kind, void *obj)
{
	if (fwd_gen_fresh(w, id) || obj_insert(&w->gen_objs, id, obj, kind, NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult fwd_str(const struct op_call *call, size_t args_len, uint64_t len, const char **out)
{
	const char *s = fwd_extra(call, args_len);

	if (!len || len > VGPU_MAX_NAME || s[len - 1] || strlen(s) != len - 1)
		return CUDA_ERROR_INVALID_VALUE;
	*out = s;
	return CUDA_SUCCESS;
}

CUresult fwd_dev(struct worker *w, int32_t ordinal, CUdevice *out)
{
	if (ordinal < 0 || ordinal >= w->device_count)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = w->devices[ordinal];
	return CUDA_SUCCESS;
}

CUresult fwd_reply_array(struct worker *w, struct op_call *call, size_t res_len, uint64_t count,
			 size_t size, void **out)
{
	uint32_t slot = call->reply ? w->ring.reply_slot_size : 0;

	if (slot < res_len || count > (slot - res_len) / size)
		return CUDA_ERROR_INVALID_VALUE;
	*out = call->reply + res_len;
	return CUDA_SUCCESS;
}

enum op_status fwd_answer(struct op_call *call, CUresult rc, const void *res, size_t res_len,
			  uint64_t extra_len)
{
	call->cqe->result = rc;
	if (rc || !call->reply)
		return OP_DONE;
	if (res_len <= VGPU_GEN_RES_INLINE && !extra_len) {
		memcpy(call->cqe->val, res, res_len);
		return OP_DONE;
	}
	memcpy(call->reply, res, res_len);
	call->cqe->val[2] = res_len + extra_len;
	return OP_DONE;
}
