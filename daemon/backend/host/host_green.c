// SPDX-License-Identifier: MIT
/*
 * Device resources (the green-context partition calls) on the host
 * backend: its one emulated device has HOST_SM_COUNT SMs. What the driver
 * keeps in a CUdevResource's internal bytes, this backend keeps as:
 *   4  u32 magic "VRSH"   8 u32 device   12 u32 split instance (0: whole)
 *  16  u32 first SM      20 u32 flags (HOST_RES_SPLIT_OUTPUT)
 * Partition sizes follow the driver (580, an H100): at least 8 SMs, a
 * multiple of 8, a minimum partition of 8 and a co-scheduled alignment of
 * 8 reported (with IGNORE_SM_COSCHEDULING: 2 and 2). Like the driver, a
 * descriptor takes any SM resources of the device: groups of several
 * splits, a group with the rest, the whole device. The host backend has no green contexts; a descriptor is checked and
 * kept, and nothing can be created from it (cuGreenCtxCreate is refused).
 */
#include <stdlib.h>
#include <string.h>

#include "host_backend.h"

#define HOST_RES_MAGIC		0x48535256u	/* "VRSH" */
#define HOST_RES_SPLIT_OUTPUT	1u
#define HOST_SM_MIN		8u
#define HOST_SM_ALIGN		8u	/* what the driver reports for an H100 */
#define HOST_SM_GRANULE		8u
#define HOST_SM_MIN_LOOSE	2u

struct host_res_tag {
	uint32_t magic, device, split, first_sm, flags;
};

struct host_res_desc {
	unsigned n;
	CUdevResource res[];
};

static uint32_t splits;	/* split instances so far */

static void tag_get(const CUdevResource *r, struct host_res_tag *t)
{
	memcpy(t, r->_internal_padding, sizeof(*t));
}

static void fill(CUdevResource *r, unsigned sms, unsigned min, unsigned align,
		 const struct host_res_tag *t)
{
	memset(r, 0, sizeof(*r));
	r->type = CU_DEV_RESOURCE_TYPE_SM;
	r->sm.smCount = sms;
	r->sm.minSmPartitionSize = min;
	r->sm.smCoscheduledAlignment = align;
	memcpy(r->_internal_padding, t, sizeof(*t));
}

static CUresult whole_device(CUdevice dev, CUdevResource *r, CUdevResourceType type)
{
	struct host_res_tag t = { HOST_RES_MAGIC, (uint32_t)dev, 0, 0, 0 };

	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_DEV_RESOURCE_TYPE_SM)
		return CUDA_ERROR_INVALID_RESOURCE_TYPE;
	fill(r, HOST_SM_COUNT, HOST_SM_MIN, HOST_SM_ALIGN, &t);
	return CUDA_SUCCESS;
}

CUresult host_cuDeviceGetDevResource(CUdevice dev, CUdevResource *r, CUdevResourceType type)
{
	int n = 0;
	CUresult rc = host_cuDeviceGetCount(&n);

	if (rc)
		return rc;
	if (dev < 0 || dev >= n)
		return CUDA_ERROR_INVALID_DEVICE;
	return whole_device(dev, r, type);
}

CUresult host_cuCtxGetDevResource(CUcontext ctx, CUdevResource *r, CUdevResourceType type)
{
	int live;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	pthread_mutex_lock(&host.lock);
	live = ctx && host_set_has(&host.ctxs, ctx);
	pthread_mutex_unlock(&host.lock);
	if (!live)
		return CUDA_ERROR_INVALID_CONTEXT;
	return whole_device(0, r, type);	/* every context owns the whole device */
}

/* An SM resource this backend issued (the tag says so). */
static CUresult res_check(const CUdevResource *r, struct host_res_tag *t)
{
	if (r->type != CU_DEV_RESOURCE_TYPE_SM)
		return CUDA_ERROR_INVALID_RESOURCE_TYPE;
	tag_get(r, t);
	if (t->magic != HOST_RES_MAGIC || r->sm.smCount > HOST_SM_COUNT ||
	    t->first_sm > HOST_SM_COUNT - r->sm.smCount)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult host_cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nb,
					  const CUdevResource *in, CUdevResource *remaining,
					  unsigned int flags, unsigned int min_count)
{
	const unsigned known = CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
			       CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE;
	int loose = flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING;
	unsigned min = loose ? HOST_SM_MIN_LOOSE : HOST_SM_MIN;
	unsigned granule = loose ? HOST_SM_MIN_LOOSE : HOST_SM_GRANULE;
	struct host_res_tag t;
	unsigned size, fit, n;
	CUresult rc = host_check_init();

	if (!rc && (!nb || !in || (flags & ~known) || (result && !*nb)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = res_check(in, &t);
	if (rc)
		return rc;
	if (min_count > in->sm.smCount)	/* the driver's answer */
		return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
	/* A split's groups are split again only through a green context. */
	if (t.flags & HOST_RES_SPLIT_OUTPUT)
		return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
	size = min_count < min ? min : min_count;
	size = (size + granule - 1) / granule * granule;
	fit = size <= in->sm.smCount ? in->sm.smCount / size : 0;
	if (!result) {
		*nb = fit;
		return CUDA_SUCCESS;
	}
	n = *nb < fit ? *nb : fit;
	t.split = __atomic_add_fetch(&splits, 1, __ATOMIC_RELAXED);
	t.flags = HOST_RES_SPLIT_OUTPUT;
	for (unsigned i = 0; i < n; i++) {
		struct host_res_tag g = t;

		g.first_sm = t.first_sm + i * size;
		fill(&result[i], size, in->sm.minSmPartitionSize, in->sm.smCoscheduledAlignment, &g);
	}
	if (remaining) {
		struct host_res_tag g = t;

		g.first_sm = t.first_sm + n * size;
		fill(remaining, in->sm.smCount - n * size, in->sm.minSmPartitionSize,
		     in->sm.smCoscheduledAlignment, &g);
	}
	*nb = n;
	return CUDA_SUCCESS;
}

CUresult host_cuDevResourceGenerateDesc(CUdevResourceDesc *desc, CUdevResource *res, unsigned int n)
{
	struct host_res_tag first, t;
	struct host_res_desc *d;
	CUresult rc = host_check_init();

	if (!rc && (!desc || !res || !n))
		rc = CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; !rc && i < n; i++) {
		rc = res_check(&res[i], i ? &t : &first);
		/* Several resources: one device (of any splits, as the driver). */
		if (!rc && i && t.device != first.device)
			rc = CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
	}
	if (rc)
		return rc;
	d = malloc(sizeof(*d) + n * sizeof(res[0]));
	if (!d)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->n = n;
	memcpy(d->res, res, n * sizeof(res[0]));
	*desc = (CUdevResourceDesc)d;
	return CUDA_SUCCESS;
}
