// SPDX-License-Identifier: MIT
/*
 * Graph nodes: enumeration, and the parameters of kernel nodes. A graph's
 * nodes are made by the driver (a capture records them), so their ids are
 * issued here, the first time a node is enumerated, and stay the node's
 * until its graph is destroyed. A kernel node names its function by the
 * client's function id and carries its parameters as one block packed at
 * the function's parameter offsets, as launches do.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "exec_forward.h"
#include "worker.h"

static struct obj_table nodes;	/* id -> CUgraphNode, aux: its graph's id */
static uint32_t next_node = 1;

void graph_nodes_forget(uint32_t graph)
{
	struct obj_entry *e;
	uint32_t i;

	if (!nodes.kind)
		return;
	graph_mem_forget(graph, 0);
	obj_for_each(&nodes, i, e)
		if (e->aux == graph)
			obj_remove(&nodes, i);
}

void graph_node_drop(uint32_t id)
{
	if (nodes.kind && id && id < OBJ_MAX_ID)
		obj_remove(&nodes, id);
}

/* The node's id, issued now if it has none. 0: no more ids. */
uint32_t graph_node_id(CUgraphNode n, uint32_t graph)
{
	struct obj_entry *e;
	uint32_t i;

	if (!nodes.kind)
		obj_table_init(&nodes, "graph node");
	obj_for_each(&nodes, i, e)
		if (e->obj == n && e->aux == graph)
			return i;
	if (next_node >= OBJ_MAX_ID || obj_insert(&nodes, next_node, n, graph, NULL))
		return 0;
	return next_node++;
}

/* A restored node under the id the client knows it by. */
int graph_node_bind(uint32_t id, CUgraphNode n, uint32_t graph)
{
	if (!nodes.kind)
		obj_table_init(&nodes, "graph node");
	if (!id || id >= OBJ_MAX_ID || obj_get(&nodes, id) || obj_insert(&nodes, id, n, graph, NULL))
		return -1;
	if (id >= next_node)
		next_node = id + 1;
	return 0;
}

uint32_t graph_node_next(void)
{
	return next_node;
}

void graph_node_next_at_least(uint32_t id)
{
	if (id < OBJ_MAX_ID && id > next_node)
		next_node = id;
}

static enum op_status op_nodes(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, s->arg[0]);
	struct vgpu_graph_node *out = (struct vgpu_graph_node *)call->reply;
	CUgraphNode *list = NULL;
	size_t n = 0;
	CUresult rc = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	_Static_assert(VGPU_MAX_GRAPH_NODES * sizeof(*out) <= (64u << 10), "nodes fit a slot");
	if (!rc)
		rc = s->arg[1] ? w->B.cuGraphGetRootNodes(g->obj, NULL, &n)
			       : w->B.cuGraphGetNodes(g->obj, NULL, &n);
	if (!rc && n > VGPU_MAX_GRAPH_NODES) {
		vlog_warn("session %llu: a graph of %zu nodes: node handles are given for up to %u",
			  (unsigned long long)w->session_id, n, VGPU_MAX_GRAPH_NODES);
		rc = CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!rc && n && !(list = calloc(n, sizeof(*list))))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc && n)
		rc = s->arg[1] ? w->B.cuGraphGetRootNodes(g->obj, list, &n)
			       : w->B.cuGraphGetNodes(g->obj, list, &n);
	for (size_t i = 0; !rc && i < n; i++) {
		CUgraphNodeType t;

		rc = graph_node_type(w, list[i], &t);
		out[i].type = t;
		out[i].id = rc ? 0 : graph_node_id(list[i], (uint32_t)s->arg[0]);
		if (!rc && !out[i].id)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	free(list);
	call->cqe->result = rc;
	call->cqe->val[0] = rc ? 0 : n;
	call->cqe->val[2] = rc ? 0 : n * sizeof(*out);
	return OP_DONE;
}

CUgraphNode graph_node_obj(struct worker *w, uint32_t id)
{
	struct obj_entry *e = nodes.kind && id && id < OBJ_MAX_ID ? obj_get(&nodes, id) : NULL;

	return e && obj_get(&w->graphs, (uint32_t)e->aux) ? e->obj : NULL;
}

/* A kernel node of a live graph. */
static CUresult kernel_node(struct worker *w, uint64_t id, CUgraphNode *out)
{
	struct obj_entry *e = nodes.kind && id < OBJ_MAX_ID ? obj_get(&nodes, (uint32_t)id) : NULL;
	CUgraphNodeType t;
	CUresult rc;

	if (!e || !obj_get(&w->graphs, (uint32_t)e->aux))
		return CUDA_ERROR_INVALID_HANDLE;
	rc = w->B.cuGraphNodeGetType(e->obj, &t);
	if (!rc && t != CU_GRAPH_NODE_TYPE_KERNEL)
		rc = CUDA_ERROR_INVALID_VALUE;
	*out = e->obj;
	return rc;
}

/* The function's parameters, as cuFuncGetParamInfo says: their count. */
static CUresult layout(struct worker *w, CUfunction f, struct vgpu_param_info *p, uint32_t *n)
{
	for (*n = 0;; (*n)++) {
		size_t off, size;
		CUresult rc = w->B.cuFuncGetParamInfo(f, *n, &off, &size);

		if (rc == CUDA_ERROR_INVALID_VALUE)
			return CUDA_SUCCESS;	/* past the last parameter */
		if (rc)
			return rc;
		if (*n == VGPU_MAX_KERNEL_PARAMS || off + size > VGPU_MAX_PARAM_BYTES)
			return CUDA_ERROR_NOT_SUPPORTED;
		p[*n] = (struct vgpu_param_info){ (uint32_t)off, (uint32_t)size };
	}
}

static uint32_t pack(const CUDA_KERNEL_NODE_PARAMS *p, const struct vgpu_param_info *info,
		     uint32_t n, uint8_t *dst)
{
	uint32_t end = 0;

	for (uint32_t i = 0; i < n; i++)
		if (info[i].offset + info[i].size > end)
			end = info[i].offset + info[i].size;
	memset(dst, 0, end);
	for (uint32_t i = 0; p->kernelParams && i < n; i++)
		memcpy(dst + info[i].offset, p->kernelParams[i], info[i].size);
	if (!p->kernelParams && p->extra) {	/* the driver's own copy of a block */
		const void *buf = NULL;
		size_t size = 0;

		for (int i = 0; p->extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = p->extra[i + 1];
			else if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = *(const size_t *)p->extra[i + 1];
		}
		if (buf)
			memcpy(dst, buf, size < end ? size : end);
	}
	return end;
}

/* Kernel node @node as a struct vgpu_kernel_node and its parameter block at
 * @out (room for VGPU_MAX_PARAM_BYTES after the struct); *len their bytes. */
CUresult graph_kernel_read(struct worker *w, CUgraphNode node, uint8_t *out, uint32_t *len)
{
	static struct vgpu_param_info info[VGPU_MAX_KERNEL_PARAMS];
	struct vgpu_kernel_node *k = (struct vgpu_kernel_node *)out;
	CUDA_KERNEL_NODE_PARAMS p = { 0 };
	CUfunction f = NULL;
	uint32_t n = 0;
	CUresult rc = w->B.cuGraphKernelNodeGetParams_v2(node, &p);

	if (!rc) {
		f = p.func ? p.func : (CUfunction)p.kern;
		memset(k, 0, sizeof(*k));
		k->func = obj_id_of(&w->funcs, f);
		if (!k->func) {
			vlog_warn("session %llu: a kernel node runs a function the session never "
				  "looked up; its parameters cannot be named",
				  (unsigned long long)w->session_id);
			rc = CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	if (!rc)
		rc = layout(w, f, info, &n);
	if (!rc) {
		k->grid[0] = p.gridDimX, k->grid[1] = p.gridDimY, k->grid[2] = p.gridDimZ;
		k->block[0] = p.blockDimX, k->block[1] = p.blockDimY, k->block[2] = p.blockDimZ;
		k->shared_bytes = p.sharedMemBytes;
		k->param_bytes = pack(&p, info, n, out + sizeof(*k));
		*len = sizeof(*k) + k->param_bytes;
	}
	return rc;
}

static enum op_status op_kernel_get(struct worker *w, struct op_call *call)
{
	CUgraphNode node;
	uint32_t len = 0;
	CUresult rc = kernel_node(w, call->sqe->arg[0], &node);

	if (!rc)
		rc = graph_kernel_read(w, node, call->reply, &len);
	if (!rc)
		call->cqe->val[2] = len;
	call->cqe->result = rc;
	return OP_DONE;
}

/*
 * A struct vgpu_kernel_node and its parameter block at the head of the
 * payload, made into the driver's parameters (pointing into the payload
 * copy and @ptrs); *used says how many payload bytes that took.
 */
static CUresult kernel_params(struct worker *w, const struct op_call *call, void **ptrs,
			      CUDA_KERNEL_NODE_PARAMS *p, uint32_t *used)
{
	static struct vgpu_param_info info[VGPU_MAX_KERNEL_PARAMS];
	uint8_t *params = (uint8_t *)call->payload + sizeof(struct vgpu_kernel_node);
	struct vgpu_kernel_node k;
	struct obj_entry *f;
	uint32_t n = 0;
	CUresult rc;

	if (call->len < sizeof(k))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&k, call->payload, sizeof(k));
	if (k.reserved || k.param_bytes > VGPU_MAX_PARAM_BYTES ||
	    call->len - sizeof(k) < k.param_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(f = obj_get(&w->funcs, k.func)))
		return CUDA_ERROR_INVALID_HANDLE;
	rc = layout(w, f->obj, info, &n);
	for (uint32_t i = 0; !rc && i < n; i++) {
		/* Every parameter lies inside the block received. */
		if (info[i].offset + info[i].size > k.param_bytes)
			rc = CUDA_ERROR_INVALID_VALUE;
		ptrs[i] = params + info[i].offset;
	}
	if (rc)
		return rc;
	memset(p, 0, sizeof(*p));
	p->func = f->obj;
	p->gridDimX = k.grid[0], p->gridDimY = k.grid[1], p->gridDimZ = k.grid[2];
	p->blockDimX = k.block[0], p->blockDimY = k.block[1], p->blockDimZ = k.block[2];
	p->sharedMemBytes = k.shared_bytes;
	p->kernelParams = n ? ptrs : NULL;
	*used = sizeof(k) + k.param_bytes;
	return CUDA_SUCCESS;
}

CUresult graph_kernel_params(struct worker *w, const void *buf, uint32_t len, void **ptrs,
			     CUDA_KERNEL_NODE_PARAMS *p, uint32_t *used)
{
	const struct op_call call = { .payload = buf, .len = len };

	return kernel_params(w, &call, ptrs, p, used);
}

static enum op_status op_kernel_set(struct worker *w, struct op_call *call)
{
	static void *ptrs[VGPU_MAX_KERNEL_PARAMS];
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *exec = NULL;
	CUDA_KERNEL_NODE_PARAMS p;
	CUgraphNode node;
	uint32_t used = 0;
	CUresult rc = kernel_node(w, s->arg[0], &node);

	if (!rc && s->arg[1] && !(exec = obj_get(&w->graph_execs, (uint32_t)s->arg[1])))
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc)
		rc = kernel_params(w, call, ptrs, &p, &used);
	if (!rc && used != call->len)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = exec ? w->B.cuGraphExecKernelNodeSetParams_v2(exec->obj, node, &p)
			  : w->B.cuGraphKernelNodeSetParams_v2(node, &p);
	if (!rc && exec) {	/* the instance's record follows */
		CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_KERNEL };

		memcpy(&np.kernel, &p, sizeof(p));
		graph_snap_set(w, exec, (uint32_t)s->arg[0], &np);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_graph_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUgraph g = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!s->arg[0] || s->arg[0] >= OBJ_MAX_ID || obj_get(&w->graphs, (uint32_t)s->arg[0]) ||
	    s->arg[1])
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuGraphCreate(&g, 0);
	if (!rc && obj_insert(&w->graphs, (uint32_t)s->arg[0], g, s->ctx, NULL)) {
		w->B.cuGraphDestroy(g);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* n node ids of graph @graph, as the driver's nodes. */
CUresult graph_node_list(const uint32_t *ids, uint64_t n, uint32_t graph, CUgraphNode *out)
{
	for (uint64_t i = 0; i < n; i++) {
		uint32_t id;
		struct obj_entry *e;

		memcpy(&id, &ids[i], sizeof(id));
		e = nodes.kind ? obj_get(&nodes, id) : NULL;
		if (!e || e->aux != graph)
			return CUDA_ERROR_INVALID_VALUE;
		out[i] = e->obj;
	}
	return CUDA_SUCCESS;
}

/* n edge data (CUgraphEdgeData) at @src, checked: known types, reserved 0. */
CUresult graph_edge_list(const uint8_t *src, uint64_t n, CUgraphEdgeData *out)
{
	static const unsigned char zero[sizeof(out->reserved)];

	_Static_assert(sizeof(*out) == 8, "edge data layout");
	memcpy(out, src, n * sizeof(*out));
	for (uint64_t i = 0; i < n; i++)
		if (out[i].type > CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC ||
		    memcmp(out[i].reserved, zero, sizeof(zero)))
			return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUgraphEdgeData edges[VGPU_MAX_GRAPH_NODES];

bool graph_add_len_ok(const struct op_call *call, size_t head)
{
	const struct vgpu_sqe *s = call->sqe;

	return s->arg[1] <= VGPU_MAX_GRAPH_NODES && s->arg[2] <= 1 &&
	       call->len == head + s->arg[1] * (sizeof(uint32_t) +
						(s->arg[2] ? sizeof(*edges) : 0));
}

/* The length checked by graph_add_len_ok; the graph looked up last, so a
 * bad list is refused as such whatever the graph. */
CUresult graph_add_after(struct worker *w, const struct op_call *call, size_t head,
			 CUgraphNodeParams *p, CUgraphNode *node)
{
	static CUgraphNode deps[VGPU_MAX_GRAPH_NODES];
	const struct vgpu_sqe *s = call->sqe;
	const uint8_t *at = (const uint8_t *)call->payload + head;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	CUresult rc = graph_node_list((const uint32_t *)at, s->arg[1], (uint32_t)s->arg[0], deps);

	if (!rc && s->arg[2])
		rc = graph_edge_list(at + s->arg[1] * sizeof(uint32_t), s->arg[1], edges);
	if (!rc && !g)
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc)
		rc = w->B.cuGraphAddNode_v2(node, g->obj, s->arg[1] ? deps : NULL,
					    s->arg[2] ? edges : NULL, s->arg[1], p);
	return rc;
}

static enum op_status op_add_kernel(struct worker *w, struct op_call *call)
{
	static void *ptrs[VGPU_MAX_KERNEL_PARAMS];
	static CUgraphNode deps[VGPU_MAX_GRAPH_NODES];
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	CUDA_KERNEL_NODE_PARAMS p;
	CUgraphNode node = NULL;
	uint32_t used = 0, id = 0;
	CUresult rc = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	if (!rc && (s->arg[1] > VGPU_MAX_GRAPH_NODES || s->arg[2] > 1))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = kernel_params(w, call, ptrs, &p, &used);
	used = (used + 3) & ~3u;
	if (!rc && call->len != used + s->arg[1] * (sizeof(uint32_t) +
						    (s->arg[2] ? sizeof(*edges) : 0)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_node_list((const uint32_t *)((const uint8_t *)call->payload + used), s->arg[1],
			       (uint32_t)s->arg[0], deps);
	if (!rc && s->arg[2])
		rc = graph_edge_list((const uint8_t *)call->payload + used + s->arg[1] * sizeof(uint32_t),
			       s->arg[1], edges);
	if (!rc && s->arg[2]) {	/* edges of a kind: the generic call takes them */
		CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_KERNEL };

		_Static_assert(sizeof(np.kernel) == sizeof(p), "kernel node params v3 = v2");
		memcpy(&np.kernel, &p, sizeof(p));
		rc = w->B.cuGraphAddNode_v2(&node, g->obj, deps, edges, s->arg[1], &np);
	} else if (!rc) {
		rc = w->B.cuGraphAddKernelNode_v2(&node, g->obj, s->arg[1] ? deps : NULL,
						  s->arg[1], &p);
	}
	if (!rc && !(id = graph_node_id(node, (uint32_t)s->arg[0])))
		rc = CUDA_ERROR_OUT_OF_MEMORY;	/* the node stays, unnamed */
	call->cqe->result = rc;
	call->cqe->val[0] = id;
	return OP_DONE;
}

static enum op_status op_add_deps(struct worker *w, struct op_call *call)
{
	static CUgraphNode from[VGPU_MAX_GRAPH_NODES], to[VGPU_MAX_GRAPH_NODES];
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	const uint32_t *ids = call->payload;
	uint64_t n = s->arg[1];
	CUresult rc = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	if (!rc && (!n || n > VGPU_MAX_GRAPH_NODES || s->arg[2] > 1 ||
		    call->len != n * (2 * sizeof(uint32_t) + (s->arg[2] ? sizeof(*edges) : 0))))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_node_list(ids, n, (uint32_t)s->arg[0], from);
	if (!rc)
		rc = graph_node_list(ids + n, n, (uint32_t)s->arg[0], to);
	if (!rc && s->arg[2])
		rc = graph_edge_list((const uint8_t *)(ids + 2 * n), n, edges);
	if (!rc)
		rc = w->B.cuGraphAddDependencies_v2(g->obj, from, to, s->arg[2] ? edges : NULL, n);
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- nodes that are not kernels (graphs built by hand) -------------------- */

/* The bytes [p, p + (layers-1)*rows*pitch + (height-1)*pitch + width) are the
 * session's device memory; pitch and rows must leave rows and layers apart. */
static bool span_ok(struct worker *w, uint64_t p, uint64_t pitch, uint64_t rows, uint64_t width,
		    uint64_t height, uint64_t layers)
{
	uint64_t a, b, end;

	if (!width || !height || !layers)
		return false;
	if ((height > 1 || layers > 1) && pitch < width)
		return false;
	if (layers > 1 && rows < height)
		return false;
	if (__builtin_mul_overflow(layers - 1, rows, &a) || __builtin_mul_overflow(a, pitch, &a) ||
	    __builtin_mul_overflow(height - 1, pitch, &b) || __builtin_add_overflow(a, b, &end) ||
	    __builtin_add_overflow(end, width, &end) || __builtin_add_overflow(p, end, &a))
		return false;
	return worker_addr_ok(w, p, end);
}

/*
 * A struct vgpu_node_params checked and made into the driver's parameters.
 * Fields the node's type does not use must be 0. @graph: the graph the node
 * is (to be) in, which a child graph cannot be.
 */
CUresult graph_node_params(struct worker *w, const struct vgpu_node_params *v, uint32_t graph,
			   CUgraphNodeParams *p)
{
	struct vgpu_node_params used = { .type = v->type };
	struct obj_entry *e;
	CUcontext ctx = NULL;
	CUresult rc = w->B.cuCtxGetCurrent(&ctx);

	if (rc)
		return rc;
	memset(p, 0, sizeof(*p));
	p->type = (CUgraphNodeType)v->type;
	switch (v->type) {
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		used.dst = v->dst, used.src = v->src;
		used.dst_pitch = v->dst_pitch, used.src_pitch = v->src_pitch;
		used.width = v->width, used.height = v->height, used.depth = v->depth;
		used.dst_rows = v->dst_rows, used.src_rows = v->src_rows;
		used.id = v->id;
		if (v->id)	/* staged: the program's callback */
			used.value = v->value, used.elem = v->elem;
		if (!span_ok(w, v->src, v->src_pitch, v->src_rows, v->width, v->height, v->depth) ||
		    !span_ok(w, v->dst, v->dst_pitch, v->dst_rows, v->width, v->height, v->depth) ||
		    memcmp(&used, v, sizeof(used)))
			return CUDA_ERROR_INVALID_VALUE;
		return graph_copy_params(w, v, ctx, p);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		used.dst = v->dst, used.dst_pitch = v->dst_pitch;
		used.width = v->width, used.height = v->height;
		used.value = v->value, used.elem = v->elem;
		if ((v->elem != 1 && v->elem != 2 && v->elem != 4) || v->width > UINT64_MAX / 4 ||
		    !span_ok(w, v->dst, v->dst_pitch, 0, v->width * v->elem, v->height, 1))
			return CUDA_ERROR_INVALID_VALUE;
		p->memset = (CUDA_MEMSET_NODE_PARAMS_v2){
			.dst = v->dst, .pitch = v->dst_pitch, .value = v->value,
			.elementSize = v->elem, .width = v->width, .height = v->height, .ctx = ctx,
		};
		break;
	case CU_GRAPH_NODE_TYPE_EMPTY:
		break;
	case CU_GRAPH_NODE_TYPE_HOST:	/* src: the client's callback cookie */
		used.src = v->src;
		if ((rc = graph_host_params(w, v->src, &p->host)))
			return rc;
		break;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		used.id = v->id;
		e = obj_get(&w->graphs, v->id);
		if (!e || v->id == graph)
			return CUDA_ERROR_INVALID_VALUE;
		p->graph.graph = e->obj;
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		used.id = v->id;
		if (!(e = obj_get(&w->events, v->id)))
			return CUDA_ERROR_INVALID_HANDLE;
		if (v->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD)
			p->eventRecord.event = e->obj;
		else
			p->eventWait.event = e->obj;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return memcmp(&used, v, sizeof(used)) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static enum op_status op_add_node(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct vgpu_node_params v;
	CUgraphNodeParams p;
	CUgraphNode node = NULL;
	uint32_t id = 0;
	CUresult rc = CUDA_SUCCESS;

	/* The description first (a bad one is refused whatever the graph). */
	if (!graph_add_len_ok(call, sizeof(v)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		memcpy(&v, call->payload, sizeof(v));
		rc = graph_node_params(w, &v, (uint32_t)s->arg[0], &p);
	}
	if (!rc)
		rc = graph_add_after(w, call, sizeof(v), &p, &node);
	if (!rc && !(id = graph_node_id(node, (uint32_t)s->arg[0])))
		rc = CUDA_ERROR_OUT_OF_MEMORY;	/* the node stays, unnamed */
	call->cqe->result = rc;
	call->cqe->val[0] = id;
	return OP_DONE;
}

/* A node of a live graph, its graph's id in *graph. */
CUresult graph_live_node(struct worker *w, uint64_t id, CUgraphNode *out, uint32_t *graph)
{
	struct obj_entry *e = nodes.kind && id < OBJ_MAX_ID ? obj_get(&nodes, (uint32_t)id) : NULL;

	if (!e || !obj_get(&w->graphs, (uint32_t)e->aux))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = e->obj;
	*graph = (uint32_t)e->aux;
	return CUDA_SUCCESS;
}

static enum op_status op_node_set(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *exec = NULL;
	struct vgpu_node_params v;
	CUgraphNodeParams p;
	CUgraphNodeType t;
	CUgraphNode node;
	uint32_t graph;
	CUresult rc = graph_live_node(w, s->arg[0], &node, &graph);

	if (!rc && s->arg[1] && !(exec = obj_get(&w->graph_execs, (uint32_t)s->arg[1])))
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc && call->len != sizeof(v))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		memcpy(&v, call->payload, sizeof(v));
		rc = graph_node_type(w, node, &t);
	}
	if (!rc && ((uint32_t)t != v.type || t == CU_GRAPH_NODE_TYPE_KERNEL))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_node_params(w, &v, graph, &p);
	if (!rc && !exec && t == CU_GRAPH_NODE_TYPE_MEMCPY && graph_staged_copy(w, node))
		rc = graph_staged_set(w, node, &p);	/* graph_hostcopy.c */
	else if (!rc)
		rc = exec ? w->B.cuGraphExecNodeSetParams(exec->obj, node, &p)
			  : w->B.cuGraphNodeSetParams(node, &p);
	if (!rc && exec)
		graph_snap_set(w, exec, (uint32_t)s->arg[0], &p);
	/* A child graph node given a new graph may hold another copy now. */
	if (!rc && !exec && t == CU_GRAPH_NODE_TYPE_GRAPH)
		graph_embedded_forget(w, graph, (uint32_t)s->arg[0]);
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_destroy_node(struct worker *w, struct op_call *call)
{
	CUgraphNode node;
	uint32_t graph;
	CUresult rc = graph_live_node(w, call->sqe->arg[0], &node, &graph);

	if (!rc)	/* instances of its graph keep what they know of it */
		graph_snap_node_gone(w, graph, (uint32_t)call->sqe->arg[0], node);
	if (!rc)
		rc = w->B.cuGraphDestroyNode(node);
	if (!rc) {
		graph_embedded_forget(w, graph, (uint32_t)call->sqe->arg[0]);
		graph_mem_forget(graph, (uint32_t)call->sqe->arg[0]);
		obj_remove(&nodes, (uint32_t)call->sqe->arg[0]);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* A capture that records into a graph of the session (XLA traces library
 * calls into its command buffers so). */
static enum op_status op_capture_to_graph(struct worker *w, struct op_call *call)
{
	static CUgraphNode deps[VGPU_MAX_GRAPH_NODES];
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[1]);
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (!rc && !g)
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc && (s->arg[0] > CU_STREAM_CAPTURE_MODE_RELAXED || s->arg[2] > VGPU_MAX_GRAPH_NODES ||
		    call->len != s->arg[2] * sizeof(uint32_t)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = graph_node_list(call->payload, s->arg[2], (uint32_t)s->arg[1], deps);
	if (!rc)
		rc = w->B.cuStreamBeginCaptureToGraph(st, g->obj, s->arg[2] ? deps : NULL, NULL,
						      s->arg[2], (CUstreamCaptureMode)s->arg[0]);
	if (!rc)
		w->captures++;
	call->cqe->result = rc;
	return OP_DONE;
}

/* A node as GRAPH_EXEC_UPDATE names it: id | type << 32; 0: none. */
static uint64_t node_word(struct worker *w, CUgraphNode n, uint32_t graph)
{
	CUgraphNodeType t;
	uint32_t id;

	if (!n || graph_node_type(w, n, &t) || !(id = graph_node_id(n, graph)))
		return 0;
	return id | (uint64_t)t << 32;
}

static enum op_status op_exec_update(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *exec = obj_get(&w->graph_execs, (uint32_t)s->arg[0]);
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[1]);
	CUgraphExecUpdateResultInfo info = { 0 };
	CUresult rc = exec && g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	if (!rc)
		rc = w->B.cuGraphExecUpdate_v2(exec->obj, g->obj, &info);
	if (!rc)
		graph_snap_update(w, exec, g->obj);
	if (exec && g) {
		call->cqe->val[0] = info.result;
		call->cqe->val[1] = node_word(w, info.errorNode, (uint32_t)s->arg[1]);
		call->cqe->val[2] = node_word(w, info.errorFromNode, (uint32_t)s->arg[1]);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

const struct op_desc exec_graph_node_ops[] = {
	OP(GRAPH_NODES, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_nodes),
	OP(KERNEL_NODE_GET, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_kernel_get),
	OP(KERNEL_NODE_SET, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_kernel_set),
	OP(GRAPH_CREATE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_graph_create),
	OP(GRAPH_ADD_KERNEL_NODE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_add_kernel),
	OP(GRAPH_ADD_DEPENDENCIES, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_add_deps),
	OP(GRAPH_ADD_NODE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_add_node),
	OP(GRAPH_NODE_SET, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_node_set),
	OP(GRAPH_DESTROY_NODE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_destroy_node),
	OP(STREAM_BEGIN_CAPTURE_TO_GRAPH, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_capture_to_graph),
	OP(GRAPH_EXEC_UPDATE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_exec_update),
	{ 0 },
};
