// SPDX-License-Identifier: MIT
/*
 * Graph instances on the host backend: a deep copy of the graph, its nodes
 * put in an order that runs every dependency first, each remembering the
 * graph node it copies (by serial) so that setters naming the graph's nodes
 * find it. A launch runs the enabled nodes there and then, as the backend's
 * streams run everything. Also here: kernel node attributes, and the text
 * cuGraphDebugDotPrint writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_backend.h"

/* @g's nodes put in an order that runs every dependency first (Kahn's);
 * CUDA_ERROR_INVALID_VALUE for a cycle. Child graphs too. */
static CUresult graph_order(struct hg_graph *g)
{
	size_t *left, done = 0;
	struct hg_node **order;
	CUresult rc = CUDA_SUCCESS;

	if (!g->n)
		return CUDA_SUCCESS;
	left = calloc(g->n, sizeof(*left));
	order = malloc(g->n * sizeof(*order));
	if (!left || !order) {
		free(left);
		free(order);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (size_t i = 0; i < g->n; i++)
		left[i] = g->nodes[i]->nin;
	while (done < g->n) {
		size_t i;

		for (i = 0; i < g->n && (left[i] != 0); i++)
			;
		if (i == g->n) {
			rc = CUDA_ERROR_INVALID_VALUE;	/* a cycle */
			break;
		}
		left[i] = SIZE_MAX;
		order[done++] = g->nodes[i];
		for (size_t k = 0; k < g->n; k++)
			if (left[k] != SIZE_MAX && dep_index(g->nodes[k], g->nodes[i], NULL) >= 0)
				left[k]--;
	}
	if (!rc)
		memcpy(g->nodes, order, g->n * sizeof(*order));
	for (size_t i = 0; !rc && i < g->n; i++)
		if (g->nodes[i]->child)
			rc = graph_order(g->nodes[i]->child);
	for (size_t i = 0; !rc && i < g->n; i++)
		for (unsigned int k = 0; !rc && k < g->nodes[i]->nbodies; k++)
			rc = graph_order(g->nodes[i]->bodies[k]);
	free(left);
	free(order);
	return rc;
}

CUresult host_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph h, unsigned long long flags)
{
	struct hg_exec *e;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
		return CUDA_ERROR_NOT_SUPPORTED;	/* no device code here launches graphs */
	if (!out || (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
						   CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)))
		return CUDA_ERROR_INVALID_VALUE;
	if (!(e = calloc(1, sizeof(*e))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->flags = flags;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, h))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!(e->g = graph_copy((struct hg_graph *)h, 1)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc)
		rc = graph_order(e->g);
	if (!rc && host_set_add(&execs, e))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (rc) {
		if (e->g)
			graph_free(e->g);
		free(e);
	} else {
		*out = (CUgraphExec)e;
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphExecDestroy(CUgraphExec h)
{
	struct hg_exec *e = (struct hg_exec *)h;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&execs, e)) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		host_set_del(&execs, e);
		graph_free(e->g);
		free(e);
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphExecGetFlags(CUgraphExec h, cuuint64_t *flags)
{
	CUresult rc = CUDA_SUCCESS;

	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&execs, h))
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*flags = ((struct hg_exec *)h)->flags;
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

/* One 3D copy, a 2D copy a layer (arrays: as cuMemcpy3DAsync copies). */
static CUresult run_memcpy(const CUDA_MEMCPY3D *c, CUstream s)
{
	if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return host_cuMemcpy3DAsync_v2(c, s);
	for (size_t z = 0; z < c->Depth; z++) {
		size_t sz = c->srcZ + z, dz = c->dstZ + z;
		CUDA_MEMCPY2D l = {
			.srcXInBytes = c->srcXInBytes, .srcY = c->srcY,
			.srcMemoryType = c->srcMemoryType, .srcPitch = c->srcPitch,
			.dstXInBytes = c->dstXInBytes, .dstY = c->dstY,
			.dstMemoryType = c->dstMemoryType, .dstPitch = c->dstPitch,
			.WidthInBytes = c->WidthInBytes, .Height = c->Height,
		};
		uint64_t soff = (uint64_t)sz * c->srcHeight * c->srcPitch;
		uint64_t doff = (uint64_t)dz * c->dstHeight * c->dstPitch;
		CUresult rc;

		if ((c->Depth > 1 || c->srcZ || c->dstZ) &&
		    (c->srcHeight < c->Height || c->dstHeight < c->Height))
			return CUDA_ERROR_INVALID_VALUE;
		if (c->srcMemoryType == CU_MEMORYTYPE_HOST)
			l.srcHost = (const uint8_t *)c->srcHost + soff;
		else
			l.srcDevice = c->srcDevice + soff;
		if (c->dstMemoryType == CU_MEMORYTYPE_HOST)
			l.dstHost = (uint8_t *)c->dstHost + doff;
		else
			l.dstDevice = c->dstDevice + doff;
		if ((rc = host_cuMemcpy2DAsync_v2(&l, s)))
			return rc;
	}
	return CUDA_SUCCESS;
}

static CUresult run_graph(const struct hg_graph *g, CUstream s);

static CUresult run_node(const struct hg_node *n, CUstream s)
{
	const CUgraphNodeParams *p = &n->p;

	switch (n->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL: {
		CUlaunchConfig c = {
			.gridDimX = p->kernel.gridDimX, .gridDimY = p->kernel.gridDimY,
			.gridDimZ = p->kernel.gridDimZ, .blockDimX = p->kernel.blockDimX,
			.blockDimY = p->kernel.blockDimY, .blockDimZ = p->kernel.blockDimZ,
			.sharedMemBytes = p->kernel.sharedMemBytes, .hStream = s,
		};

		return host_cuLaunchKernelEx(&c, p->kernel.func, p->kernel.kernelParams, NULL);
	}
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		return run_memcpy(&p->memcpy.copyParams, s);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		switch (p->memset.elementSize) {
		case 1:
			return host_cuMemsetD2D8Async(p->memset.dst, p->memset.pitch,
						      (unsigned char)p->memset.value,
						      p->memset.width, p->memset.height, s);
		case 2:
			return host_cuMemsetD2D16Async(p->memset.dst, p->memset.pitch,
						       (unsigned short)p->memset.value,
						       p->memset.width, p->memset.height, s);
		default:
			return host_cuMemsetD2D32Async(p->memset.dst, p->memset.pitch,
						       p->memset.value, p->memset.width,
						       p->memset.height, s);
		}
	case CU_GRAPH_NODE_TYPE_HOST:
		return host_cuLaunchHostFunc(s, p->host.fn, p->host.userData);
	case CU_GRAPH_NODE_TYPE_GRAPH:
		return run_graph(n->child, s);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return host_cuEventRecordWithFlags(p->eventRecord.event, s, 0);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return host_cuStreamWaitEvent(s, p->eventWait.event, 0);
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		return cond_run(n, s, run_graph);
	default:
		return CUDA_SUCCESS;	/* empty */
	}
}

/* A child graph's nodes, all of them, in their (instantiated) order. */
static CUresult run_graph(const struct hg_graph *g, CUstream s)
{
	for (size_t i = 0; i < g->n; i++) {
		CUresult rc = run_node(g->nodes[i], s);

		if (rc)
			return rc;
	}
	return CUDA_SUCCESS;
}

/*
 * A launch runs every enabled node before it returns, under graph_lock (host
 * calls it makes take host.lock after it). A host node's callback must not
 * call back into graphs: the worker's trampolines only queue work.
 */
CUresult host_cuGraphLaunch(CUgraphExec h, CUstream s)
{
	CUresult rc = host_stream_check(s);

	if (rc)
		return rc;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&execs, h)) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		const struct hg_graph *g = ((struct hg_exec *)h)->g;

		cond_launch_reset(g);
		for (size_t i = 0; !rc && i < g->n; i++)
			if (g->nodes[i]->enabled)
				rc = run_node(g->nodes[i], s);
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

/* Nothing to move anywhere: the instance lives in host memory already. */
CUresult host_cuGraphUpload(CUgraphExec h, CUstream s)
{
	CUresult rc = host_stream_check(s);

	if (rc)
		return rc;
	pthread_mutex_lock(&graph_lock);
	rc = host_set_has(&execs, h) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

/* The node of instance @h that copies graph node @node; under graph_lock. */
static struct hg_node *exec_node(CUgraphExec h, CUgraphNode node)
{
	const struct hg_node *n = node_get(node);
	const struct hg_graph *g;

	if (!n || !host_set_has(&execs, h))
		return NULL;
	g = ((struct hg_exec *)h)->g;
	for (size_t i = 0; i < g->n; i++)
		if (g->nodes[i]->orig == n->serial)
			return g->nodes[i];
	return NULL;
}

CUresult host_cuGraphExecNodeSetParams(CUgraphExec h, CUgraphNode node, CUgraphNodeParams *p)
{
	struct hg_node *n;
	CUresult rc;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!(n = exec_node(h, node)))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (n->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ||
		 n->type == CU_GRAPH_NODE_TYPE_WAIT_EVENT || n->type == CU_GRAPH_NODE_TYPE_EMPTY ||
		 n->type == CU_GRAPH_NODE_TYPE_HOST || n->type == CU_GRAPH_NODE_TYPE_KERNEL ||
		 n->type == CU_GRAPH_NODE_TYPE_MEMCPY || n->type == CU_GRAPH_NODE_TYPE_MEMSET)
		rc = params_replace(n, p);
	else if (p->type != CU_GRAPH_NODE_TYPE_GRAPH || !host_set_has(&graphs, p->graph.graph))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (((struct hg_graph *)p->graph.graph)->n != n->child->n)
		rc = CUDA_ERROR_INVALID_VALUE;	/* a child's topology stays */
	else if (!(rc = params_replace(n, p)))
		rc = graph_order(n->child);
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node,
						const CUDA_KERNEL_NODE_PARAMS *p)
{
	CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_KERNEL };

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&np.kernel, p, sizeof(*p));
	return host_cuGraphExecNodeSetParams(exec, node, &np);
}

CUresult host_cuGraphExecHostNodeSetParams(CUgraphExec exec, CUgraphNode node,
					   const CUDA_HOST_NODE_PARAMS *p)
{
	CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_HOST };

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	np.host.fn = p->fn;
	np.host.userData = p->userData;
	return host_cuGraphExecNodeSetParams(exec, node, &np);
}

/* Kernel, memcpy and memset nodes may be turned off in an instance. */
CUresult host_cuGraphNodeSetEnabled(CUgraphExec h, CUgraphNode node, unsigned int on)
{
	struct hg_node *n;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&graph_lock);
	if (!(n = exec_node(h, node)) || (n->type != CU_GRAPH_NODE_TYPE_KERNEL &&
					  n->type != CU_GRAPH_NODE_TYPE_MEMCPY &&
					  n->type != CU_GRAPH_NODE_TYPE_MEMSET))
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		n->enabled = !!on;
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphNodeGetEnabled(CUgraphExec h, CUgraphNode node, unsigned int *on)
{
	struct hg_node *n;
	CUresult rc = CUDA_SUCCESS;

	if (!on)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!(n = exec_node(h, node)))
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*on = (unsigned int)n->enabled;
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

static int by_serial(const void *a, const void *b)
{
	uint64_t x = (*(struct hg_node *const *)a)->serial, y = (*(struct hg_node *const *)b)->serial;

	return x < y ? -1 : x > y;
}

/* Node i of @g, in the order nodes were added, pairs with the instance's
 * node that copies the original's node i (copies are made in that order, so
 * their serials keep it): the same type, the same dependencies by position. */
static CUgraphExecUpdateResult update_check(const struct hg_exec *e, const struct hg_graph *g,
					    struct hg_node **pair, CUgraphNode *bad)
{
	if (g->n != e->g->n)
		return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
	memcpy(pair, e->g->nodes, g->n * sizeof(*pair));
	qsort(pair, g->n, sizeof(*pair), by_serial);
	for (size_t i = 0; i < g->n; i++) {
		const struct hg_node *n = g->nodes[i], *o = pair[i];

		*bad = (CUgraphNode)n;
		if (n->type != o->type)
			return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
		if (n->nin != o->nin)
			return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		for (size_t k = 0; k < n->nin; k++) {
			size_t at = 0;

			while (g->nodes[at] != n->in[k].from)
				at++;
			if (dep_index(o, pair[at], &n->in[k].data) < 0)
				return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		}
		if (n->child && n->child->n != o->child->n)
			return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)	/* its bodies are not compared */
			return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
	}
	*bad = NULL;
	return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

CUresult host_cuGraphExecUpdate_v2(CUgraphExec h, CUgraph hg, CUgraphExecUpdateResultInfo *info)
{
	struct hg_exec *e = (struct hg_exec *)h;
	struct hg_graph *g = (struct hg_graph *)hg;
	struct hg_node **pair = NULL;
	CUgraphNode bad = NULL;
	CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_ERROR;
	CUresult rc = CUDA_SUCCESS;

	if (!info)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&execs, e) || !host_set_has(&graphs, g))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (g->n && !(pair = calloc(g->n, sizeof(*pair))))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc)
		res = update_check(e, g, pair, &bad);
	/* Every node's parameters are checked before any changes. */
	for (size_t i = 0; !rc && res == CU_GRAPH_EXEC_UPDATE_SUCCESS && i < g->n; i++) {
		struct hg_node t = { .type = g->nodes[i]->type };

		if (params_set(&t, &g->nodes[i]->p)) {
			res = CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
			bad = (CUgraphNode)g->nodes[i];
		}
		params_clear(&t);
	}
	for (size_t i = 0; !rc && res == CU_GRAPH_EXEC_UPDATE_SUCCESS && i < g->n; i++)
		if ((rc = params_replace(pair[i], &g->nodes[i]->p)) ||
		    (pair[i]->child && (rc = graph_order(pair[i]->child))))
			res = CU_GRAPH_EXEC_UPDATE_ERROR;
	pthread_mutex_unlock(&graph_lock);
	free(pair);
	info->result = res;
	info->errorNode = bad;
	info->errorFromNode = NULL;
	if (!rc && res != CU_GRAPH_EXEC_UPDATE_SUCCESS)
		rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	return rc;
}

/* Kernel node attributes are kept as set (the host runs no priorities). */
static CUresult attr_node(CUgraphNode h, CUkernelNodeAttrID id, struct hg_node **out)
{
	struct hg_node *n = node_get(h);

	if (!n || n->type != CU_GRAPH_NODE_TYPE_KERNEL || (unsigned)id >= HG_NATTR)
		return CUDA_ERROR_INVALID_VALUE;
	*out = n;
	return CUDA_SUCCESS;
}

CUresult host_cuGraphKernelNodeGetAttribute(CUgraphNode node, CUkernelNodeAttrID id,
					    CUkernelNodeAttrValue *v)
{
	struct hg_node *n;
	CUresult rc;

	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!(rc = attr_node(node, id, &n)))
		*v = n->attr[id];
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphKernelNodeSetAttribute(CUgraphNode node, CUkernelNodeAttrID id,
					    const CUkernelNodeAttrValue *v)
{
	struct hg_node *n;
	CUresult rc;

	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!(rc = attr_node(node, id, &n)))
		n->attr[id] = *v;
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

CUresult host_cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src)
{
	struct hg_node *d, *s;
	CUresult rc;

	pthread_mutex_lock(&graph_lock);
	if (!(rc = attr_node(dst, 0, &d)) && !(rc = attr_node(src, 0, &s)))
		memcpy(d->attr, s->attr, sizeof(d->attr));
	pthread_mutex_unlock(&graph_lock);
	return rc;
}

/* ---- cuGraphDebugDotPrint ----------------------------------------------- */

static const char *dot_type(CUgraphNodeType t)
{
	static const char *const names[] = {
		[CU_GRAPH_NODE_TYPE_KERNEL] = "KERNEL", [CU_GRAPH_NODE_TYPE_MEMCPY] = "MEMCPY",
		[CU_GRAPH_NODE_TYPE_MEMSET] = "MEMSET", [CU_GRAPH_NODE_TYPE_HOST] = "HOST",
		[CU_GRAPH_NODE_TYPE_GRAPH] = "GRAPH", [CU_GRAPH_NODE_TYPE_EMPTY] = "EMPTY",
		[CU_GRAPH_NODE_TYPE_WAIT_EVENT] = "WAIT_EVENT",
		[CU_GRAPH_NODE_TYPE_EVENT_RECORD] = "EVENT_RECORD",
	};

	return (unsigned)t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "OTHER";
}

/* One graph as a cluster; its child graphs inside. *next numbers clusters. */
static void dot_graph(FILE *f, const struct hg_graph *g, unsigned *next, int verbose)
{
	unsigned me = (*next)++;

	fprintf(f, "subgraph cluster_%u {\nlabel=\"graph_%u\";\n", me, me);
	for (size_t i = 0; i < g->n; i++) {
		const struct hg_node *n = g->nodes[i];

		fprintf(f, "\"graph_%u_node_%zu\" [label=\"%s\\nid %zu", me, i, dot_type(n->type), i);
		if (verbose && n->type == CU_GRAPH_NODE_TYPE_MEMSET)
			fprintf(f, "\\nvalue %u, %u-byte elements, %zu x %zu", n->p.memset.value,
				n->p.memset.elementSize, n->p.memset.width, n->p.memset.height);
		else if (verbose && n->type == CU_GRAPH_NODE_TYPE_MEMCPY)
			fprintf(f, "\\n%zu bytes x %zu x %zu", n->p.memcpy.copyParams.WidthInBytes,
				n->p.memcpy.copyParams.Height, n->p.memcpy.copyParams.Depth);
		else if (verbose && n->type == CU_GRAPH_NODE_TYPE_KERNEL)
			fprintf(f, "\\ngrid %u,%u,%u block %u,%u,%u", n->p.kernel.gridDimX,
				n->p.kernel.gridDimY, n->p.kernel.gridDimZ, n->p.kernel.blockDimX,
				n->p.kernel.blockDimY, n->p.kernel.blockDimZ);
		fprintf(f, "\"];\n");
		if (n->child)
			dot_graph(f, n->child, next, verbose);
	}
	for (size_t i = 0; i < g->n; i++)
		for (size_t k = 0; k < g->nodes[i]->nin; k++) {
			size_t from = 0;

			while (g->nodes[from] != g->nodes[i]->in[k].from)
				from++;
			fprintf(f, "\"graph_%u_node_%zu\" -> \"graph_%u_node_%zu\"", me, from, me, i);
			if (g->nodes[i]->in[k].data.type)
				fprintf(f, " [label=\"type %u\"]", g->nodes[i]->in[k].data.type);
			fprintf(f, ";\n");
		}
	fprintf(f, "}\n");
}

CUresult host_cuGraphDebugDotPrint(CUgraph h, const char *path, unsigned int flags)
{
	CUresult rc = CUDA_SUCCESS;
	unsigned next = 1;
	FILE *f;

	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, h)) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!(f = fopen(path, "we"))) {
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	} else {
		fprintf(f, "digraph dot {\n");
		dot_graph(f, (const struct hg_graph *)h, &next,
			  !!(flags & CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
		fprintf(f, "}\n");
		if (fclose(f))
			rc = CUDA_ERROR_OPERATING_SYSTEM;
	}
	pthread_mutex_unlock(&graph_lock);
	return rc;
}
