// SPDX-License-Identifier: MIT
/*
 * Device resources and green contexts. A CUdevResource is the backend's
 * own struct (the driver keeps internal bytes in it), so every answer
 * comes from the worker and the structs travel back to it whole.
 *
 * A descriptor (CUdevResourceDesc) is the resources it was made from, kept
 * here; the worker makes the real one again when a green context is
 * created from it. Like the driver's, descriptors are never freed.
 *
 * A green context gets a green id, and the CUcontext it converts to
 * (cuCtxFromGreenCtx) is a context of ours with a context id of its own,
 * made with it: every context-taking call works on it, the streams made
 * while it is current are the green context's, and cuCtxDestroy refuses
 * it. Like the driver, creating one retains the device's primary context
 * and destroying it releases that. Its id (cuGreenCtxGetId) is its
 * context's. Green objects are recycled, never freed, so a stale handle
 * reads as destroyed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "entry.h"
#include "dark_api.h"
#include "driver.h"
#include "client.h"
#include "forward.h"
#include "handles.h"
#include "init.h"
#include "log.h"
#include "recycle.h"

#define GREEN_DESC_MAGIC	0x76726473u	/* "vrds" */
#define GREEN_DEAD_MAGIC	0x64656164u	/* "dead" */

/* A descriptor the worker accepted, and what it was made from. */
struct green_desc {
	uint32_t magic;
	unsigned int count;
	CUdevResource res[];
};

struct green_obj {
	struct vgpu_green g;	/* first: a CUgreenCtx points here */
	struct vgpu_recycle_link link;
};

static struct vgpu_recycler greens = VGPU_RECYCLER_INIT(struct green_obj, link);

static CUresult dev_resource(uint32_t ctx, CUdevice dev, CUdevResource *out,
			     CUdevResourceType type)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_DEV_RESOURCE } };

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ctx;
	r.sqe.arg[0] = (uint64_t)dev;
	r.sqe.arg[1] = (uint32_t)type;
	r.sqe.arg[2] = ctx != 0;
	return vgpu_call_exact(&r, out, sizeof(*out));
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
	if (!rc)
		rc = hCtx ? vgpu_ctx_resolve(hCtx, &ctx) : CUDA_ERROR_INVALID_CONTEXT;
	return rc ? rc : dev_resource(ctx->id, ctx->dev, resource, type);
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
	d = malloc(sizeof(*d) + nbResources * sizeof(*resources));
	if (!d)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->magic = GREEN_DESC_MAGIC;
	d->count = nbResources;
	memcpy(d->res, resources, nbResources * sizeof(*resources));
	*phDesc = (CUdevResourceDesc)d;
	return CUDA_SUCCESS;
}

/* ---- green contexts ------------------------------------------------------ */

static void green_recycle(struct green_obj *o)
{
	pthread_mutex_lock(&greens.lock);
	__atomic_store_n(&o->g.magic, GREEN_DEAD_MAGIC, __ATOMIC_RELEASE);
	vgpu_recycle_put_locked(&greens, o);
	pthread_mutex_unlock(&greens.lock);
}

/* A live green context, found on the list before it is read. With @take,
 * it is taken out of use (for its destruction) under the same lock. */
static CUresult green_resolve(CUgreenCtx h, bool take, struct vgpu_green **out)
{
	struct green_obj *o;

	pthread_mutex_lock(&greens.lock);
	o = vgpu_recycle_find_locked(&greens, h);
	if (o && o->g.magic != VGPU_GREEN_MAGIC)
		o = NULL;
	if (o && take)
		__atomic_store_n(&o->g.magic, GREEN_DEAD_MAGIC, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&greens.lock);
	if (!o)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = &o->g;
	return CUDA_SUCCESS;
}

static CUresult green_checked(CUgreenCtx h, struct vgpu_green **out)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : green_resolve(h, false, out);
}

/* The worker makes the descriptor again, the green context and its context. */
static CUresult green_make(struct green_obj *o, const struct green_desc *d, CUdevice dev,
			   unsigned int flags)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GREEN_CREATE } };
	unsigned int ctx_flags = 0;
	int active;
	uint32_t ctx_id = vgpu_id_alloc(VGPU_K_CTX);
	CUresult rc;

	if (!ctx_id)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r.sqe.arg[0] = o->g.id;
	r.sqe.arg[1] = ctx_id;
	r.sqe.arg[2] = (uint64_t)dev;
	r.sqe.arg[3] = flags;
	r.sqe.arg[4] = d->count;
	r.payload = d->res;
	r.payload_len = d->count * sizeof(d->res[0]);
	rc = vgpu_call(&r);
	/* The answer is the creation's own: on failure nothing is mapped. */
	if (!rc) {
		cuDevicePrimaryCtxGetState(dev, &ctx_flags, &active);
		rc = vgpu_ctx_green_new(ctx_id, dev, ctx_flags, &o->g, &o->g.ctx);
		if (rc)
			vgpu_call5(VGPU_OP_GREEN_DESTROY, 0, 0, o->g.id, 0, 0, 0, 0, &r.cqe);
	}
	if (rc)
		vgpu_id_free(VGPU_K_CTX, ctx_id);
	return rc;
}

VGPU_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
				      unsigned int flags)
{
	const struct green_desc *d = (const struct green_desc *)desc;
	struct green_obj *o;
	CUcontext primary;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	/* CU_GREEN_CTX_DEFAULT_STREAM is required (cuda.h). */
	if (!phCtx || !d || d->magic != GREEN_DESC_MAGIC || flags != CU_GREEN_CTX_DEFAULT_STREAM)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= vgpu_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	o = vgpu_recycle_get(&greens);
	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o->g.id = vgpu_id_alloc(VGPU_K_GREEN);
	rc = o->g.id ? cuDevicePrimaryCtxRetain(&primary, dev) : CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc) {
		rc = green_make(o, d, dev, flags);
		if (rc)
			cuDevicePrimaryCtxRelease_v2(dev);
	}
	if (rc) {
		if (o->g.id)
			vgpu_id_free(VGPU_K_GREEN, o->g.id);
		green_recycle(o);
		return rc;
	}
	__atomic_store_n(&o->g.magic, VGPU_GREEN_MAGIC, __ATOMIC_RELEASE);
	vlog_debug("green context %u (context %u) created on device %d", o->g.id, o->g.ctx->id,
		   dev);
	*phCtx = (CUgreenCtx)o;
	return CUDA_SUCCESS;
}

/* Its streams are left to the program, as the driver leaves them: their
 * calls fail from now on. */
VGPU_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
	struct vgpu_green *g;
	struct vgpu_cqe cqe;
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = green_resolve(hCtx, true, &g);
	if (rc)
		return rc;
	ctx = g->ctx;
	/* Still a live context while cudart's destructors run. */
	vgpu_cls_context_destroyed((CUcontext)ctx);
	/* The worker drops its mappings whatever it answers. */
	rc = vgpu_call5(VGPU_OP_GREEN_DESTROY, ctx->id, 0, g->id, 0, 0, 0, 0, &cqe);
	vlog_debug("green context %u (context %u) destroyed (%d)", g->id, ctx->id, rc);
	vgpu_id_free(VGPU_K_CTX, ctx->id);
	vgpu_id_free(VGPU_K_GREEN, g->id);
	cuDevicePrimaryCtxRelease_v2(ctx->dev);
	vgpu_ctx_green_drop(ctx);
	green_recycle((struct green_obj *)g);
	return rc;
}

VGPU_EXPORT CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
	struct vgpu_green *g;
	CUresult rc = vgpu_enter_nonnull(pContext);

	if (!rc)
		rc = green_resolve(hCtx, false, &g);
	if (!rc)
		*pContext = (CUcontext)g->ctx;
	return rc;
}

/* NULL: the current context's green context, if it has one. */
VGPU_EXPORT CUresult cuGreenCtxGetId(CUgreenCtx greenCtx, unsigned long long *greenCtxId)
{
	struct vgpu_green *g;
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_enter_nonnull(greenCtxId);

	if (rc)
		return rc;
	if (greenCtx) {
		rc = green_resolve(greenCtx, false, &g);
		ctx = rc ? NULL : g->ctx;
	} else {
		rc = vgpu_ctx_current(&ctx);
		if (!rc && !ctx->green)
			rc = CUDA_ERROR_INVALID_CONTEXT;
	}
	if (!rc)
		*greenCtxId = vgpu_ctx_uid(ctx);
	return rc;
}

VGPU_EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *resource,
					      CUdevResourceType type)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GREEN_RESOURCE } };
	struct vgpu_green *g;
	CUresult rc = vgpu_enter_nonnull(resource);

	if (!rc)
		rc = green_resolve(hCtx, false, &g);
	if (rc)
		return rc;
	r.sqe.arg[0] = g->id;
	r.sqe.arg[1] = (uint32_t)type;
	return vgpu_call_exact(&r, resource, sizeof(*resource));
}

VGPU_EXPORT CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx,
					    unsigned int flags, int priority)
{
	struct vgpu_green *g;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	/* CU_STREAM_NON_BLOCKING "must be specified". */
	if (!phStream || flags != CU_STREAM_NON_BLOCKING)
		return CUDA_ERROR_INVALID_VALUE;
	rc = green_resolve(greenCtx, false, &g);
	return rc ? rc : vgpu_stream_create_green(g, flags, priority, phStream);
}

/* Posted, as cuCtxRecordEvent: an error shows at the next synchronous call. */
static CUresult green_event(uint16_t op, CUgreenCtx hctx, CUevent hev)
{
	struct vgpu_green *g;
	struct vgpu_event *ev;
	CUresult rc = green_checked(hctx, &g);

	if (!rc)
		rc = vgpu_event_resolve(hev, &ev);
	if (rc)
		return rc;
	return vgpu_post5(op, g->ctx->id, 0, g->id, ev->id, 0, 0, 0);
}

VGPU_EXPORT CUresult cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent)
{
	return green_event(VGPU_OP_GREEN_RECORD_EVENT, hCtx, hEvent);
}

VGPU_EXPORT CUresult cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent)
{
	return green_event(VGPU_OP_GREEN_WAIT_EVENT, hCtx, hEvent);
}
