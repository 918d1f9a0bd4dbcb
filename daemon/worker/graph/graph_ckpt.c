// SPDX-License-Identifier: MIT
/*
 * Graphs and graph instances through a checkpoint (format: the GRAPHS and
 * GRAPH_EXECS sections of include/vgpu/ckpt.h).
 *
 * A graph is written node by node, in the order the driver lists them (the
 * order they were made), each with the id the client knows it by, its
 * parameters as the wire carries them (kernels name their function by id,
 * their launch attributes follow,
 * events by id, copies and memsets name the session's device memory), a
 * child graph node with its graph inside it; then its edges with their
 * data; a host node by the program's callback cookie, which the program
 * keeps. A restore adds the nodes in that order and the edges after them.
 *
 * An instance is written as the copy of its graph graph_snap.c keeps. Made
 * again, it is instantiated from its graph, when that lives and kept its
 * shape (the client's nodes then still name the instance's), and given the
 * copy's parameters by cuGraphExecUpdate; from the copy itself when its
 * graph is gone. Nodes disabled in it are disabled again.
 *
 * Refused, with the reason: nodes of kinds a restore cannot make (memory,
 * conditional, external semaphore, batch memory op nodes), memory a
 * capture allocated for its graph (pool.c keeps it), copies
 * to or from host memory (their buffers are the old worker's), an instance
 * whose graph changed shape since, or whose setters could not be followed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/ckpt.h"
#include "exec_forward.h"
#include "graph_snap.h"
#include "log.h"
#include "pool_state.h"

#define MAX_DEPTH	8		/* child graphs inside child graphs */
#define MAX_BODY_NODES	(1u << 20)	/* nodes a restored body may hold */

struct why {
	char *buf;
	size_t len;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct why *y, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(y->buf, y->len, fmt, ap);
	va_end(ap);
	return err;
}

/* ---- writing -------------------------------------------------------------- */

struct out {
	uint8_t *p;
	size_t len, cap;
};

static int grow(struct out *o, size_t n)
{
	size_t cap = o->cap ? o->cap : 4096;
	uint8_t *p;

	while (cap - o->len < n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	if (cap == o->cap)
		return 0;
	if (!(p = realloc(o->p, cap)))
		return -ENOMEM;
	o->p = p;
	o->cap = cap;
	return 0;
}

static int put(struct out *o, const void *src, size_t n)
{
	int ret = grow(o, n);

	if (!ret) {
		memcpy(o->p + o->len, src, n);
		o->len += n;
	}
	return ret;
}

static int pad8(struct out *o)
{
	static const uint8_t zero[8];

	return put(o, zero, (8 - o->len % 8) % 8);
}

static const char *type_name(CUgraphNodeType t)
{
	switch (t) {
	case CU_GRAPH_NODE_TYPE_HOST: return "host";
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "memory allocation";
	case CU_GRAPH_NODE_TYPE_MEM_FREE: return "memory free";
	case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: return "external semaphore signal";
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return "external semaphore wait";
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return "batch memory operation";
	default: return "unknown";
	}
}

/* Device address @base moved on by @z layers of @rows rows, @y rows and @x
 * bytes; 0 on overflow. */
static uint64_t fold(uint64_t base, size_t x, size_t y, size_t z, size_t pitch, size_t rows)
{
	uint64_t a, b;

	if (__builtin_mul_overflow((uint64_t)z, (uint64_t)rows, &a) ||
	    __builtin_add_overflow(a, (uint64_t)y, &a) ||
	    __builtin_mul_overflow(a, (uint64_t)pitch, &a) ||
	    __builtin_add_overflow(a, (uint64_t)x, &b) || __builtin_add_overflow(base, b, &a))
		return 0;
	return a;
}

static int is_device(CUmemorytype t)
{
	return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
}

/* A copy's host end that is a block of the session's pinned pool. */
static int pool_end(struct worker *w, CUmemorytype t, const void *host)
{
	return t == CU_MEMORYTYPE_HOST && hostpool_contains(&w->pool, (uintptr_t)host, 1);
}

/* A node other than a kernel or a child graph as the wire's struct. */
static int plain_save(struct worker *w, CUgraphNode n, CUgraphNodeType t, uint32_t graph,
		      struct vgpu_node_params *v, struct why *y)
{
	CUevent ev = NULL;
	CUresult rc = CUDA_SUCCESS;

	memset(v, 0, sizeof(*v));
	v->type = t;
	switch (t) {
	case CU_GRAPH_NODE_TYPE_EMPTY:
		break;
	case CU_GRAPH_NODE_TYPE_MEMSET: {
		CUDA_MEMSET_NODE_PARAMS_v1 m;

		if (!(rc = w->B.cuGraphMemsetNodeGetParams(n, &m))) {
			v->dst = m.dst, v->dst_pitch = m.pitch, v->width = m.width;
			v->height = m.height, v->value = m.value, v->elem = m.elementSize;
		}
		break;
	}
	case CU_GRAPH_NODE_TYPE_MEMCPY: {
		CUDA_MEMCPY3D c;

		if ((rc = w->B.cuGraphMemcpyNodeGetParams(n, &c)))
			break;
		/* Pinned pool ends come back at the same address (graph_hostcopy.c
		 * makes them host memory again). */
		if (!pool_end(w, c.srcMemoryType, c.srcHost) && !is_device(c.srcMemoryType))
			return fail(y, -EOPNOTSUPP, "graph %u copies from an array or host memory "
				    "outside the pinned pool, which checkpoints do not carry", graph);
		if (!pool_end(w, c.dstMemoryType, c.dstHost) && !is_device(c.dstMemoryType))
			return fail(y, -EOPNOTSUPP, "graph %u copies to an array or host memory "
				    "outside the pinned pool, which checkpoints do not carry", graph);
		if (c.srcMemoryType == CU_MEMORYTYPE_HOST)
			c.srcDevice = (CUdeviceptr)(uintptr_t)c.srcHost;
		if (c.dstMemoryType == CU_MEMORYTYPE_HOST)
			c.dstDevice = (CUdeviceptr)(uintptr_t)c.dstHost;
		v->src = fold(c.srcDevice, c.srcXInBytes, c.srcY, c.srcZ, c.srcPitch, c.srcHeight);
		v->dst = fold(c.dstDevice, c.dstXInBytes, c.dstY, c.dstZ, c.dstPitch, c.dstHeight);
		v->src_pitch = c.srcPitch, v->dst_pitch = c.dstPitch;
		v->src_rows = c.srcHeight, v->dst_rows = c.dstHeight;
		v->width = c.WidthInBytes, v->height = c.Height, v->depth = c.Depth;
		break;
	}
	case CU_GRAPH_NODE_TYPE_HOST:	/* the program keeps its cookies */
		if (!(v->src = graph_host_cookie(w, n)))
			return fail(y, -EOPNOTSUPP, "graph %u has a host node of a function the "
				    "session does not know", graph);
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		rc = t == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? w->B.cuGraphEventRecordNodeGetEvent(n, &ev)
							  : w->B.cuGraphEventWaitNodeGetEvent(n, &ev);
		if (!rc && !(v->id = obj_id_of(&w->events, ev)))
			return fail(y, -EOPNOTSUPP, "graph %u has an event node whose event was "
				    "destroyed", graph);
		break;
	default:
		return fail(y, -EOPNOTSUPP, "graph %u holds a %s node, which checkpoints do not "
			    "carry", graph, type_name(t));
	}
	return rc ? fail(y, -EIO, "a node of graph %u cannot be read (CUDA error %d)", graph, rc)
		  : 0;
}

struct in {
	const uint8_t *p;
	size_t len, pos;
};

static int take(struct in *in, void *dst, size_t n)
{
	if (in->len - in->pos < n)
		return -1;
	memcpy(dst, in->p + in->pos, n);
	in->pos += n;
	return 0;
}

/* Kernel node attributes a checkpoint carries (those a value of which names
 * an event or the device's own node are refused when set). */
static const CUlaunchAttributeID kernel_attrs[] = {
	CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
	CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
	CU_LAUNCH_ATTRIBUTE_PRIORITY, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
	CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION,
};
static const CUlaunchAttributeID kernel_attrs_refused[] = {
	CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
	CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE,
};
#define NKATTR (sizeof(kernel_attrs) / sizeof(kernel_attrs[0]))

struct kattr {
	uint32_t id, reserved;
	CUkernelNodeAttrValue v;
};

/* After a kernel's block: u32 count, u32 0, then struct kattr each, for the
 * attributes whose value is not all zero. */
static int kernel_attrs_save(struct worker *w, CUgraphNode n, uint32_t graph, struct out *o,
			     struct why *y)
{
	static const CUkernelNodeAttrValue zero;
	struct kattr a[NKATTR];
	uint32_t head[2] = { 0, 0 };
	int ret;

	for (size_t i = 0; i < sizeof(kernel_attrs_refused) / sizeof(kernel_attrs_refused[0]); i++) {
		CUkernelNodeAttrValue v = zero;

		if (!w->B.cuGraphKernelNodeGetAttribute(n, kernel_attrs_refused[i], &v) &&
		    memcmp(&v, &zero, sizeof(v)))
			return fail(y, -EOPNOTSUPP, "a kernel node of graph %u has launch attribute %d "
				    "set, which checkpoints do not carry", graph,
				    (int)kernel_attrs_refused[i]);
	}
	for (size_t i = 0; i < NKATTR; i++) {
		struct kattr k = { .id = (uint32_t)kernel_attrs[i] };

		if (!w->B.cuGraphKernelNodeGetAttribute(n, kernel_attrs[i], &k.v) &&
		    memcmp(&k.v, &zero, sizeof(k.v)))
			a[head[0]++] = k;
	}
	if (!head[0])
		return 0;
	ret = put(o, head, sizeof(head));
	return ret ? ret : put(o, a, head[0] * sizeof(a[0]));
}

/* The attributes after a kernel's block set again on its new node @n: a
 * value the driver will not take is kept if the node has it already. */
static int kernel_attrs_load(struct worker *w, CUgraphNode n, struct in *in, struct why *y)
{
	uint32_t head[2];
	struct kattr k;

	if (in->pos == in->len)
		return 0;
	if (take(in, head, sizeof(head)) || head[1] || head[0] > NKATTR ||
	    (in->len - in->pos) != head[0] * sizeof(k))
		return fail(y, -EBADMSG, "a kernel node's attributes are damaged");
	for (uint32_t i = 0; i < head[0]; i++) {
		CUkernelNodeAttrValue now;
		const CUaccessPolicyWindow *apw = &k.v.accessPolicyWindow;
		bool known = false;
		CUresult rc;

		take(in, &k, sizeof(k));
		for (size_t a = 0; a < NKATTR; a++)
			known |= k.id == (uint32_t)kernel_attrs[a];
		if (!known || k.reserved ||
		    (k.id == CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW && apw->num_bytes &&
		     !worker_addr_ok(w, (uint64_t)(uintptr_t)apw->base_ptr, apw->num_bytes)))
			return fail(y, -EBADMSG, "a kernel node's attribute %u is refused", k.id);
		rc = w->B.cuGraphKernelNodeSetAttribute(n, (CUkernelNodeAttrID)k.id, &k.v);
		memset(&now, 0, sizeof(now));
		if (rc && (w->B.cuGraphKernelNodeGetAttribute(n, (CUkernelNodeAttrID)k.id, &now) ||
			   memcmp(&now, &k.v, sizeof(now))))
			return fail(y, -EIO, "a kernel node's attribute %u cannot be set again (CUDA "
				    "error %d)", k.id, rc);
	}
	return 0;
}

struct body_list {
	CUgraphNode *nodes, *from, *to;
	CUgraphEdgeData *data;
	size_t n, ne;
};

static void list_free(struct body_list *l)
{
	free(l->nodes);
	free(l->from);
	free(l->to);
	free(l->data);
}

/* @g's nodes and edges, as the driver lists them. */
static CUresult list_get(struct worker *w, CUgraph g, struct body_list *l)
{
	CUresult rc;

	memset(l, 0, sizeof(*l));
	if ((rc = w->B.cuGraphGetNodes(g, NULL, &l->n)) ||
	    (rc = w->B.cuGraphGetEdges_v2(g, NULL, NULL, NULL, &l->ne)))
		return rc;
	l->nodes = calloc(l->n + 1, sizeof(*l->nodes));
	l->from = calloc(l->ne + 1, sizeof(*l->from));
	l->to = calloc(l->ne + 1, sizeof(*l->to));
	l->data = calloc(l->ne + 1, sizeof(*l->data));
	if (!l->nodes || !l->from || !l->to || !l->data)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (l->n && (rc = w->B.cuGraphGetNodes(g, l->nodes, &l->n)))
		return rc;
	if (l->ne && (rc = w->B.cuGraphGetEdges_v2(g, l->from, l->to, l->data, &l->ne)))
		return rc;
	return CUDA_SUCCESS;
}

static size_t index_of(const struct body_list *l, CUgraphNode n)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->nodes[i] == n)
			return i;
	return SIZE_MAX;
}

/* The enabled state an instance's node is written with. */
static uint32_t node_state(struct worker *w, CUgraphExec exec, const struct graph_snap *s,
			   size_t i, CUgraphNodeType t)
{
	CUgraphNode n = s->graph ? graph_node_obj(w, s->ids[i]) : NULL;
	unsigned int on = 1;

	if (s->state[i] & SNAP_KNOWN)
		return s->state[i];
	if (n && (t == CU_GRAPH_NODE_TYPE_KERNEL || t == CU_GRAPH_NODE_TYPE_MEMCPY ||
		  t == CU_GRAPH_NODE_TYPE_MEMSET) && !w->B.cuGraphNodeGetEnabled(exec, n, &on) && !on)
		return VGPU_CKPT_GNODE_OFF;
	return 0;
}

/*
 * Graph @g's body onto @o. @gid: its client id (node ids issued now where
 * missing), 0: none. @s, @exec: an instance's copy and the instance (ids and
 * enabled states from them). @name: the graph a message names.
 */
static int body_save(struct worker *w, CUgraph g, uint32_t gid, const struct graph_snap *s,
		     CUgraphExec exec, uint32_t name, struct out *o, int depth, struct why *y)
{
	static uint8_t kbuf[sizeof(struct vgpu_kernel_node) + VGPU_MAX_PARAM_BYTES];
	struct vgpu_ckpt_graph_body b;
	struct body_list l;
	CUresult rc = list_get(w, g, &l);
	int ret = 0;

	if (depth > MAX_DEPTH)
		ret = fail(y, -EOPNOTSUPP, "graph %u nests child graphs deeper than %d", name,
			   MAX_DEPTH);
	else if (rc)
		ret = fail(y, -EIO, "graph %u cannot be listed (CUDA error %d)", name, rc);
	else if (s && s->n != l.n)
		ret = fail(y, -EIO, "the copy of graph instance %u changed", name);
	b = (struct vgpu_ckpt_graph_body){ (uint32_t)l.n, (uint32_t)l.ne };
	if (!ret && (l.n > MAX_BODY_NODES || l.ne > UINT32_MAX))
		ret = fail(y, -EOPNOTSUPP, "graph %u is too large to carry", name);
	if (!ret)
		ret = put(o, &b, sizeof(b));
	for (size_t i = 0; !ret && i < l.n; i++) {
		struct vgpu_ckpt_graph_node h = { 0 };
		struct vgpu_node_params v;
		CUgraphNodeType t;
		size_t at = o->len;
		uint32_t klen = 0;
		CUgraph child = NULL;

		if ((rc = w->B.cuGraphNodeGetType(l.nodes[i], &t))) {
			ret = fail(y, -EIO, "a node of graph %u cannot be read (CUDA error %d)", name,
				   rc);
			break;
		}
		if (graph_staged_copy(w, l.nodes[i])) {
			ret = fail(y, -EOPNOTSUPP, "graph %u has a copy node to or from the "
				   "program's pageable memory (staged through a callback), which "
				   "checkpoints do not carry", name);
			break;
		}
		h.type = t;
		h.id = s ? s->ids[i] : gid ? graph_node_id(l.nodes[i], gid) : 0;
		if (s)
			h.flags = node_state(w, exec, s, i, t);
		if ((ret = put(o, &h, sizeof(h))))
			break;
		if (t == CU_GRAPH_NODE_TYPE_KERNEL) {
			if ((rc = graph_kernel_read(w, l.nodes[i], kbuf, &klen)))
				ret = fail(y, -EOPNOTSUPP, "a kernel node of graph %u cannot be read "
					   "(CUDA error %d)", name, rc);
			else if (!(ret = put(o, kbuf, klen)))
				ret = kernel_attrs_save(w, l.nodes[i], name, o, y);
		} else if (t == CU_GRAPH_NODE_TYPE_GRAPH) {
			memset(&v, 0, sizeof(v));
			v.type = t;
			if ((rc = w->B.cuGraphChildGraphNodeGetGraph(l.nodes[i], &child)))
				ret = fail(y, -EIO, "a child graph of graph %u cannot be read (CUDA "
					   "error %d)", name, rc);
			v.id = child ? obj_id_of(&w->graphs, child) : 0;
			if (!ret)
				ret = put(o, &v, sizeof(v));
			if (!ret)
				ret = body_save(w, child, v.id, NULL, NULL, name, o, depth + 1, y);
		} else if (!(ret = plain_save(w, l.nodes[i], t, name, &v, y))) {
			ret = put(o, &v, sizeof(v));
		}
		if (ret)
			break;
		h.len = (uint32_t)(o->len - at - sizeof(h));
		memcpy(o->p + at, &h, sizeof(h));
		ret = pad8(o);
	}
	for (size_t i = 0; !ret && i < l.ne; i++) {
		struct vgpu_ckpt_graph_edge e = { .from = (uint32_t)index_of(&l, l.from[i]),
						  .to = (uint32_t)index_of(&l, l.to[i]) };

		_Static_assert(sizeof(e.data) == sizeof(l.data[i]), "edge data layout");
		memcpy(e.data, &l.data[i], sizeof(e.data));
		ret = put(o, &e, sizeof(e));
	}
	list_free(&l);
	return ret == -ENOMEM ? fail(y, ret, "out of memory writing graph %u", name) : ret;
}

/* Whether @a and @b have the same nodes (types, in order) and edges. */
static int same_shape(struct worker *w, CUgraph a, CUgraph b)
{
	struct body_list la, lb;
	int same = !list_get(w, a, &la) && !list_get(w, b, &lb) && la.n == lb.n && la.ne == lb.ne;

	for (size_t i = 0; same && i < la.n; i++) {
		CUgraphNodeType ta, tb;

		same = !w->B.cuGraphNodeGetType(la.nodes[i], &ta) &&
		       !w->B.cuGraphNodeGetType(lb.nodes[i], &tb) && ta == tb;
	}
	for (size_t i = 0; same && i < la.ne; i++) {
		size_t f = index_of(&la, la.from[i]), t = index_of(&la, la.to[i]);

		same = 0;
		for (size_t k = 0; !same && k < lb.ne && f < la.n && t < la.n; k++)
			same = lb.from[k] == lb.nodes[f] && lb.to[k] == lb.nodes[t] &&
			       !memcmp(&lb.data[k], &la.data[i], sizeof(la.data[i]));
	}
	list_free(&la);
	list_free(&lb);
	return same;
}

int graph_ckpt_save(struct worker *w, struct vgpu_ckpt_graph **gp, size_t *ng, uint8_t **gblob,
		    size_t *glen, struct vgpu_ckpt_graph_exec **xp, size_t *nx, uint8_t **xblob,
		    size_t *xlen, char *why, size_t why_len)
{
	struct why y = { why, why_len };
	struct out go = { 0 }, xo = { 0 };
	struct vgpu_ckpt_graph *g = NULL;
	struct vgpu_ckpt_graph_exec *x = NULL;
	struct obj_entry *e;
	size_t n = 0, m = 0;
	uint32_t i;
	int ret = 0;

	/* Memory a capture allocated is the graph's (pool.c); the pools'
	 * records do not carry that yet. */
	for (size_t k = 0; w->pools && k < w->pools->nb; k++)
		if (w->pools->b[k].state == BLOCK_GRAPH)
			return fail(&y, -EOPNOTSUPP, "graph %u holds memory its capture allocated "
				    "(cuMemAllocAsync), which checkpoints do not carry yet",
				    w->pools->b[k].graph);
	obj_for_each(&w->graphs, i, e)
		n++;
	obj_for_each(&w->graph_execs, i, e)
		m++;
	g = calloc(n + 1, sizeof(*g));
	x = calloc(m + 1, sizeof(*x));
	if (!g || !x)
		ret = fail(&y, -ENOMEM, "out of memory listing the graphs");
	n = m = 0;
	obj_for_each(&w->graphs, i, e) {
		if (ret)
			break;
		if (e->data)	/* a child graph node's: it travels in its node */
			continue;
		if (worker_use_ctx(w, (uint32_t)e->aux)) {
			ret = fail(&y, -EIO, "the context of graph %u cannot be made current", i);
			break;
		}
		g[n] = (struct vgpu_ckpt_graph){ .id = i, .ctx = (uint32_t)e->aux, .off = go.len };
		ret = body_save(w, e->obj, i, NULL, NULL, i, &go, 0, &y);
		g[n].len = go.len - g[n].off;
		n++;
	}
	for (uint32_t k = 0; k < n; k++)	/* ids issued while writing count too */
		g[k].next_node = graph_node_next();
	obj_for_each(&w->graph_execs, i, e) {
		struct graph_snap *s = e->data;
		struct obj_entry *src;

		if (ret)
			break;
		if (!s || !s->copy || s->why) {
			ret = fail(&y, -EOPNOTSUPP, "graph instance %u cannot be carried: %s", i,
				   s && s->why ? s->why : "it was not recorded");
			break;
		}
		src = s->graph ? obj_get(&w->graphs, s->graph) : NULL;
		if (worker_use_ctx(w, (uint32_t)e->aux)) {
			ret = fail(&y, -EIO, "the context of graph instance %u cannot be made "
				   "current", i);
			break;
		}
		if (src && !same_shape(w, src->obj, s->copy)) {
			ret = fail(&y, -EOPNOTSUPP, "graph instance %u: graph %u gained or lost nodes "
				   "or edges since it was instantiated; checkpoints carry an "
				   "instance whose graph kept its shape or was destroyed", i,
				   s->graph);
			break;
		}
		x[m] = (struct vgpu_ckpt_graph_exec){ .id = i, .ctx = (uint32_t)e->aux,
						      .flags = s->flags,
						      .graph = src ? s->graph : 0, .off = xo.len };
		ret = body_save(w, s->copy, 0, s, e->obj, i, &xo, 0, &y);
		x[m].len = xo.len - x[m].off;
		m++;
	}
	w->cur_ctx = 0;
	if (ret) {
		free(g);
		free(x);
		free(go.p);
		free(xo.p);
		return ret;
	}
	*gp = g, *ng = n, *gblob = go.p, *glen = go.len;
	*xp = x, *nx = m, *xblob = xo.p, *xlen = xo.len;
	return 0;
}

/* ---- reading -------------------------------------------------------------- */

/* The next node of a body: its header, its bytes in @bytes. */
static int next_node(struct in *in, struct vgpu_ckpt_graph_node *h, struct in *bytes)
{
	size_t padded;

	if (take(in, h, sizeof(*h)) || h->len > in->len - in->pos)
		return -1;
	*bytes = (struct in){ in->p + in->pos, h->len, 0 };
	padded = ((size_t)h->len + 7) & ~(size_t)7;
	in->pos += padded < in->len - in->pos ? padded : in->len - in->pos;
	return 0;
}

static int body_load(struct worker *w, CUgraph g, struct in *in, int depth, struct why *y);

/* One node of a body added to @g (no dependencies yet). */
static int node_load(struct worker *w, CUgraph g, const struct vgpu_ckpt_graph_node *h,
		     struct in *bytes, int depth, CUgraphNode *out, struct why *y)
{
	static void *ptrs[VGPU_MAX_KERNEL_PARAMS];
	struct vgpu_node_params v;
	CUgraphNodeParams p;
	CUgraph child = NULL;
	CUresult rc = CUDA_SUCCESS;
	int ret = 0;

	memset(&p, 0, sizeof(p));
	if (h->flags & ~(VGPU_CKPT_GNODE_OFF | VGPU_CKPT_GNODE_KNOWN))
		return fail(y, -EBADMSG, "a graph node has unknown flags");
	if (h->type == CU_GRAPH_NODE_TYPE_KERNEL) {
		CUDA_KERNEL_NODE_PARAMS k;
		uint32_t used = 0;

		rc = graph_kernel_params(w, bytes->p, (uint32_t)bytes->len, ptrs, &k, &used);
		if (!rc && used > bytes->len)
			rc = CUDA_ERROR_INVALID_VALUE;
		bytes->pos = used;	/* its attributes follow */
		p.type = CU_GRAPH_NODE_TYPE_KERNEL;
		memcpy(&p.kernel, &k, sizeof(k));
	} else {
		if (take(bytes, &v, sizeof(v)) || v.type != h->type)
			return fail(y, -EBADMSG, "a graph node's parameters are damaged");
		if (h->type == CU_GRAPH_NODE_TYPE_GRAPH) {
			struct vgpu_node_params bare = { .type = v.type, .id = v.id };

			if (memcmp(&bare, &v, sizeof(v)))
				return fail(y, -EBADMSG, "a child graph node's parameters are damaged");
			if ((rc = w->B.cuGraphCreate(&child, 0)))
				return fail(y, -EIO, "a child graph cannot be made (CUDA error %d)", rc);
			ret = body_load(w, child, bytes, depth + 1, y);
			if (!ret && bytes->pos != bytes->len)
				ret = fail(y, -EBADMSG, "a child graph's body is damaged");
			p.type = CU_GRAPH_NODE_TYPE_GRAPH;
			p.graph.graph = child;
		} else if (bytes->pos != bytes->len) {
			return fail(y, -EBADMSG, "a graph node's parameters are damaged");
		} else {
			rc = graph_node_params(w, &v, 0, &p);
		}
	}
	if (!ret && rc)
		ret = fail(y, -EBADMSG, "a graph node of type %u is refused (CUDA error %d)",
			   h->type, rc);
	if (!ret && (rc = w->B.cuGraphAddNode_v2(out, g, NULL, NULL, 0, &p)))
		ret = fail(y, -EIO, "a graph node of type %u cannot be made again (CUDA error %d)",
			   h->type, rc);
	if (!ret && h->type == CU_GRAPH_NODE_TYPE_KERNEL)
		ret = kernel_attrs_load(w, *out, bytes, y);
	if (child)	/* the node holds its own copy */
		w->B.cuGraphDestroy(child);
	return ret;
}

/* A body's nodes and edges added to the empty graph @g. */
static int body_load(struct worker *w, CUgraph g, struct in *in, int depth, struct why *y)
{
	struct vgpu_ckpt_graph_body b;
	CUgraphNode *list;
	int ret = 0;

	if (depth > MAX_DEPTH)
		return fail(y, -EBADMSG, "child graphs nest deeper than %d", MAX_DEPTH);
	if (take(in, &b, sizeof(b)) || b.nodes > MAX_BODY_NODES ||
	    b.edges > (in->len - in->pos) / sizeof(struct vgpu_ckpt_graph_edge) + 1)
		return fail(y, -EBADMSG, "a graph's body is damaged");
	if (!(list = calloc(b.nodes + 1, sizeof(*list))))
		return fail(y, -ENOMEM, "out of memory");
	for (uint32_t i = 0; !ret && i < b.nodes; i++) {
		struct vgpu_ckpt_graph_node h;
		struct in bytes;

		if (next_node(in, &h, &bytes))
			ret = fail(y, -EBADMSG, "a graph's body is damaged");
		else
			ret = node_load(w, g, &h, &bytes, depth, &list[i], y);
	}
	for (uint32_t i = 0; !ret && i < b.edges; i++) {
		struct vgpu_ckpt_graph_edge e;
		CUgraphEdgeData d;
		CUresult rc;

		if (take(in, &e, sizeof(e)) || e.from >= b.nodes || e.to >= b.nodes ||
		    graph_edge_list(e.data, 1, &d))
			ret = fail(y, -EBADMSG, "a graph's edges are damaged");
		else if ((rc = w->B.cuGraphAddDependencies_v2(g, &list[e.from], &list[e.to], &d, 1)))
			ret = fail(y, -EIO, "a graph's edge cannot be made again (CUDA error %d)",
				   rc);
	}
	free(list);
	return ret;
}

/* The client's ids given again to a rebuilt graph's nodes (and child graphs). */
static int body_bind(struct worker *w, CUgraph g, uint32_t gid, uint64_t ctx, struct in *in,
		     struct why *y)
{
	struct vgpu_ckpt_graph_body b;
	struct body_list l = { 0 };
	int ret = 0;

	if (take(in, &b, sizeof(b)) || list_get(w, g, &l) || l.n != b.nodes) {
		list_free(&l);
		return fail(y, -EIO, "graph %u was not made again as it was", gid);
	}
	for (uint32_t i = 0; !ret && i < b.nodes; i++) {
		struct vgpu_ckpt_graph_node h;
		struct vgpu_node_params v;
		struct in bytes;
		CUgraph child = NULL;

		if (next_node(in, &h, &bytes)) {
			ret = fail(y, -EBADMSG, "a graph's body is damaged");
			break;
		}
		if (h.id && graph_node_bind(h.id, l.nodes[i], gid))
			ret = fail(y, -EBADMSG, "graph node id %u is given twice", h.id);
		if (ret || h.type != CU_GRAPH_NODE_TYPE_GRAPH || take(&bytes, &v, sizeof(v)) || !v.id)
			continue;
		if (w->B.cuGraphChildGraphNodeGetGraph(l.nodes[i], &child) ||
		    graph_embedded_bind(w, v.id, child, gid, h.id, ctx))
			ret = fail(y, -EBADMSG, "child graph %u cannot be known again", v.id);
		else
			ret = body_bind(w, child, v.id, ctx, &bytes, y);
	}
	in->pos += (size_t)b.edges * sizeof(struct vgpu_ckpt_graph_edge);
	list_free(&l);
	return ret;
}

/* @len bytes at @off of a blob of @blob_len: a body there. */
static int body_at(const uint8_t *blob, size_t blob_len, uint64_t off, uint64_t len,
		   struct in *in)
{
	if (off > blob_len || len > blob_len - off)
		return -1;
	*in = (struct in){ blob + off, (size_t)len, 0 };
	return 0;
}

static int graph_load(struct worker *w, const struct vgpu_ckpt_graph *r, const uint8_t *blob,
		      size_t blob_len, struct why *y)
{
	CUgraph g = NULL;
	struct in in, again;
	CUresult rc;
	int ret;

	if (r->reserved || !r->id || r->id >= OBJ_MAX_ID || obj_get(&w->graphs, r->id) ||
	    body_at(blob, blob_len, r->off, r->len, &in))
		return fail(y, -EBADMSG, "graph record %u is damaged", r->id);
	if ((rc = worker_use_ctx(w, r->ctx)))
		return fail(y, -EBADMSG, "graph %u names context %u, which is not there", r->id,
			    r->ctx);
	if ((rc = w->B.cuGraphCreate(&g, 0)))
		return fail(y, -EIO, "graph %u cannot be made again (CUDA error %d)", r->id, rc);
	again = in;
	ret = body_load(w, g, &in, 0, y);
	if (!ret && in.pos != in.len)
		ret = fail(y, -EBADMSG, "graph %u's body is damaged", r->id);
	if (!ret && obj_insert(&w->graphs, r->id, g, r->ctx, NULL))
		return fail(y, -ENOMEM, "out of memory");
	if (ret) {
		w->B.cuGraphDestroy(g);
		return ret;
	}
	graph_node_next_at_least(r->next_node);
	return body_bind(w, g, r->id, r->ctx, &again, y);
}

static int exec_load(struct worker *w, const struct vgpu_ckpt_graph_exec *r, const uint8_t *blob,
		     size_t blob_len, struct why *y)
{
	struct obj_entry *src = r->graph ? obj_get(&w->graphs, r->graph) : NULL;
	struct graph_snap *s = NULL;
	CUgraph copy = NULL;
	CUgraphExec ge = NULL;
	CUgraphExecUpdateResultInfo info;
	struct body_list l = { 0 };
	struct vgpu_ckpt_graph_body b;
	struct in in, heads;
	CUresult rc;
	int ret = 0;

	if (r->reserved || !r->id || r->id >= OBJ_MAX_ID || obj_get(&w->graph_execs, r->id) ||
	    body_at(blob, blob_len, r->off, r->len, &in) || (r->graph && (!src || src->data)))
		return fail(y, -EBADMSG, "graph instance record %u is damaged", r->id);
	if (worker_use_ctx(w, r->ctx))
		return fail(y, -EBADMSG, "graph instance %u names context %u, which is not there",
			    r->id, r->ctx);
	if ((rc = w->B.cuGraphCreate(&copy, 0)))
		return fail(y, -EIO, "graph instance %u cannot be made again (CUDA error %d)",
			    r->id, rc);
	heads = in;
	ret = body_load(w, copy, &in, 0, y);
	if (!ret && in.pos != in.len)
		ret = fail(y, -EBADMSG, "graph instance %u's body is damaged", r->id);
	if (!ret && (take(&heads, &b, sizeof(b)) || !(s = graph_snap_new(b.nodes))))
		ret = fail(y, -ENOMEM, "out of memory");
	for (uint32_t i = 0; !ret && i < b.nodes; i++) {
		struct vgpu_ckpt_graph_node h;
		struct in bytes;

		next_node(&heads, &h, &bytes);	/* read whole above */
		s->ids[i] = h.id;
		s->state[i] = (uint8_t)(h.flags & (SNAP_OFF | SNAP_KNOWN));
	}
	if (!ret && list_get(w, copy, &l))
		ret = fail(y, -EIO, "graph instance %u was not made again as it was", r->id);
	if (!ret) {
		memcpy(s->nodes, l.nodes, b.nodes * sizeof(*l.nodes));
		list_free(&l);
		memset(&l, 0, sizeof(l));
	}
	/* From its graph, the client's nodes then naming the instance's, with
	 * the parameters it had; from the copy when the graph is gone. */
	if (!ret && (rc = w->B.cuGraphInstantiateWithFlags(&ge, src ? src->obj : copy, r->flags)))
		ret = fail(y, -EIO, "graph instance %u cannot be instantiated again (CUDA error %d)",
			   r->id, rc);
	if (!ret && src && (rc = w->B.cuGraphExecUpdate_v2(ge, copy, &info)))
		ret = fail(y, -EIO, "graph instance %u cannot be given its parameters again (CUDA "
			   "error %d, update result %d)", r->id, rc, info.result);
	if (!ret && src && (list_get(w, src->obj, &l) || l.n != b.nodes))
		ret = fail(y, -EIO, "graph %u does not match instance %u", r->graph, r->id);
	for (uint32_t i = 0; !ret && i < b.nodes; i++)
		if ((s->state[i] & SNAP_OFF) &&
		    (rc = w->B.cuGraphNodeSetEnabled(ge, src ? l.nodes[i] : s->nodes[i], 0)))
			ret = fail(y, -EIO, "a node of graph instance %u cannot be disabled again "
				   "(CUDA error %d)", r->id, rc);
	list_free(&l);
	if (!ret) {
		s->graph = src ? r->graph : 0;
		s->flags = r->flags;
		s->copy = copy;
		if (obj_insert(&w->graph_execs, r->id, ge, r->ctx, s)) {
			s = NULL;	/* freed */
			ret = fail(y, -ENOMEM, "out of memory");
		} else {
			return 0;
		}
	}
	if (ge)
		w->B.cuGraphExecDestroy(ge);
	if (copy)
		w->B.cuGraphDestroy(copy);
	free(s);
	return ret;
}

int graph_ckpt_load(struct worker *w, const struct vgpu_ckpt_graph *g, size_t ng,
		    const uint8_t *gblob, size_t glen, const struct vgpu_ckpt_graph_exec *x,
		    size_t nx, const uint8_t *xblob, size_t xlen, char *why, size_t why_len)
{
	struct why y = { why, why_len };
	int ret = 0;

	for (size_t i = 0; !ret && i < ng; i++)
		ret = graph_load(w, &g[i], gblob, glen, &y);
	for (size_t i = 0; !ret && i < nx; i++)
		ret = exec_load(w, &x[i], xblob, xlen, &y);
	w->cur_ctx = 0;
	return ret;
}
