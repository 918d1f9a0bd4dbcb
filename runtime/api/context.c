// SPDX-License-Identifier: MIT
/*
 * Contexts: primary contexts, created contexts, and each thread's context
 * stack.
 *
 * Handles. A CUcontext is a pointer to a struct vgpu_ctx (handles.h), the
 * first member of a struct ctx_obj below. Primary contexts are one static
 * object per device, id = device + 1, so their handles are stable for the
 * life of the process, retained or not (the static cudart peeks the handle
 * through the dark API and makes it current *before* it retains it).
 * Created contexts get ids from vgpu_id_alloc(VGPU_K_CTX), which never
 * returns 1..VGPU_MAX_DEVICES. Their objects are never freed, only recycled
 * (magic set to dead in between), so checking a stale handle never touches
 * freed memory; a handle is accepted only if it is one of the primaries or
 * on the list of created objects with a live magic.
 *
 * Primary contexts. The worker keeps its real primary contexts retained
 * for the whole session and maps our primary id while we hold it: the
 * first cuDevicePrimaryCtxRetain (client refs 0 -> 1) sends PRIMARY_RETAIN,
 * the last cuDevicePrimaryCtxRelease (1 -> 0) sends PRIMARY_RELEASE, so the
 * worker's count is 1 exactly while the context is active. Reset runs the
 * context-local-storage destructors, sends PRIMARY_RESET, then the release
 * that the active state owed. A primary context that is not retained
 * has no mapping on the worker: vgpu_ctx_current/vgpu_ctx_resolve answer
 * CUDA_ERROR_CONTEXT_IS_DESTROYED for it (cuda.h: "... or is a primary
 * context which has not yet been initialized") before anything is sent,
 * while the queries answered here (device, flags, id, API version, cache
 * and shared-memory config, priorities) work without a retain: cudart
 * makes the peeked primary current before it retains it.
 *
 * The context stack is per thread (depth 64), current on top. Entries
 * remember the generation of a created context: a context destroyed by
 * another thread reads CUDA_ERROR_CONTEXT_IS_DESTROYED on this one.
 *
 * Locks: prim_lock guards every primary's refs/active/flags/uid and
 * serialises its ring calls; list_lock guards the created-object lists and
 * magic transitions. Neither is held while CLS destructors run.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dark_api.h"
#include "handles.h"
#include "init.h"
#include "log.h"

#define CTX_DEAD_MAGIC	0x64656164u	/* "dead" */
#define STACK_DEPTH	64
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

struct ctx_obj {
	struct vgpu_ctx c;	/* first: a CUcontext points here */
	uint64_t uid;		/* cuCtxGetId; a primary gets a new one per activation */
	uint64_t gen;		/* created: bumped at each destroy */
	int cache;		/* CUfunc_cache, cuCtxGetCacheConfig */
	bool destroying;
	struct ctx_obj *next_all;	/* created: every object ever allocated */
	struct ctx_obj *next_free;	/* created: recycled objects */
};

#define P(i) { .c = { .magic = VGPU_CTX_MAGIC, .id = (i) + 1, .dev = (i), .primary = true } }
_Static_assert(VGPU_MAX_DEVICES == 16, "one initialiser per primary context");
static struct ctx_obj prim[VGPU_MAX_DEVICES] = {
	P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7),
	P(8), P(9), P(10), P(11), P(12), P(13), P(14), P(15),
};
#undef P
static pthread_mutex_t prim_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_obj *all_created;
static struct ctx_obj *free_objs;

static atomic_uint_least64_t next_uid = 1;

struct stack_ent {
	struct ctx_obj *o;
	uint64_t gen;
};
static __thread struct stack_ent stack[STACK_DEPTH];
static __thread int depth;

static inline struct ctx_obj *obj_of(struct vgpu_ctx *c)
{
	return (struct ctx_obj *)c;
}

static inline CUcontext handle_of(struct ctx_obj *o)
{
	return (CUcontext)(void *)o;
}

static uint64_t new_uid(void)
{
	return atomic_fetch_add(&next_uid, 1);
}

static bool is_primary_handle(const void *h)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)prim;

	return p >= b && p < b + sizeof(prim) && (p - b) % sizeof(prim[0]) == 0;
}

/* Primary refs change under prim_lock; the liveness checks read them bare. */
static void set_refs(struct ctx_obj *o, int refs)
{
	__atomic_store_n(&o->c.refs, refs, __ATOMIC_RELEASE);
}

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

	if (is_primary_handle(h)) {
		*out = (struct ctx_obj *)(void *)h;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&list_lock);
	for (o = all_created; o; o = o->next_all)
		if (handle_of(o) == h)
			break;
	if (o && __atomic_load_n(&o->c.magic, __ATOMIC_ACQUIRE) != VGPU_CTX_MAGIC)
		o = NULL;
	pthread_mutex_unlock(&list_lock);
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

	if (is_primary_handle(o))
		return true;
	return __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE) == e->gen &&
	       __atomic_load_n(&o->c.magic, __ATOMIC_ACQUIRE) == VGPU_CTX_MAGIC;
}

/* The current context, an inactive primary included: for the queries
 * answered here, which cudart makes between making the peeked primary
 * current and retaining it. */
static CUresult current_any(struct vgpu_ctx **out)
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

static CUresult resolve_any(CUcontext h, struct vgpu_ctx **out)
{
	struct ctx_obj *o;
	CUresult rc;

	if (!h)
		return current_any(out);
	rc = vgpu_initialized();
	if (!rc)
		rc = lookup(h, &o);
	if (!rc)
		*out = &o->c;
	return rc;
}

CUresult vgpu_ctx_current(struct vgpu_ctx **out)
{
	CUresult rc = current_any(out);

	return rc ? rc : usable(*out);
}

CUresult vgpu_ctx_resolve(CUcontext h, struct vgpu_ctx **out)
{
	CUresult rc = resolve_any(h, out);

	return rc ? rc : usable(*out);
}

uint64_t vgpu_ctx_uid(struct vgpu_ctx *c)
{
	struct ctx_obj *o = obj_of(c);
	uint64_t uid;

	if (!c->primary)
		return __atomic_load_n(&o->uid, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&prim_lock);
	if (!o->uid)
		o->uid = new_uid();
	uid = o->uid;
	pthread_mutex_unlock(&prim_lock);
	return uid;
}

/* A synchronous call in context @c. */
static CUresult ctx_call(struct vgpu_ctx *c, uint16_t op, uint64_t a0, uint64_t a1,
			 struct vgpu_cqe *cqe)
{
	return vgpu_call5(op, c->id, 0, a0, a1, 0, 0, 0, cqe);
}

/* ---- Primary contexts --------------------------------------------------- */

static CUresult primary_of(CUdevice dev, struct ctx_obj **out)
{
	const struct vgpu_device_info *d;
	CUresult rc = vgpu_device_info(dev, &d);

	if (rc)
		return rc;
	*out = &prim[dev];
	return CUDA_SUCCESS;
}

VGPU_HIDDEN CUresult vgpu_primary_ctx_peek(CUdevice dev, CUcontext *pctx)
{
	struct ctx_obj *o;
	CUresult rc;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	rc = primary_of(dev, &o);
	if (rc)
		return rc;
	*pctx = handle_of(o);
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	rc = primary_of(dev, &o);
	if (rc)
		return rc;
	pthread_mutex_lock(&prim_lock);
	if (o->c.refs == 0) {
		rc = vgpu_call5(VGPU_OP_PRIMARY_RETAIN, 0, 0, o->c.id, (uint64_t)dev, 0, 0, 0, &cqe);
		if (rc) {
			pthread_mutex_unlock(&prim_lock);
			vlog_debug("primary context of device %d: retain failed (%d)", dev, rc);
			return rc;
		}
		o->c.active = true;
		o->c.null_priority = 0;	/* a new NULL stream */
		if (!o->uid)	/* else given while inactive (cuCtxGetId): keep it */
			o->uid = new_uid();
		vlog_debug("primary context of device %d active", dev);
	}
	set_refs(o, o->c.refs + 1);
	pthread_mutex_unlock(&prim_lock);
	*pctx = handle_of(o);
	return CUDA_SUCCESS;
}

/*
 * The worker's answer to PRIMARY_RELEASE can only be a deferred error of
 * earlier asynchronous work (we send it only while the worker holds our
 * mapping); errors of a context going away are moot, as with the driver.
 * A dead session is still reported.
 */
static CUresult release_result(CUresult rc, const char *what, CUdevice dev)
{
	if (rc && vgpu_session_dead())
		return rc;
	if (rc)
		vlog_debug("primary context of device %d: %s answered %d (ignored)", dev, what, rc);
	return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev)
{
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	rc = primary_of(dev, &o);
	if (rc)
		return rc;
	pthread_mutex_lock(&prim_lock);
	if (o->c.refs <= 0) {
		pthread_mutex_unlock(&prim_lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	set_refs(o, o->c.refs - 1);
	if (o->c.refs > 0) {
		pthread_mutex_unlock(&prim_lock);
		return CUDA_SUCCESS;
	}
	o->c.active = false;
	o->uid = 0;
	pthread_mutex_unlock(&prim_lock);

	vgpu_cls_context_destroyed(handle_of(o));

	/* A retain that slipped in meanwhile sent its own PRIMARY_RETAIN, which
	 * the worker counted on top of ours: this release balances ours either
	 * way. */
	pthread_mutex_lock(&prim_lock);
	rc = vgpu_call5(VGPU_OP_PRIMARY_RELEASE, 0, 0, o->c.id, 0, 0, 0, 0, &cqe);
	pthread_mutex_unlock(&prim_lock);
	vlog_debug("primary context of device %d released", dev);
	return release_result(rc, "release", dev);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return primary_release(dev);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return primary_release(dev);
}

static CUresult primary_reset(CUdevice dev)
{
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	CUresult rc = vgpu_initialized(), rc2;
	int was;

	if (rc)
		return rc;
	rc = primary_of(dev, &o);
	if (rc)
		return rc;
	pthread_mutex_lock(&prim_lock);
	was = o->c.refs;
	set_refs(o, 0);
	o->c.active = false;
	o->uid = 0;
	__atomic_store_n(&o->cache, CU_FUNC_CACHE_PREFER_NONE, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&prim_lock);
	if (!was)
		return CUDA_SUCCESS;	/* inactive: nothing to reset */

	vgpu_cls_context_destroyed(handle_of(o));

	pthread_mutex_lock(&prim_lock);
	rc = vgpu_call5(VGPU_OP_PRIMARY_RESET, 0, 0, (uint64_t)dev, 0, 0, 0, 0, &cqe);
	vgpu_sticky_clear();
	rc2 = vgpu_call5(VGPU_OP_PRIMARY_RELEASE, 0, 0, o->c.id, 0, 0, 0, 0, &cqe);
	pthread_mutex_unlock(&prim_lock);
	vlog_debug("primary context of device %d reset (%d)", dev, rc);
	if (rc)
		return rc;
	return release_result(rc2, "reset", dev);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	return primary_reset(dev);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	return primary_reset(dev);
}

static bool valid_ctx_flags(unsigned int flags)
{
	unsigned int sched = flags & CU_CTX_SCHED_MASK;

	if (flags & ~(unsigned int)CU_CTX_FLAGS_MASK)
		return false;
	return sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN ||
	       sched == CU_CTX_SCHED_YIELD || sched == CU_CTX_SCHED_BLOCKING_SYNC;
}

/* Caller holds prim_lock. */
static CUresult primary_apply_flags(struct ctx_obj *o, unsigned int flags)
{
	struct vgpu_cqe cqe;
	CUresult rc;

	rc = vgpu_call5(VGPU_OP_PRIMARY_SET_FLAGS, 0, 0, (uint64_t)o->c.dev, flags, 0, 0, 0, &cqe);
	if (!rc)
		o->c.flags = flags;
	return rc;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags, bool only_inactive)
{
	struct ctx_obj *o;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	rc = primary_of(dev, &o);
	if (rc)
		return rc;
	if (!valid_ctx_flags(flags))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&prim_lock);
	if (only_inactive && o->c.refs > 0)
		rc = CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
	else
		rc = primary_apply_flags(o, flags);
	pthread_mutex_unlock(&prim_lock);
	return rc;
}

/* The original refused an active context; _v2 (CUDA 11) does not. */
VGPU_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return primary_set_flags(dev, flags, true);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	return primary_set_flags(dev, flags, false);
}

VGPU_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct ctx_obj *o;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	rc = primary_of(dev, &o);
	if (rc)
		return rc;
	pthread_mutex_lock(&prim_lock);
	*flags = o->c.flags;
	*active = o->c.refs > 0;
	pthread_mutex_unlock(&prim_lock);
	return CUDA_SUCCESS;
}

/* ---- Created contexts --------------------------------------------------- */

static struct ctx_obj *obj_alloc(void)
{
	struct ctx_obj *o;

	pthread_mutex_lock(&list_lock);
	o = free_objs;
	if (o)
		free_objs = o->next_free;
	pthread_mutex_unlock(&list_lock);
	if (o)
		return o;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	pthread_mutex_lock(&list_lock);
	o->next_all = all_created;
	all_created = o;
	pthread_mutex_unlock(&list_lock);
	return o;
}

static void obj_recycle(struct ctx_obj *o)
{
	pthread_mutex_lock(&list_lock);
	__atomic_store_n(&o->c.magic, CTX_DEAD_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&o->gen, o->gen + 1, __ATOMIC_RELEASE);
	o->destroying = false;
	o->next_free = free_objs;
	free_objs = o;
	pthread_mutex_unlock(&list_lock);
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
	if (!pctx || !valid_ctx_flags(flags))
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_device_info(dev, &d);
	if (rc)
		return rc;
	if (depth >= STACK_DEPTH) {
		vlog_warn("cuCtxCreate: context stack of this thread is full");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o = obj_alloc();
	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	id = vgpu_id_alloc(VGPU_K_CTX);
	if (!id) {
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
	pthread_mutex_lock(&list_lock);
	o->c.id = id;
	o->c.dev = dev;
	o->c.primary = false;
	o->c.flags = flags;
	o->c.refs = 1;
	o->c.active = true;
	o->c.null_priority = 0;
	__atomic_store_n(&o->uid, new_uid(), __ATOMIC_RELEASE);
	o->cache = CU_FUNC_CACHE_PREFER_NONE;
	o->destroying = false;
	__atomic_store_n(&o->c.magic, VGPU_CTX_MAGIC, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&list_lock);
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

static CUresult ctx_destroy(CUcontext h)
{
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	uint32_t id;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	if (is_primary_handle(h))
		return CUDA_ERROR_INVALID_CONTEXT;	/* release or reset those */
	pthread_mutex_lock(&list_lock);
	for (o = all_created; o; o = o->next_all)
		if (handle_of(o) == h)
			break;
	if (!o || o->c.magic != VGPU_CTX_MAGIC || o->destroying) {
		pthread_mutex_unlock(&list_lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	o->destroying = true;
	id = o->c.id;
	pthread_mutex_unlock(&list_lock);

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

VGPU_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
	return ctx_destroy(ctx);
}

VGPU_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	return ctx_destroy(ctx);
}

/* ---- The context stack -------------------------------------------------- */

static CUresult ctx_push(CUcontext h)
{
	struct ctx_obj *o;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	rc = lookup(h, &o);
	if (rc)
		return rc;
	return stack_push(o);
}

VGPU_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
	return ctx_push(ctx);
}

VGPU_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	return ctx_push(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
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

VGPU_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	return ctx_pop(pctx);
}

VGPU_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	return ctx_pop(pctx);
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
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = depth ? handle_of(stack[depth - 1].o) : NULL;
	return CUDA_SUCCESS;
}

/* ---- Queries answered locally ------------------------------------------- */

/* A query about the current context: the driver checks initialization,
 * then the output pointer, then that there is a context. */
static CUresult current_query(const void *out, struct vgpu_ctx **c)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	return current_any(c);
}

VGPU_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	struct vgpu_ctx *c;
	CUresult rc = current_query(device, &c);

	if (rc)
		return rc;
	*device = c->dev;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	rc = resolve_any(ctx, &c);
	if (rc)
		return rc;
	*device = c->dev;
	return CUDA_SUCCESS;
}

static unsigned int ctx_flags(struct vgpu_ctx *c)
{
	unsigned int f;

	if (!c->primary)
		return __atomic_load_n(&c->flags, __ATOMIC_RELAXED);
	pthread_mutex_lock(&prim_lock);
	f = c->flags;
	pthread_mutex_unlock(&prim_lock);
	return f;
}

VGPU_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct vgpu_ctx *c;
	CUresult rc = current_query(flags, &c);

	if (rc)
		return rc;
	*flags = ctx_flags(c);
	return CUDA_SUCCESS;
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
	if (!valid_ctx_flags(flags))
		return CUDA_ERROR_INVALID_VALUE;
	rc = current_any(&c);
	if (rc)
		return rc;
	if (!c->primary) {
		__atomic_store_n(&c->flags, flags, __ATOMIC_RELAXED);
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&prim_lock);
	rc = primary_apply_flags(obj_of(c), flags);
	pthread_mutex_unlock(&prim_lock);
	return rc;
}

VGPU_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!ctxId)
		return CUDA_ERROR_INVALID_VALUE;
	rc = resolve_any(ctx, &c);
	if (rc)
		return rc;
	*ctxId = vgpu_ctx_uid(c);
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	rc = resolve_any(ctx, &c);
	if (rc)
		return rc;
	*version = CTX_API_VERSION;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	struct vgpu_ctx *c;
	CUresult rc = current_query(pconfig, &c);

	if (rc)
		return rc;
	*pconfig = (CUfunc_cache)__atomic_load_n(&obj_of(c)->cache, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

/* No shared-memory bank configuration since Maxwell: the driver answers
 * four-byte banks whatever was set. */
VGPU_EXPORT CUresult cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
	struct vgpu_ctx *c;
	CUresult rc = current_query(pConfig, &c);

	if (rc)
		return rc;
	*pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();
	bool prio;

	if (rc)
		return rc;
	rc = current_any(&c);
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

/* Synchronous: a limit can be refused (unsupported, out of range). */
VGPU_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct vgpu_cqe cqe;
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if ((unsigned)limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_ctx_current(&c);
	if (rc)
		return rc;
	return ctx_call(c, VGPU_OP_CTX_SET_LIMIT, (uint64_t)limit, value, &cqe);
}

VGPU_EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct vgpu_cqe cqe;
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!pvalue || (unsigned)limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_ctx_current(&c);
	if (rc)
		return rc;
	memset(&cqe, 0, sizeof(cqe));
	rc = ctx_call(c, VGPU_OP_CTX_GET_LIMIT, (uint64_t)limit, 0, &cqe);
	if (!rc)
		*pvalue = (size_t)cqe.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct vgpu_cqe cqe;
	struct vgpu_ctx *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_ctx_current(&c);
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
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_ctx_current(&c);
	if (rc)
		return rc;
	return ctx_call(c, VGPU_OP_CTX_SET_SHMEM_CONFIG, (uint64_t)config, 0, &cqe);
}
