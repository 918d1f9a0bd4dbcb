// SPDX-License-Identifier: MIT
/*
 * Device resources: the queries cuDNN and cuBLASLt make before they would
 * partition a GPU with green contexts. A CUdevResource is the backend's
 * own struct (the driver keeps internal bytes in it), so every answer comes
 * from the worker and the structs travel back to it whole. Green contexts
 * themselves are not provided: cuGreenCtxCreate says so.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "client.h"
#include "handles.h"
#include "init.h"
#include "unsupported.h"

#define GREEN_DESC_MAGIC 0x76726473u	/* "vrds" */

/* A descriptor the worker accepted: nothing can be made from it here. */
struct green_desc {
	uint32_t magic;
	unsigned int count;
};

static CUresult dev_resource(uint32_t ctx, CUdevice dev, CUdevResource *out,
			     CUdevResourceType type)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_DEV_RESOURCE } };
	CUdevResource res;
	CUresult rc;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ctx;
	r.sqe.arg[0] = (uint64_t)dev;
	r.sqe.arg[1] = (uint32_t)type;
	r.sqe.arg[2] = ctx != 0;
	r.reply = &res;
	r.reply_cap = sizeof(res);
	rc = vgpu_call(&r);
	if (!rc && r.cqe.val[2] != sizeof(res))
		rc = CUDA_ERROR_UNKNOWN;
	if (!rc)
		*out = res;
	return rc;
}

VGPU_EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource,
					    CUdevResourceType type)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (device < 0 || device >= vgpu_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	return dev_resource(0, device, resource, type);
}

VGPU_EXPORT CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource *resource,
					 CUdevResourceType type)
{
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_initialized();

	/* No context is not the current one here: the driver (580) says
	 * CUDA_ERROR_INVALID_CONTEXT even with one current. */
	if (!rc && !hCtx)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	if (!rc)
		rc = vgpu_ctx_resolve(hCtx, &ctx);
	if (rc)
		return rc;
	return dev_resource(ctx->id, ctx->dev, resource, type);
}

VGPU_EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
						 const CUdevResource *input,
						 CUdevResource *remaining, unsigned int useFlags,
						 unsigned int minCount)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_SM_RESOURCE_SPLIT } };
	CUdevResource *back;
	unsigned int room;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!nbGroups || !input)
		return CUDA_ERROR_INVALID_VALUE;
	/* No GPU has more SMs than VGPU_MAX_SM_GROUPS: more room is unused. */
	room = *nbGroups < VGPU_MAX_SM_GROUPS ? *nbGroups : VGPU_MAX_SM_GROUPS;
	back = malloc((1 + VGPU_MAX_SM_GROUPS) * sizeof(*back));
	if (!back)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r.sqe.arg[0] = result ? room : 0;
	r.sqe.arg[1] = useFlags;
	r.sqe.arg[2] = minCount;
	r.sqe.arg[3] = result != NULL;
	r.payload = input;
	r.payload_len = sizeof(*input);
	r.reply = back;
	r.reply_cap = (1 + VGPU_MAX_SM_GROUPS) * sizeof(*back);
	rc = vgpu_call(&r);
	if (!rc && (r.cqe.val[0] > (result ? room : VGPU_MAX_SM_GROUPS) ||
		    r.cqe.val[2] != (1 + (result ? r.cqe.val[0] : 0)) * sizeof(*back)))
		rc = CUDA_ERROR_UNKNOWN;
	if (!rc) {
		*nbGroups = (unsigned int)r.cqe.val[0];
		if (result)
			memcpy(result, back + 1, *nbGroups * sizeof(*back));
		if (remaining)
			*remaining = back[0];
	}
	free(back);
	return rc;
}

VGPU_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources,
					       unsigned int nbResources)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_RESOURCE_DESC } };
	struct green_desc *d;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!phDesc || !resources || !nbResources || nbResources > VGPU_MAX_RESOURCES ||
	    nbResources * sizeof(*resources) > vgpu_payload_max())
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.arg[0] = nbResources;
	r.payload = resources;
	r.payload_len = nbResources * sizeof(*resources);
	rc = vgpu_call(&r);
	if (rc)
		return rc;
	d = malloc(sizeof(*d));
	if (!d)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->magic = GREEN_DESC_MAGIC;
	d->count = nbResources;
	*phDesc = (CUdevResourceDesc)d;
	return CUDA_SUCCESS;
}

/*
 * A green context is a context confined to some SMs, with streams of its
 * own; the worker would need one per green context and every stream and
 * launch path to know it. Not provided: refused with a clear log, after
 * the checks the driver makes, so a bad descriptor still says so.
 */
VGPU_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
				      unsigned int flags)
{
	struct green_desc *d = (struct green_desc *)desc;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!phCtx || !d || d->magic != GREEN_DESC_MAGIC ||
	    (flags & ~(unsigned int)CU_GREEN_CTX_DEFAULT_STREAM))
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= vgpu_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	return vgpu_unsupported("cuGreenCtxCreate (green contexts are not provided by vgpu; "
				"device resources can be queried and split)");
}

/* No green context ever exists: every handle is a bad one. */
VGPU_EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *resource,
					      CUdevResourceType type)
{
	CUresult rc = vgpu_initialized();

	(void)hCtx;
	(void)type;
	if (rc)
		return rc;
	return resource ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_VALUE;
}
