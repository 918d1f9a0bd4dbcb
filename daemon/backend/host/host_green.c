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
 * splits, a group with the rest, the whole device.
 *
 * A green context is a context of its own (what cuCtxFromGreenCtx gives)
 * holding the SMs its descriptor names; it retains the primary context, as
 * the driver's does. This backend runs every operation at once, so the SMs
 * are bookkeeping (what its resource queries answer), a record on it is a
 * record now and a wait on it holds at once.
 */
#include <stdbool.h>
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

struct host_green {
	struct host_ctx ctx;	/* first: what cuCtxFromGreenCtx gives */
	CUdevResource sm;	/* its SMs */
};

static struct host_set greens;	/* live green contexts, under host.lock */

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
	struct host_green *g = NULL;

	pthread_mutex_lock(&host.lock);
	live = ctx && host_set_has(&host.ctxs, ctx);
	if (live)
		g = ((struct host_ctx *)ctx)->green;
	pthread_mutex_unlock(&host.lock);
	if (!live)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!g)
		return whole_device(0, r, type);	/* other contexts own the whole device */
	return host_cuGreenCtxGetDevResource((CUgreenCtx)g, r, type);
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

/* ---- green contexts ------------------------------------------------------ */

/* The SMs a descriptor names: the union of its resources' (two splits'
 * groups may overlap, as the whole device overlaps everything). */
static void desc_sms(const struct host_res_desc *d, CUdevResource *out)
{
	unsigned char used[HOST_SM_COUNT] = { 0 };
	struct host_res_tag t, first;
	unsigned n = 0, lowest = HOST_SM_COUNT;

	tag_get(&d->res[0], &first);	/* a descriptor holds one at least */
	for (unsigned i = 0; i < d->n; i++) {
		tag_get(&d->res[i], &t);
		for (unsigned sm = 0; sm < d->res[i].sm.smCount; sm++)
			used[t.first_sm + sm] = 1;	/* in range: res_check */
	}
	for (unsigned sm = 0; sm < HOST_SM_COUNT; sm++)
		if (used[sm]) {
			n++;
			lowest = sm < lowest ? sm : lowest;
		}
	t = (struct host_res_tag){ HOST_RES_MAGIC, first.device, 0, lowest, 0 };
	fill(out, n, HOST_SM_MIN, HOST_SM_ALIGN, &t);
}

/* A live green context; under host.lock. */
static struct host_green *green_live(CUgreenCtx h)
{
	return h && host_set_has(&greens, h) ? (struct host_green *)h : NULL;
}

CUresult host_cuGreenCtxCreate(CUgreenCtx *ph, CUdevResourceDesc desc, CUdevice dev,
			       unsigned int flags)
{
	const struct host_res_desc *d = (const struct host_res_desc *)desc;
	struct host_green *g;
	CUcontext primary;
	CUresult rc = host_check_init();

	/* Only descriptors this backend made reach here (the worker makes
	 * one per creation); the default stream is required. */
	if (!rc && (!ph || !d || flags != CU_GREEN_CTX_DEFAULT_STREAM))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = host_cuDevicePrimaryCtxRetain(&primary, dev);
	if (rc)
		return rc;
	g = calloc(1, sizeof(*g));
	if (!g) {
		host_cuDevicePrimaryCtxRelease_v2(dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	desc_sms(d, &g->sm);
	pthread_mutex_lock(&host.lock);
	/* "A normal primary context but with the resources of the green
	 * context": the primary's flags and limits, a fresh error state. */
	g->ctx = host.primary;
	g->ctx.primary = 0;
	g->ctx.active = 0;
	g->ctx.retain = 0;
	g->ctx.sticky = CUDA_SUCCESS;
	g->ctx.green = g;
	if (host_set_add(&greens, g))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else if (host_set_add(&host.ctxs, &g->ctx)) {
		host_set_del(&greens, g);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&host.lock);
	if (rc) {
		free(g);
		host_cuDevicePrimaryCtxRelease_v2(dev);
		return rc;
	}
	*ph = (CUgreenCtx)g;
	return CUDA_SUCCESS;
}

/* The driver leaves the streams made in it for the program to destroy
 * (their calls fail from then on); here they go with it. */
CUresult host_cuGreenCtxDestroy(CUgreenCtx h)
{
	struct host_green *g;
	CUcontext cur = NULL;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	pthread_mutex_lock(&host.lock);
	g = green_live(h);
	if (g) {
		host_ctx_release_objects(&g->ctx);
		host_set_del(&host.ctxs, &g->ctx);
		host_set_del(&greens, g);
	}
	pthread_mutex_unlock(&host.lock);
	if (!g)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!host_cuCtxGetCurrent(&cur) && cur == (CUcontext)&g->ctx)
		host_cuCtxSetCurrent(NULL);
	free(g);
	return host_cuDevicePrimaryCtxRelease_v2(0);
}

CUresult host_cuCtxFromGreenCtx(CUcontext *pctx, CUgreenCtx h)
{
	struct host_green *g;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	g = green_live(h);
	pthread_mutex_unlock(&host.lock);
	if (!g)
		return CUDA_ERROR_INVALID_CONTEXT;
	*pctx = (CUcontext)&g->ctx;
	return CUDA_SUCCESS;
}

CUresult host_cuGreenCtxGetDevResource(CUgreenCtx h, CUdevResource *r, CUdevResourceType type)
{
	struct host_green *g;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	g = green_live(h);
	if (!g)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (type != CU_DEV_RESOURCE_TYPE_SM)
		rc = CUDA_ERROR_INVALID_RESOURCE_TYPE;
	else
		*r = g->sm;
	pthread_mutex_unlock(&host.lock);
	return rc;
}

CUresult host_cuGreenCtxStreamCreate(CUstream *ph, CUgreenCtx h, unsigned int flags, int priority)
{
	struct host_green *g;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	if (!ph || !(flags & CU_STREAM_NON_BLOCKING))	/* "must be specified" */
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	g = green_live(h);
	pthread_mutex_unlock(&host.lock);
	if (!g)
		return CUDA_ERROR_INVALID_CONTEXT;
	return host_stream_new(&g->ctx, ph, flags, priority);
}

/* An event of the green context's primary context or of its own. */
static CUresult green_event(CUgreenCtx h, CUevent ev, bool record)
{
	struct host_event *e = (struct host_event *)ev;
	struct host_green *g;
	CUresult rc = host_check_init();

	if (rc)
		return rc;
	pthread_mutex_lock(&host.lock);
	g = green_live(h);
	if (!g)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!e || !host_set_has(&host.events, e))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (record && e->ctx != &g->ctx && e->ctx != &host.primary)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		rc = g->ctx.sticky;
	if (!rc && record)
		host_event_mark(e);	/* all its work has run */
	pthread_mutex_unlock(&host.lock);
	return rc;
}

CUresult host_cuGreenCtxRecordEvent(CUgreenCtx h, CUevent ev)
{
	return green_event(h, ev, true);
}

/* Everything the event captured has run: the wait holds at once. */
CUresult host_cuGreenCtxWaitEvent(CUgreenCtx h, CUevent ev)
{
	return green_event(h, ev, false);
}
