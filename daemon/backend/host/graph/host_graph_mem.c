// SPDX-License-Identifier: MIT
/*
 * Graph memory nodes on the host backend. An allocation node's memory is
 * made when the node is (the driver fixes its address then too): an address
 * range reserved, backed and mapped read-write, for the node's life; copies
 * of the node (clones, instances) name the same address without owning it.
 * Launching an allocation or free node does nothing more: the memory is
 * there from the node's creation to its destruction. Under graph_lock.
 */
#include <string.h>

#include "host_backend.h"

CUresult mem_node_set(struct hg_node *n, const CUgraphNodeParams *p)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
	};
	CUmemAccessDesc rw = { .location = prop.location,
			       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	const CUDA_MEM_ALLOC_NODE_PARAMS_v2 *a = &p->alloc;
	CUdeviceptr at = 0;
	size_t gran = 0, size;
	CUresult rc;

	if (p->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
		if (!p->free.dptr)
			return CUDA_ERROR_INVALID_VALUE;
		n->p.free = p->free;
		return CUDA_SUCCESS;
	}
	if (a->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    a->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    a->poolProps.location.id != 0 || a->poolProps.handleTypes || !a->bytesize ||
	    (a->accessDescCount && !a->accessDescs))
		return CUDA_ERROR_INVALID_VALUE;
	n->p.alloc = *a;
	n->p.alloc.accessDescs = NULL;	/* the caller's, not kept */
	n->p.alloc.accessDescCount = 0;
	if (a->dptr)	/* a copy of a node: the same memory */
		return CUDA_SUCCESS;
	if ((rc = host_cuMemGetAllocationGranularity(&gran, &prop,
						     CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
		return rc;
	if (a->bytesize > SIZE_MAX - gran)
		return CUDA_ERROR_OUT_OF_MEMORY;
	size = (a->bytesize + gran - 1) / gran * gran;
	if ((rc = host_cuMemAddressReserve(&at, size, 0, 0, 0)))
		return rc;
	rc = host_cuMemCreate(&n->mem, size, &prop, 0);
	if (!rc && (rc = host_cuMemMap(at, size, 0, n->mem, 0)))
		host_cuMemRelease(n->mem);
	if (!rc && (rc = host_cuMemSetAccess(at, size, &rw, 1))) {
		host_cuMemUnmap(at, size);
		host_cuMemRelease(n->mem);
	}
	if (rc) {
		n->mem = 0;
		host_cuMemAddressFree(at, size);
		return rc;
	}
	n->mem_size = size;
	n->p.alloc.dptr = at;
	return CUDA_SUCCESS;
}

void mem_node_clear(struct hg_node *n)
{
	if (!n->mem)
		return;
	host_cuMemUnmap(n->p.alloc.dptr, n->mem_size);
	host_cuMemRelease(n->mem);
	host_cuMemAddressFree(n->p.alloc.dptr, n->mem_size);
	n->mem = 0;
	n->mem_size = 0;
}

struct owner_find {
	CUdeviceptr p;
	int found;
};

static void owner_of(void *node, void *arg)
{
	const struct hg_node *n = node;
	struct owner_find *f = arg;

	if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && n->mem && n->p.alloc.dptr == f->p)
		f->found = 1;
}

/* Graph memory freed outside its graph (cuMemFree, cuMemFreeAsync; the
 * worker frees no other memory so): it stays its node's here, so there is
 * nothing to do but check it is an allocation node's. */
static CUresult graph_mem_free(CUdeviceptr p)
{
	struct owner_find f = { .p = p };

	pthread_mutex_lock(&graph_lock);
	host_set_each(&nodes, owner_of, &f);
	pthread_mutex_unlock(&graph_lock);
	return f.found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult host_cuMemFree_v2(CUdeviceptr p)
{
	CUresult rc = host_check_init();

	return rc ? rc : graph_mem_free(p);
}

CUresult host_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	CUresult rc = host_stream_check(s);

	return rc ? rc : graph_mem_free(p);
}
