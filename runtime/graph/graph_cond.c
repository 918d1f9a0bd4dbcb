// SPDX-License-Identifier: MIT
/*
 * Conditional graph nodes (IF, WHILE, SWITCH). The driver makes the node's
 * body graphs when it makes the node and hands them back in phGraph_out:
 * each becomes a graph of the program's here, under an id sent with the
 * node, that the program fills like any graph; phGraph_out is set to an
 * array of them the node owns, as the driver does. A body is owned by its node
 * (graph_query.c's embedded graphs): it goes with the node or its parent
 * graph. The handle a node names is the driver's own value (device code
 * passes it to cudaGraphSetConditional), made by the generated
 * cuGraphConditionalHandleCreate.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "entry.h"
#include "graph.h"
#include "init.h"

CUresult vgpu_graph_add_cond(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
			     const CUgraphEdgeData *edges, size_t ndeps,
			     CUDA_CONDITIONAL_NODE_PARAMS *p)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_ADD_COND_NODE } };
	CUgraph bodies[VGPU_MAX_COND_BODIES] = { 0 }, *array = NULL;
	struct vgpu_cond_params c = { .handle = p->handle, .type = p->type, .size = p->size };
	struct vgpu_ctx *ctx;
	uint32_t gid, made = 0;
	uint8_t *buf;
	CUresult rc = vgpu_graph_lookup(g, &ctx, &gid);

	if (rc)
		return rc;
	if (!out || (ndeps && !deps) || ndeps > VGPU_MAX_GRAPH_NODES || !p->size)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->size > VGPU_MAX_COND_BODIES)
		return CUDA_ERROR_NOT_SUPPORTED;	/* a SWITCH of more cases than carried */
	if (vgpu_graph_edges_plain(edges, ndeps))
		edges = NULL;
	for (; made < p->size && !rc; made++)
		rc = vgpu_graph_handle_new(ctx, &bodies[made], &c.body[made]);
	if (!rc && !(array = calloc(p->size, sizeof(*array))))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	buf = rc ? NULL : malloc(sizeof(c) + ndeps * (sizeof(uint32_t) + sizeof(*edges)));
	if (!rc && !buf)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc) {
		memcpy(buf, &c, sizeof(c));
		rc = vgpu_graph_node_ids(g, deps, ndeps, (uint32_t *)(buf + sizeof(c)));
	}
	if (!rc) {
		r.sqe.ctx = ctx->id;
		r.sqe.arg[0] = gid;
		r.sqe.arg[1] = ndeps;
		rc = vgpu_graph_edges_call(&r, buf, sizeof(c) + ndeps * sizeof(uint32_t), edges,
					   ndeps);
	}
	free(buf);
	if (!rc)
		rc = vgpu_graph_node_made(g, (uint32_t)r.cqe.val[0], CU_GRAPH_NODE_TYPE_CONDITIONAL,
					  out);
	/* The bodies are the node's from now on (the array with the first);
	 * a handle not given is freed. */
	for (uint32_t i = 0; i < made; i++) {
		if (!rc && !vgpu_graph_embedded_add(bodies[i], c.body[i], g, *out,
						    i ? NULL : array)) {
			array[i] = bodies[i];
			continue;
		}
		if (!rc)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		vgpu_graph_handle_free(bodies[i]);
	}
	if (rc) {
		if (array && !array[0])	/* else the first body's entry owns it */
			free(array);
	} else {
		p->phGraph_out = array;
	}
	return rc;
}
