// SPDX-License-Identifier: MIT
/*
 * What a program tells about its managed memory and asks of it: advice
 * (cuMemAdvise), range attributes (cuMemRangeGetAttribute(s)), prefetches
 * and stream attachment. Advice is kept per page, so a query over any part
 * of an allocation answers as the driver does. With vgpu's managed memory
 * (managed.c) data moves at synchronizing points and on host faults: advice
 * changes no data, a prefetch to a device sends the host's writes at once,
 * a prefetch to the host leaves the pages to come back on first touch, and
 * an attachment only names which stream the program will synchronize.
 */
#include "managed.h"

#include <string.h>

#include "calls_hand_gen.h"
#include "entry.h"
#include "init.h"
#include "memory.h"

/* A location as a page's advice holds it: a device ordinal, CU_DEVICE_CPU,
 * or -3 when the location is not one the program may name. */
static int where(CUmemLocation loc)
{
	switch ((int)loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return loc.id >= 0 && loc.id < vgpu_device_count() ? loc.id : -3;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return CU_DEVICE_CPU;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
		return loc.id == 0 ? CU_DEVICE_CPU : -3;	/* one host node here */
	default:
		return -3;
	}
}

static uint32_t bit_of(int loc)
{
	return loc == CU_DEVICE_CPU ? MG_CPU_BIT : 1u << loc;
}

struct advise {
	CUmem_advise advice;
	int loc;
};

static void apply(struct mg_advice *a, uint64_t pages, void *arg)
{
	const struct advise *v = arg;

	for (uint64_t i = 0; i < pages; i++) {
		switch ((int)v->advice) {
		case CU_MEM_ADVISE_SET_READ_MOSTLY:
			a[i].read_mostly = 1;
			break;
		case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
			a[i].read_mostly = 0;
			break;
		case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
			a[i].preferred = (int8_t)v->loc;
			break;
		case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
			a[i].preferred = CU_DEVICE_INVALID;
			break;
		case CU_MEM_ADVISE_SET_ACCESSED_BY:
			a[i].accessed_by |= bit_of(v->loc);
			break;
		case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
			a[i].accessed_by &= ~bit_of(v->loc);
			break;
		}
	}
}

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc)
{
	struct advise v = { .advice = advice, .loc = where(loc) };

	ENTER();
	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
		return CUDA_ERROR_INVALID_VALUE;
	/* Read-mostly names no location; the others need one (a device that
	 * does not exist is an invalid value to the driver, H100 driver 580). */
	if (advice > CU_MEM_ADVISE_UNSET_READ_MOSTLY && v.loc == -3)
		return CUDA_ERROR_INVALID_VALUE;
	return vgpu_managed_advice(p, n, apply, &v);
}

VGPU_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
				    CUmemLocation location)
{
	return advise(devPtr, count, advice, location);
}

VGPU_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
				 CUdevice device)
{
	return advise(devPtr, count, advice, vgpu_location_of(device));
}

/* ---- range attributes -------------------------------------------------------- */

struct query {
	CUmem_range_attribute attr;
	int32_t *out;
	size_t n;			/* int32 slots in out */
};

/* One location for every page, or CU_DEVICE_INVALID. */
static int common(const struct mg_advice *a, uint64_t pages, bool last)
{
	int v = last ? a[0].last_prefetch : a[0].preferred;

	for (uint64_t i = 1; i < pages; i++)
		if ((last ? a[i].last_prefetch : a[i].preferred) != v)
			return CU_DEVICE_INVALID;
	return v;
}

static int32_t type_of(int loc)
{
	return loc == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST
	       : loc >= 0	    ? CU_MEM_LOCATION_TYPE_DEVICE
				    : CU_MEM_LOCATION_TYPE_INVALID;
}

static void answer(struct mg_advice *a, uint64_t pages, void *arg)
{
	struct query *q = arg;
	uint32_t all = ~0u;
	size_t k = 0;
	int loc;

	switch ((int)q->attr) {
	case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		q->out[0] = 1;
		for (uint64_t i = 0; i < pages; i++)
			q->out[0] &= a[i].read_mostly;
		return;
	case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
		for (uint64_t i = 0; i < pages; i++)
			all &= a[i].accessed_by;
		if ((all & MG_CPU_BIT) && k < q->n)
			q->out[k++] = CU_DEVICE_CPU;
		for (int d = 0; d < 31 && k < q->n; d++)
			if (all & (1u << d))
				q->out[k++] = d;
		while (k < q->n)
			q->out[k++] = CU_DEVICE_INVALID;
		return;
	}
	loc = common(a, pages, q->attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION ||
				       q->attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE ||
				       q->attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID);
	switch ((int)q->attr) {
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		q->out[0] = loc;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
		q->out[0] = type_of(loc);
		break;
	default:	/* the _ID forms: a device's ordinal, else ignored */
		q->out[0] = loc >= 0 ? loc : 0;
		break;
	}
}

static CUresult range_attr(void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr p,
			   size_t n)
{
	struct query q = { .attr = attr, .out = data, .n = size / sizeof(int32_t) };

	if (!data || attr < CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY ||
	    attr > CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID)
		return CUDA_ERROR_INVALID_VALUE;
	if (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY ? !size || size % 4 : size != 4)
		return CUDA_ERROR_INVALID_VALUE;
	return vgpu_managed_advice(p, n, answer, &q);
}

VGPU_EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t dataSize,
					    CUmem_range_attribute attribute, CUdeviceptr devPtr,
					    size_t count)
{
	ENTER();
	return range_attr(data, dataSize, attribute, devPtr, count);
}

VGPU_EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes,
					     CUmem_range_attribute *attributes, size_t numAttributes,
					     CUdeviceptr devPtr, size_t count)
{
	CUresult rc = CUDA_SUCCESS;

	ENTER();
	if (!data || !dataSizes || !attributes || !numAttributes)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < numAttributes && !rc; i++)
		rc = range_attr(data[i], dataSizes[i], attributes[i], devPtr, count);
	return rc;
}

/* ---- prefetch and attachment ------------------------------------------------- */

static void prefetched(struct mg_advice *a, uint64_t pages, void *arg)
{
	int loc = *(int *)arg;

	for (uint64_t i = 0; i < pages; i++)
		a[i].last_prefetch = (int8_t)loc;
}

bool vgpu_managed_prefetch(uint64_t p, uint64_t n, CUmemLocation loc, unsigned int flags,
			   CUresult *rc)
{
	int to = where(loc);

	if (!vgpu_managed_find(p, n ? n : 1, NULL, NULL))
		return false;
	if (!n || flags)
		*rc = CUDA_ERROR_INVALID_VALUE;
	else if (to == -3)
		*rc = CUDA_ERROR_INVALID_DEVICE;
	else
		*rc = vgpu_managed_advice(p, n, prefetched, &to);
	/* To a device, the host's writes go now (in stream order: before
	 * anything the program submits next); to the host, pages come back
	 * when touched after the stream is synchronized. */
	if (!*rc && to != CU_DEVICE_CPU)
		*rc = vgpu_managed_sync_range(p, n, false);
	return true;
}

static CUresult attach(CUstream h, bool ptds, CUdeviceptr p, size_t len, unsigned int flags)
{
	struct vgpu_ctx *ctx;
	uint64_t base, bytes;
	uint32_t sid;
	CUresult rc = vgpu_enter_stream(h, ptds, &ctx, &sid);

	if (rc)
		return rc;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	/* A single stream must be one: not the legacy default stream. */
	if (flags == CU_MEM_ATTACH_SINGLE && !sid)
		return CUDA_ERROR_INVALID_VALUE;
	/* The whole allocation, named by its start (length 0 or its size). */
	if (!vgpu_managed_find(p, 1, &base, &bytes) || base != p || (len && len != bytes))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
					    unsigned int flags)
{
	return attach(hStream, false, dptr, length, flags);
}

VGPU_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr,
						 size_t length, unsigned int flags)
{
	return attach(hStream, true, dptr, length, flags);
}
