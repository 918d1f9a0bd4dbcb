// SPDX-License-Identifier: MIT
/*
 * A context's queries and settings: device, flags, id, API version, cache
 * and shared-memory configuration and stream priorities, answered locally
 * (for an inactive primary too, see primary_ctx.c); synchronisation and
 * the configuration setters, answered by the worker. The limits are
 * generated (calls.def): the worker's driver keeps them.
 */
#include <string.h>

#include "context.h"
#include "entry.h"
#include "init.h"

/*
 * cuCtxGetApiVersion: the context ABI version, not the driver version
 * (cuda.h: "valid for the API version to be 3020 while the driver version
 * is 4020"). 3020 (64-bit device pointers, CUDA 3.2) is the last one and
 * what current drivers report for every context.
 */
#define CTX_API_VERSION	3020u
/* cuCtxGetStreamPriorityRange where the device has stream priorities: the
 * range every GPU since Volta reports (H100: least 0, greatest -5). There
 * is no attribute for the range itself, only for support (attr 78). */
#define PRIO_LEAST	0
#define PRIO_GREATEST	(-5)

/* A synchronous call in context @c. */
static CUresult ctx_call(struct vgpu_ctx *c, uint16_t op, uint64_t a0, uint64_t a1,
			 struct vgpu_cqe *cqe)
{
	return vgpu_call5(op, c->id, 0, a0, a1, 0, 0, 0, cqe);
}

/* ---- Queries answered locally ------------------------------------------- */

/* A query about context @h (NULL: the current one): the driver checks
 * initialization, then the output pointer, then the context. */
static CUresult ctx_query(const void *out, CUcontext h, struct vgpu_ctx **c)
{
	CUresult rc = vgpu_enter_nonnull(out);

	return rc ? rc : vgpu_ctx_resolve_any(h, c);
}

/* What a local query answers: ctx_get's varying part. */
enum ctx_item { ITEM_DEVICE, ITEM_FLAGS, ITEM_ID, ITEM_API_VERSION, ITEM_CACHE, ITEM_SHMEM };

static uint64_t ctx_item(struct vgpu_ctx *c, enum ctx_item what)
{
	switch (what) {
	case ITEM_DEVICE:
		return (uint64_t)c->dev;
	case ITEM_FLAGS:
		return vgpu_ctx_flags(c);
	case ITEM_ID:
		return vgpu_ctx_uid(c);
	case ITEM_API_VERSION:
		return CTX_API_VERSION;
	case ITEM_CACHE:
		return __atomic_load_n(&obj_of(c)->cache, __ATOMIC_RELAXED);
	case ITEM_SHMEM:
		/* No shared-memory bank configuration since Maxwell: the
		 * driver answers four-byte banks whatever was set. */
		return CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
	}
	return 0;
}

/* Item @what of context @h (NULL: the current one) into *@out, an integer
 * or enum of @size bytes (4, or 8 for the id). */
static CUresult ctx_get(CUcontext h, void *out, size_t size, enum ctx_item what)
{
	struct vgpu_ctx *c;
	CUresult rc = ctx_query(out, h, &c);

	if (!rc)
		vgpu_put_uint(out, size, ctx_item(c, what));
	return rc;
}

VGPU_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	return ctx_get(NULL, device, sizeof(*device), ITEM_DEVICE);
}

VGPU_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	return ctx_get(ctx, device, sizeof(*device), ITEM_DEVICE);
}

VGPU_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
	return ctx_get(NULL, flags, sizeof(*flags), ITEM_FLAGS);
}

/*
 * On a primary context the flags go to the worker's (they are the device's
 * primary-context flags). A created context keeps them here only: the
 * protocol has no opcode for it, and they steer how a host thread waits,
 * which in vgpu is the ring's business, not the worker context's.
 */
VGPU_EXPORT CUresult cuCtxSetFlags(unsigned int flags)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!vgpu_ctx_flags_valid(flags))
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_ctx_current_any(&c);
	if (rc)
		return rc;
	if (!c->primary) {
		__atomic_store_n(&c->flags, flags, __ATOMIC_RELAXED);
		return CUDA_SUCCESS;
	}
	return vgpu_primary_ctx_set_flags(c, flags);
}

VGPU_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	return ctx_get(ctx, ctxId, sizeof(*ctxId), ITEM_ID);
}

VGPU_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	return ctx_get(ctx, version, sizeof(*version), ITEM_API_VERSION);
}

VGPU_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	return ctx_get(NULL, pconfig, sizeof(*pconfig), ITEM_CACHE);
}

VGPU_EXPORT CUresult cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
	return ctx_get(NULL, pConfig, sizeof(*pConfig), ITEM_SHMEM);
}

VGPU_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();
	bool prio;

	if (rc)
		return rc;
	rc = vgpu_ctx_current_any(&c);
	if (rc)
		return rc;
	prio = vgpu_device_attr(c->dev, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED) != 0;
	if (leastPriority)
		*leastPriority = prio ? PRIO_LEAST : 0;
	if (greatestPriority)
		*greatestPriority = prio ? PRIO_GREATEST : 0;
	return CUDA_SUCCESS;
}

/* ---- Calls the worker answers ------------------------------------------- */

static CUresult ctx_sync(struct vgpu_ctx *c)
{
	struct vgpu_cqe cqe;

	return ctx_call(c, VGPU_OP_CTX_SYNCHRONIZE, 0, 0, &cqe);
}

VGPU_EXPORT CUresult cuCtxSynchronize(void)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_ctx_current(&c);

	return rc ? rc : ctx_sync(c);
}

VGPU_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_ctx_resolve(ctx, &c);

	return rc ? rc : ctx_sync(c);
}

/* A configuration setter's checks: @v (at most @max), then the current
 * context. */
static CUresult ctx_setting(unsigned int v, unsigned int max, struct vgpu_ctx **c)
{
	CUresult rc = vgpu_initialized();

	if (!rc && v > max)
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc ? rc : vgpu_ctx_current(c);
}

VGPU_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct vgpu_cqe cqe;
	struct vgpu_ctx *c;
	CUresult rc = ctx_setting((unsigned)config, CU_FUNC_CACHE_PREFER_EQUAL, &c);

	if (rc)
		return rc;
	rc = ctx_call(c, VGPU_OP_CTX_SET_CACHE_CONFIG, (uint64_t)config, 0, &cqe);
	if (!rc)
		__atomic_store_n(&obj_of(c)->cache, (int)config, __ATOMIC_RELAXED);
	return rc;
}

VGPU_EXPORT CUresult cuCtxSetSharedMemConfig(CUsharedconfig config)
{
	struct vgpu_cqe cqe;
	struct vgpu_ctx *c;
	CUresult rc = ctx_setting((unsigned)config, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE, &c);

	return rc ? rc : ctx_call(c, VGPU_OP_CTX_SET_SHMEM_CONFIG, (uint64_t)config, 0, &cqe);
}
