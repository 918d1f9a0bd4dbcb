// SPDX-License-Identifier: MIT
/*
 * The host backend's stream attributes, stream memory operations (write
 * and wait on a 32- or 64-bit word), context-wide events and prefetch.
 *
 * Streams here run every operation at once, in submission order. A write
 * is a store. A wait whose word already holds is done; one that does not
 * can only be satisfied by work submitted after it (on another stream) or
 * by the program's own CPU (host pool, registered memory), so it calls the
 * worker's wait hook, which runs later entries of other streams and sleeps
 * between checks (exec_streamops.c), until the word holds or the hook gives
 * up (the client is gone).
 */
#include <string.h>

#include "host_backend.h"

static bool (*wait_hook)(void *arg);
static void *wait_hook_arg;

void vgpu_host_set_wait_hook(bool (*hook)(void *arg), void *arg)
{
	wait_hook = hook;
	wait_hook_arg = arg;
}

/* --- stream attributes -------------------------------------------------- */

void host_stream_attrs_init(struct host_stream_attrs *a)
{
	memset(a, 0, sizeof(*a));
	/* The driver (580) answers -1 until a policy is set: none of the
	 * stream's own, the context's applies. */
	a->sync_policy = (CUsynchronizationPolicy)-1;
	a->domain_map.default_ = 0;
	a->domain_map.remote = 1;
	a->domain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
}

/* The attributes of h, its priority and its context; under host.lock. */
static CUresult attrs_of(CUstream h, struct host_stream_attrs **a, int **prio,
			 struct host_ctx **owner)
{
	struct host_ctx *ctx = NULL;
	CUresult r = host_stream_ctx(h, &ctx);

	if (r)
		return r;
	*owner = ctx;
	if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		/* Zero is no valid policy: the context's NULL stream is new. */
		if (!ctx->legacy_attrs.sync_policy)
			host_stream_attrs_init(&ctx->legacy_attrs);
		*a = &ctx->legacy_attrs;
		*prio = &ctx->legacy_priority;
		return CUDA_SUCCESS;
	}
	*a = &((struct host_stream *)h)->attrs;
	*prio = &((struct host_stream *)h)->priority;
	return CUDA_SUCCESS;
}

/* As the driver (580) checks a window: a hit ratio in [0, 1], misses never
 * persisting, no more bytes than the device's window size. It takes other
 * property values it does not know, and so does this. */
static CUresult window_ok(const CUaccessPolicyWindow *w)
{
	if (!(w->hitRatio >= 0.0f && w->hitRatio <= 1.0f))
		return CUDA_ERROR_INVALID_VALUE;
	if (w->missProp == CU_ACCESS_PROPERTY_PERSISTING)
		return CUDA_ERROR_INVALID_VALUE;
	if (w->num_bytes > 134213632u)	/* MAX_ACCESS_POLICY_WINDOW_SIZE */
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult host_cuStreamSetAttribute(CUstream h, CUstreamAttrID id, const CUstreamAttrValue *v)
{
	struct host_stream_attrs *a;
	struct host_ctx *ctx;
	int *prio;
	CUresult r;

	if (!v)
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = attrs_of(h, &a, &prio, &ctx);
	if (r)
		goto out;
	switch (id) {
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		r = window_ok(&v->accessPolicyWindow);
		if (!r)
			a->window = v->accessPolicyWindow;
		break;
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		if (v->syncPolicy < CU_SYNC_POLICY_AUTO ||
		    v->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			a->sync_policy = v->syncPolicy;
		break;
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		/* Clamped to the range, as at creation; the NULL stream takes
		 * one too (as the driver's does). */
		*prio = v->priority < HOST_PRIO_GREATEST ? HOST_PRIO_GREATEST
			: v->priority > HOST_PRIO_LEAST ? HOST_PRIO_LEAST : v->priority;
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		/* Four domains on this device (MEM_SYNC_DOMAIN_COUNT). */
		if (v->memSyncDomainMap.default_ >= 4 || v->memSyncDomainMap.remote >= 4)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			a->domain_map = v->memSyncDomainMap;
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		if (v->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT &&
		    v->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			a->domain = v->memSyncDomain;
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
out:
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuStreamGetAttribute(CUstream h, CUstreamAttrID id, CUstreamAttrValue *v)
{
	struct host_stream_attrs *a;
	struct host_ctx *ctx;
	int *prio;
	CUresult r;

	if (!v)
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = attrs_of(h, &a, &prio, &ctx);
	if (r)
		goto out;
	memset(v, 0, sizeof(*v));
	switch (id) {
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		v->accessPolicyWindow = a->window;
		break;
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		v->syncPolicy = a->sync_policy;
		break;
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		v->priority = *prio;
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		v->memSyncDomainMap = a->domain_map;
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		v->memSyncDomain = a->domain;
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
out:
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuStreamCopyAttributes(CUstream dst, CUstream src)
{
	struct host_stream_attrs *d, *s;
	struct host_ctx *dc, *sc;
	int *dp, *sp;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = attrs_of(dst, &d, &dp, &dc);
	if (!r)
		r = attrs_of(src, &s, &sp, &sc);
	/* "Both streams must have the same context." */
	if (!r && dc != sc)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		*d = *s;
		*dp = *sp;
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* --- context-wide events ------------------------------------------------ */

/* Every stream of a context is idle here, so recording on the context is
 * recording now; waiting on it is already satisfied. */
CUresult host_cuCtxRecordEvent(CUcontext hctx, CUevent ev)
{
	CUresult r = host_cuCtxWaitEvent(hctx, ev);

	return r ? r : host_cuEventRecordWithFlags(ev, NULL, 0);
}

CUresult host_cuCtxWaitEvent(CUcontext hctx, CUevent ev)
{
	struct host_ctx *cur = NULL, *c = (struct host_ctx *)hctx;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&cur);
	if (!r && c && c != cur)
		r = CUDA_ERROR_INVALID_CONTEXT;
	if (!r && !host_set_has(&host.events, ev))
		r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* --- write and wait ----------------------------------------------------- */

static CUresult word_check(CUstream h, CUdeviceptr addr, unsigned size, unsigned acc)
{
	CUresult r = host_stream_check(h);

	if (r)
		return r;
	if (addr % size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_rwlock_rdlock(&host.map);
	r = host_range_ok(addr, size, acc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	pthread_rwlock_unlock(&host.map);
	return r;
}

static CUresult write_word(CUstream h, CUdeviceptr addr, uint64_t v, unsigned size,
			   unsigned flags)
{
	CUresult r;

	if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_DEFAULT)
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	r = word_check(h, addr, size, HOST_WRITE);
	if (r)
		return r;
	pthread_rwlock_rdlock(&host.map);
	if (!host_range_ok(addr, size, HOST_WRITE))
		r = CUDA_ERROR_INVALID_VALUE;
	else if (size == 4)
		__atomic_store_n((uint32_t *)(uintptr_t)addr, (uint32_t)v, __ATOMIC_SEQ_CST);
	else
		__atomic_store_n((uint64_t *)(uintptr_t)addr, v, __ATOMIC_SEQ_CST);
	pthread_rwlock_unlock(&host.map);
	return r;
}

CUresult host_cuStreamWriteValue32_v2(CUstream h, CUdeviceptr addr, cuuint32_t v, unsigned flags)
{
	return write_word(h, addr, v, 4, flags);
}

CUresult host_cuStreamWriteValue64_v2(CUstream h, CUdeviceptr addr, cuuint64_t v, unsigned flags)
{
	return write_word(h, addr, v, 8, flags);
}

/* Whether the word satisfies the condition, as the driver compares. */
static int holds(uint64_t cur, uint64_t v, unsigned size, unsigned cond)
{
	switch (cond) {
	case CU_STREAM_WAIT_VALUE_GEQ:
		return size == 4 ? (int32_t)((uint32_t)cur - (uint32_t)v) >= 0
				 : (int64_t)(cur - v) >= 0;
	case CU_STREAM_WAIT_VALUE_EQ:
		return cur == v;
	case CU_STREAM_WAIT_VALUE_AND:
		return (cur & v) != 0;
	default:	/* NOR */
		return size == 4 ? (uint32_t)~(cur | v) != 0 : ~(cur | v) != 0;
	}
}

/* 1: holds, 0: not yet, -1: the memory went away. */
static int check_word(CUdeviceptr addr, uint64_t v, unsigned size, unsigned cond)
{
	uint64_t cur;
	int ret = -1;

	pthread_rwlock_rdlock(&host.map);
	if (host_range_ok(addr, size, HOST_READ)) {
		cur = size == 4 ? __atomic_load_n((uint32_t *)(uintptr_t)addr, __ATOMIC_SEQ_CST)
				: __atomic_load_n((uint64_t *)(uintptr_t)addr, __ATOMIC_SEQ_CST);
		ret = holds(cur, v, size, cond);
	}
	pthread_rwlock_unlock(&host.map);
	return ret;
}

static CUresult wait_word(CUstream h, CUdeviceptr addr, uint64_t v, unsigned size,
			  unsigned flags)
{
	unsigned cond = flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH;
	CUresult r;
	int ok;

	if (cond > CU_STREAM_WAIT_VALUE_NOR)
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	/* No remote writes to flush on this device (CAN_FLUSH_REMOTE_WRITES 0). */
	if (flags & CU_STREAM_WAIT_VALUE_FLUSH)
		return host_check_init() ? host_check_init() : CUDA_ERROR_NOT_SUPPORTED;
	r = word_check(h, addr, size, HOST_READ);
	if (r)
		return r;
	while ((ok = check_word(addr, v, size, cond)) == 0)
		if (!wait_hook || !wait_hook(wait_hook_arg))
			return CUDA_ERROR_LAUNCH_FAILED;	/* abandoned: the client is gone */
	return ok > 0 ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
}

CUresult host_cuStreamWaitValue32_v2(CUstream h, CUdeviceptr addr, cuuint32_t v, unsigned flags)
{
	return wait_word(h, addr, v, 4, flags);
}

CUresult host_cuStreamWaitValue64_v2(CUstream h, CUdeviceptr addr, cuuint64_t v, unsigned flags)
{
	return wait_word(h, addr, v, 8, flags);
}

/* Each operation checked first, as the driver refuses a bad batch whole. */
static CUresult batch_check(const CUstreamBatchMemOpParams *p)
{
	switch (p->operation) {
	case CU_STREAM_MEM_OP_WAIT_VALUE_32:
	case CU_STREAM_MEM_OP_WAIT_VALUE_64:
		if ((p->waitValue.flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH) >
		    CU_STREAM_WAIT_VALUE_NOR)
			return CUDA_ERROR_INVALID_VALUE;
		if (p->waitValue.flags & CU_STREAM_WAIT_VALUE_FLUSH)
			return CUDA_ERROR_NOT_SUPPORTED;
		return word_check(NULL, p->waitValue.address,
				  p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8, HOST_READ);
	case CU_STREAM_MEM_OP_WRITE_VALUE_32:
	case CU_STREAM_MEM_OP_WRITE_VALUE_64:
		if (p->writeValue.flags)
			return CUDA_ERROR_INVALID_VALUE;
		return word_check(NULL, p->writeValue.address,
				  p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8,
				  HOST_WRITE);
	case CU_STREAM_MEM_OP_BARRIER:
		return p->memoryBarrier.flags > CU_STREAM_MEMORY_BARRIER_TYPE_GPU
			       ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:	/* not on this device, flags or not */
		return CUDA_ERROR_NOT_SUPPORTED;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult host_cuStreamBatchMemOp_v2(CUstream h, unsigned count, CUstreamBatchMemOpParams *ops,
				    unsigned flags)
{
	CUresult r = host_stream_check(h);

	if (r)
		return r;
	/* Nothing to do in an empty batch; fewer than 256 operations ("must be
	 * less than 256"), as the driver's limit. */
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!count)
		return CUDA_SUCCESS;
	if (count >= 256 || !ops)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < count; i++)
		if ((r = batch_check(&ops[i])))
			return r;
	/* In order: barriers are moot when every operation is already done. */
	for (unsigned i = 0; i < count && !r; i++) {
		const CUstreamBatchMemOpParams *p = &ops[i];

		if (p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32)
			r = write_word(h, p->writeValue.address, p->writeValue.value, 4, 0);
		else if (p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64)
			r = write_word(h, p->writeValue.address, p->writeValue.value64, 8, 0);
		else if (p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32)
			r = wait_word(h, p->waitValue.address, p->waitValue.value, 4,
				      p->waitValue.flags);
		else if (p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64)
			r = wait_word(h, p->waitValue.address, p->waitValue.value64, 8,
				      p->waitValue.flags);
	}
	return r;
}

/* --- prefetch ----------------------------------------------------------- */

/* Only managed memory can be prefetched, and this device has none: the
 * driver answers INVALID_VALUE for any other memory (after its checks). */
CUresult host_cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags,
				    CUstream h)
{
	CUresult r = host_stream_check(h);

	if (r)
		return r;
	if (!p || !n || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc.type == CU_MEM_LOCATION_TYPE_DEVICE && loc.id != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_ERROR_INVALID_VALUE;
}
