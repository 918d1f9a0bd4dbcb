// SPDX-License-Identifier: MIT
/*
 * Graph instances as a checkpoint needs them. The driver cannot say what an
 * instance holds, so when one is made the worker copies its graph
 * (cuGraphClone) and keeps the copy in step: every parameter set in the
 * instance is set in the copy too, an update (cuGraphExecUpdate) copies the
 * new graph's parameters node by node, and the enabled state of a node is
 * read from the instance while the graph's node that names it lives, and
 * kept once it goes. A restore makes the copy again and instantiates it
 * (graph_ckpt.c). Nothing here fails a call: what cannot be followed marks
 * the instance (why), and only a checkpoint of it is refused.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_forward.h"
#include "graph_snap.h"
#include "log.h"

struct graph_snap *graph_snap_new(size_t n)
{
	size_t size = sizeof(struct graph_snap) + n * (sizeof(uint32_t) + sizeof(CUgraphNode) + 1);
	struct graph_snap *s = calloc(1, size);

	if (!s)
		return NULL;
	s->n = n;
	s->nodes = (CUgraphNode *)(s + 1);
	s->ids = (uint32_t *)(s->nodes + n);
	s->state = (uint8_t *)(s->ids + n);
	return s;
}

static void snap_attach(struct obj_entry *e, struct graph_snap *s)
{
	free(e->data);
	e->data = s;
}

/* An instance whose state cannot be followed: only a checkpoint minds. */
static void snap_lost(struct obj_entry *e, uint32_t graph, uint64_t flags, const char *why)
{
	struct graph_snap *s = e->data;

	if (s) {
		s->why = why;
		return;
	}
	if ((s = graph_snap_new(0))) {
		s->graph = graph;
		s->flags = flags;
		s->why = why;
	}
	snap_attach(e, s);	/* NULL: no record at all, which says as much */
}

void graph_snap_take(struct worker *w, struct obj_entry *e, uint32_t graph, uint64_t flags)
{
	struct obj_entry *g = obj_get(&w->graphs, graph);
	CUgraph copy = NULL;
	CUgraphNode *orig = NULL;
	struct graph_snap *s = NULL;
	size_t n = 0, m;

	if (!e || !g)
		return;
	if (w->B.cuGraphClone(&copy, g->obj)) {
		snap_lost(e, graph, flags, "its graph could not be copied when it was instantiated");
		return;
	}
	if (w->B.cuGraphGetNodes(copy, NULL, &n) || !(s = graph_snap_new(n)) ||
	    (n && !(orig = calloc(n, sizeof(*orig)))))
		goto lost;
	m = n;
	if (n && (w->B.cuGraphGetNodes(copy, s->nodes, &n) || n != m ||
		  w->B.cuGraphGetNodes(g->obj, orig, &m) || m != n))
		goto lost;
	/* The graph's node each copy's node stands for: its id, issued now. */
	for (size_t i = 0; i < n; i++) {
		CUgraphNode found = NULL;
		uint32_t id = graph_node_id(orig[i], graph);

		if (!id || w->B.cuGraphNodeFindInClone(&found, orig[i], copy))
			goto lost;
		for (size_t k = 0; k < n; k++)
			if (s->nodes[k] == found)
				s->ids[k] = id;
	}
	for (size_t k = 0; k < n; k++)
		if (!s->ids[k])
			goto lost;
	free(orig);
	s->graph = graph;
	s->flags = flags;
	s->copy = copy;
	snap_attach(e, s);
	return;
lost:
	free(orig);
	free(s);
	w->B.cuGraphDestroy(copy);
	snap_lost(e, graph, flags, "its graph's nodes could not be matched to a copy of it");
}

void graph_snap_drop(struct worker *w, struct obj_entry *exec)
{
	struct graph_snap *s = exec->data;

	if (s && s->copy)
		w->B.cuGraphDestroy(s->copy);
	if (s)
		s->copy = NULL;
}

static int snap_index(const struct graph_snap *s, uint32_t node)
{
	for (size_t i = 0; node && i < s->n; i++)
		if (s->ids[i] == node)
			return (int)i;
	return -1;
}

void graph_snap_set(struct worker *w, struct obj_entry *exec, uint32_t node,
		    const CUgraphNodeParams *p)
{
	struct graph_snap *s = exec->data;
	CUgraphNodeParams copy = *p;
	int i;

	if (!s || !s->copy)
		return;
	if ((i = snap_index(s, node)) < 0 || w->B.cuGraphNodeSetParams(s->nodes[i], &copy))
		s->why = "parameters set in it could not be recorded";
}

/* Node @n's parameters as cuGraphNodeSetParams takes them (pointing into
 * the driver's copy: used at once). */
static CUresult node_read(struct worker *w, CUgraphNode n, CUgraphNodeType t,
			  CUgraphNodeParams *p)
{
	CUcontext ctx = NULL;
	CUresult rc = w->B.cuCtxGetCurrent(&ctx);

	memset(p, 0, sizeof(*p));
	p->type = t;
	if (rc)
		return rc;
	switch (t) {
	case CU_GRAPH_NODE_TYPE_KERNEL: {
		CUDA_KERNEL_NODE_PARAMS k;

		rc = w->B.cuGraphKernelNodeGetParams_v2(n, &k);
		memcpy(&p->kernel, &k, sizeof(k));
		return rc;
	}
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		p->memcpy.copyCtx = ctx;
		return w->B.cuGraphMemcpyNodeGetParams(n, &p->memcpy.copyParams);
	case CU_GRAPH_NODE_TYPE_MEMSET: {
		CUDA_MEMSET_NODE_PARAMS_v1 m;

		rc = w->B.cuGraphMemsetNodeGetParams(n, &m);
		p->memset = (CUDA_MEMSET_NODE_PARAMS_v2){
			.dst = m.dst, .pitch = m.pitch, .value = m.value,
			.elementSize = m.elementSize, .width = m.width, .height = m.height,
			.ctx = ctx };
		return rc;
	}
	case CU_GRAPH_NODE_TYPE_GRAPH:
		return w->B.cuGraphChildGraphNodeGetGraph(n, &p->graph.graph);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return w->B.cuGraphEventRecordNodeGetEvent(n, &p->eventRecord.event);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return w->B.cuGraphEventWaitNodeGetEvent(n, &p->eventWait.event);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_HOST: {
		CUDA_HOST_NODE_PARAMS h;

		rc = w->B.cuGraphHostNodeGetParams(n, &h);
		p->host.fn = h.fn;
		p->host.userData = h.userData;
		return rc;
	}
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

/* An update took @from's parameters: the copy takes them too. The driver
 * pairs the nodes of graphs of one shape in the order they were made, the
 * order cuGraphGetNodes lists them in. */
void graph_snap_update(struct worker *w, struct obj_entry *exec, CUgraph from)
{
	struct graph_snap *s = exec->data;
	CUgraphNode *list = NULL;
	size_t n = 0;

	if (!s || !s->copy)
		return;
	if (w->B.cuGraphGetNodes(from, NULL, &n) || n != s->n ||
	    (n && !(list = calloc(n, sizeof(*list)))) ||
	    (n && w->B.cuGraphGetNodes(from, list, &n)) || n != s->n)
		goto lost;
	for (size_t i = 0; i < n; i++) {
		CUgraphNodeType a, b;
		CUgraphNodeParams p;

		if (w->B.cuGraphNodeGetType(list[i], &a) || w->B.cuGraphNodeGetType(s->nodes[i], &b) ||
		    a != b || node_read(w, list[i], a, &p) ||
		    w->B.cuGraphNodeSetParams(s->nodes[i], &p))
			goto lost;
	}
	free(list);
	return;
lost:
	free(list);
	s->why = "an update of it could not be recorded";
}

/* The instance's enabled state of the node its graph's node @n names. */
static uint8_t enabled_now(struct worker *w, CUgraphExec exec, const struct graph_snap *s,
			   size_t i, CUgraphNode n)
{
	CUgraphNodeType t;
	unsigned int on = 1;

	if (w->B.cuGraphNodeGetType(s->nodes[i], &t))
		return SNAP_KNOWN;
	if ((t == CU_GRAPH_NODE_TYPE_KERNEL || t == CU_GRAPH_NODE_TYPE_MEMCPY ||
	     t == CU_GRAPH_NODE_TYPE_MEMSET) && !w->B.cuGraphNodeGetEnabled(exec, n, &on) && !on)
		return SNAP_KNOWN | SNAP_OFF;
	return SNAP_KNOWN;
}

void graph_snap_node_gone(struct worker *w, uint32_t graph, uint32_t node, CUgraphNode n)
{
	struct obj_entry *e;
	uint32_t k;

	obj_for_each(&w->graph_execs, k, e) {
		struct graph_snap *s = e->data;
		int i = s && s->graph == graph ? snap_index(s, node) : -1;

		if (i >= 0 && !(s->state[i] & SNAP_KNOWN))
			s->state[i] = enabled_now(w, e->obj, s, (size_t)i, n);
	}
}

void graph_snap_graph_gone(struct worker *w, uint32_t graph)
{
	struct obj_entry *e;
	uint32_t k;

	obj_for_each(&w->graph_execs, k, e) {
		struct graph_snap *s = e->data;

		if (!s || s->graph != graph)
			continue;
		for (size_t i = 0; i < s->n; i++) {
			CUgraphNode n = graph_node_obj(w, s->ids[i]);

			if (!(s->state[i] & SNAP_KNOWN))
				s->state[i] = n ? enabled_now(w, e->obj, s, i, n) : SNAP_KNOWN;
		}
		s->graph = 0;
	}
}
