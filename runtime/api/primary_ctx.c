// SPDX-License-Identifier: MIT
/*
 * Primary contexts, context instance ids and context flags.
 *
 * Primary contexts are one static object per device, id = device + 1, so
 * their handles are stable for the life of the process, retained or not
 * (the static cudart peeks the handle through the dark API and makes it
 * current *before* it retains it).
 *
 * The worker keeps its real primary contexts retained for the whole
 * session and maps our primary id while we hold it: the first
 * cuDevicePrimaryCtxRetain (client refs 0 -> 1) sends PRIMARY_RETAIN, the
 * last cuDevicePrimaryCtxRelease (1 -> 0) sends PRIMARY_RELEASE, so the
 * worker's count is 1 exactly while the context is active. Reset runs the
 * context-local-storage destructors, sends PRIMARY_RESET, then the release
 * that the active state owed. A primary context that is not retained
 * has no mapping on the worker: vgpu_ctx_current/vgpu_ctx_resolve answer
 * CUDA_ERROR_CONTEXT_IS_DESTROYED for it (cuda.h: "... or is a primary
 * context which has not yet been initialized") before anything is sent,
 * while the queries answered locally (device, flags, id, API version, cache
 * and shared-memory config, priorities) work without a retain: cudart
 * makes the peeked primary current before it retains it.
 *
 * Locks: prim_lock guards every primary's refs/active/flags/uid and
 * serialises its ring calls. It is not held while CLS destructors run.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "calls_hand_gen.h"
#include "context.h"
#include "dark_api.h"
#include "entry.h"
#include "init.h"
#include "log.h"

#define P(i) { .c = { .magic = VGPU_CTX_MAGIC, .id = (i) + 1, .dev = (i), .primary = true } }
_Static_assert(VGPU_MAX_DEVICES == 16, "one initialiser per primary context");
static struct ctx_obj prim[VGPU_MAX_DEVICES] = {
	P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7),
	P(8), P(9), P(10), P(11), P(12), P(13), P(14), P(15),
};
#undef P
static pthread_mutex_t prim_lock = PTHREAD_MUTEX_INITIALIZER;

static atomic_uint_least64_t next_uid = 1;

uint64_t vgpu_ctx_new_uid(void)
{
	return atomic_fetch_add(&next_uid, 1);
}

CUcontext vgpu_primary_handle(CUdevice dev)
{
	return handle_of(&prim[dev]);
}

bool vgpu_ctx_is_primary_handle(const void *h)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)prim;

	return p >= b && p < b + sizeof(prim) && (p - b) % sizeof(prim[0]) == 0;
}

/* Primary refs change under prim_lock; the liveness checks read them bare. */
static void set_refs(struct ctx_obj *o, int refs)
{
	__atomic_store_n(&o->c.refs, refs, __ATOMIC_RELEASE);
}

uint64_t vgpu_ctx_uid(struct vgpu_ctx *c)
{
	struct ctx_obj *o = obj_of(c);
	uint64_t uid;

	if (!c->primary)
		return __atomic_load_n(&o->uid, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&prim_lock);
	if (!o->uid)
		o->uid = vgpu_ctx_new_uid();
	uid = o->uid;
	pthread_mutex_unlock(&prim_lock);
	return uid;
}

/* ---- Primary contexts --------------------------------------------------- */

/* Device @dev's primary context; before cuInit CUDA_ERROR_NOT_INITIALIZED
 * (vgpu_device_info), so an entry point may open with it. */
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
	CUresult rc = vgpu_enter_nonnull(pctx);

	if (rc)
		return rc;
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
			o->uid = vgpu_ctx_new_uid();
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

CUresult vgpu_hand_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	CUresult rc = primary_of(dev, &o);

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

CUresult vgpu_hand_cuDevicePrimaryCtxReset(CUdevice dev)
{
	struct vgpu_cqe cqe;
	struct ctx_obj *o;
	CUresult rc2, rc = primary_of(dev, &o);
	int was;

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

bool vgpu_ctx_flags_valid(unsigned int flags)
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
	CUresult rc = primary_of(dev, &o);

	if (rc)
		return rc;
	if (!vgpu_ctx_flags_valid(flags))
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

unsigned int vgpu_ctx_flags(struct vgpu_ctx *c)
{
	unsigned int f;

	if (!c->primary)
		return __atomic_load_n(&c->flags, __ATOMIC_RELAXED);
	pthread_mutex_lock(&prim_lock);
	f = c->flags;
	pthread_mutex_unlock(&prim_lock);
	return f;
}

CUresult vgpu_primary_ctx_set_flags(struct vgpu_ctx *c, unsigned int flags)
{
	CUresult rc;

	pthread_mutex_lock(&prim_lock);
	rc = primary_apply_flags(obj_of(c), flags);
	pthread_mutex_unlock(&prim_lock);
	return rc;
}
