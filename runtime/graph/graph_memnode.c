// SPDX-License-Identifier: MIT
/*
 * Graph memory nodes: cuGraphAddMemAllocNode / cuGraphAddMemFreeNode and
 * their cuGraphAddNode forms, the parameters read back. The driver fixes an
 * allocation node's address when it makes the node, in its graph memory
 * pool outside vgpu's device window: the worker records the range and says
 * where it is, and it is device memory here too (vgpu_is_device) while the
 * node and its graph live. Parameters are answered from what was sent.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "entry.h"
#include "graph.h"
#include "init.h"
#include "unsupported.h"

struct memnode {
	CUgraph graph;
	CUgraphNode node;
	CUgraphNodeType type;
	CUdeviceptr dptr;
	size_t bytesize;		/* ALLOC */
	CUmemPoolProps props;		/* ALLOC: as the program gave them */
	CUmemAccessDesc access[VGPU_MAX_MEM_NODE_ACCESS];
	size_t naccess;
	struct memnode *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct memnode *memnodes;
static int nalloc;		/* allocation nodes live: none, no lookup */

bool vgpu_graph_mem_contains(uint64_t p)
{
	struct memnode *m;
	bool in = false;

	if (!__atomic_load_n(&nalloc, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&lock);
	for (m = memnodes; m && !in; m = m->next)
		in = m->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && p >= m->dptr &&
		     p - m->dptr < m->bytesize;
	pthread_mutex_unlock(&lock);
	return in;
}

bool vgpu_graph_mem_is_alloc(uint64_t p)
{
	struct memnode *m;
	bool at = false;

	if (!__atomic_load_n(&nalloc, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&lock);
	for (m = memnodes; m && !at; m = m->next)
		at = m->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && m->dptr == p;
	pthread_mutex_unlock(&lock);
	return at;
}

void vgpu_graph_mem_drop(CUgraph g, CUgraphNode node)
{
	struct memnode **p, *m;

	pthread_mutex_lock(&lock);
	for (p = &memnodes; (m = *p);) {
		if (m->graph != g || (node && m->node != node)) {
			p = &m->next;
			continue;
		}
		*p = m->next;
		if (m->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
			__atomic_sub_fetch(&nalloc, 1, __ATOMIC_RELEASE);
		free(m);
	}
	pthread_mutex_unlock(&lock);
}

static struct memnode *find(CUgraphNode h)
{
	struct memnode *m;

	for (m = memnodes; m && m->node != h; m = m->next)
		;
	return m;
}

/* Adds the node @d describes (@m: what to remember of it, filled in). */
static CUresult add_mem(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
			const CUgraphEdgeData *edges, size_t ndeps, struct vgpu_mem_node *d,
			struct memnode *m)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_ADD_MEM_NODE } };
	struct vgpu_ctx *ctx;
	uint32_t gid;
	uint8_t *buf;
	CUresult rc = vgpu_enter_graph(g, &ctx, &gid);

	if (rc)
		return rc;
	if (!out || (ndeps && !deps) || ndeps > VGPU_MAX_GRAPH_NODES)
		return CUDA_ERROR_INVALID_VALUE;
	if (vgpu_graph_edges_plain(edges, ndeps))
		edges = NULL;
	buf = malloc(sizeof(*d) + ndeps * (sizeof(uint32_t) + sizeof(*edges)));
	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(buf, d, sizeof(*d));
	rc = vgpu_graph_node_ids(g, deps, ndeps, (uint32_t *)(buf + sizeof(*d)));
	if (!rc) {
		r.sqe.ctx = ctx->id;
		r.sqe.arg[0] = gid;
		r.sqe.arg[1] = ndeps;
		rc = vgpu_graph_edges_call(&r, buf, sizeof(*d) + ndeps * sizeof(uint32_t), edges,
					   ndeps);
	}
	free(buf);
	if (!rc)
		rc = vgpu_graph_node_made(g, (uint32_t)r.cqe.val[0], (CUgraphNodeType)d->type, out);
	if (rc)
		return rc;
	m->graph = g;
	m->node = *out;
	m->type = (CUgraphNodeType)d->type;
	if (m->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
		m->dptr = r.cqe.val[1];
	pthread_mutex_lock(&lock);
	m->next = memnodes;
	memnodes = m;
	if (m->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
		__atomic_add_fetch(&nalloc, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_add_mem_alloc(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
				  const CUgraphEdgeData *edges, size_t ndeps,
				  CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	static const unsigned char zero[sizeof(p->poolProps.reserved)];
	struct vgpu_mem_node d = { .type = CU_GRAPH_NODE_TYPE_MEM_ALLOC };
	const CUmemPoolProps *pp;
	struct memnode *m;
	CUresult rc;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pp = &p->poolProps;
	if (pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    pp->location.type != CU_MEM_LOCATION_TYPE_DEVICE || pp->location.id < 0 ||
	    pp->location.id >= vgpu_device_count() || pp->win32SecurityAttributes ||
	    memcmp(pp->reserved, zero, sizeof(zero)) || !p->bytesize ||
	    (p->accessDescCount && !p->accessDescs))
		return CUDA_ERROR_INVALID_VALUE;
	if (pp->handleTypes)
		return vgpu_unsupported("graph memory that can be exported");
	if (p->accessDescCount > VGPU_MAX_MEM_NODE_ACCESS)
		return CUDA_ERROR_INVALID_VALUE;
	d.device = (uint32_t)pp->location.id;
	d.bytesize = p->bytesize;
	d.naccess = (uint32_t)p->accessDescCount;
	for (size_t i = 0; i < p->accessDescCount; i++) {
		const CUmemAccessDesc *a = &p->accessDescs[i];

		if (a->location.type != CU_MEM_LOCATION_TYPE_DEVICE || a->location.id < 0 ||
		    a->location.id >= vgpu_device_count())
			return CUDA_ERROR_INVALID_VALUE;
		d.access[i].device = (uint32_t)a->location.id;
		d.access[i].flags = (uint32_t)a->flags;
	}
	if (!(m = calloc(1, sizeof(*m))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->bytesize = p->bytesize;
	m->props = *pp;
	m->naccess = p->accessDescCount;
	if (m->naccess)
		memcpy(m->access, p->accessDescs, m->naccess * sizeof(*m->access));
	rc = add_mem(out, g, deps, edges, ndeps, &d, m);
	if (rc)
		free(m);
	else
		p->dptr = m->dptr;
	return rc;
}

CUresult vgpu_graph_add_mem_free(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
				 const CUgraphEdgeData *edges, size_t ndeps, CUdeviceptr dptr)
{
	struct vgpu_mem_node d = { .type = CU_GRAPH_NODE_TYPE_MEM_FREE, .dptr = dptr };
	struct memnode *m = calloc(1, sizeof(*m));
	CUresult rc;

	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->dptr = dptr;
	rc = add_mem(out, g, deps, edges, ndeps, &d, m);
	if (rc)
		free(m);
	return rc;
}

VGPU_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					    const CUgraphNode *dependencies,
					    size_t numDependencies,
					    CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	return vgpu_graph_add_mem_alloc(phGraphNode, hGraph, dependencies, NULL, numDependencies,
					nodeParams);
}

VGPU_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					   const CUgraphNode *dependencies, size_t numDependencies,
					   CUdeviceptr dptr)
{
	return vgpu_graph_add_mem_free(phGraphNode, hGraph, dependencies, NULL, numDependencies,
				       dptr);
}

/* A memory node of type @type this program added, under the lock. */
static CUresult node_of(CUgraphNode h, CUgraphNodeType type, struct memnode *out)
{
	struct vgpu_ctx *ctx;
	CUgraphNodeType t;
	CUgraph g;
	uint32_t id;
	struct memnode *m;
	CUresult rc = vgpu_enter_node(h, &g, &id, &t, &ctx);

	if (rc)
		return rc;
	if (t != type)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if ((m = find(h)))
		*out = *m;
	pthread_mutex_unlock(&lock);
	/* Nodes the driver made (clones) are not described here. */
	return m ? CUDA_SUCCESS : vgpu_unsupported("the parameters of a memory node a clone holds");
}

VGPU_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
						  CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	static __thread CUmemAccessDesc access[VGPU_MAX_MEM_NODE_ACCESS];
	struct memnode m;
	CUresult rc = node_of(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC, &m);

	if (rc)
		return rc;
	if (!params_out)
		return CUDA_ERROR_INVALID_VALUE;
	/* The descriptors stay readable until this thread's next call, as the
	 * driver's stay the node's. */
	memcpy(access, m.access, sizeof(access));
	memset(params_out, 0, sizeof(*params_out));
	params_out->poolProps = m.props;
	params_out->accessDescs = m.naccess ? access : NULL;
	params_out->accessDescCount = m.naccess;
	params_out->bytesize = m.bytesize;
	params_out->dptr = m.dptr;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
	struct memnode m;
	CUresult rc = node_of(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE, &m);

	if (!rc && !dptr_out)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		*dptr_out = m.dptr;
	return rc;
}
