/* SPDX-License-Identifier: MIT */
/*
 * What the worker's generated handlers (exec_gen.c, tools/gen-calls) share:
 * the inputs copied out of the entry (its arg[] or its payload) at exactly
 * the size the call's struct has, each id turned into the session's object
 * (CUDA_ERROR_INVALID_HANDLE for one that is not live), and the answer.
 */
#ifndef VGPU_EXEC_FORWARD_H
#define VGPU_EXEC_FORWARD_H

#include "vgpu/calls_gen.h"
#include "worker.h"

/* The call's fixed inputs into @args; *@extra the bytes of an input array
 * behind them in the payload (fwd_extra points at it). */
CUresult fwd_args(const struct op_call *call, void *args, size_t len, uint64_t *extra);
const void *fwd_extra(const struct op_call *call, size_t args_len);
CUresult fwd_ctx(struct worker *w, const struct op_call *call, uint32_t id, CUcontext *out);
/* The entry's stream (sqe.stream, which must be @id). */
CUresult fwd_stream(struct worker *w, const struct op_call *call, uint32_t id, CUstream *out);
CUresult fwd_event(struct worker *w, const struct op_call *call, uint32_t id, CUevent *out);
CUresult fwd_func(struct worker *w, const struct op_call *call, uint32_t id, CUfunction *out);
CUresult fwd_graph(struct worker *w, const struct op_call *call, uint32_t id, CUgraph *out);
CUresult fwd_exec(struct worker *w, const struct op_call *call, uint32_t id, CUgraphExec *out);
CUresult fwd_node(struct worker *w, const struct op_call *call, uint32_t id, CUgraphNode *out);
CUresult fwd_module(struct worker *w, const struct op_call *call, uint32_t id, CUmodule *out);
/* An object of a generated kind (w->gen_objs, aux: its kind). */
CUresult fwd_gen(struct worker *w, const struct op_call *call, uint32_t id,
		 enum vgpu_gen_kind kind, void **out);
/* An id the client issued for an object about to be made is free; then
 * kept (CUDA_ERROR_INVALID_VALUE when it cannot be: the caller destroys it). */
CUresult fwd_gen_fresh(struct worker *w, uint32_t id);
CUresult fwd_gen_keep(struct worker *w, uint32_t id, enum vgpu_gen_kind kind, void *obj);
/* The name behind the fixed inputs: @len bytes, NUL-terminated, no NUL before. */
CUresult fwd_str(const struct op_call *call, size_t args_len, uint64_t len, const char **out);
CUresult fwd_dev(struct worker *w, int32_t ordinal, CUdevice *out);
/* Room for @count elements of @size bytes behind the fixed outputs in the
 * reply slot (CUDA_ERROR_INVALID_VALUE when they do not fit). */
CUresult fwd_reply_array(struct worker *w, struct op_call *call, size_t res_len, uint64_t count,
			 size_t size, void **out);
/* The answer: @res into cqe.val[0..1], or with an output array of
 * @extra_len bytes (or @res over 16 bytes) into the reply slot. */
enum op_status fwd_answer(struct op_call *call, CUresult rc, const void *res, size_t res_len,
			  uint64_t extra_len);

/* exec_graph_node.c: the graph node behind a worker-issued node id. */
CUgraphNode graph_node_obj(struct worker *w, uint32_t id);

#endif
