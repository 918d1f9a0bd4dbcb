// SPDX-License-Identifier: MIT
/*
 * Graphs on the host backend: built, cloned, instantiated and launched as
 * the driver does, with every node run in dependency order when an instance
 * is launched (the backend's streams run every operation at once, so a
 * launch is done when it returns). Stream capture is not emulated: beginning
 * one says so (CUDA_ERROR_NOT_SUPPORTED, logged once) and no stream is ever
 * capturing; graphs are built node by node here.
 *
 * A node keeps its own copy of its parameters (a kernel's argument values, a
 * child graph's graph); an instance is a deep copy of its graph whose nodes
 * remember which node they copy (serial numbers: a freed node's address may
 * come back), which is how setters that name the graph's nodes find the
 * instance's. graph_lock guards every graph, node and instance; it is taken
 * before host.lock and never held by host calls that take it.
 */
#include <stdlib.h>
#include <string.h>

#include "host_backend.h"
#include "capture.h"
#include "log.h"

#define HG_MAX_PARAMS 1024	/* a kernel's, as cuFuncGetParamInfo counts them */

pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
struct host_set graphs, nodes, execs;
static uint64_t next_serial = 1;

static CUresult no_capture(const char *what)
{
	static int said;

	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		vlog_warn("host backend: %s: stream capture is not emulated (graphs are built "
			  "node by node)", what);
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult host_cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
	CUresult rc = host_stream_check(s);

	(void)mode;
	return rc ? rc : no_capture("cuStreamBeginCapture");
}

CUresult host_cuStreamEndCapture(CUstream s, CUgraph *graph)
{
	(void)s;
	(void)graph;
	return CUDA_ERROR_ILLEGAL_STATE;	/* never capturing */
}

CUresult host_cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
					CUgraph *graph, const CUgraphNode **deps,
					const CUgraphEdgeData **edges, size_t *ndeps)
{
	CUresult rc = host_stream_check(s);

	if (rc)
		return rc;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	vgpu_capture_info_fill(CU_STREAM_CAPTURE_STATUS_NONE, 0, status, id, graph, deps, edges,
			       ndeps);
	return CUDA_SUCCESS;
}

CUresult host_cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
					  const CUgraphEdgeData *edges, size_t ndeps,
					  CUstreamCaptureMode mode)
{
	CUresult rc = host_stream_check(s);

	(void)g;
	(void)deps;
	(void)edges;
	(void)ndeps;
	(void)mode;
	return rc ? rc : no_capture("cuStreamBeginCaptureToGraph");
}

/* No stream is ever capturing here. */
CUresult host_cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode *deps,
						   const CUgraphEdgeData *edges, size_t n,
						   unsigned int flags)
{
	CUresult rc = host_stream_check(s);

	(void)deps;
	(void)edges;
	(void)n;
	(void)flags;
	return rc ? rc : CUDA_ERROR_ILLEGAL_STATE;
}

/* Nothing captures here, but the thread's mode is kept as the driver keeps it. */
CUresult host_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	static __thread CUstreamCaptureMode cur = CU_STREAM_CAPTURE_MODE_GLOBAL;
	CUstreamCaptureMode old = cur;

	if (!mode || (unsigned int)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	cur = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

/* ---- nodes and their parameters --------------------------------------- */

void graph_free(struct hg_graph *g);
struct hg_graph *graph_copy(const struct hg_graph *src, int instance);

void params_clear(struct hg_node *n)
{
	free(n->args);
	free(n->block);
	n->args = NULL;
	n->block = NULL;
	if (n->child) {	/* its handle goes with it */
		host_set_del(&graphs, n->child);
		graph_free(n->child);
	}
	n->child = NULL;
	cond_clear(n);
	mem_node_clear(n);
}

/* A kernel's arguments copied out of @p (kernelParams, or an extra buffer),
 * laid out as the function says. */
static CUresult kernel_copy(struct hg_node *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
	CUfunction f = p->func ? p->func : (CUfunction)p->kern;
	size_t off[HG_MAX_PARAMS], size[HG_MAX_PARAMS], end = 0, count = 0;
	const uint8_t *buf = NULL;
	size_t buf_size = 0;

	if (!f)
		return CUDA_ERROR_INVALID_VALUE;
	for (;; count++) {
		CUresult rc;

		if (count == HG_MAX_PARAMS)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = host_cuFuncGetParamInfo(f, count, &off[count], &size[count]);
		if (rc == CUDA_ERROR_INVALID_VALUE)
			break;
		if (rc)
			return rc;
		if (off[count] + size[count] > end)
			end = off[count] + size[count];
	}
	if (!p->kernelParams && p->extra) {
		for (int i = 0; p->extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = p->extra[i + 1];
			else if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				buf_size = *(const size_t *)p->extra[i + 1];
			else
				return CUDA_ERROR_INVALID_VALUE;
		}
		if (!buf || buf_size < end)
			return CUDA_ERROR_INVALID_VALUE;
	} else if (count && !p->kernelParams) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	n->block = calloc(1, end ? end : 1);
	n->args = calloc(count ? count : 1, sizeof(*n->args));
	if (!n->block || !n->args)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < count; i++) {
		memcpy(n->block + off[i], buf ? buf + off[i] : p->kernelParams[i], size[i]);
		n->args[i] = n->block + off[i];
	}
	n->p.kernel = (CUDA_KERNEL_NODE_PARAMS_v3){
		.func = f, .gridDimX = p->gridDimX, .gridDimY = p->gridDimY,
		.gridDimZ = p->gridDimZ, .blockDimX = p->blockDimX, .blockDimY = p->blockDimY,
		.blockDimZ = p->blockDimZ, .sharedMemBytes = p->sharedMemBytes,
		.kernelParams = n->args,
	};
	return CUDA_SUCCESS;
}

static int mem_type_ok(CUmemorytype t)
{
	return t == CU_MEMORYTYPE_HOST || t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED ||
	       t == CU_MEMORYTYPE_ARRAY;
}

static int event_live(CUevent e)
{
	int live;

	pthread_mutex_lock(&host.lock);
	live = host_set_has(&host.events, e);
	pthread_mutex_unlock(&host.lock);
	return live;
}

/* @p copied into @n (its type already set): the node's own from now on.
 * @n holds nothing of its own yet. */
CUresult params_set(struct hg_node *n, const CUgraphNodeParams *p)
{
	CUresult rc = CUDA_SUCCESS;

	if (p->type != n->type)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&n->p, 0, sizeof(n->p));
	n->p.type = p->type;
	_Static_assert(sizeof(p->kernel) == sizeof(CUDA_KERNEL_NODE_PARAMS), "v3 = v2");
	_Static_assert(sizeof(p->eventRecord) == sizeof(p->eventWait), "event nodes");
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		rc = kernel_copy(n, (const CUDA_KERNEL_NODE_PARAMS *)&p->kernel);
		break;
	case CU_GRAPH_NODE_TYPE_MEMCPY: {
		const CUDA_MEMCPY3D *c = &p->memcpy.copyParams;

		if (!mem_type_ok(c->srcMemoryType) || !mem_type_ok(c->dstMemoryType) ||
		    c->srcLOD || c->dstLOD || !c->WidthInBytes || !c->Height || !c->Depth)
			return CUDA_ERROR_INVALID_VALUE;
		n->p.memcpy = p->memcpy;
		break;
	}
	case CU_GRAPH_NODE_TYPE_MEMSET: {
		const CUDA_MEMSET_NODE_PARAMS_v2 *m = &p->memset;

		if ((m->elementSize != 1 && m->elementSize != 2 && m->elementSize != 4) ||
		    !m->dst || !m->width || !m->height)
			return CUDA_ERROR_INVALID_VALUE;
		n->p.memset = *m;
		break;
	}
	case CU_GRAPH_NODE_TYPE_HOST:
		if (!p->host.fn)
			return CUDA_ERROR_INVALID_VALUE;
		n->p.host = p->host;
		break;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (!host_set_has(&graphs, p->graph.graph))
			return CUDA_ERROR_INVALID_VALUE;
		if (!(n->child = graph_copy((const struct hg_graph *)p->graph.graph, 0)))
			return CUDA_ERROR_OUT_OF_MEMORY;
		n->child->owner = n;
		if (host_set_add(&graphs, n->child)) {
			graph_free(n->child);
			n->child = NULL;
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		n->p.graph.graph = (CUgraph)n->child;
		break;
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		rc = cond_params_set(n, &p->conditional);
		break;
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		rc = mem_node_set(n, p);
		break;
	case CU_GRAPH_NODE_TYPE_EMPTY:
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		if (!event_live(p->eventRecord.event))
			return CUDA_ERROR_INVALID_HANDLE;
		n->p.eventRecord = p->eventRecord;
		break;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (rc)
		params_clear(n);
	return rc;
}

/* @n's parameters replaced by @p's, or left as they were. */
CUresult params_replace(struct hg_node *n, const CUgraphNodeParams *p)
{
	struct hg_node t = { .g = n->g, .type = n->type };
	CUresult rc;

	if (p->type != n->type || n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ||
	    n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
		return CUDA_ERROR_INVALID_VALUE;	/* bodies and memory stay the node's */
	if ((rc = params_set(&t, p)))
		return rc;
	params_clear(n);
	n->p = t.p;
	n->args = t.args;
	n->block = t.block;
	n->child = t.child;
	if (n->child) {
		n->child->owner = n;
		n->p.graph.graph = (CUgraph)n->child;
	}
	if (n->type == CU_GRAPH_NODE_TYPE_KERNEL)
		n->p.kernel.kernelParams = n->args;
	return CUDA_SUCCESS;
}

static void node_free(struct hg_node *n)
{
	params_clear(n);
	host_set_del(&nodes, n);
	free(n->in);
	free(n);
}

void graph_free(struct hg_graph *g)
{
	for (size_t i = 0; i < g->n; i++)
		node_free(g->nodes[i]);
	free(g->nodes);
	free(g);
}

static CUresult graph_push(struct hg_graph *g, struct hg_node *n)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 8;
		struct hg_node **v = realloc(g->nodes, cap * sizeof(*v));

		if (!v)
			return CUDA_ERROR_OUT_OF_MEMORY;
		g->nodes = v;
		g->cap = cap;
	}
	g->nodes[g->n++] = n;
	return CUDA_SUCCESS;
}

int dep_index(const struct hg_node *to, const struct hg_node *from,
		     const CUgraphEdgeData *d)
{
	for (size_t i = 0; i < to->nin; i++)
		if (to->in[i].from == from && (!d || !memcmp(&to->in[i].data, d, sizeof(*d))))
			return (int)i;
	return -1;
}

static CUresult dep_add(struct hg_node *to, struct hg_node *from, const CUgraphEdgeData *d)
{
	static const CUgraphEdgeData plain;

	if (to == from || dep_index(to, from, NULL) >= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (to->nin == to->capin) {
		size_t cap = to->capin ? 2 * to->capin : 4;
		struct hg_dep *v = realloc(to->in, cap * sizeof(*v));

		if (!v)
			return CUDA_ERROR_OUT_OF_MEMORY;
		to->in = v;
		to->capin = cap;
	}
	to->in[to->nin++] = (struct hg_dep){ from, d ? *d : plain };
	return CUDA_SUCCESS;
}

static int node_in(const struct hg_graph *g, CUgraphNode h)
{
	return h && host_set_has(&nodes, h) && ((struct hg_node *)h)->g == g;
}

/* A copy of @src (an instance's when @instance: enabled nodes); every node
 * remembers the one it copies. NULL: out of memory. */
struct hg_graph *graph_copy(const struct hg_graph *src, int instance)
{
	struct hg_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	for (size_t i = 0; i < src->n; i++) {
		const struct hg_node *s = src->nodes[i];
		struct hg_node *n = calloc(1, sizeof(*n));

		if (!n || graph_push(g, n)) {
			free(n);
			goto fail;
		}
		n->g = g;
		n->serial = next_serial++;
		n->orig = s->serial;
		n->type = s->type;
		n->enabled = instance ? 1 : 0;
		memcpy(n->attr, s->attr, sizeof(n->attr));
		if (host_set_add(&nodes, n) ||
		    (s->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ? cond_copy(n, s, instance)
							       : params_set(n, &s->p)))
			goto fail;
		for (size_t k = 0; k < s->nin; k++) {
			size_t at = 0;

			while (src->nodes[at] != s->in[k].from)
				at++;
			if (dep_add(n, g->nodes[at], &s->in[k].data))
				goto fail;
		}
	}
	return g;
fail:
	graph_free(g);
	return NULL;
}

/* ---- graphs ------------------------------------------------------------ */

CUresult host_cuGraphCreate(CUgraph *out, unsigned int flags)
{
	struct hg_graph *g;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	if (!out || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(g = calloc(1, sizeof(*g))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&graph_lock);
	if (host_set_add(&graphs, g)) {
		free(g);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&graph_lock);
	if (!rc)
		*out = (CUgraph)g;
	return rc;
}

CUresult host_cuGraphDestroy(CUgraph h)
{
	struct hg_graph *g = (struct hg_graph *)h;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, g) || g->owner)	/* a node's graph goes with it */
		rc = CUDA_ERROR_INVALID_VALUE;
	else {
		host_set_del(&graphs, g);
		graph_free(g);
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphClone(CUgraph *out, CUgraph h)
{
	struct hg_graph *c = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, h))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!(c = graph_copy((struct hg_graph *)h, 0)) || host_set_add(&graphs, c))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (rc && c)
		graph_free(c);
	pthread_mutex_unlock(&graph_lock);
	if (!rc)
		*out = (CUgraph)c;
	return rc;
}

CUresult host_cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode node, CUgraph clone)
{
	struct hg_graph *c = (struct hg_graph *)clone;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (!out)
		return rc;
	pthread_mutex_lock(&graph_lock);
	if (host_set_has(&graphs, c) && host_set_has(&nodes, node))
		for (size_t i = 0; i < c->n; i++)
			if (c->nodes[i]->orig == ((struct hg_node *)node)->serial) {
				*out = (CUgraphNode)c->nodes[i];
				rc = CUDA_SUCCESS;
				break;
			}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

/* A node added to @g after @ndeps dependencies (edge data @edges, or plain). */
static CUresult node_add(CUgraphNode *out, CUgraph h, const CUgraphNode *deps,
			 const CUgraphEdgeData *edges, size_t ndeps, const CUgraphNodeParams *p)
{
	struct hg_graph *g = (struct hg_graph *)h;
	struct hg_node *n;
	CUresult rc = CUDA_SUCCESS;

	if (!out || !p || (ndeps && !deps))
		return CUDA_ERROR_INVALID_VALUE;
	if (!(n = calloc(1, sizeof(*n))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, g))
		rc = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !rc && i < ndeps; i++)
		if (!node_in(g, deps[i]))
			rc = CUDA_ERROR_INVALID_VALUE;
	n->g = g;
	n->type = p->type;
	n->serial = next_serial++;
	if (!rc && p->type == CU_GRAPH_NODE_TYPE_GRAPH && p->graph.graph == h)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = params_set(n, p);
	for (size_t i = 0; !rc && i < ndeps; i++)
		rc = dep_add(n, (struct hg_node *)deps[i], edges ? &edges[i] : NULL);
	if (!rc && host_set_add(&nodes, n))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc && (rc = graph_push(g, n)))
		host_set_del(&nodes, n);
	if (rc) {
		params_clear(n);
		free(n->in);
		free(n);
	} else {
		*out = (CUgraphNode)n;
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
				const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p)
{
	CUresult rc = node_add(node, g, deps, edges, ndeps, p);

	/* A conditional node's bodies: the array the node holds, as the driver's. */
	if (!rc && p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
		p->conditional.phGraph_out = (CUgraph *)((struct hg_node *)*node)->bodies;
	if (!rc && p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)	/* the address it fixed */
		p->alloc.dptr = ((struct hg_node *)*node)->p.alloc.dptr;
	return rc;
}

CUresult host_cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
				      size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
	CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_KERNEL };

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&np.kernel, p, sizeof(*p));
	return node_add(node, g, deps, NULL, ndeps, &np);
}

/* A live node's (graph's, not an instance's) under graph_lock. */
struct hg_node *node_get(CUgraphNode h)
{
	return h && host_set_has(&nodes, h) ? (struct hg_node *)h : NULL;
}

CUresult host_cuGraphDestroyNode(CUgraphNode h)
{
	struct hg_node *n;
	struct hg_graph *g;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&graph_lock);
	if (!(n = node_get(h))) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		size_t at = 0;

		g = n->g;
		for (size_t i = 0; i < g->n; i++) {
			struct hg_node *o = g->nodes[i];
			int k;

			while ((k = dep_index(o, n, NULL)) >= 0)
				o->in[k] = o->in[--o->nin];
			if (o != n)
				g->nodes[at++] = o;
		}
		g->n = at;
		node_free(n);
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphNodeGetType(CUgraphNode h, CUgraphNodeType *type)
{
	struct hg_node *n;

	if (!type)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if ((n = node_get(h)))
		*type = n->type;
	pthread_mutex_unlock(&graph_lock);
	return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Node lists out as the driver gives them: *n the count when @out is NULL;
 * else up to *n filled, the rest NULL, *n lowered to the count. */
static void list_out(CUgraphNode *out, size_t *n, struct hg_node **v, size_t count)
{
	if (!out) {
		*n = count;
		return;
	}
	for (size_t i = 0; i < *n; i++)
		out[i] = i < count ? (CUgraphNode)v[i] : NULL;
	if (*n > count)
		*n = count;
}

static CUresult nodes_of(CUgraph h, CUgraphNode *out, size_t *n, int roots)
{
	struct hg_graph *g = (struct hg_graph *)h;
	struct hg_node **v = NULL;
	size_t count = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, g))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (g->n && !(v = malloc(g->n * sizeof(*v))))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; !rc && i < g->n; i++)
		if (!roots || !g->nodes[i]->nin)
			v[count++] = g->nodes[i];
	if (!rc)
		list_out(out, n, v, count);
	pthread_mutex_unlock(&graph_lock);
	free(v);
	return rc;
}

CUresult host_cuGraphGetNodes(CUgraph g, CUgraphNode *out, size_t *n)
{
	return nodes_of(g, out, n, 0);
}

CUresult host_cuGraphGetRootNodes(CUgraph g, CUgraphNode *out, size_t *n)
{
	return nodes_of(g, out, n, 1);
}

const CUgraphEdgeData plain_edge;

CUresult host_cuGraphAddDependencies_v2(CUgraph h, const CUgraphNode *from, const CUgraphNode *to,
					const CUgraphEdgeData *edges, size_t n)
{
	struct hg_graph *g = (struct hg_graph *)h;
	CUresult rc = CUDA_SUCCESS;
	size_t i;

	if (n && (!from || !to))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, g))
		rc = CUDA_ERROR_INVALID_VALUE;
	for (i = 0; !rc && i < n; i++)
		if (!node_in(g, from[i]) || !node_in(g, to[i]))
			rc = CUDA_ERROR_INVALID_VALUE;
	for (i = 0; !rc && i < n; i++)
		rc = dep_add((struct hg_node *)to[i], (struct hg_node *)from[i],
			     edges ? &edges[i] : NULL);
	while (rc && i-- > 1) {	/* the ones added before the failure go again */
		struct hg_node *t = (struct hg_node *)to[i - 1];
		int k = dep_index(t, (struct hg_node *)from[i - 1], NULL);

		if (k >= 0)
			t->in[k] = t->in[--t->nin];
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphRemoveDependencies_v2(CUgraph h, const CUgraphNode *from,
					   const CUgraphNode *to, const CUgraphEdgeData *edges,
					   size_t n)
{
	struct hg_graph *g = (struct hg_graph *)h;
	CUresult rc = CUDA_SUCCESS;

	if (n && (!from || !to))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, g))
		rc = CUDA_ERROR_INVALID_VALUE;
	/* Every edge named must be there, with that data, before any goes. */
	for (size_t i = 0; !rc && i < n; i++)
		if (!node_in(g, from[i]) || !node_in(g, to[i]) ||
		    dep_index((struct hg_node *)to[i], (struct hg_node *)from[i],
			      edges ? &edges[i] : &plain_edge) < 0)
			rc = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !rc && i < n; i++) {
		struct hg_node *t = (struct hg_node *)to[i];
		int k = dep_index(t, (struct hg_node *)from[i], NULL);

		if (k >= 0)
			t->in[k] = t->in[--t->nin];
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

/* Edges out: *n the count when @a is NULL; else up to *n filled (the rest
 * NULL), *n lowered to the count; without @data, an edge with data other
 * than plain is CUDA_ERROR_LOSSY_QUERY. */
CUresult host_cuGraphGetEdges_v2(CUgraph h, CUgraphNode *from, CUgraphNode *to,
				 CUgraphEdgeData *data, size_t *n)
{
	struct hg_graph *g = (struct hg_graph *)h;
	CUresult rc = CUDA_SUCCESS;
	size_t count = 0;

	if (!n || (!from != !to) || (data && !from))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, g))
		rc = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !rc && i < g->n; i++)
		for (size_t k = 0; k < g->nodes[i]->nin; k++, count++) {
			const struct hg_dep *d = &g->nodes[i]->in[k];

			if (!from || count >= *n)
				continue;
			from[count] = (CUgraphNode)d->from;
			to[count] = (CUgraphNode)g->nodes[i];
			if (data)
				data[count] = d->data;
			else if (memcmp(&d->data, &plain_edge, sizeof(plain_edge)))
				rc = CUDA_ERROR_LOSSY_QUERY;
		}
	if (!rc && from) {
		for (size_t i = count; i < *n; i++) {
			from[i] = to[i] = NULL;
			if (data)
				data[i] = plain_edge;
		}
		if (*n > count)
			*n = count;
	} else if (!rc) {
		*n = count;
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

/* A node's dependencies (@out 0) or dependents (1), as GetEdges gives edges. */
static CUresult neighbours(CUgraphNode h, CUgraphNode *list, CUgraphEdgeData *data, size_t *n,
			   int out)
{
	struct hg_node *node;
	size_t count = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!n || (data && !list))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!(node = node_get(h)))
		rc = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !rc && i < (out ? node->g->n : node->nin); i++) {
		const struct hg_node *peer = out ? node->g->nodes[i] : node->in[i].from;
		int k = out ? dep_index(node->g->nodes[i], node, NULL) : (int)i;
		const struct hg_dep *d;

		if (k < 0)
			continue;
		d = out ? &node->g->nodes[i]->in[k] : &node->in[i];
		if (list && count < *n) {
			list[count] = (CUgraphNode)peer;
			if (data)
				data[count] = d->data;
			else if (memcmp(&d->data, &plain_edge, sizeof(plain_edge)))
				rc = CUDA_ERROR_LOSSY_QUERY;
		}
		count++;
	}
	if (!rc && list) {
		for (size_t i = count; i < *n; i++) {
			list[i] = NULL;
			if (data)
				data[i] = plain_edge;
		}
		if (*n > count)
			*n = count;
	} else if (!rc) {
		*n = count;
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *deps,
					    CUgraphEdgeData *edges, size_t *n)
{
	return neighbours(node, deps, edges, n, 0);
}

CUresult host_cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode *deps,
					      CUgraphEdgeData *edges, size_t *n)
{
	return neighbours(node, deps, edges, n, 1);
}

/* ---- a node's parameters ------------------------------------------------ */

/* @h's parameters (a node of type @type) copied out by @fn under graph_lock. */
static CUresult node_read(CUgraphNode h, CUgraphNodeType type, void *out,
			  void (*fn)(const struct hg_node *n, void *out))
{
	struct hg_node *n;
	CUresult rc = CUDA_SUCCESS;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!(n = node_get(h)) || n->type != type)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		fn(n, out);
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

static void read_kernel(const struct hg_node *n, void *out)
{
	memcpy(out, &n->p.kernel, sizeof(CUDA_KERNEL_NODE_PARAMS));
}

static void read_memcpy(const struct hg_node *n, void *out)
{
	*(CUDA_MEMCPY3D *)out = n->p.memcpy.copyParams;
}

static void read_memset(const struct hg_node *n, void *out)
{
	const CUDA_MEMSET_NODE_PARAMS_v2 *m = &n->p.memset;

	*(CUDA_MEMSET_NODE_PARAMS_v1 *)out = (CUDA_MEMSET_NODE_PARAMS_v1){
		.dst = m->dst, .pitch = m->pitch, .value = m->value,
		.elementSize = m->elementSize, .width = m->width, .height = m->height };
}

static void read_host(const struct hg_node *n, void *out)
{
	*(CUDA_HOST_NODE_PARAMS *)out = (CUDA_HOST_NODE_PARAMS){ n->p.host.fn,
								  n->p.host.userData };
}

static void read_child(const struct hg_node *n, void *out)
{
	*(CUgraph *)out = (CUgraph)n->child;
}

static void read_event(const struct hg_node *n, void *out)
{
	*(CUevent *)out = n->p.eventRecord.event;
}

CUresult host_cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
	return node_read(node, CU_GRAPH_NODE_TYPE_KERNEL, p, read_kernel);
}

CUresult host_cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D *p)
{
	return node_read(node, CU_GRAPH_NODE_TYPE_MEMCPY, p, read_memcpy);
}

CUresult host_cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS_v1 *p)
{
	return node_read(node, CU_GRAPH_NODE_TYPE_MEMSET, p, read_memset);
}

CUresult host_cuGraphHostNodeGetParams(CUgraphNode node, CUDA_HOST_NODE_PARAMS *p)
{
	return node_read(node, CU_GRAPH_NODE_TYPE_HOST, p, read_host);
}

CUresult host_cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *g)
{
	return node_read(node, CU_GRAPH_NODE_TYPE_GRAPH, g, read_child);
}

CUresult host_cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent *e)
{
	return node_read(node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e, read_event);
}

CUresult host_cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent *e)
{
	return node_read(node, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e, read_event);
}

CUresult host_cuGraphNodeSetParams(CUgraphNode h, CUgraphNodeParams *p)
{
	struct hg_node *n;
	CUresult rc;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	n = node_get(h);
	if (!n || (p->type == CU_GRAPH_NODE_TYPE_GRAPH && p->graph.graph == (CUgraph)n->g))
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = params_replace(n, p);
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
	CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_KERNEL };

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&np.kernel, p, sizeof(*p));
	return host_cuGraphNodeSetParams(node, &np);
}
