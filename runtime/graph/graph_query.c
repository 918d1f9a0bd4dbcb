// SPDX-License-Identifier: MIT
/*
 * Graph queries and edits: a node's dependencies and dependents, a graph's
 * edges, removing edges, a capture's dependencies replaced, what a child
 * graph or event node holds, clones and their nodes, kernel node
 * attributes, copy node parameters. The worker answers with node ids
 * (daemon/worker/exec/exec_graph_query.c); their handles are the ones the
 * program already has for them, made now for nodes it never saw.
 *
 * A child graph node owns a copy of the graph it was given: the first time
 * the program asks for it, the handle made here is the graph's from then
 * on, and goes (with its nodes) when its node or its parent graph does, as
 * the driver's does. Each call's ABI variants are generated (calls.def:
 * hand); the older prototypes without edge data are here.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "calls_hand_gen.h"
#include "client.h"
#include "entry.h"
#include "forward.h"
#include "graph.h"
#include "graph_hostcopy.h"
#include "init.h"

/* ---- graphs child graph nodes own ----------------------------------------- */

struct embedded {
	CUgraph graph;
	uint32_t id;
	CUgraph parent;
	CUgraphNode node;
	void *owned;		/* freed with the entry (a conditional node's body array) */
	struct embedded *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct embedded *embedded;

void vgpu_graph_embedded_drop(CUgraph parent, CUgraphNode node)
{
	struct embedded **p, *e, *gone = NULL;

	pthread_mutex_lock(&lock);
	for (p = &embedded; (e = *p);) {
		if (e->parent != parent || (node && e->node != node)) {
			p = &e->next;
			continue;
		}
		*p = e->next;
		e->next = gone;
		gone = e;
	}
	pthread_mutex_unlock(&lock);
	while ((e = gone)) {
		gone = e->next;
		vgpu_graph_embedded_drop(e->graph, NULL);	/* its own children */
		vgpu_graph_handle_free(e->graph);
		free(e->owned);
		free(e);
	}
}

void vgpu_graph_embedded_forget(CUgraph g)
{
	struct embedded **p, *e;

	pthread_mutex_lock(&lock);
	for (p = &embedded; (e = *p); p = &e->next)
		if (e->graph == g) {
			*p = e->next;
			free(e->owned);
			free(e);
			break;
		}
	pthread_mutex_unlock(&lock);
}

int vgpu_graph_embedded_add(CUgraph graph, uint32_t id, CUgraph parent, CUgraphNode node,
			    void *owned)
{
	struct embedded *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	*e = (struct embedded){ .graph = graph, .id = id, .parent = parent, .node = node,
				  .owned = owned };
	pthread_mutex_lock(&lock);
	e->next = embedded;
	embedded = e;
	pthread_mutex_unlock(&lock);
	return 0;
}

static CUgraph embedded_find(uint32_t id)
{
	struct embedded *e;
	CUgraph g = NULL;

	pthread_mutex_lock(&lock);
	for (e = embedded; e && !g; e = e->next)
		if (e->id == id)
			g = e->graph;
	pthread_mutex_unlock(&lock);
	return g;
}

/* ---- edges ---------------------------------------------------------------- */

/*
 * Edges the worker lists: of graph @g (node NULL), or the dependencies
 * (@dependents false) or dependents of @node. @from / @to / @data take the
 * ends and edge data (each may be NULL); *count says how many fit, and is
 * set to how many there are, as the driver does.
 */
static CUresult edges(CUgraph g, CUgraphNode node, bool dependents, CUgraphNode *from,
		      CUgraphNode *to, CUgraphEdgeData *data, size_t *count)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_EDGES } };
	struct vgpu_graph_edge *got;
	struct vgpu_ctx *ctx;
	CUgraphNodeType type;
	uint32_t gid, nid = 0;
	size_t n, want;
	CUresult rc = vgpu_initialized();

	if (!rc && node)
		rc = vgpu_graph_node_lookup(node, &g, &nid, &type, &ctx);
	if (!rc)
		rc = vgpu_graph_lookup(g, &ctx, &gid);
	if (rc)
		return rc;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = gid;
	r.sqe.arg[1] = nid;
	r.sqe.arg[2] = dependents;
	got = vgpu_call_records(&r, sizeof(*got), VGPU_MAX_GRAPH_EDGES, &n, &rc);
	want = *count;
	for (size_t i = 0; !rc && i < want && (from || to || data); i++) {
		CUgraphNode a = NULL, b = NULL;

		if (i < n && got[i].from)
			rc = vgpu_graph_node_made(g, got[i].from, got[i].from_type, &a);
		if (!rc && i < n && got[i].to)
			rc = vgpu_graph_node_made(g, got[i].to, got[i].to_type, &b);
		if (from)
			from[i] = a;
		if (to)
			to[i] = b;
		if (data && i < n)
			memcpy(&data[i], got[i].data, sizeof(data[i]));
		else if (data)
			memset(&data[i], 0, sizeof(data[i]));
	}
	/* Edges of a kind given without their data: the driver says so. */
	for (size_t i = 0; !rc && !data && (from || to) && i < n && i < want; i++)
		if (!vgpu_graph_edges_plain((const CUgraphEdgeData *)got[i].data, 1))
			rc = CUDA_ERROR_LOSSY_QUERY;
	free(got);
	/* Room for more: the rest NULL, and the count corrected. */
	if ((!rc || rc == CUDA_ERROR_LOSSY_QUERY) && (!(from || to || data) || want > n))
		*count = n;
	return rc;
}

CUresult vgpu_hand_cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to,
				   CUgraphEdgeData *data, size_t *count)
{
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	if (!from != !to)
		return CUDA_ERROR_INVALID_VALUE;
	return edges(g, NULL, false, from, to, data, count);
}

VGPU_EXPORT CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
				     size_t *numEdges)
{
	return vgpu_hand_cuGraphGetEdges(hGraph, from, to, NULL, numEdges);
}

/* A node's dependencies or (@dependents) dependent nodes: the other end
 * of its incoming or outgoing edges, with their data where asked. */
static CUresult node_edges(CUgraphNode h, bool dependents, CUgraphNode *nodes,
			   CUgraphEdgeData *data, size_t *count)
{
	if (!nodes)
		data = NULL;
	if (dependents)
		return edges(NULL, h, true, NULL, nodes, data, count);
	return edges(NULL, h, false, nodes, NULL, data, count);
}

CUresult vgpu_hand_cuGraphNodeGetDependencies(CUgraphNode h, CUgraphNode *deps,
					      CUgraphEdgeData *data, size_t *count)
{
	return node_edges(h, false, deps, data, count);
}

VGPU_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
						size_t *numDependencies)
{
	return node_edges(hNode, false, dependencies, NULL, numDependencies);
}

CUresult vgpu_hand_cuGraphNodeGetDependentNodes(CUgraphNode h, CUgraphNode *deps,
						CUgraphEdgeData *data, size_t *count)
{
	return node_edges(h, true, deps, data, count);
}

VGPU_EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
						  size_t *numDependentNodes)
{
	return node_edges(hNode, true, dependentNodes, NULL, numDependentNodes);
}

/*
 * Node handles (of graph @g) and edge data as one payload: u32 ids[n] for
 * each of the @lists arrays, then the edge data when not all plain. *with
 * says whether edge data are in.
 */
static CUresult node_payload(CUgraph g, const CUgraphNode *const *lists, int nlists, size_t n,
			     const CUgraphEdgeData *data, uint32_t **out, size_t *len, bool *with)
{
	uint32_t *ids;
	CUresult rc = CUDA_SUCCESS;

	*with = !vgpu_graph_edges_plain(data, n);
	*len = n * (nlists * sizeof(*ids) + (*with ? sizeof(*data) : 0));
	ids = malloc(*len ? *len : 1);
	if (!ids)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (int l = 0; !rc && l < nlists; l++)
		rc = vgpu_graph_node_ids(g, lists[l], n, ids + l * n);
	if (rc) {
		free(ids);
		return rc;
	}
	if (*with)
		memcpy(ids + nlists * n, data, n * sizeof(*data));
	*out = ids;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuGraphRemoveDependencies(CUgraph g, const CUgraphNode *from,
					     const CUgraphNode *to, const CUgraphEdgeData *data,
					     size_t n)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_REMOVE_DEPENDENCIES } };
	const CUgraphNode *lists[2] = { from, to };
	struct vgpu_ctx *ctx;
	uint32_t gid, *ids;
	size_t len;
	bool with;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_graph_lookup(g, &ctx, &gid);
	if (rc)
		return rc;
	if (!n)
		return CUDA_SUCCESS;
	if (!from || !to || n > VGPU_MAX_GRAPH_EDGES)
		return CUDA_ERROR_INVALID_VALUE;
	rc = node_payload(g, lists, 2, n, data, &ids, &len, &with);
	if (rc)
		return rc;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = gid;
	r.sqe.arg[1] = n;
	r.sqe.arg[2] = with;
	r.payload = ids;
	r.payload_len = len;
	rc = len <= vgpu_payload_max() ? vgpu_call(&r) : CUDA_ERROR_NOT_SUPPORTED;
	free(ids);
	return rc;
}

VGPU_EXPORT CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from,
					       const CUgraphNode *to, size_t numDependencies)
{
	return vgpu_hand_cuGraphRemoveDependencies(hGraph, from, to, NULL, numDependencies);
}

/* ---- a capture's dependencies --------------------------------------------- */

/*
 * The nodes must be of the graph the stream records into; the program
 * holds handles of that graph's nodes only when it made the graph (a
 * capture into it), so their graph is the first node's, and the worker
 * checks it is the capture's.
 */
CUresult vgpu_hand_cuStreamUpdateCaptureDependencies(bool ptds, CUstream h, CUgraphNode *deps,
						     const CUgraphEdgeData *data, size_t n,
						     unsigned int flags)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_STREAM_UPDATE_CAPTURE_DEPS } };
	const CUgraphNode *lists[1] = { deps };
	struct vgpu_ctx *ctx, *gctx;
	CUgraphNodeType type;
	CUgraph g = NULL;
	uint32_t sid, gid = 0, nid, *ids = NULL;
	size_t len = 0;
	bool with = false;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_stream_resolve(h, ptds, &ctx, &sid);
	if (rc)
		return rc;
	if ((n && !deps) || n > VGPU_MAX_GRAPH_EDGES)
		return CUDA_ERROR_INVALID_VALUE;
	if (n && (vgpu_graph_node_lookup(deps[0], &g, &nid, &type, &gctx) ||
		  vgpu_graph_lookup(g, &gctx, &gid)))
		return CUDA_ERROR_INVALID_VALUE;
	if (n && (rc = node_payload(g, lists, 1, n, data, &ids, &len, &with)))
		return rc;
	r.sqe.ctx = ctx->id;
	r.sqe.stream = sid;
	r.sqe.arg[0] = flags;
	r.sqe.arg[1] = n;
	r.sqe.arg[2] = with;
	r.sqe.arg[3] = gid;
	r.payload = ids;
	r.payload_len = len;
	rc = len <= vgpu_payload_max() ? vgpu_call(&r) : CUDA_ERROR_NOT_SUPPORTED;
	free(ids);
	return rc;
}

VGPU_EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
						       size_t numDependencies, unsigned int flags)
{
	return vgpu_hand_cuStreamUpdateCaptureDependencies(false, hStream, dependencies, NULL,
							   numDependencies, flags);
}

VGPU_EXPORT CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream,
							    CUgraphNode *dependencies,
							    size_t numDependencies,
							    unsigned int flags)
{
	return vgpu_hand_cuStreamUpdateCaptureDependencies(true, hStream, dependencies, NULL,
							   numDependencies, flags);
}

/* ---- what a node holds ---------------------------------------------------- */

/* A node of type @want, checked, with its graph, id and context. */
static CUresult typed_node(CUgraphNode h, CUgraphNodeType want, CUgraph *g, uint32_t *id,
			   struct vgpu_ctx **ctx)
{
	CUgraphNodeType type;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_graph_node_lookup(h, g, id, &type, ctx);
	if (!rc && type != want)
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult vgpu_hand_cuGraphChildGraphNodeGetGraph(CUgraphNode h, CUgraph *out)
{
	struct embedded *e;
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe = { 0 };
	CUgraph g, fresh = NULL;
	uint32_t nid, fid = 0;
	CUresult rc = vgpu_need_out(typed_node(h, CU_GRAPH_NODE_TYPE_GRAPH, &g, &nid, &ctx), out);

	if (rc)
		return rc;
	if (!(e = calloc(1, sizeof(*e))) || vgpu_graph_handle_new(ctx, &fresh, &fid)) {
		free(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = vgpu_call5(VGPU_OP_GRAPH_NODE_OBJECT, ctx->id, 0, nid, fid, 0, 0, 0, &cqe);
	if (!rc && cqe.val[1] && cqe.val[0] == fid) {	/* the graph's handle from now on */
		*e = (struct embedded){ .graph = fresh, .id = fid, .parent = g, .node = h };
		pthread_mutex_lock(&lock);
		e->next = embedded;
		embedded = e;
		pthread_mutex_unlock(&lock);
		*out = fresh;
		return CUDA_SUCCESS;
	}
	free(e);
	vgpu_graph_handle_free(fresh);
	if (!rc && (cqe.val[1] || !(*out = embedded_find((uint32_t)cqe.val[0]))))
		rc = CUDA_ERROR_UNKNOWN;	/* a graph the program cannot have */
	return rc;
}

static CUresult node_event(CUgraphNode h, CUgraphNodeType type, CUevent *out)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe = { 0 };
	CUgraph g;
	uint32_t nid;
	CUresult rc = vgpu_need_out(typed_node(h, type, &g, &nid, &ctx), out);

	if (rc)
		return rc;
	rc = vgpu_call5(VGPU_OP_GRAPH_NODE_OBJECT, ctx->id, 0, nid, 0, 0, 0, 0, &cqe);
	if (!rc && !(*out = vgpu_event_by_id((uint32_t)cqe.val[0])))
		rc = CUDA_ERROR_INVALID_HANDLE;	/* destroyed meanwhile */
	return rc;
}

CUresult vgpu_hand_cuGraphEventRecordNodeGetEvent(CUgraphNode h, CUevent *out)
{
	return node_event(h, CU_GRAPH_NODE_TYPE_EVENT_RECORD, out);
}

CUresult vgpu_hand_cuGraphEventWaitNodeGetEvent(CUgraphNode h, CUevent *out)
{
	return node_event(h, CU_GRAPH_NODE_TYPE_WAIT_EVENT, out);
}

/* ---- clones --------------------------------------------------------------- */

CUresult vgpu_hand_cuGraphClone(CUgraph *out, CUgraph orig)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe;
	CUgraph clone;
	uint32_t gid, cid;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_graph_lookup(orig, &ctx, &gid);
	if (rc)
		return rc;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_graph_handle_new(ctx, &clone, &cid);
	if (!rc)
		rc = vgpu_call5(VGPU_OP_GRAPH_CLONE, ctx->id, 0, gid, cid, 0, 0, 0, &cqe);
	if (rc) {
		vgpu_graph_handle_free(clone);
		return rc;
	}
	*out = clone;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode orig, CUgraph clone)
{
	struct vgpu_ctx *ctx, *cctx;
	struct vgpu_cqe cqe;
	CUgraphNodeType type;
	CUgraph g;
	uint32_t nid, cid;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_graph_node_lookup(orig, &g, &nid, &type, &ctx);
	if (!rc)
		rc = vgpu_graph_lookup(clone, &cctx, &cid);
	if (rc)
		return rc == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : rc;
	if (!out || cctx != ctx)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(VGPU_OP_GRAPH_NODE_IN_CLONE, ctx->id, 0, nid, cid, 0, 0, 0, &cqe);
	if (!rc)
		rc = vgpu_graph_node_made(clone, (uint32_t)cqe.val[0],
					  (CUgraphNodeType)(cqe.val[0] >> 32), out);
	return rc;
}

/* ---- kernel node attributes ----------------------------------------------- */

/* The attributes whose value holds an event: it travels as its id. */
static CUevent *attr_event(CUkernelNodeAttrID id, CUkernelNodeAttrValue *v)
{
	if (id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
		return &v->programmaticEvent.event;
	if (id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
		return &v->launchCompletionEvent.event;
	return NULL;
}

static CUresult kernel_attr(CUgraphNode h, CUkernelNodeAttrID id, CUkernelNodeAttrValue *v,
			    bool set)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_KERNEL_NODE_ATTR } };
	struct vgpu_event *ev;
	struct vgpu_ctx *ctx;
	CUevent *e;
	CUgraph g;
	uint32_t nid;
	CUresult rc = typed_node(h, CU_GRAPH_NODE_TYPE_KERNEL, &g, &nid, &ctx);

	if (rc)
		return rc;
	if (!v || (int)id < 0)
		return CUDA_ERROR_INVALID_VALUE;
	e = attr_event(id, v);
	if (set && e && *e) {	/* NULL: none (id 0) */
		rc = vgpu_event_resolve(*e, &ev);
		if (rc)
			return rc;
		*e = (CUevent)(uintptr_t)ev->id;
	}
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = nid;
	r.sqe.arg[1] = (uint32_t)id;
	r.sqe.arg[2] = set;
	if (set) {
		r.payload = v;
		r.payload_len = sizeof(*v);
	} else {
		r.reply = v;
		r.reply_cap = sizeof(*v);
	}
	rc = vgpu_call(&r);
	if (!rc && !set && r.cqe.val[2] != sizeof(*v))
		rc = CUDA_ERROR_UNKNOWN;	/* a worker that answered no value */
	if (!rc && !set && e)
		*e = vgpu_event_by_id((uint32_t)(uintptr_t)*e);
	return rc;
}

CUresult vgpu_hand_cuGraphKernelNodeSetAttribute(CUgraphNode h, CUkernelNodeAttrID id,
						 const CUkernelNodeAttrValue *v)
{
	CUkernelNodeAttrValue copy;

	if (!v)
		return kernel_attr(h, id, NULL, true);
	memcpy(&copy, v, sizeof(copy));	/* the event becomes an id in the copy */
	return kernel_attr(h, id, &copy, true);
}

CUresult vgpu_hand_cuGraphKernelNodeGetAttribute(CUgraphNode h, CUkernelNodeAttrID id,
						 CUkernelNodeAttrValue *out)
{
	CUkernelNodeAttrValue v;
	CUresult rc;

	if (!out)
		return kernel_attr(h, id, NULL, false);
	rc = kernel_attr(h, id, &v, false);
	if (!rc)
		memcpy(out, &v, sizeof(v));
	return rc;
}

/* ---- copy node parameters ------------------------------------------------- */

CUresult vgpu_hand_cuGraphMemcpyNodeGetParams(CUgraphNode h, CUDA_MEMCPY3D *out)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MEMCPY_NODE_GET } };
	struct vgpu_ctx *ctx;
	CUgraph g;
	uint32_t nid;
	CUresult rc = vgpu_need_out(typed_node(h, CU_GRAPH_NODE_TYPE_MEMCPY, &g, &nid, &ctx), out);

	if (rc)
		return rc;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = nid;
	rc = vgpu_call_exact(&r, out, sizeof(*out));
	/* Staged ends as the program's memory, arrays as its handles. */
	return rc ? rc : vgpu_graph_copy_answer(out);
}
