// SPDX-License-Identifier: MIT
/*
 * Graph queries and edits: a node's dependencies and dependents, a graph's
 * edges, removing edges, a capture's dependencies replaced, what a child
 * graph or event node holds, clones and their nodes, kernel node
 * attributes and copy node parameters.
 *
 * Nodes travel as the ids exec_graph_node.c issues, graphs and events as
 * the client's ids. A child graph node owns a graph of its own (the driver
 * copied the one it was given): the first time the client asks for it, it
 * joins the session's graphs under an id the client sent, marked as the
 * node's, so that destroying it is only forgetting it and it is forgotten
 * with its node or its parent graph.
 */
#include <stdlib.h>
#include <string.h>

#include "array_state.h"
#include "log.h"
#include "worker.h"

/* The data of a graph entry that a child graph node owns. */
struct embedded {
	uint32_t parent;	/* the graph holding the node */
	uint32_t node;		/* the node's id */
};

void graph_embedded_forget(struct worker *w, uint32_t parent, uint32_t node)
{
	struct obj_entry *e;
	uint32_t i;

	obj_for_each(&w->graphs, i, e) {
		struct embedded *em = e->data;

		if (!em || em->parent != parent || (node && em->node != node))
			continue;
		graph_embedded_forget(w, i, 0);	/* its own children first */
		graph_nodes_forget(i);
		obj_remove(&w->graphs, i);
	}
}

int graph_embedded_bind(struct worker *w, uint32_t id, CUgraph child, uint32_t parent,
			uint32_t node, uint64_t ctx)
{
	struct embedded *em = malloc(sizeof(*em));

	if (!em || !id || id >= OBJ_MAX_ID || obj_get(&w->graphs, id)) {
		free(em);
		return -1;
	}
	*em = (struct embedded){ .parent = parent, .node = node };
	return obj_insert(&w->graphs, id, child, ctx, em) ? -1 : 0;
}

/* ---- edges ---------------------------------------------------------------- */

static CUgraphNode from_buf[VGPU_MAX_GRAPH_EDGES], to_buf[VGPU_MAX_GRAPH_EDGES];
static CUgraphEdgeData data_buf[VGPU_MAX_GRAPH_EDGES];

/* One edge as the client reads it. */
static CUresult edge_out(struct worker *w, uint32_t graph, CUgraphNode from, CUgraphNode to,
			 const CUgraphEdgeData *d, struct vgpu_graph_edge *out)
{
	CUgraphNodeType ft = CU_GRAPH_NODE_TYPE_EMPTY, tt = CU_GRAPH_NODE_TYPE_EMPTY;
	CUresult rc = CUDA_SUCCESS;

	_Static_assert(sizeof(out->data) == sizeof(*d), "edge data layout");
	memset(out, 0, sizeof(*out));
	if (from && !(rc = graph_node_type(w, from, &ft)) &&
	    !(out->from = graph_node_id(from, graph)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc && to && !(rc = graph_node_type(w, to, &tt)) &&
	    !(out->to = graph_node_id(to, graph)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	out->from_type = ft;
	out->to_type = tt;
	memcpy(out->data, d, sizeof(*d));
	return rc;
}

/* arg0 graph, arg1 node (0: the graph's edges), arg2 1: dependents. */
static enum op_status op_edges(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	struct vgpu_graph_edge *out = (struct vgpu_graph_edge *)call->reply;
	CUgraphNode node = NULL;
	uint32_t graph = (uint32_t)s->arg[0];
	size_t n = 0;
	CUresult rc = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	_Static_assert(VGPU_MAX_GRAPH_EDGES * sizeof(*out) <= (64u << 10), "edges fit a slot");
	if (!rc && s->arg[1])
		rc = graph_live_node(w, s->arg[1], &node, &graph);
	if (!rc && (graph != (uint32_t)s->arg[0] || s->arg[2] > 1 ||
		    w->ring.reply_slot_size < VGPU_MAX_GRAPH_EDGES * sizeof(*out)))
		rc = CUDA_ERROR_INVALID_VALUE;
	/* Counted first: the driver fills no more than it is given room for. */
	if (!rc)
		rc = !node ? w->B.cuGraphGetEdges_v2(g->obj, NULL, NULL, NULL, &n)
		   : s->arg[2] ? w->B.cuGraphNodeGetDependentNodes_v2(node, NULL, NULL, &n)
			       : w->B.cuGraphNodeGetDependencies_v2(node, NULL, NULL, &n);
	if (!rc && n > VGPU_MAX_GRAPH_EDGES) {
		vlog_warn("session %llu: %zu graph edges asked at once: up to %u are given",
			  (unsigned long long)w->session_id, n, VGPU_MAX_GRAPH_EDGES);
		rc = CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!rc && n)
		rc = !node ? w->B.cuGraphGetEdges_v2(g->obj, from_buf, to_buf, data_buf, &n)
		   : s->arg[2] ? w->B.cuGraphNodeGetDependentNodes_v2(node, to_buf, data_buf, &n)
			       : w->B.cuGraphNodeGetDependencies_v2(node, from_buf, data_buf, &n);
	for (size_t i = 0; !rc && i < n; i++)
		rc = edge_out(w, graph, node && s->arg[2] ? node : from_buf[i],
			      node && !s->arg[2] ? node : to_buf[i], &data_buf[i], &out[i]);
	call->cqe->result = rc;
	call->cqe->val[0] = rc ? 0 : n;
	call->cqe->val[2] = rc ? 0 : n * sizeof(*out);
	return OP_DONE;
}

static enum op_status op_remove_deps(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	const uint32_t *ids = call->payload;
	uint64_t n = s->arg[1];
	CUresult rc = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	if (!rc && (!n || n > VGPU_MAX_GRAPH_EDGES || s->arg[2] > 1 ||
		    call->len != n * (2 * sizeof(uint32_t) + (s->arg[2] ? sizeof(*data_buf) : 0))))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_node_list(ids, n, (uint32_t)s->arg[0], from_buf);
	if (!rc)
		rc = graph_node_list(ids + n, n, (uint32_t)s->arg[0], to_buf);
	if (!rc && s->arg[2])
		rc = graph_edge_list((const uint8_t *)(ids + 2 * n), n, data_buf);
	if (!rc)
		rc = w->B.cuGraphRemoveDependencies_v2(g->obj, from_buf, to_buf,
						       s->arg[2] ? data_buf : NULL, n);
	call->cqe->result = rc;
	return OP_DONE;
}

/*
 * The dependencies of a capture replaced or added to. The nodes must be
 * of the graph the stream records into, which the session must know (a
 * capture into one of its graphs: the only way its nodes have ids).
 */
static enum op_status op_update_capture_deps(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = s->arg[3] ? obj_get(&w->graphs, (uint32_t)s->arg[3]) : NULL;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	uint64_t n = s->arg[1];
	CUgraph into = NULL;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (!rc && (n > VGPU_MAX_GRAPH_EDGES || s->arg[2] > 1 || s->arg[0] > UINT32_MAX ||
		    (n && !g) || (!n && s->arg[3]) ||
		    call->len != n * (sizeof(uint32_t) + (s->arg[2] ? sizeof(*data_buf) : 0))))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuStreamGetCaptureInfo_v3(st, &cs, NULL, &into, NULL, NULL, NULL);
	if (!rc && cs != CU_STREAM_CAPTURE_STATUS_ACTIVE)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	if (!rc && g && g->obj != into)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_node_list(call->payload, n, (uint32_t)s->arg[3], from_buf);
	if (!rc && s->arg[2])
		rc = graph_edge_list((const uint8_t *)call->payload + n * sizeof(uint32_t), n,
				     data_buf);
	if (!rc)
		rc = w->B.cuStreamUpdateCaptureDependencies_v2(st, n ? from_buf : NULL,
							       s->arg[2] ? data_buf : NULL, n,
							       (unsigned int)s->arg[0]);
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- what a node holds ---------------------------------------------------- */

/* A child graph node's graph, made one of the session's under the id the
 * client sent if it is not yet. */
static CUresult child_graph(struct worker *w, CUgraphNode node, uint32_t parent, uint32_t node_id,
			    uint64_t fresh, struct vgpu_cqe *cqe)
{
	struct embedded *em;
	CUgraph child = NULL;
	CUresult rc = w->B.cuGraphChildGraphNodeGetGraph(node, &child);

	if (rc)
		return rc;
	if ((cqe->val[0] = obj_id_of(&w->graphs, child)))
		return CUDA_SUCCESS;
	if (!fresh || fresh >= OBJ_MAX_ID || obj_get(&w->graphs, (uint32_t)fresh))
		return CUDA_ERROR_INVALID_VALUE;
	if (!(em = malloc(sizeof(*em))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	*em = (struct embedded){ .parent = parent, .node = node_id };
	if (obj_insert(&w->graphs, (uint32_t)fresh, child, obj_get(&w->graphs, parent)->aux, em))
		return CUDA_ERROR_OUT_OF_MEMORY;
	cqe->val[0] = fresh;
	cqe->val[1] = 1;
	return CUDA_SUCCESS;
}

static enum op_status op_node_object(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	CUgraphNode node;
	CUevent ev = NULL;
	uint32_t graph;
	CUresult rc = graph_live_node(w, s->arg[0], &node, &graph);

	if (!rc)
		rc = graph_node_type(w, node, &t);
	if (!rc && t == CU_GRAPH_NODE_TYPE_GRAPH)
		rc = child_graph(w, node, graph, (uint32_t)s->arg[0], s->arg[1], call->cqe);
	else if (!rc && t == CU_GRAPH_NODE_TYPE_EVENT_RECORD)
		rc = w->B.cuGraphEventRecordNodeGetEvent(node, &ev);
	else if (!rc && t == CU_GRAPH_NODE_TYPE_WAIT_EVENT)
		rc = w->B.cuGraphEventWaitNodeGetEvent(node, &ev);
	else if (!rc && t == CU_GRAPH_NODE_TYPE_HOST)	/* its callback's cookie */
		rc = (call->cqe->val[0] = graph_host_cookie(w, node)) ? CUDA_SUCCESS
								   : CUDA_ERROR_INVALID_VALUE;
	else if (!rc)
		rc = CUDA_ERROR_INVALID_VALUE;
	/* An event the session destroyed since: it has no id to give. */
	if (!rc && ev && !(call->cqe->val[0] = obj_id_of(&w->events, ev)))
		rc = CUDA_ERROR_INVALID_HANDLE;
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- clones --------------------------------------------------------------- */

static enum op_status op_clone(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	CUgraph clone = NULL;
	CUresult rc = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	if (!rc && (!s->arg[1] || s->arg[1] >= OBJ_MAX_ID ||
		    obj_get(&w->graphs, (uint32_t)s->arg[1])))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuGraphClone(&clone, g->obj);
	if (!rc && obj_insert(&w->graphs, (uint32_t)s->arg[1], clone, g->aux, NULL)) {
		w->B.cuGraphDestroy(clone);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_node_in_clone(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *clone = obj_get(&w->graphs, (uint32_t)s->arg[1]);
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	CUgraphNode node, found = NULL;
	uint32_t graph, id = 0;
	CUresult rc = graph_live_node(w, s->arg[0], &node, &graph);

	if (!rc && !clone)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuGraphNodeFindInClone(&found, node, clone->obj);
	if (!rc)
		rc = graph_node_type(w, found, &t);
	if (!rc && !(id = graph_node_id(found, (uint32_t)s->arg[1])))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	call->cqe->result = rc;
	call->cqe->val[0] = rc ? 0 : id | (uint64_t)t << 32;
	return OP_DONE;
}

/* ---- kernel node attributes ---------------------------------------------- */

/* The attributes whose value holds an event (its id on the wire). */
static CUevent *attr_event(CUlaunchAttributeID id, CUkernelNodeAttrValue *v)
{
	if (id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
		return &v->programmaticEvent.event;
	if (id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
		return &v->launchCompletionEvent.event;
	return NULL;
}

static CUresult attr_in(struct worker *w, CUlaunchAttributeID id, CUkernelNodeAttrValue *v)
{
	const CUaccessPolicyWindow *apw = &v->accessPolicyWindow;
	CUevent *ev = attr_event(id, v);
	struct obj_entry *e;

	if (id == CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW && apw->num_bytes &&
	    !worker_addr_ok(w, (uint64_t)(uintptr_t)apw->base_ptr, apw->num_bytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (!ev || !*ev)	/* id 0: no event */
		return CUDA_SUCCESS;
	e = (uintptr_t)*ev < OBJ_MAX_ID ? obj_get(&w->events, (uint32_t)(uintptr_t)*ev) : NULL;
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	*ev = e->obj;
	return CUDA_SUCCESS;
}

static enum op_status op_kernel_attr(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUlaunchAttributeID id = (CUlaunchAttributeID)s->arg[1];
	CUkernelNodeAttrValue v;
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	CUgraphNode node;
	uint32_t graph;
	CUevent *ev;
	CUresult rc = graph_live_node(w, s->arg[0], &node, &graph);

	if (!rc && (s->arg[1] > INT32_MAX || s->arg[2] > 1 ||
		    call->len != (s->arg[2] ? sizeof(v) : 0) ||
		    w->ring.reply_slot_size < sizeof(v)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuGraphNodeGetType(node, &t);
	if (!rc && t != CU_GRAPH_NODE_TYPE_KERNEL)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && s->arg[2]) {
		memcpy(&v, call->payload, sizeof(v));
		rc = attr_in(w, id, &v);
		if (!rc)
			rc = w->B.cuGraphKernelNodeSetAttribute(node, id, &v);
	} else if (!rc) {
		memset(&v, 0, sizeof(v));
		rc = w->B.cuGraphKernelNodeGetAttribute(node, id, &v);
		/* An event the session no longer names goes back as none. */
		if (!rc && (ev = attr_event(id, &v)))
			*ev = (CUevent)(uintptr_t)(*ev ? obj_id_of(&w->events, *ev) : 0);
		if (!rc)
			memcpy(call->reply, &v, sizeof(v));
		call->cqe->val[2] = rc ? 0 : sizeof(v);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- copy node parameters ------------------------------------------------- */

/* One end of a copy as the client may read it: device memory, pinned
 * memory from the session's pool (the same address in the client), or an
 * array of the session's (*array: its id in place of the handle). */
static CUresult copy_end(struct worker *w, CUmemorytype type, const void *host, size_t bytes,
			 CUarray *array)
{
	uint32_t id;

	if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED)
		return CUDA_SUCCESS;
	if (type == CU_MEMORYTYPE_ARRAY && (id = array_id_of(w, *array))) {
		*array = (CUarray)(uintptr_t)id;
		return CUDA_SUCCESS;
	}
	/* The worker's own buffers (and arrays) are not the client's. */
	if (type == CU_MEMORYTYPE_HOST &&
	    hostpool_contains(&w->pool, (uint64_t)(uintptr_t)host, bytes ? bytes : 1))
		return CUDA_SUCCESS;
	vlog_warn("session %llu: a copy node with host memory outside the pinned pool or an "
		  "array: its parameters cannot be given", (unsigned long long)w->session_id);
	return CUDA_ERROR_NOT_SUPPORTED;
}

static enum op_status op_memcpy_get(struct worker *w, struct op_call *call)
{
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	CUDA_MEMCPY3D c;
	CUgraphNode node;
	uint32_t graph;
	CUresult rc = graph_live_node(w, call->sqe->arg[0], &node, &graph);

	if (!rc && w->ring.reply_slot_size < sizeof(c))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_node_type(w, node, &t);
	if (!rc && t != CU_GRAPH_NODE_TYPE_MEMCPY)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && graph_staged_copy(w, node))	/* the runtime names its staging block */
		node = graph_staged_copy(w, node);
	if (!rc) {
		memset(&c, 0, sizeof(c));
		rc = w->B.cuGraphMemcpyNodeGetParams(node, &c);
	}
	if (!rc)
		rc = copy_end(w, c.srcMemoryType, c.srcHost, c.WidthInBytes, &c.srcArray);
	if (!rc)
		rc = copy_end(w, c.dstMemoryType, c.dstHost, c.WidthInBytes, &c.dstArray);
	if (!rc) {
		if (c.srcMemoryType != CU_MEMORYTYPE_ARRAY)
			c.srcArray = NULL;
		if (c.dstMemoryType != CU_MEMORYTYPE_ARRAY)
			c.dstArray = NULL;
		c.reserved0 = c.reserved1 = NULL;
		memcpy(call->reply, &c, sizeof(c));
	}
	call->cqe->result = rc;
	call->cqe->val[2] = rc ? 0 : sizeof(c);
	return OP_DONE;
}

const struct op_desc exec_graph_query_ops[] = {
	OP(GRAPH_EDGES, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_edges),
	OP(GRAPH_REMOVE_DEPENDENCIES, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_remove_deps),
	OP(STREAM_UPDATE_CAPTURE_DEPS, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_update_capture_deps),
	OP(GRAPH_NODE_OBJECT, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_node_object),
	OP(GRAPH_CLONE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_clone),
	OP(GRAPH_NODE_IN_CLONE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_node_in_clone),
	OP(KERNEL_NODE_ATTR, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_kernel_attr),
	OP(MEMCPY_NODE_GET, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_memcpy_get),
	{ 0 },
};
