// SPDX-License-Identifier: MIT
/*
 * Conditional graph nodes on the host backend. A handle is a value in host
 * memory (its address is the handle): made with its default, given the
 * default again at the start of every launch when CU_GRAPH_COND_ASSIGN_DEFAULT
 * says so. No device code runs here to call cudaGraphSetConditional, so the
 * value a node reads is the one the handle holds: IF runs body 0 when it is
 * not 0 (else body 1, if there is one), SWITCH body [value] if there is one,
 * WHILE its body as long as it is not 0 — which, nothing here changing it,
 * is forever: a launch gives up after HOST_COND_MAX_LOOPS rounds with
 * CUDA_ERROR_LAUNCH_TIMEOUT, where the GPU would spin.
 *
 * A node's bodies are graphs of its own (owner: the node), made with it
 * (phGraph_out then points at the node's array of them, as the driver's does),
 * copied with it (clones and instances) and freed with it. Under graph_lock.
 */
#include <stdlib.h>
#include <string.h>

#include "host_backend.h"
#include "log.h"

#define HOST_COND_MAX_LOOPS 4096

struct hg_cond {
	unsigned int value, deflt, flags;
};

static struct host_set conds;	/* live handles (they last as long as the backend) */

CUresult host_cuGraphConditionalHandleCreate(CUgraphConditionalHandle *out, CUgraph g,
					     CUcontext ctx, unsigned int deflt,
					     unsigned int flags)
{
	struct hg_cond *c;
	CUresult rc = host_check_init();

	(void)ctx;	/* the worker names the graph's */
	if (rc)
		return rc;
	if (!out || (flags & ~CU_GRAPH_COND_ASSIGN_DEFAULT))
		return CUDA_ERROR_INVALID_VALUE;
	if (!(c = malloc(sizeof(*c))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	*c = (struct hg_cond){ .value = deflt, .deflt = deflt, .flags = flags };
	pthread_mutex_lock(&graph_lock);
	if (!host_set_has(&graphs, g))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (host_set_add(&conds, c))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_unlock(&graph_lock);
	if (rc)
		free(c);
	else
		*out = (CUgraphConditionalHandle)(uintptr_t)c;
	return rc;
}

static struct hg_cond *cond_of(CUgraphConditionalHandle h)
{
	void *c = (void *)(uintptr_t)h;

	return host_set_has(&conds, c) ? c : NULL;
}

/* @n->nbodies fresh graphs of @n's, or copies of @src's bodies. */
static CUresult bodies_make(struct hg_node *n, unsigned int count, const struct hg_node *src,
			    int instance)
{
	if (!(n->bodies = calloc(count, sizeof(*n->bodies))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (n->nbodies = 0; n->nbodies < count; n->nbodies++) {
		struct hg_graph *b = src ? graph_copy(src->bodies[n->nbodies], instance)
					 : calloc(1, sizeof(*b));

		if (!b)
			return CUDA_ERROR_OUT_OF_MEMORY;
		b->owner = n;
		if (host_set_add(&graphs, b)) {
			graph_free(b);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		n->bodies[n->nbodies] = b;
	}
	n->p.conditional.phGraph_out = (CUgraph *)n->bodies;
	return CUDA_SUCCESS;
}

CUresult cond_params_set(struct hg_node *n, const CUDA_CONDITIONAL_NODE_PARAMS *p)
{
	if (!cond_of(p->handle) || !p->size ||
	    (p->type == CU_GRAPH_COND_TYPE_IF && p->size > 2) ||
	    (p->type == CU_GRAPH_COND_TYPE_WHILE && p->size != 1) ||
	    (unsigned int)p->type > CU_GRAPH_COND_TYPE_SWITCH || p->size > (1u << 16))
		return CUDA_ERROR_INVALID_VALUE;
	n->p.conditional = *p;
	return bodies_make(n, p->size, NULL, 0);	/* on failure the caller clears */
}

CUresult cond_copy(struct hg_node *n, const struct hg_node *src, int instance)
{
	memset(&n->p, 0, sizeof(n->p));
	n->p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	n->p.conditional = src->p.conditional;
	return bodies_make(n, src->nbodies, src, instance);
}

void cond_clear(struct hg_node *n)
{
	for (unsigned int i = 0; i < n->nbodies; i++) {
		host_set_del(&graphs, n->bodies[i]);
		graph_free(n->bodies[i]);
	}
	free(n->bodies);
	n->bodies = NULL;
	n->nbodies = 0;
}

void cond_launch_reset(const struct hg_graph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct hg_node *n = g->nodes[i];
		struct hg_cond *c;

		if (n->child)
			cond_launch_reset(n->child);
		for (unsigned int k = 0; k < n->nbodies; k++)
			cond_launch_reset(n->bodies[k]);
		if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL &&
		    (c = cond_of(n->p.conditional.handle)) && (c->flags & CU_GRAPH_COND_ASSIGN_DEFAULT))
			c->value = c->deflt;
	}
}

CUresult cond_run(const struct hg_node *n, CUstream s,
		  CUresult (*run)(const struct hg_graph *g, CUstream s))
{
	struct hg_cond *c = cond_of(n->p.conditional.handle);
	CUresult rc = CUDA_SUCCESS;

	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	switch (n->p.conditional.type) {
	case CU_GRAPH_COND_TYPE_IF:
		if (c->value)
			return run(n->bodies[0], s);
		return n->nbodies > 1 ? run(n->bodies[1], s) : CUDA_SUCCESS;
	case CU_GRAPH_COND_TYPE_SWITCH:
		return c->value < n->nbodies ? run(n->bodies[c->value], s) : CUDA_SUCCESS;
	default:	/* WHILE */
		for (unsigned int i = 0; !rc && c->value; i++) {
			if (i == HOST_COND_MAX_LOOPS) {
				vlog_warn("host backend: a conditional WHILE node still true after "
					  "%u rounds (no device code here sets it): the launch fails",
					  i);
				return CUDA_ERROR_LAUNCH_TIMEOUT;
			}
			rc = run(n->bodies[0], s);
		}
		return rc;
	}
}
