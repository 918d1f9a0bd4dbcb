// SPDX-License-Identifier: MIT
/*
 * Contexts: handles, created contexts, and each thread's context stack
 * (primary contexts in primary_ctx.c, queries and settings in
 * ctx_config.c; the object in context.h).
 *
 * Handles. Primary contexts are one static object per device (primary_ctx.c),
 * so their handles are stable for the life of the process. Created contexts
 * get ids from vgpu_id_alloc(VGPU_K_CTX), which never returns
 * 1..VGPU_MAX_DEVICES. Their objects are never freed, only recycled (magic
 * set to dead in between), so checking a stale handle never touches freed
 * memory; a handle is accepted only if it is one of the primaries or on
 * the list of created objects with a live magic.
 *
 * The context stack is per thread (depth 64), current on top. Entries
 * remember the generation of a created context: a context destroyed by
 * another thread reads CUDA_ERROR_CONTEXT_IS_DESTROYED on this one.
 *
 * Locks: created.lock guards the created-object lists and magic transitions.
 * It is not held while CLS destructors run.
 */
#include <pthread.h>
#include <stdlib.h>

#include "calls_hand_gen.h"
#include "context.h"
#include "dark_api.h"
#include "entry.h"
#include "init.h"
#include "log.h"

#define CTX_DEAD_MAGIC	0x64656164u	/* "dead" */
#define STACK_DEPTH	64

static struct vgpu_recycler created = VGPU_RECYCLER_INIT(struct ctx_obj, link);

struct stack_ent {
	struct ctx_obj *o;
	uint64_t gen;
};
static __thread struct stack_ent stack[STACK_DEPTH];
static __thread int depth;

/* cuda.h, CUDA_ERROR_CONTEXT_IS_DESTROYED: "the context current to the
 * calling thread has been destroyed using cuCtxDestroy, or is a primary
 * context which has not yet been initialized". */
static CUresult usable(struct vgpu_ctx *c)
{
	if (c->primary && __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) <= 0)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return CUDA_SUCCESS;
}

/* A non-NULL handle to a live context (primary: always). */
static CUresult lookup(CUcontext h, struct ctx_obj **out)
{
	struct ctx_obj *o;

	if (vgpu_ctx_is_primary_handle(h)) {
		*out = (struct ctx_obj *)(void *)h;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&created.lock);
	o = vgpu_recycle_find_locked(&created, h);
	if (o && __atomic_load_n(&o->c.magic, __ATOMIC_ACQUIRE) != VGPU_CTX_MAGIC)
		o = NULL;
	pthread_mutex_unlock(&created.lock);
	if (!o)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = o;
	return CUDA_SUCCESS;
}

/* ---- The thread's context stack ----------------------------------------- */

static CUresult stack_push(struct ctx_obj *o)
{
	if (depth >= STACK_DEPTH) {
		vlog_warn("context stack of this thread is full (%d contexts pushed)", STACK_DEPTH);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	stack[depth].o = o;
	stack[depth].gen = __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE);
	depth++;
	return CUDA_SUCCESS;
}

/* Drops every entry for @o from the calling thread's stack. */
static void stack_remove(struct ctx_obj *o)
{
	int j = 0;

	for (int i = 0; i < depth; i++)
		if (stack[i].o != o)
			stack[j++] = stack[i];
	depth = j;
}

static bool entry_live(const struct stack_ent *e)
{
	const struct ctx_obj *o = e->o;

	if (vgpu_ctx_is_primary_handle(o))
		return true;
	return __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE) == e->gen &&
	       __atomic_load_n(&o->c.magic, __ATOMIC_ACQUIRE) == VGPU_CTX_MAGIC;
}

CUresult vgpu_ctx_current_any(struct vgpu_ctx **out)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!entry_live(&stack[depth - 1]))
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	*out = &stack[depth - 1].o->c;
	return CUDA_SUCCESS;
}

CUresult vgpu_ctx_resolve_any(CUcontext h, struct vgpu_ctx **out)
{
	struct ctx_obj *o;
	CUresult rc;

	if (!h)
		return vgpu_ctx_current_any(out);
	rc = vgpu_initialized();
	if (!rc)
		rc = lookup(h, &o);
	if (!rc)
		*out = &o->c;
	return rc;
}

CUresult vgpu_ctx_current(struct vgpu_ctx **out)
{
	CUresult rc = vgpu_ctx_current_any(out);

	return rc ? rc : usable(*out);
}

CUresult vgpu_ctx_resolve(CUcontext h, struct vgpu_ctx **out)
{
	CUresult rc = vgpu_ctx_resolve_any(h, out);

	return rc ? rc : usable(*out);
}

/* ---- Created contexts --------------------------------------------------- */

static void obj_recycle(struct ctx_obj *o)
{
	pthread_mutex_lock(&created.lock);
	__atomic_store_n(&o->c.magic, CTX_DEAD_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&o->gen, o->gen + 1, __ATOMIC_RELEASE);
	o->destroying = false;
	vgpu_recycle_put_locked(&created, o);
	pthread_mutex_unlock(&created.lock);
}

/* A created or green context's object made live: a fresh instance id, the
 * magic stored last so no lookup sees it half set. */
static void obj_publish(struct ctx_obj *o, uint32_t id, CUdevice dev, unsigned int flags,
			struct vgpu_green *g)
{
	pthread_mutex_lock(&created.lock);
	o->c.id = id;
	o->c.dev = dev;
	o->c.primary = false;
	o->c.flags = flags;
	o->c.refs = 1;
	o->c.active = true;
	o->c.null_priority = 0;
	o->c.green = g;
	__atomic_store_n(&o->uid, vgpu_ctx_new_uid(), __ATOMIC_RELEASE);
	o->cache = CU_FUNC_CACHE_PREFER_NONE;
	o->destroying = false;
	__atomic_store_n(&o->c.magic, VGPU_CTX_MAGIC, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&created.lock);
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	const struct vgpu_device_info *d;
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	uint32_t id;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!pctx || !vgpu_ctx_flags_valid(flags))
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_device_info(dev, &d);
	if (rc)
		return rc;
	if (depth >= STACK_DEPTH) {
		vlog_warn("cuCtxCreate: context stack of this thread is full");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o = vgpu_recycle_get(&created);
	id = o ? vgpu_id_alloc(VGPU_K_CTX) : 0;
	if (!id) {
		if (o)
			obj_recycle(o);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = vgpu_call5(VGPU_OP_CTX_CREATE, 0, 0, id, (uint64_t)dev, flags, 0, 0, &cqe);
	if (rc) {
		/* The answer may be a deferred error of earlier work with the
		 * context made all the same: the id is not reused (a small leak
		 * on a rare path) so it can never collide with the worker's map. */
		vlog_debug("cuCtxCreate on device %d: %d (context id %u retired)", dev, rc, id);
		obj_recycle(o);
		return rc;
	}
	obj_publish(o, id, dev, flags, NULL);
	stack_push(o);	/* room checked above */
	vlog_debug("context %u created on device %d (flags %#x)", id, dev, flags);
	*pctx = handle_of(o);
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

VGPU_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

VGPU_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
				    int numParams, unsigned int flags, CUdevice dev)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (numParams < 0 || (numParams > 0 && !paramsArray))
		return CUDA_ERROR_INVALID_VALUE;
	if (numParams > 0) {
		vlog_warn("cuCtxCreate_v3: execution affinity is not supported");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return ctx_create(pctx, flags, dev);
}

/* CUDA 13's cuCtxCreate: NULL params, or params with neither execution
 * affinity nor CIG (a zeroed struct), is a plain context. */
VGPU_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
				    unsigned int flags, CUdevice dev)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (ctxCreateParams) {
		if (ctxCreateParams->execAffinityParams && ctxCreateParams->cigParams)
			return CUDA_ERROR_INVALID_VALUE;
		if (ctxCreateParams->execAffinityParams || ctxCreateParams->cigParams) {
			vlog_warn("cuCtxCreate: execution affinity and CIG contexts are not supported");
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	return ctx_create(pctx, flags, dev);
}

CUresult vgpu_hand_cuCtxDestroy(CUcontext h)
{
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	uint32_t id;
	CUresult rc = vgpu_enter_nonnull(h);

	if (rc)
		return rc;
	if (vgpu_ctx_is_primary_handle(h))
		return CUDA_ERROR_INVALID_CONTEXT;	/* release or reset those */
	pthread_mutex_lock(&created.lock);
	o = vgpu_recycle_find_locked(&created, h);
	/* A green context's goes with cuGreenCtxDestroy. */
	if (!o || o->c.magic != VGPU_CTX_MAGIC || o->destroying || o->c.green) {
		pthread_mutex_unlock(&created.lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	o->destroying = true;
	id = o->c.id;
	pthread_mutex_unlock(&created.lock);

	/* Still a live context while cudart's destructors run. */
	vgpu_cls_context_destroyed(h);
	/* The worker drops its mapping whatever it answers (the answer may be
	 * a deferred error), so the id is free again either way. */
	rc = vgpu_call5(VGPU_OP_CTX_DESTROY, 0, 0, id, 0, 0, 0, 0, &cqe);
	stack_remove(o);
	obj_recycle(o);
	vgpu_id_free(VGPU_K_CTX, id);
	vlog_debug("context %u destroyed (%d)", id, rc);
	return rc;
}

CUresult vgpu_ctx_green_new(uint32_t id, CUdevice dev, unsigned int flags, struct vgpu_green *g,
			    struct vgpu_ctx **out)
{
	struct ctx_obj *o = vgpu_recycle_get(&created);

	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	obj_publish(o, id, dev, flags, g);
	*out = &o->c;
	return CUDA_SUCCESS;
}

/* Other threads' stacks see it destroyed by its generation. */
void vgpu_ctx_green_drop(struct vgpu_ctx *c)
{
	struct ctx_obj *o = obj_of(c);

	stack_remove(o);
	obj_recycle(o);
}

/* ---- The context stack -------------------------------------------------- */

CUresult vgpu_hand_cuCtxPushCurrent(CUcontext h)
{
	struct ctx_obj *o;
	CUresult rc = vgpu_enter_nonnull(h);

	if (!rc)
		rc = lookup(h, &o);
	return rc ? rc : stack_push(o);
}

CUresult vgpu_hand_cuCtxPopCurrent(CUcontext *pctx)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	depth--;
	if (pctx)
		*pctx = handle_of(stack[depth].o);
	return CUDA_SUCCESS;
}

/* Replaces the top of the stack (pushes on an empty one); NULL pops. An
 * unretained primary context is accepted (cudart sets it before retaining). */
VGPU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct ctx_obj *o;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!ctx) {
		if (depth)
			depth--;
		return CUDA_SUCCESS;
	}
	rc = lookup(ctx, &o);
	if (rc)
		return rc;
	if (!depth)
		return stack_push(o);
	stack[depth - 1].o = o;
	stack[depth - 1].gen = __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE);
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = vgpu_enter_nonnull(pctx);

	if (rc)
		return rc;
	*pctx = depth ? handle_of(stack[depth - 1].o) : NULL;
	return CUDA_SUCCESS;
}
