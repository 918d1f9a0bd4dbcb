// SPDX-License-Identifier: MIT
/*
 * The properties of the host backend's physical allocations (host_memory.c
 * makes them): what a cuMemCreate may ask for, its granularity, and what
 * it is granted.
 *
 * Compression is a hint (cuda.h: "applications are expected to query
 * [the] allocation property of the handle ... to validate if the obtained
 * allocation is compressible or not"): the emulated device compresses
 * nothing (CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED is 0), so a
 * request for compressible memory is granted plain memory and the
 * properties say so, as the driver does on a device without it.
 */
#include <string.h>

#include "host_backend.h"

CUresult host_check_alloc_prop(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.id != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_NONE &&
	    prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_GENERIC)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

void host_granted_prop(CUmemAllocationProp *out, const CUmemAllocationProp *asked)
{
	memset(out, 0, sizeof(*out));
	out->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	out->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	out->location.id = 0;
	/* Every allocation of the host backend is a memfd: exportable as one. */
	out->requestedHandleTypes = asked ? asked->requestedHandleTypes
					  : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	if (asked)
		out->allocFlags.usage = asked->allocFlags.usage;
	out->allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_NONE;	/* see above */
}

CUresult host_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
					    CUmemAllocationGranularity_flags option)
{
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = host_check_alloc_prop(prop)))
		return r;
	*granularity = HOST_GRANULARITY;
	return CUDA_SUCCESS;
}
