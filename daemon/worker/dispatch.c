// SPDX-License-Identifier: MIT
/*
 * From a copied-out ring entry to a handler: check the opcode and the
 * shape of the entry, copy its payload out of shared memory, switch to its
 * context, run the handler, and answer (synchronous calls) or remember the
 * error for the next synchronous call (asynchronous ones).
 */
#include <stdlib.h>
#include <string.h>

#include "array_state.h"
#include "ipc.h"
#include "launch_graphs.h"
#include "log.h"
#include "sticky.h"
#include "worker.h"

static const struct op_desc *ops[VGPU_OP_MAX];

static void add(const struct op_desc *d)
{
	for (; d->fn; d++) {
		/* Opcode blocks must ascend in proto.h, so VGPU_OP_MAX is past
		 * them all; a block out of order is a build mistake. */
		if (d->opcode >= VGPU_OP_MAX || ops[d->opcode]) {
			vlog_err("%s: opcode %#x out of order or taken twice", d->name, d->opcode);
			abort();
		}
		ops[d->opcode] = d;
	}
}

void dispatch_init(void)
{
	add(exec_ctx_ops);
	add(exec_memory_ops);
	add(exec_stream_ops);
	add(exec_module_ops);
	add(exec_graph_ops);
	add(exec_bulk_ops);
	add(exec_tables_ops);
	add(exec_tensor_map_ops);
	add(exec_green_ops);
	add(exec_link_ops);
	add(exec_graph_node_ops);
	add(exec_graph_query_ops);
	add(exec_graph_hostcopy_ops);
	add(exec_graph_dot_ops);
	add(exec_graph_cond_ops);
	add(exec_graph_mem_ops);
	add(exec_streamops_ops);
	add(exec_pool_ops);
	add(exec_vmm_ops);
	add(exec_pool_ipc_ops);
	add(exec_ipc_ops);
	add(exec_ipc_event_ops);
	add(exec_print_follow_ops);
	add(exec_hostreg_ops);
	add(exec_array_ops);
	add(exec_texobj_ops);
	add(exec_gen_ops);
}

const struct op_desc *dispatch_find(uint16_t opcode)
{
	return opcode < VGPU_OP_MAX ? ops[opcode] : NULL;
}

CUresult worker_use_ctx(struct worker *w, uint32_t ctx_id)
{
	struct obj_entry *e;
	CUresult rc;

	if (ctx_id == w->cur_ctx)
		return CUDA_SUCCESS;
	e = obj_get(&w->ctxs, ctx_id);
	if (!e)
		return CUDA_ERROR_INVALID_CONTEXT;
	rc = w->B.cuCtxSetCurrent(e->obj);
	if (!rc)
		w->cur_ctx = ctx_id;
	return rc;
}

CUstream worker_stream(struct worker *w, const struct vgpu_sqe *sqe, CUresult *err)
{
	struct obj_entry *e;

	*err = CUDA_SUCCESS;
	if (!sqe->stream)
		return NULL;	/* the legacy default stream */
	e = obj_get(&w->streams, sqe->stream);
	if (!e) {
		*err = CUDA_ERROR_INVALID_HANDLE;
		return NULL;
	}
	return e->obj;
}


void worker_fold_deferred(struct worker *w, struct vgpu_cqe *c)
{
	/* A synchronous call that itself succeeded reports the oldest deferred
	 * error, as CUDA does; sticky ones are reported again and again. */
	if (!c->result && w->deferred) {
		c->result = w->deferred;
		if (!vgpu_error_is_sticky(w->deferred))
			w->deferred = CUDA_SUCCESS;
	}
}

static void answer(struct worker *w, const struct op_desc *d, const struct vgpu_sqe *sqe,
		   struct vgpu_cqe *c)
{
	if (!sqe->tag) {
		if (c->result && !w->deferred)
			w->deferred = c->result;
		if (c->result)
			vlog_debug("async op %u failed: %d (reported at the next sync call)",
				   sqe->opcode, c->result);
		return;
	}
	/* Context bookkeeping must not report others' errors: the runtime
	 * would undo a change the worker made. */
	if (!d || !(d->flags & OPF_NO_FOLD))
		worker_fold_deferred(w, c);
	worker_post(w, c);
}

void dispatch_entry(struct worker *w, const struct vgpu_sqe *sqe)
{
	int len;

	if (sqe->tag > w->ring.sq_entries) {
		/* No slot to answer in: drop it, but keep the payload ring in step. */
		worker_payload_skip(&w->ring, sqe);
		vlog_warn("entry with tag %u beyond %u slots dropped", sqe->tag,
			  w->ring.sq_entries);
		return;
	}
	len = worker_payload_take(&w->ring, sqe, w->pbuf, w->ring.payload_size / 2);
	if (launch_graphs_hold(w, sqe, w->pbuf, len))
		return;
	launch_graphs_flush(w);
	dispatch_taken(w, sqe, w->pbuf, len);
}

void dispatch_taken(struct worker *w, const struct vgpu_sqe *sqe, const void *payload, int len)
{
	struct vgpu_cqe c = { .tag = sqe->tag };
	const struct op_desc *d = sqe->opcode < VGPU_OP_MAX ? ops[sqe->opcode] : NULL;
	struct op_call call = { .sqe = sqe, .cqe = &c };

	w->answering_query = d && (d->flags & OPF_NO_PRINT);
	if (len < 0) {
		vlog_warn("op %u: payload outside the payload ring", sqe->opcode);
		c.result = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!d) {
		vlog_warn("unknown opcode %u", sqe->opcode);
		c.result = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	if ((d->flags & OPF_SYNC_ONLY) && !sqe->tag) {
		vlog_warn("%s sent without a tag; it has an answer", d->name);
		c.result = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (d->flags & OPF_NEEDS_CTX) {
		c.result = worker_use_ctx(w, sqe->ctx);
		if (c.result)
			goto out;
	}
	call.payload = payload;
	call.len = len;
	call.reply = sqe->tag ? vgpu_reply_slot(&w->ring, sqe->tag) : NULL;
	if (!(d->flags & OPF_NO_PRINT))
		worker_may_print(w);
	if (d->fn(w, &call) == OP_LATER) {
		launch_graphs_after(w, sqe->opcode, d->flags);
		return;
	}
	launch_graphs_after(w, sqe->opcode, d->flags);
	if (c.result)
		vlog_debug("%s -> %d", d->name, c.result);
out:
	answer(w, d, sqe, &c);
}
