// SPDX-License-Identifier: MIT
/*
 * Graph nodes: cuGraphGetNodes / cuGraphGetRootNodes with handles, node
 * types, and the parameters of kernel nodes (what cuBLAS, cuDNN and
 * PyTorch change in a captured graph before replaying it).
 *
 * The worker issues a node's id the first time the node is enumerated; the
 * handle made for it here is the same at every later enumeration (programs
 * compare node handles) and lives until its graph is destroyed. A node's
 * type never changes, so cuGraphNodeGetType is answered from the handle.
 *
 * Kernel parameters travel packed at the function's cached offsets, as
 * launches do. cuGraphKernelNodeGetParams returns pointers into a copy the
 * node handle owns until the next call on it or its graph's destruction.
 * The worker names a node's function by the client's id: launches (through
 * which captured nodes get their function) and the Set calls record which
 * handle has which id (vgpu_func_remember).
 *
 * Graphs built by hand (cuGraphCreate in graph.c, cuGraphAddKernelNode,
 * cuGraphAddDependencies) take kernel nodes and edges here; the other node
 * kinds are graph_build.c's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "entry.h"
#include "forward.h"
#include "graph.h"
#include "init.h"
#include "unsupported.h"

#define NODE_MAGIC 0x76676e64u	/* "vgnd" */

struct node {
	uint32_t magic;
	uint32_t id;			/* the worker's */
	CUgraphNodeType type;
	CUgraph graph;
	struct node *next;		/* all nodes, under lock */
	void **ptrs;			/* the last GetParams' answer */
	uint8_t *params;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct node *all;

/* ---- function ids ------------------------------------------------------- */

#define REG_CHUNK	4096u
#define REG_IDS		(1u << 22)	/* as many as the worker's tables hold */

static struct vgpu_func **reg[REG_IDS / REG_CHUNK];

void vgpu_func_remember(struct vgpu_func *f)
{
	struct vgpu_func **c, **fresh;
	uint32_t id = f->id;

	if (!id || id >= REG_IDS)
		return;
	c = __atomic_load_n(&reg[id / REG_CHUNK], __ATOMIC_ACQUIRE);
	if (!c) {
		fresh = calloc(REG_CHUNK, sizeof(*fresh));
		if (!fresh)
			return;	/* GetParams will say it does not know the function */
		if (__atomic_compare_exchange_n(&reg[id / REG_CHUNK], &c, fresh, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			c = fresh;
		else
			free(fresh);
	}
	if (__atomic_load_n(&c[id % REG_CHUNK], __ATOMIC_RELAXED) != f)
		__atomic_store_n(&c[id % REG_CHUNK], f, __ATOMIC_RELEASE);
}

/* The handle last seen with @id. A function whose module is unloaded keeps
 * its entry until its id is used again; a node still naming it is as
 * unusable here as in the driver. */
static struct vgpu_func *func_by_id(uint32_t id)
{
	struct vgpu_func **c;
	struct vgpu_func *f;

	if (!id || id >= REG_IDS)
		return NULL;
	c = __atomic_load_n(&reg[id / REG_CHUNK], __ATOMIC_ACQUIRE);
	f = c ? __atomic_load_n(&c[id % REG_CHUNK], __ATOMIC_ACQUIRE) : NULL;
	return f && f->magic == VGPU_FUNC_MAGIC && f->id == id ? f : NULL;
}

/* ---- node handles ------------------------------------------------------- */

/* The handle of node @id of graph @g, made now if it has none. Under lock. */
static struct node *node_for(CUgraph g, uint32_t id, CUgraphNodeType type)
{
	struct node *n;

	for (n = all; n; n = n->next)
		if (n->graph == g && n->id == id)
			return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	*n = (struct node){ .magic = NODE_MAGIC, .id = id, .type = type, .graph = g, .next = all };
	all = n;
	return n;
}

void vgpu_graph_nodes_release(CUgraph g)
{
	struct node **p, *n;

	pthread_mutex_lock(&lock);
	for (p = &all; (n = *p);) {
		if (n->graph != g) {
			p = &n->next;
			continue;
		}
		*p = n->next;
		n->magic = 0;
		free(n->ptrs);
		free(n->params);
		free(n);
	}
	pthread_mutex_unlock(&lock);
}

/* A node handle checked, with its graph's context and id. */
static CUresult node_resolve(CUgraphNode h, struct node **out, struct vgpu_ctx **ctx,
			     uint32_t *graph_id)
{
	struct node *n = (struct node *)h;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!n || n->magic != NODE_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_graph_lookup(n->graph, ctx, graph_id);
	if (!rc)
		*out = n;
	return rc;
}

static CUresult get_nodes(CUgraph h, CUgraphNode *nodes, size_t *count, bool roots)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_NODES } };
	struct vgpu_graph_node *got;
	struct vgpu_ctx *ctx;
	uint32_t gid;
	size_t n, want;
	CUresult rc = vgpu_need_out(vgpu_enter_graph(h, &ctx, &gid), count);

	if (rc)
		return rc;
	if (!nodes && !roots) {	/* counting only: any size of graph */
		struct vgpu_cqe cqe;

		rc = vgpu_call5(VGPU_OP_GRAPH_NODE_COUNT, ctx->id, 0, gid, 0, 0, 0, 0, &cqe);
		if (!rc)
			*count = cqe.val[0];
		return rc;
	}
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = gid;
	r.sqe.arg[1] = roots;
	got = vgpu_call_records(&r, sizeof(*got), VGPU_MAX_GRAPH_NODES, &n, &rc);
	if (rc || !nodes) {
		if (!rc)
			*count = n;
		free(got);
		return rc;
	}
	/* Fewer asked: that many; more: the rest NULL and the count corrected. */
	want = *count;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; !rc && i < want; i++) {
		nodes[i] = i < n ? (CUgraphNode)node_for(h, got[i].id, (CUgraphNodeType)got[i].type)
				 : NULL;
		if (i < n && !nodes[i])
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&lock);
	free(got);
	if (!rc && want > n)
		*count = n;
	return rc;
}

VGPU_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	return get_nodes(hGraph, nodes, numNodes, false);
}

VGPU_EXPORT CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes,
					 size_t *numRootNodes)
{
	return get_nodes(hGraph, rootNodes, numRootNodes, true);
}

VGPU_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	struct vgpu_ctx *ctx;
	struct node *n;
	uint32_t gid;
	CUresult rc = vgpu_need_out(node_resolve(hNode, &n, &ctx, &gid), type);

	if (rc)
		return rc;
	*type = n->type;
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_node_lookup(CUgraphNode h, CUgraph *graph, uint32_t *id,
				CUgraphNodeType *type, struct vgpu_ctx **ctx)
{
	struct node *n;
	uint32_t gid;
	CUresult rc = node_resolve(h, &n, ctx, &gid);

	if (rc)
		return rc;
	*graph = n->graph;
	*id = n->id;
	*type = n->type;
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_node_made(CUgraph g, uint32_t id, CUgraphNodeType type, CUgraphNode *out)
{
	struct node *n;

	pthread_mutex_lock(&lock);
	n = id ? node_for(g, id, type) : NULL;
	pthread_mutex_unlock(&lock);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUgraphNode)n;
	return CUDA_SUCCESS;
}

void vgpu_graph_node_forget(CUgraphNode h)
{
	struct node **p, *n;

	pthread_mutex_lock(&lock);
	for (p = &all; (n = *p); p = &n->next)
		if (n == (struct node *)h) {
			*p = n->next;
			n->magic = 0;
			free(n->ptrs);
			free(n->params);
			free(n);
			break;
		}
	pthread_mutex_unlock(&lock);
}

/* ---- kernel node parameters -------------------------------------------- */

static CUresult get_params(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS *out, bool v2)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_KERNEL_NODE_GET } };
	const size_t cap = sizeof(struct vgpu_kernel_node) + VGPU_MAX_PARAM_BYTES;
	struct vgpu_kernel_node k;
	const struct vgpu_func_info *fi;
	struct vgpu_func *f;
	struct vgpu_ctx *ctx;
	struct node *n;
	void **ptrs = NULL;
	uint8_t *reply, *params;
	uint32_t gid;
	CUresult rc = vgpu_need_out(node_resolve(h, &n, &ctx, &gid), out);

	if (rc)
		return rc;
	if (n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	reply = malloc(cap);
	if (!reply)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = n->id;
	r.reply = reply;
	r.reply_cap = cap;
	rc = vgpu_call(&r);
	if (!rc && r.cqe.val[2] < sizeof(k))
		rc = CUDA_ERROR_UNKNOWN;
	if (!rc) {
		memcpy(&k, reply, sizeof(k));
		if (r.cqe.val[2] != sizeof(k) + k.param_bytes)
			rc = CUDA_ERROR_UNKNOWN;
	}
	f = rc ? NULL : func_by_id(k.func);
	if (!rc && !f)	/* the worker knows it; this process never used it */
		rc = CUDA_ERROR_UNKNOWN;
	if (rc) {
		free(reply);
		return rc;
	}
	fi = f->info;
	/* The pointers point into the block, at the function's offsets. */
	params = memmove(reply, reply + sizeof(k), k.param_bytes);
	if (fi->param_count && !(ptrs = calloc(fi->param_count, sizeof(*ptrs)))) {
		free(reply);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t i = 0; i < fi->param_count; i++) {
		if (fi->param[i].offset + fi->param[i].size > k.param_bytes)
			rc = CUDA_ERROR_UNKNOWN;
		ptrs[i] = params + fi->param[i].offset;
	}
	if (rc) {
		free(ptrs);
		free(reply);
		return rc;
	}
	pthread_mutex_lock(&lock);
	free(n->ptrs);
	free(n->params);
	n->ptrs = ptrs;
	n->params = params;
	pthread_mutex_unlock(&lock);
	out->func = (CUfunction)f;
	out->gridDimX = k.grid[0], out->gridDimY = k.grid[1], out->gridDimZ = k.grid[2];
	out->blockDimX = k.block[0], out->blockDimY = k.block[1], out->blockDimZ = k.block[2];
	out->sharedMemBytes = k.shared_bytes;
	out->kernelParams = ptrs;
	out->extra = NULL;
	if (v2) {
		out->kern = NULL;
		out->ctx = (CUcontext)ctx;
	}
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS p;
	CUresult rc = get_params(hNode, nodeParams ? &p : NULL, false);

	if (!rc)
		memcpy(nodeParams, &p, sizeof(*nodeParams));	/* v1 is v2's head */
	return rc;
}

VGPU_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
						   CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	return get_params(hNode, nodeParams, true);
}

/* The parameter block from kernelParams or extra, as a launch packs it. */
static CUresult pack(const struct vgpu_func *f, const CUDA_KERNEL_NODE_PARAMS *p, uint8_t *dst,
		     uint32_t *bytes)
{
	const struct vgpu_func_info *fi = f->info;

	*bytes = 0;
	if (p->kernelParams && p->extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->extra) {
		const void *buf = NULL;
		const size_t *size = NULL;

		for (int i = 0; p->extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = p->extra[i + 1];
			else if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = p->extra[i + 1];
			else
				return CUDA_ERROR_INVALID_VALUE;
		}
		if (!buf || !size || *size > VGPU_MAX_PARAM_BYTES || *size < fi->param_bytes)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(dst, buf, *size);
		*bytes = (uint32_t)*size;
		return CUDA_SUCCESS;
	}
	if (!fi->param_count)
		return CUDA_SUCCESS;
	if (!p->kernelParams)
		return CUDA_ERROR_INVALID_VALUE;
	memset(dst, 0, fi->param_bytes);
	for (uint32_t i = 0; i < fi->param_count; i++) {
		if (!p->kernelParams[i])
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(dst + fi->param[i].offset, p->kernelParams[i], fi->param[i].size);
	}
	*bytes = fi->param_bytes;
	return CUDA_SUCCESS;
}

/* The node's description @k (its parameters already packed behind it) at
 * the start of @buf; the function is remembered for GetParams. */
static void kernel_head(struct vgpu_kernel_node *k, struct vgpu_func *f,
			const CUDA_KERNEL_NODE_PARAMS *p, uint8_t *buf)
{
	vgpu_func_remember(f);
	k->func = f->id;
	k->grid[0] = p->gridDimX, k->grid[1] = p->gridDimY, k->grid[2] = p->gridDimZ;
	k->block[0] = p->blockDimX, k->block[1] = p->blockDimY, k->block[2] = p->blockDimZ;
	k->shared_bytes = p->sharedMemBytes;
	memcpy(buf, k, sizeof(*k));
}

CUresult vgpu_graph_kernel_set(CUgraphExec exec, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p,
			       bool v2)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_KERNEL_NODE_SET } };
	uint8_t *buf;
	struct vgpu_kernel_node k = { 0 };
	struct vgpu_ctx *ctx;
	struct vgpu_func *f;
	struct node *n;
	uint32_t gid, eid;
	CUresult rc = node_resolve(h, &n, &ctx, &gid);

	if (!rc)
		rc = vgpu_graph_exec_in(exec, ctx, &eid);
	if (rc)
		return rc;
	if (!p || n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	/* A CUkernel is a function here too (see handles.h). */
	rc = vgpu_func_resolve(p->func ? p->func : (v2 ? (CUfunction)p->kern : NULL), &f);
	if (rc)
		return rc;
	buf = malloc(sizeof(k) + VGPU_MAX_PARAM_BYTES);
	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = pack(f, p, buf + sizeof(k), &k.param_bytes);
	if (rc) {
		free(buf);
		return rc;
	}
	kernel_head(&k, f, p, buf);
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = n->id;
	r.sqe.arg[1] = eid;
	r.payload = buf;
	r.payload_len = sizeof(k) + k.param_bytes;
	rc = vgpu_call(&r);
	free(buf);
	return rc;
}

/* The v1 struct is the v2 struct without its last two fields. */
static CUresult set_params_v1(CUgraphExec exec, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p1)
{
	CUDA_KERNEL_NODE_PARAMS p = { 0 };

	if (!p1)
		return vgpu_graph_kernel_set(exec, h, NULL, false);
	memcpy(&p, p1, sizeof(*p1));
	return vgpu_graph_kernel_set(exec, h, &p, false);
}

VGPU_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
						const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	return set_params_v1(NULL, hNode, nodeParams);
}

VGPU_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
						   const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	return vgpu_graph_kernel_set(NULL, hNode, nodeParams, true);
}

VGPU_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						    const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return set_params_v1(hGraphExec, hNode, nodeParams);
}

VGPU_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
						       const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return vgpu_graph_kernel_set(hGraphExec, hNode, nodeParams, true);
}

/* ---- building graphs ----------------------------------------------------- */

/* Node handles of graph @g as the worker's ids, into @ids. */
CUresult vgpu_graph_node_ids(CUgraph g, const CUgraphNode *h, size_t n, uint32_t *ids)
{
	for (size_t i = 0; i < n; i++) {
		struct node *x = (struct node *)h[i];

		if (!x || x->magic != NODE_MAGIC || x->graph != g)
			return CUDA_ERROR_INVALID_VALUE;
		ids[i] = x->id;
	}
	return CUDA_SUCCESS;
}

bool vgpu_graph_edges_plain(const CUgraphEdgeData *edges, size_t n)
{
	static const CUgraphEdgeData plain;

	for (size_t i = 0; edges && i < n; i++)
		if (memcmp(&edges[i], &plain, sizeof(plain)))
			return false;
	return true;
}

CUresult vgpu_graph_edges_call(struct vgpu_req *r, uint8_t *buf, uint32_t len,
			       const CUgraphEdgeData *edges, size_t n)
{
	_Static_assert(sizeof(*edges) == 8, "edge data layout");
	r->sqe.arg[2] = edges != NULL;
	r->payload = buf;
	r->payload_len = len;
	if (edges) {
		memcpy(buf + r->payload_len, edges, n * sizeof(*edges));
		r->payload_len += n * sizeof(*edges);
	}
	return r->payload_len <= vgpu_payload_max() ? vgpu_call(r) : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult vgpu_graph_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
			       const CUgraphEdgeData *edges, size_t ndeps,
			       const CUDA_KERNEL_NODE_PARAMS *p, bool v2)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_ADD_KERNEL_NODE } };
	struct vgpu_kernel_node k = { 0 };
	struct vgpu_ctx *ctx;
	struct vgpu_func *f;
	struct node *n;
	uint32_t gid, off;
	uint8_t *buf;
	CUresult rc = vgpu_enter_graph(g, &ctx, &gid);

	if (rc)
		return rc;
	if (!out || !p || (ndeps && !deps) || ndeps > VGPU_MAX_GRAPH_NODES)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_func_resolve(p->func ? p->func : (v2 ? (CUfunction)p->kern : NULL), &f);
	if (rc)
		return rc;
	if (vgpu_graph_edges_plain(edges, ndeps))
		edges = NULL;	/* the ordinary edges: none sent */
	buf = malloc(sizeof(k) + VGPU_MAX_PARAM_BYTES + 4 + ndeps * (sizeof(uint32_t) + 8));
	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = pack(f, p, buf + sizeof(k), &k.param_bytes);
	off = (sizeof(k) + k.param_bytes + 3) & ~3u;
	if (!rc)
		rc = vgpu_graph_node_ids(g, deps, ndeps, (uint32_t *)(buf + off));
	if (rc) {
		free(buf);
		return rc;
	}
	kernel_head(&k, f, p, buf);
	memset(buf + sizeof(k) + k.param_bytes, 0, off - sizeof(k) - k.param_bytes);
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = gid;
	r.sqe.arg[1] = ndeps;
	rc = vgpu_graph_edges_call(&r, buf, off + ndeps * sizeof(uint32_t), edges, ndeps);
	free(buf);
	if (rc)
		return rc;
	pthread_mutex_lock(&lock);
	n = r.cqe.val[0] ? node_for(g, (uint32_t)r.cqe.val[0], CU_GRAPH_NODE_TYPE_KERNEL) : NULL;
	pthread_mutex_unlock(&lock);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUgraphNode)n;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					  const CUgraphNode *dependencies, size_t numDependencies,
					  const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS p = { 0 };

	if (nodeParams)
		memcpy(&p, nodeParams, sizeof(*nodeParams));
	return vgpu_graph_add_kernel(phGraphNode, hGraph, dependencies, NULL, numDependencies,
				     nodeParams ? &p : NULL, false);
}

VGPU_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
					     const CUgraphNode *dependencies,
					     size_t numDependencies,
					     const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	return vgpu_graph_add_kernel(phGraphNode, hGraph, dependencies, NULL, numDependencies,
				     nodeParams, true);
}

static CUresult add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
			 const CUgraphEdgeData *edges, size_t n)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_ADD_DEPENDENCIES } };
	struct vgpu_ctx *ctx;
	uint32_t gid, *ids;
	CUresult rc = vgpu_enter_graph(g, &ctx, &gid);

	if (rc)
		return rc;
	if (!n)
		return CUDA_SUCCESS;
	if (!from || !to || n > VGPU_MAX_GRAPH_NODES)
		return CUDA_ERROR_INVALID_VALUE;
	if (vgpu_graph_edges_plain(edges, n))
		edges = NULL;	/* the ordinary edges: none sent */
	ids = malloc(2 * n * sizeof(*ids) + (edges ? n * sizeof(*edges) : 0));
	if (!ids)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = vgpu_graph_node_ids(g, from, n, ids);
	if (!rc)
		rc = vgpu_graph_node_ids(g, to, n, ids + n);
	if (!rc) {
		r.sqe.ctx = ctx->id;
		r.sqe.arg[0] = gid;
		r.sqe.arg[1] = n;
		rc = vgpu_graph_edges_call(&r, (uint8_t *)ids, 2 * n * sizeof(*ids), edges, n);
	}
	free(ids);
	return rc;
}

VGPU_EXPORT CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
					    const CUgraphNode *to, size_t numDependencies)
{
	return add_deps(hGraph, from, to, NULL, numDependencies);
}

VGPU_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
					       const CUgraphNode *to,
					       const CUgraphEdgeData *edgeData,
					       size_t numDependencies)
{
	return add_deps(hGraph, from, to, edgeData, numDependencies);
}
