// SPDX-License-Identifier: MIT
/*
 * Conditional graph nodes (IF, WHILE, SWITCH). The driver makes the node's
 * body graphs with it; each joins the session's graphs under the id the
 * client sent, owned by the node (exec_graph_query.c's embedded graphs: it
 * goes with the node or its parent graph, and destroying it only forgets
 * it). The handle is the driver's value from cuGraphConditionalHandleCreate;
 * the driver checks it names a handle of the graph's.
 */
#include <string.h>

#include "worker.h"

static enum op_status op_add_cond(struct worker *w, struct op_call *call)
{
	static CUgraphNode deps[VGPU_MAX_GRAPH_NODES];
	static CUgraphEdgeData edges[VGPU_MAX_GRAPH_NODES];
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	CUgraph bodies[VGPU_MAX_COND_BODIES] = { 0 };
	struct vgpu_cond_params c;
	CUgraphNodeParams p = { 0 };
	CUgraphNode node = NULL;
	CUcontext ctx = NULL;
	uint32_t id = 0, bound = 0;
	CUresult rc = CUDA_SUCCESS;

	if (s->arg[1] > VGPU_MAX_GRAPH_NODES || s->arg[2] > 1 ||
	    call->len != sizeof(c) + s->arg[1] * (sizeof(uint32_t) +
						  (s->arg[2] ? sizeof(*edges) : 0)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		memcpy(&c, call->payload, sizeof(c));
		if (c.type > CU_GRAPH_COND_TYPE_SWITCH || !c.size || c.size > VGPU_MAX_COND_BODIES)
			rc = CUDA_ERROR_INVALID_VALUE;
	}
	/* Each body's id fresh and distinct, the unused ones 0. */
	for (uint32_t i = 0; !rc && i < VGPU_MAX_COND_BODIES; i++) {
		if (i >= c.size ? c.body[i] != 0
				: !c.body[i] || c.body[i] >= OBJ_MAX_ID ||
					  obj_get(&w->graphs, c.body[i]))
			rc = CUDA_ERROR_INVALID_VALUE;
		for (uint32_t k = 0; !rc && i < c.size && k < i; k++)
			if (c.body[k] == c.body[i])
				rc = CUDA_ERROR_INVALID_VALUE;
	}
	if (!rc)
		rc = graph_node_list((const uint32_t *)((const uint8_t *)call->payload + sizeof(c)),
				     s->arg[1], (uint32_t)s->arg[0], deps);
	if (!rc && s->arg[2])
		rc = graph_edge_list((const uint8_t *)call->payload + sizeof(c) +
				     s->arg[1] * sizeof(uint32_t), s->arg[1], edges);
	if (!rc && !g)
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc)
		rc = w->B.cuCtxGetCurrent(&ctx);
	if (!rc) {
		p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
		p.conditional = (CUDA_CONDITIONAL_NODE_PARAMS){
			.handle = c.handle, .type = (CUgraphConditionalNodeType)c.type,
			.size = c.size, .phGraph_out = bodies, .ctx = ctx,
		};
		rc = w->B.cuGraphAddNode_v2(&node, g->obj, s->arg[1] ? deps : NULL,
					    s->arg[2] ? edges : NULL, s->arg[1], &p);
	}
	if (!rc && !(id = graph_node_id(node, (uint32_t)s->arg[0])))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	/* The driver fills the array given, or points phGraph_out at its own. */
	if (!rc && !p.conditional.phGraph_out)
		rc = CUDA_ERROR_UNKNOWN;
	for (; !rc && bound < c.size; bound++)
		if (!p.conditional.phGraph_out[bound] ||
		    graph_embedded_bind(w, c.body[bound], p.conditional.phGraph_out[bound],
					(uint32_t)s->arg[0], id, g->aux))
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (rc && node) {	/* the node goes, and what of it the session knew */
		graph_embedded_forget(w, (uint32_t)s->arg[0], id);
		graph_node_drop(id);
		w->B.cuGraphDestroyNode(node);
		id = 0;
	}
	call->cqe->result = rc;
	call->cqe->val[0] = id;
	return OP_DONE;
}

const struct op_desc exec_graph_cond_ops[] = {
	OP(GRAPH_ADD_COND_NODE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_add_cond),
	{ 0 },
};
