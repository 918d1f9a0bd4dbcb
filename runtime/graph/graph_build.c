// SPDX-License-Identifier: MIT
/*
 * Graphs built node by node, as XLA builds its command buffers: the
 * generic cuGraphAddNode / cuGraphNodeSetParams / cuGraphExecNodeSetParams
 * and the typed calls for the same node kinds, cuGraphDestroyNode.
 *
 * Kernel nodes go through graph_node.c (parameters packed at the function's
 * offsets). Copies and memsets name device memory (the worker checks it is
 * the session's); their offsets are folded into the addresses here. Copies
 * with a host end go through graph_hostcopy.c (pinned pool ends by address,
 * pageable ones staged); copies with an array end are added as array
 * copies (graph_hostcopy.c), and cannot be read back or set. Child graphs and
 * events travel by id; the worker checks each one.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "entry.h"
#include "graph.h"
#include "graph_hostcopy.h"
#include "init.h"
#include "unsupported.h"

/* A 3D copy as the worker's description (graph_hostcopy.c). */
static CUresult memcpy_desc(const CUDA_MEMCPY3D *c, struct vgpu_node_params *v)
{
	return vgpu_graph_copy_desc(c, v);
}

static CUresult memset_desc(const CUDA_MEMSET_NODE_PARAMS *m, struct vgpu_node_params *v)
{
	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	v->type = CU_GRAPH_NODE_TYPE_MEMSET;
	v->dst = m->dst;
	v->dst_pitch = m->pitch;
	v->value = m->value;
	v->elem = m->elementSize;
	v->width = m->width;
	v->height = m->height;
	return CUDA_SUCCESS;
}

static CUresult graph_desc(CUgraph child, struct vgpu_node_params *v, struct vgpu_ctx *ctx)
{
	struct vgpu_ctx *cctx;
	uint32_t id;
	CUresult rc = vgpu_graph_lookup(child, &cctx, &id);

	if (rc)
		return rc == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : rc;
	if (cctx != ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	v->type = CU_GRAPH_NODE_TYPE_GRAPH;
	v->id = id;
	return CUDA_SUCCESS;
}

static CUresult event_desc(CUevent e, CUgraphNodeType type, struct vgpu_node_params *v)
{
	struct vgpu_event *ev;
	CUresult rc = vgpu_event_resolve(e, &ev);

	if (rc)
		return rc;
	v->type = type;
	v->id = ev->id;
	return CUDA_SUCCESS;
}

/* The generic parameters (not a kernel) as the worker's description. */
/* A host node runs @fn in this process at every launch: a cookie that stays. */
static CUresult host_desc(CUhostFn fn, void *data, struct vgpu_node_params *v)
{
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	v->type = CU_GRAPH_NODE_TYPE_HOST;
	v->src = vgpu_callback_keep(fn, data);
	return v->src ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult params_desc(const CUgraphNodeParams *p, struct vgpu_ctx *ctx,
			    struct vgpu_node_params *v)
{
	static const int zero[3];

	if (memcmp(p->reserved0, zero, sizeof(zero)) || p->reserved2)
		return CUDA_ERROR_INVALID_VALUE;
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (p->memcpy.flags || p->memcpy.reserved)
			return CUDA_ERROR_INVALID_VALUE;
		if (p->memcpy.copyCtx && p->memcpy.copyCtx != (CUcontext)ctx)
			return vgpu_unsupported("a graph copy node in another context");
		return memcpy_desc(&p->memcpy.copyParams, v);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		if (p->memset.ctx && p->memset.ctx != (CUcontext)ctx)
			return vgpu_unsupported("a graph memset node in another context");
		{
			CUDA_MEMSET_NODE_PARAMS m = {
				.dst = p->memset.dst, .pitch = p->memset.pitch,
				.value = p->memset.value, .elementSize = p->memset.elementSize,
				.width = p->memset.width, .height = p->memset.height,
			};

			return memset_desc(&m, v);
		}
	case CU_GRAPH_NODE_TYPE_EMPTY:
		v->type = CU_GRAPH_NODE_TYPE_EMPTY;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (p->graph.ownership)
			return vgpu_unsupported("a child graph node that takes its graph");
		return graph_desc(p->graph.graph, v, ctx);
	case CU_GRAPH_NODE_TYPE_HOST:
		return host_desc(p->host.fn, p->host.userData, v);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return event_desc(p->eventRecord.event, CU_GRAPH_NODE_TYPE_EVENT_RECORD, v);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return event_desc(p->eventWait.event, CU_GRAPH_NODE_TYPE_WAIT_EVENT, v);
	default:
		return vgpu_unsupported("a graph node of this type");
	}
}

/* Adds the node @v describes, with its dependencies. */
static CUresult add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
			 const CUgraphEdgeData *edges, size_t ndeps,
			 struct vgpu_node_params *v)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_ADD_NODE } };
	struct vgpu_ctx *ctx;
	uint32_t gid;
	uint8_t *buf;
	CUresult rc = vgpu_graph_lookup(g, &ctx, &gid);

	if (rc)
		return rc;
	if (!out || (ndeps && !deps) || ndeps > VGPU_MAX_GRAPH_NODES)
		return CUDA_ERROR_INVALID_VALUE;
	if (vgpu_graph_edges_plain(edges, ndeps))
		edges = NULL;	/* the ordinary edges: none sent */
	buf = malloc(sizeof(*v) + ndeps * (sizeof(uint32_t) + sizeof(*edges)));
	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(buf, v, sizeof(*v));
	rc = vgpu_graph_node_ids(g, deps, ndeps, (uint32_t *)(buf + sizeof(*v)));
	if (!rc) {
		r.sqe.ctx = ctx->id;
		r.sqe.arg[0] = gid;
		r.sqe.arg[1] = ndeps;
		rc = vgpu_graph_edges_call(&r, buf, sizeof(*v) + ndeps * sizeof(uint32_t), edges,
					   ndeps);
	}
	free(buf);
	if (!rc)
		rc = vgpu_graph_node_made(g, (uint32_t)r.cqe.val[0], (CUgraphNodeType)v->type, out);
	return rc;
}

/* New parameters for node @h in its graph (exec NULL) or in instance @exec. */
static CUresult set_node(CUgraphExec exec, CUgraphNode h, struct vgpu_node_params *v)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_NODE_SET } };
	struct vgpu_ctx *ctx;
	CUgraphNodeType type;
	CUgraph g;
	uint32_t id, eid;
	CUresult rc = vgpu_graph_node_lookup(h, &g, &id, &type, &ctx);

	if (!rc)
		rc = vgpu_graph_exec_in(exec, ctx, &eid);
	if (rc)
		return rc;
	if ((uint32_t)type != v->type)
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = id;
	r.sqe.arg[1] = eid;
	r.payload = v;
	r.payload_len = sizeof(*v);
	rc = vgpu_call(&r);
	/* A child graph node given a new graph holds another copy now. */
	if (!rc && !exec && type == CU_GRAPH_NODE_TYPE_GRAPH)
		vgpu_graph_embedded_drop(g, h);
	return rc;
}

/* The context a node is made in, for the typed calls that name one. */
static CUresult graph_ctx(CUgraph g, CUcontext want)
{
	struct vgpu_ctx *ctx;
	uint32_t gid;
	CUresult rc = vgpu_graph_lookup(g, &ctx, &gid);

	if (!rc && want && want != (CUcontext)ctx)
		rc = vgpu_unsupported("a graph node in another context than its graph's");
	return rc;
}

static CUresult node_ctx(CUgraphNode h, CUcontext want)
{
	struct vgpu_ctx *ctx;
	CUgraphNodeType type;
	CUgraph g;
	uint32_t id;
	CUresult rc = vgpu_graph_node_lookup(h, &g, &id, &type, &ctx);

	if (!rc && want && want != (CUcontext)ctx)
		rc = vgpu_unsupported("a graph node in another context than its graph's");
	return rc;
}

/* ---- the generic calls --------------------------------------------------- */

static CUresult add_generic(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
			    const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p)
{
	struct vgpu_node_params v = { 0 };
	struct vgpu_ctx *ctx;
	uint32_t gid;
	CUresult rc = vgpu_need_out(vgpu_enter_graph(g, &ctx, &gid), p);

	if (rc)
		return rc;
	if (p->type == CU_GRAPH_NODE_TYPE_KERNEL) {
		if (p->kernel.ctx && p->kernel.ctx != (CUcontext)ctx)
			return vgpu_unsupported("a graph kernel node in another context");
		return vgpu_graph_add_kernel(out, g, deps, edges, ndeps,
					     (const CUDA_KERNEL_NODE_PARAMS *)&p->kernel, true);
	}
	if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || p->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
		if (memcmp(p->reserved0, (const int[3]){ 0 }, sizeof(p->reserved0)) || p->reserved2)
			return CUDA_ERROR_INVALID_VALUE;
		if (p->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
			return vgpu_graph_add_mem_free(out, g, deps, edges, ndeps, p->free.dptr);
		_Static_assert(sizeof(p->alloc) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS), "v2 = v1");
		return vgpu_graph_add_mem_alloc(out, g, deps, edges, ndeps,
						(CUDA_MEM_ALLOC_NODE_PARAMS *)&p->alloc);
	}
	if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
		if (memcmp(p->reserved0, (const int[3]){ 0 }, sizeof(p->reserved0)) || p->reserved2)
			return CUDA_ERROR_INVALID_VALUE;
		if (p->conditional.ctx && p->conditional.ctx != (CUcontext)ctx)
			return vgpu_unsupported("a conditional graph node in another context");
		return vgpu_graph_add_cond(out, g, deps, edges, ndeps, &p->conditional);
	}
	if (p->type == CU_GRAPH_NODE_TYPE_MEMCPY && vgpu_graph_copy_has_array(&p->memcpy.copyParams) &&
	    !p->memcpy.flags && !p->memcpy.reserved &&
	    (!p->memcpy.copyCtx || p->memcpy.copyCtx == (CUcontext)ctx))
		return vgpu_graph_add_array_copy(out, g, deps, edges, ndeps, &p->memcpy.copyParams);
	rc = params_desc(p, ctx, &v);
	return rc ? rc : add_node(out, g, deps, edges, ndeps, &v);
}

VGPU_EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				    const CUgraphNode *dependencies, size_t numDependencies,
				    CUgraphNodeParams *nodeParams)
{
	return add_generic(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

VGPU_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
				       const CUgraphNode *dependencies,
				       const CUgraphEdgeData *dependencyData, size_t numDependencies,
				       CUgraphNodeParams *nodeParams)
{
	return add_generic(phGraphNode, hGraph, dependencies, dependencyData, numDependencies,
			   nodeParams);
}

static CUresult set_generic(CUgraphExec exec, CUgraphNode h, CUgraphNodeParams *p)
{
	struct vgpu_node_params v = { 0 };
	struct vgpu_ctx *ctx;
	CUgraphNodeType type;
	CUgraph g;
	uint32_t id;
	CUresult rc = vgpu_enter_node(h, &g, &id, &type, &ctx);

	if (rc)
		return rc;
	if (!p || p->type != type)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->type == CU_GRAPH_NODE_TYPE_KERNEL) {
		if (p->kernel.ctx && p->kernel.ctx != (CUcontext)ctx)
			return vgpu_unsupported("a graph kernel node in another context");
		return vgpu_graph_kernel_set(exec, h, (const CUDA_KERNEL_NODE_PARAMS *)&p->kernel,
					     true);
	}
	rc = params_desc(p, ctx, &v);
	return rc ? rc : set_node(exec, h, &v);
}

VGPU_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
	return set_generic(NULL, hNode, nodeParams);
}

VGPU_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
					      CUgraphNodeParams *nodeParams)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return set_generic(hGraphExec, hNode, nodeParams);
}

/* ---- the typed calls ----------------------------------------------------- */

VGPU_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					  const CUgraphNode *dependencies, size_t numDependencies,
					  const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = graph_ctx(hGraph, ctx);
	if (!rc && vgpu_graph_copy_has_array(copyParams))
		return vgpu_graph_add_array_copy(phGraphNode, hGraph, dependencies, NULL,
						 numDependencies, copyParams);
	if (!rc)
		rc = memcpy_desc(copyParams, &v);
	return rc ? rc : add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &v);
}

VGPU_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					  const CUgraphNode *dependencies, size_t numDependencies,
					  const CUDA_MEMSET_NODE_PARAMS *memsetParams,
					  CUcontext ctx)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = graph_ctx(hGraph, ctx);
	if (!rc)
		rc = memset_desc(memsetParams, &v);
	return rc ? rc : add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &v);
}

VGPU_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					 const CUgraphNode *dependencies, size_t numDependencies)
{
	struct vgpu_node_params v = { .type = CU_GRAPH_NODE_TYPE_EMPTY };
	CUresult rc = vgpu_initialized();

	return rc ? rc : add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &v);
}

VGPU_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					const CUgraphNode *dependencies, size_t numDependencies,
					const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_need_out(vgpu_initialized(), nodeParams);

	if (!rc)
		rc = host_desc(nodeParams->fn, nodeParams->userData, &v);
	return rc ? rc : add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &v);
}

static CUresult set_host(CUgraphExec exec, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_need_out(vgpu_initialized(), p);

	if (!rc)
		rc = host_desc(p->fn, p->userData, &v);
	return rc ? rc : set_node(exec, h, &v);
}

VGPU_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode,
					      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	return set_host(NULL, hNode, nodeParams);
}

VGPU_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						  const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return set_host(hGraphExec, hNode, nodeParams);
}

/* The function and data the program gave: the worker knows the cookie. */
VGPU_EXPORT CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct vgpu_cqe cqe = { 0 };
	struct vgpu_ctx *ctx;
	CUgraphNodeType type;
	CUgraph g;
	uint32_t id;
	CUresult rc = vgpu_need_out(vgpu_enter_node(hNode, &g, &id, &type, &ctx), nodeParams);

	if (!rc && type != CU_GRAPH_NODE_TYPE_HOST)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = vgpu_call5(VGPU_OP_GRAPH_NODE_OBJECT, ctx->id, 0, id, 0, 0, 0, 0, &cqe);
	if (!rc && !vgpu_callback_kept(cqe.val[0], &nodeParams->fn, &nodeParams->userData))
		rc = CUDA_ERROR_UNKNOWN;	/* a cookie this process never gave */
	return rc;
}

VGPU_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					      const CUgraphNode *dependencies,
					      size_t numDependencies, CUgraph childGraph)
{
	struct vgpu_node_params v = { 0 };
	struct vgpu_ctx *ctx;
	uint32_t gid;
	CUresult rc = vgpu_enter_graph(hGraph, &ctx, &gid);

	if (!rc)
		rc = graph_desc(childGraph, &v, ctx);
	return rc ? rc : add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &v);
}

static CUresult add_event(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			  CUevent e, CUgraphNodeType type)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = event_desc(e, type, &v);
	return rc ? rc : add_node(out, g, deps, NULL, ndeps, &v);
}

VGPU_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					       const CUgraphNode *dependencies,
					       size_t numDependencies, CUevent event)
{
	return add_event(phGraphNode, hGraph, dependencies, numDependencies, event,
			 CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

VGPU_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					     const CUgraphNode *dependencies,
					     size_t numDependencies, CUevent event)
{
	return add_event(phGraphNode, hGraph, dependencies, numDependencies, event,
			 CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

static CUresult set_memcpy(CUgraphExec exec, CUgraphNode h, const CUDA_MEMCPY3D *c, CUcontext ctx)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = node_ctx(h, ctx);
	if (!rc)
		rc = memcpy_desc(c, &v);
	return rc ? rc : set_node(exec, h, &v);
}

VGPU_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode,
						const CUDA_MEMCPY3D *nodeParams)
{
	return set_memcpy(NULL, hNode, nodeParams, NULL);
}

VGPU_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						    const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return set_memcpy(hGraphExec, hNode, copyParams, ctx);
}

static CUresult set_memset(CUgraphExec exec, CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *m,
			   CUcontext ctx)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = node_ctx(h, ctx);
	if (!rc)
		rc = memset_desc(m, &v);
	return rc ? rc : set_node(exec, h, &v);
}

VGPU_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode,
						const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	return set_memset(NULL, hNode, nodeParams, NULL);
}

VGPU_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						    const CUDA_MEMSET_NODE_PARAMS *memsetParams,
						    CUcontext ctx)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return set_memset(hGraphExec, hNode, memsetParams, ctx);
}

VGPU_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
							CUgraph childGraph)
{
	struct vgpu_node_params v = { 0 };
	struct vgpu_ctx *ctx;
	CUgraphNodeType type;
	CUgraph g;
	uint32_t id;
	CUresult rc = vgpu_enter_node(hNode, &g, &id, &type, &ctx);

	if (!rc && !hGraphExec)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_desc(childGraph, &v, ctx);
	return rc ? rc : set_node(hGraphExec, hNode, &v);
}

static CUresult set_event(CUgraphExec exec, CUgraphNode h, CUevent e, CUgraphNodeType type)
{
	struct vgpu_node_params v = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = event_desc(e, type, &v);
	return rc ? rc : set_node(exec, h, &v);
}

VGPU_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	return set_event(NULL, hNode, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

VGPU_EXPORT CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	return set_event(NULL, hNode, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

VGPU_EXPORT CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
							CUevent event)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return set_event(hGraphExec, hNode, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

VGPU_EXPORT CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
						      CUevent event)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return set_event(hGraphExec, hNode, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

/* ---- updating instances -------------------------------------------------- */

/* A node the worker names in an update's answer (id | type << 32). */
static CUgraphNode answer_node(CUgraph g, uint64_t word)
{
	CUgraphNode n = NULL;

	if (word)
		vgpu_graph_node_made(g, (uint32_t)word, (CUgraphNodeType)(word >> 32), &n);
	return n;
}

static CUresult exec_update(CUgraphExec exec, CUgraph g, CUgraphExecUpdateResult *result,
			    CUgraphNode *error_node, CUgraphNode *error_from)
{
	struct vgpu_ctx *ctx, *ectx;
	struct vgpu_cqe cqe = { 0 };
	uint32_t gid, eid;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_graph_exec_lookup(exec, &ectx, &eid);
	if (!rc)
		rc = vgpu_graph_lookup(g, &ctx, &gid);
	if (rc)
		return rc;
	if (ctx != ectx)
		return CUDA_ERROR_INVALID_CONTEXT;
	rc = vgpu_call5(VGPU_OP_GRAPH_EXEC_UPDATE, ctx->id, 0, eid, gid, 0, 0, 0, &cqe);
	if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
		return rc;
	*result = (CUgraphExecUpdateResult)cqe.val[0];
	if (error_node)
		*error_node = answer_node(g, cqe.val[1]);
	if (error_from)
		*error_from = answer_node(g, cqe.val[2]);
	return rc;
}

VGPU_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
					  CUgraphExecUpdateResultInfo *resultInfo)
{
	CUgraphExecUpdateResult result;
	CUresult rc;

	if (!resultInfo)
		return CUDA_ERROR_INVALID_VALUE;
	rc = exec_update(hGraphExec, hGraph, &result, &resultInfo->errorNode,
			 &resultInfo->errorFromNode);
	if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
		resultInfo->result = result;
	return rc;
}

VGPU_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
				       CUgraphNode *hErrorNode_out,
				       CUgraphExecUpdateResult *updateResult_out)
{
	CUgraphExecUpdateResult result;
	CUresult rc;

	if (!updateResult_out)
		return CUDA_ERROR_INVALID_VALUE;
	rc = exec_update(hGraphExec, hGraph, &result, hErrorNode_out, NULL);
	if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
		*updateResult_out = result;
	return rc;
}

/* ---- removing nodes ------------------------------------------------------ */

VGPU_EXPORT CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe;
	CUgraphNodeType type;
	CUgraph g;
	uint32_t id;
	CUresult rc = vgpu_enter_node(hNode, &g, &id, &type, &ctx);

	if (!rc)
		rc = vgpu_call5(VGPU_OP_GRAPH_DESTROY_NODE, ctx->id, 0, id, 0, 0, 0, 0, &cqe);
	if (!rc) {
		vgpu_graph_embedded_drop(g, hNode);
		vgpu_graph_mem_drop(g, hNode);
		vgpu_graph_node_forget(hNode);
	}
	return rc;
}
