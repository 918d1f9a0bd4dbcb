// SPDX-License-Identifier: MIT
/*
 * Stream capture and CUDA graphs. The worker's streams are the client's, so
 * a capture begun on one records what the client then submits to it (and
 * to streams that join it through events) exactly as the driver would: the
 * graph lives here, under an id the client issued, and so does every
 * instantiation of it.
 *
 * Pageable copies travel through buffers the worker reuses at once; a
 * capture would record the buffer's address and replay stale data, so they
 * are refused on a capturing stream (worker_capturing).
 */
#include "log.h"
#include "worker.h"

bool worker_capturing(struct worker *w, CUstream st)
{
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;

	if (!w->captures)
		return false;
	return !w->B.cuStreamGetCaptureInfo_v3(st, &cs, NULL, NULL, NULL, NULL, NULL) &&
	       cs != CU_STREAM_CAPTURE_STATUS_NONE;
}

static enum op_status op_begin_capture(struct worker *w, struct op_call *call)
{
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (!rc && call->sqe->arg[0] > CU_STREAM_CAPTURE_MODE_RELAXED)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuStreamBeginCapture_v2(st, (CUstreamCaptureMode)call->sqe->arg[0]);
	if (!rc)
		w->captures++;
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_end_capture(struct worker *w, struct op_call *call)
{
	uint32_t id = (uint32_t)call->sqe->arg[0];
	CUgraph g = NULL;
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (!rc && (!id || obj_get(&w->graphs, id)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		uint64_t cid = pools_capture_id(w, st);

		rc = w->B.cuStreamEndCapture(st, &g);
		/* Ended either way unless the stream was not capturing. */
		if (rc != CUDA_ERROR_ILLEGAL_STATE && w->captures)
			w->captures--;
		/* A capture into a graph of the session ends with that graph. */
		if (!rc && (call->cqe->val[0] = obj_id_of(&w->graphs, g)))
			id = (uint32_t)call->cqe->val[0];
		else if (!rc && obj_insert(&w->graphs, id, g, call->sqe->ctx, NULL)) {
			w->B.cuGraphDestroy(g);
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
		/* Memory allocated in the capture is the graph's from now on. */
		pools_capture_end(w, cid, rc ? 0 : id);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_capture_info(struct worker *w, struct op_call *call)
{
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	cuuint64_t cid = 0;
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (!rc)
		rc = w->B.cuStreamGetCaptureInfo_v3(st, &cs, &cid, NULL, NULL, NULL, NULL);
	call->cqe->result = rc;
	call->cqe->val[0] = cs;
	call->cqe->val[1] = cid;
	return OP_DONE;
}

static enum op_status op_node_count(struct worker *w, struct op_call *call)
{
	struct obj_entry *e = obj_get(&w->graphs, call->sqe->arg[0]);
	size_t n = 0;

	call->cqe->result = e ? w->B.cuGraphGetNodes(e->obj, NULL, &n) : CUDA_ERROR_INVALID_HANDLE;
	call->cqe->val[0] = n;
	return OP_DONE;
}

static enum op_status op_instantiate(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *e = obj_get(&w->graphs, s->arg[0]);
	CUgraphExec ge = NULL;
	CUresult rc = e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	if (!rc && (!s->arg[1] || obj_get(&w->graph_execs, s->arg[1])))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuGraphInstantiateWithFlags(&ge, e->obj, s->arg[2]);
	if (!rc && obj_insert(&w->graph_execs, s->arg[1], ge, s->ctx, NULL)) {
		w->B.cuGraphExecDestroy(ge);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!rc) {
		pools_graph_instantiated(w, (uint32_t)s->arg[0], (uint32_t)s->arg[1]);
		/* What a checkpoint needs to make it again. */
		graph_snap_take(w, obj_get(&w->graph_execs, s->arg[1]), (uint32_t)s->arg[0],
				s->arg[2]);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_launch_graph(struct worker *w, struct op_call *call)
{
	struct obj_entry *e = obj_get(&w->graph_execs, call->sqe->arg[0]);
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (!rc && !e)
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc)
		rc = call->sqe->opcode == VGPU_OP_GRAPH_UPLOAD ? w->B.cuGraphUpload(e->obj, st)
							       : w->B.cuGraphLaunch(e->obj, st);
	if (!rc && call->sqe->opcode == VGPU_OP_GRAPH_LAUNCH)
		pools_graph_launched(w, (uint32_t)call->sqe->arg[0]);
	call->cqe->result = rc;
	return OP_DONE;
}

/* GRAPH_EXEC_DESTROY and GRAPH_DESTROY: arg0 names the instance or graph. */
static enum op_status op_destroy(struct worker *w, struct op_call *call)
{
	bool exec = call->sqe->opcode == VGPU_OP_GRAPH_EXEC_DESTROY;
	struct obj_table *t = exec ? &w->graph_execs : &w->graphs;
	struct obj_entry *e = obj_get(t, call->sqe->arg[0]);

	if (!e) {
		call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	if (exec)
		graph_snap_drop(w, e);
	else if (!e->data)	/* its instances keep what they know of it */
		graph_snap_graph_gone(w, (uint32_t)call->sqe->arg[0]);
	/* A graph a child graph node owns (data set) goes with its node. */
	call->cqe->result = exec ? w->B.cuGraphExecDestroy(e->obj)
			  : e->data ? CUDA_SUCCESS : w->B.cuGraphDestroy(e->obj);
	if (!exec) {
		graph_embedded_forget(w, (uint32_t)call->sqe->arg[0], 0);
		graph_nodes_forget((uint32_t)call->sqe->arg[0]);
	}
	obj_remove(t, call->sqe->arg[0]);
	pools_graph_gone(w, exec ? 0 : (uint32_t)call->sqe->arg[0],
			 exec ? (uint32_t)call->sqe->arg[0] : 0);
	return OP_DONE;
}

const struct op_desc exec_graph_ops[] = {
	OP(STREAM_BEGIN_CAPTURE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_begin_capture),
	OP(STREAM_END_CAPTURE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_end_capture),
	OP(STREAM_CAPTURE_INFO, OPF_NEEDS_CTX | OPF_SYNC_ONLY | OPF_NO_PRINT, op_capture_info),
	OP(GRAPH_NODE_COUNT, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_node_count),
	OP(GRAPH_INSTANTIATE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_instantiate),
	OP(GRAPH_LAUNCH, OPF_NEEDS_CTX, op_launch_graph),
	OP(GRAPH_UPLOAD, OPF_NEEDS_CTX, op_launch_graph),
	OP(GRAPH_EXEC_DESTROY, OPF_NEEDS_CTX, op_destroy),
	OP(GRAPH_DESTROY, OPF_NEEDS_CTX, op_destroy),
	{ 0 },
};
