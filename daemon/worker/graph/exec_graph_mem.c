// SPDX-License-Identifier: MIT
/*
 * Graph memory nodes. The driver fixes an allocation node's address when it
 * makes the node, in its graph memory pool, outside the session's device
 * window: the range is recorded here and is the session's device memory
 * (worker_addr_ok) while the node's graph lives, so that copies and memsets
 * may name it; a free node must name the start of such a range.
 */
#include <stdlib.h>
#include <string.h>

#include "worker.h"

#define GRAPH_MEM_MAX 4096	/* allocation nodes a session holds at once */

struct graph_mem {
	uint32_t node, graph;	/* the allocation node, its graph */
	uint64_t dptr, size;
};

static struct graph_mem *ranges;
static size_t nranges;

bool graph_mem_contains(uint64_t p, uint64_t len)
{
	for (size_t i = 0; i < nranges; i++)
		if (p >= ranges[i].dptr && len <= ranges[i].size &&
		    p - ranges[i].dptr <= ranges[i].size - len)
			return true;
	return false;
}

void graph_mem_forget(uint32_t graph, uint32_t node)
{
	for (size_t i = 0; i < nranges;)
		if (ranges[i].graph == graph && (!node || ranges[i].node == node))
			ranges[i] = ranges[--nranges];
		else
			i++;
}

static bool range_start(uint64_t p)
{
	for (size_t i = 0; i < nranges; i++)
		if (ranges[i].dptr == p)
			return true;
	return false;
}

bool graph_mem_free(struct worker *w, CUdeviceptr p, CUstream st, bool async, CUresult *rc)
{
	if (!range_start(p))
		return false;
	/* The driver's: freed in stream order, or once the device is idle. */
	if (async)
		*rc = w->B.cuMemFreeAsync(p, st);
	else if (!(*rc = w->B.cuCtxSynchronize()))
		*rc = w->B.cuMemFree_v2(p);
	return true;
}

/* The description checked, as the driver's parameters (@acc: their access
 * descriptors). */
static CUresult mem_params(struct worker *w, const struct vgpu_mem_node *m, CUgraphNodeParams *p,
			   CUmemAccessDesc *acc)
{
	memset(p, 0, sizeof(*p));
	p->type = (CUgraphNodeType)m->type;
	if (m->pad)
		return CUDA_ERROR_INVALID_VALUE;
	if (m->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
		if (m->device || m->bytesize || m->naccess || !range_start(m->dptr))
			return CUDA_ERROR_INVALID_VALUE;
		for (uint32_t i = 0; i < VGPU_MAX_MEM_NODE_ACCESS; i++)
			if (m->access[i].device || m->access[i].flags)
				return CUDA_ERROR_INVALID_VALUE;
		p->free.dptr = m->dptr;
		return CUDA_SUCCESS;
	}
	if (m->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || m->dptr || !m->bytesize ||
	    m->device >= (uint32_t)w->device_count || m->naccess > VGPU_MAX_MEM_NODE_ACCESS)
		return CUDA_ERROR_INVALID_VALUE;
	for (uint32_t i = 0; i < VGPU_MAX_MEM_NODE_ACCESS; i++) {
		if (i >= m->naccess) {
			if (m->access[i].device || m->access[i].flags)
				return CUDA_ERROR_INVALID_VALUE;
			continue;
		}
		if (m->access[i].device >= (uint32_t)w->device_count ||
		    m->access[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE;
		acc[i] = (CUmemAccessDesc){
			.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
				      .id = (int)w->devices[m->access[i].device] },
			.flags = (CUmemAccess_flags)m->access[i].flags,
		};
	}
	p->alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p->alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p->alloc.poolProps.location.id = (int)w->devices[m->device];
	p->alloc.accessDescs = m->naccess ? acc : NULL;
	p->alloc.accessDescCount = m->naccess;
	p->alloc.bytesize = m->bytesize;
	return CUDA_SUCCESS;
}

static enum op_status op_add_mem(struct worker *w, struct op_call *call)
{
	CUmemAccessDesc acc[VGPU_MAX_MEM_NODE_ACCESS];
	const struct vgpu_sqe *s = call->sqe;
	struct vgpu_mem_node m;
	CUgraphNodeParams p;
	CUgraphNode node = NULL;
	uint32_t id = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!graph_add_len_ok(call, sizeof(m)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		memcpy(&m, call->payload, sizeof(m));
		rc = mem_params(w, &m, &p, acc);
	}
	if (!rc && m.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && nranges >= GRAPH_MEM_MAX)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc)
		rc = graph_add_after(w, call, sizeof(m), &p, &node);
	if (!rc && !(id = graph_node_id(node, (uint32_t)s->arg[0]))) {
		w->B.cuGraphDestroyNode(node);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!rc && m.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
		if (!ranges && !(ranges = calloc(GRAPH_MEM_MAX, sizeof(*ranges)))) {
			graph_node_drop(id);
			w->B.cuGraphDestroyNode(node);
			id = 0;
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			ranges[nranges++] = (struct graph_mem){
				.node = id, .graph = (uint32_t)s->arg[0],
				.dptr = p.alloc.dptr, .size = m.bytesize,
			};
		}
	}
	call->cqe->result = rc;
	call->cqe->val[0] = id;
	call->cqe->val[1] = rc || m.type != CU_GRAPH_NODE_TYPE_MEM_ALLOC ? 0 : p.alloc.dptr;
	return OP_DONE;
}

const struct op_desc exec_graph_mem_ops[] = {
	OP(GRAPH_ADD_MEM_NODE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_add_mem),
	{ 0 },
};
