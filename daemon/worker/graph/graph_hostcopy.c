// SPDX-License-Identifier: MIT
/*
 * Graph copy nodes with a host end.
 *
 * An end in the session's pinned pool is mapped at the same address here
 * and registered with the driver: the node copies to or from it as host
 * memory. The program's pageable memory cannot be reached from here, so
 * the runtime stages such an end through a pool block it owns and names a
 * callback of its own that moves the bytes between the block and the
 * program's memory. The node is then a child graph node holding
 * [callback -> copy] (to the device) or [copy -> callback] (from it): the
 * program sees one copy node (graph_node_type, graph_staged_copy), its
 * edges attach to the pair as a whole, and clones and instances carry it
 * as the driver carries child graphs. The callback's host job is marked
 * staged (graph_host.c), which is how such a node is told from a child
 * graph of the program's.
 *
 * Captured copies of pageable memory come as GRAPH_CAPTURE_STAGED: the
 * same node, added to the capture's graph after its current dependencies.
 * Copies with an array end come as GRAPH_ADD_ARRAY_COPY, an array copy's
 * description (exec_array.c checks it); their parameters cannot be read
 * back or set, and checkpoints refuse them.
 */
#include <string.h>

#include "array_state.h"
#include "log.h"
#include "worker.h"

/* The child graph a staged description makes, until the next one: adding
 * or setting a child graph node copies it. The worker runs one call at a
 * time. */
static CUgraph scratch;

static void scratch_drop(struct worker *w)
{
	if (scratch)
		w->B.cuGraphDestroy(scratch);
	scratch = NULL;
}

CUresult graph_node_type(struct worker *w, CUgraphNode n, CUgraphNodeType *t)
{
	CUresult rc = w->B.cuGraphNodeGetType(n, t);

	if (!rc && *t == CU_GRAPH_NODE_TYPE_GRAPH && graph_staged_copy(w, n))
		*t = CU_GRAPH_NODE_TYPE_MEMCPY;
	return rc;
}

CUgraphNode graph_staged_copy(struct worker *w, CUgraphNode n)
{
	CUgraphNode list[3], copy = NULL;
	CUgraphNodeType t;
	CUgraph g;
	size_t count = 3;
	bool staged = false;

	if (w->B.cuGraphNodeGetType(n, &t) || t != CU_GRAPH_NODE_TYPE_GRAPH ||
	    w->B.cuGraphChildGraphNodeGetGraph(n, &g) || w->B.cuGraphGetNodes(g, list, &count) ||
	    count != 2)
		return NULL;
	for (size_t i = 0; i < 2; i++) {
		if (w->B.cuGraphNodeGetType(list[i], &t))
			return NULL;
		if (t == CU_GRAPH_NODE_TYPE_HOST)
			staged = graph_host_staged(w, list[i]);
		else if (t == CU_GRAPH_NODE_TYPE_MEMCPY)
			copy = list[i];
	}
	return staged ? copy : NULL;
}

/* The worker's pinned pool holds [p, p + span): the end is host memory. */
static bool in_pool(struct worker *w, uint64_t p)
{
	return hostpool_contains(&w->pool, p, 1);
}

CUresult graph_copy_params(struct worker *w, const struct vgpu_node_params *v, CUcontext ctx,
			   CUgraphNodeParams *p)
{
	CUDA_MEMCPY3D *c = &p->memcpy.copyParams;
	CUgraphNodeParams hp = { .type = CU_GRAPH_NODE_TYPE_HOST };
	CUgraphNode first = NULL, second = NULL;
	uint64_t cookie = v->value | (uint64_t)v->elem << 32;
	CUresult rc;

	p->type = CU_GRAPH_NODE_TYPE_MEMCPY;
	p->memcpy.copyCtx = ctx;
	*c = (CUDA_MEMCPY3D){
		.srcPitch = v->src_pitch, .srcHeight = v->src_rows,
		.dstPitch = v->dst_pitch, .dstHeight = v->dst_rows,
		.WidthInBytes = v->width, .Height = v->height, .Depth = v->depth,
	};
	if (in_pool(w, v->src)) {
		c->srcMemoryType = CU_MEMORYTYPE_HOST;
		c->srcHost = (const void *)(uintptr_t)v->src;
	} else {
		c->srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c->srcDevice = v->src;
	}
	if (in_pool(w, v->dst)) {
		c->dstMemoryType = CU_MEMORYTYPE_HOST;
		c->dstHost = (void *)(uintptr_t)v->dst;
	} else {
		c->dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c->dstDevice = v->dst;
	}
	if (!v->id)
		return CUDA_SUCCESS;
	/* Staged: the staged end is a pool block, the other the device's. */
	if (v->id > 2 || (v->id == 1 && (c->srcMemoryType != CU_MEMORYTYPE_HOST ||
					 c->dstMemoryType != CU_MEMORYTYPE_DEVICE)) ||
	    (v->id == 2 && (c->dstMemoryType != CU_MEMORYTYPE_HOST ||
			    c->srcMemoryType != CU_MEMORYTYPE_DEVICE)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_host_staged_params(w, cookie, &hp.host)))
		return rc;
	scratch_drop(w);
	if ((rc = w->B.cuGraphCreate(&scratch, 0)))
		return rc;
	rc = w->B.cuGraphAddNode_v2(&first, scratch, NULL, NULL, 0, v->id == 1 ? &hp : p);
	if (!rc)
		rc = w->B.cuGraphAddNode_v2(&second, scratch, &first, NULL, 1,
					    v->id == 1 ? p : &hp);
	if (rc) {
		scratch_drop(w);
		return rc;
	}
	memset(p, 0, sizeof(*p));
	p->type = CU_GRAPH_NODE_TYPE_GRAPH;
	p->graph.graph = scratch;
	return CUDA_SUCCESS;
}

/* Child graph @g of a staged copy: its callback and copy nodes, and whether
 * the callback runs first. */
static CUresult pair_of(struct worker *w, CUgraph g, CUgraphNode *host, CUgraphNode *copy,
			bool *host_first)
{
	CUgraphNode list[2], root = NULL;
	CUgraphNodeType t;
	size_t n = 2, nroot = 1;
	CUresult rc = w->B.cuGraphGetNodes(g, list, &n);

	if (!rc)
		rc = w->B.cuGraphGetRootNodes(g, &root, &nroot);
	if (rc || n != 2 || nroot != 1)
		return rc ? rc : CUDA_ERROR_INVALID_VALUE;
	*host = *copy = NULL;
	for (size_t i = 0; !rc && i < 2; i++)
		if (!(rc = w->B.cuGraphNodeGetType(list[i], &t)))
			*(t == CU_GRAPH_NODE_TYPE_HOST ? host : copy) = list[i];
	if (!rc && (!*host || !*copy))
		rc = CUDA_ERROR_INVALID_VALUE;
	*host_first = root == *host;
	return rc;
}

CUresult graph_staged_set(struct worker *w, CUgraphNode n, const CUgraphNodeParams *p)
{
	CUgraphNode h0, c0, h1, c1;
	CUgraphNodeParams hp = { .type = CU_GRAPH_NODE_TYPE_HOST };
	CUgraphNodeParams cp = { .type = CU_GRAPH_NODE_TYPE_MEMCPY };
	CUDA_HOST_NODE_PARAMS h;
	CUgraph have;
	bool first0, first1;
	CUresult rc;

	if (p->type != CU_GRAPH_NODE_TYPE_GRAPH || !scratch || p->graph.graph != scratch)
		return CUDA_ERROR_INVALID_VALUE;	/* staged to staged only */
	if ((rc = w->B.cuGraphChildGraphNodeGetGraph(n, &have)) ||
	    (rc = pair_of(w, have, &h0, &c0, &first0)) ||
	    (rc = pair_of(w, scratch, &h1, &c1, &first1)))
		return rc;
	if (first0 != first1)
		return CUDA_ERROR_INVALID_VALUE;	/* not the other way round */
	if ((rc = w->B.cuGraphHostNodeGetParams(h1, &h)))
		return rc;
	hp.host.fn = h.fn;
	hp.host.userData = h.userData;
	if ((rc = w->B.cuCtxGetCurrent(&cp.memcpy.copyCtx)) ||
	    (rc = w->B.cuGraphMemcpyNodeGetParams(c1, &cp.memcpy.copyParams)))
		return rc;
	/* The node owns its child graph: changing it changes the node. */
	rc = w->B.cuGraphNodeSetParams(c0, &cp);
	return rc ? rc : w->B.cuGraphNodeSetParams(h0, &hp);
}

/* A staged copy recorded into the capture on sqe.stream, after what the
 * capture would have ordered it after. */
static enum op_status op_capture_staged(struct worker *w, struct op_call *call)
{
	CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
	const CUgraphNode *deps = NULL;
	const CUgraphEdgeData *edges = NULL;
	struct vgpu_node_params v;
	CUgraphNodeParams p;
	CUgraphNode node = NULL;
	CUgraph g = NULL;
	size_t n = 0;
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (!rc && call->len != sizeof(v))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		memcpy(&v, call->payload, sizeof(v));
		if (v.type != CU_GRAPH_NODE_TYPE_MEMCPY || !v.id)
			rc = CUDA_ERROR_INVALID_VALUE;
	}
	if (!rc)
		rc = graph_node_params(w, &v, 0, &p);
	if (!rc)
		rc = w->B.cuStreamGetCaptureInfo_v3(st, &status, NULL, &g, &deps, &edges, &n);
	if (!rc && status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (!rc)
		rc = w->B.cuGraphAddNode_v2(&node, g, deps, edges, n, &p);
	if (!rc)
		rc = w->B.cuStreamUpdateCaptureDependencies_v2(st, &node, NULL, 1,
							      CU_STREAM_SET_CAPTURE_DEPENDENCIES);
	call->cqe->result = rc;
	return OP_DONE;
}

/* An address end of a checked array copy: pinned pool memory as host
 * memory, the rest as device memory. */
static void address_end(struct worker *w, CUmemorytype *t, CUdeviceptr *dev, const void **host)
{
	if (*t != CU_MEMORYTYPE_UNIFIED)
		return;
	if (in_pool(w, *dev)) {
		*t = CU_MEMORYTYPE_HOST;
		*host = (const void *)(uintptr_t)*dev;
		*dev = 0;
	} else {
		*t = CU_MEMORYTYPE_DEVICE;
	}
}

/* A copy node with an array end (or two), checked as array copies are. */
static enum op_status op_add_array_copy(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUgraphNodeParams p = { .type = CU_GRAPH_NODE_TYPE_MEMCPY };
	struct vgpu_array_copy c;
	CUgraphNode node = NULL;
	uint32_t id = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!graph_add_len_ok(call, sizeof(c)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		memcpy(&c, call->payload, sizeof(c));
		rc = array_copy_params(w, &c, &p.memcpy.copyParams);
	}
	if (!rc) {	/* address ends as the program named them: read back so */
		address_end(w, &p.memcpy.copyParams.srcMemoryType,
			    &p.memcpy.copyParams.srcDevice, &p.memcpy.copyParams.srcHost);
		address_end(w, &p.memcpy.copyParams.dstMemoryType,
			    &p.memcpy.copyParams.dstDevice,
			    (const void **)&p.memcpy.copyParams.dstHost);
		rc = w->B.cuCtxGetCurrent(&p.memcpy.copyCtx);
	}
	if (!rc)
		rc = graph_add_after(w, call, sizeof(c), &p, &node);
	if (!rc && !(id = graph_node_id(node, (uint32_t)s->arg[0])))
		rc = CUDA_ERROR_OUT_OF_MEMORY;	/* the node stays, unnamed */
	call->cqe->result = rc;
	call->cqe->val[0] = id;
	return OP_DONE;
}

const struct op_desc exec_graph_hostcopy_ops[] = {
	OP(GRAPH_CAPTURE_STAGED, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_capture_staged),
	OP(GRAPH_ADD_ARRAY_COPY, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_add_array_copy),
	{ 0 },
};
