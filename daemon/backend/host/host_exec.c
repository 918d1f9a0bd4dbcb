// SPDX-License-Identifier: MIT
/*
 * Streams, events and launches for the host backend. Every operation runs
 * to completion before its call returns, in submission order: a valid
 * serialization of CUDA's stream semantics. So streams are always idle,
 * waits are satisfied at once, and an event's time is when its record
 * call ran (which is after everything before it on any stream).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_backend.h"
#include "host_kernels.h"
#include "log.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- streams ------------------------------------------------------------ */

void host_stream_destroy(struct host_stream *s)
{
	host_set_del(&host.streams, s);
	free(s);
}

/* A new stream or event joins set, owned by the current context, which
 * *owner records under the lock (context teardown reads it). */
static CUresult add_to_current_ctx(struct host_set *set, void *obj, struct host_ctx **owner)
{
	struct host_ctx *ctx = NULL;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	if (!r && host_set_add(set, obj))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	*owner = ctx;
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_stream_new(struct host_ctx *ctx, CUstream *ph, unsigned int flags, int priority)
{
	struct host_stream *s;
	CUresult r;

	if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* As the driver: priorities outside the range are clamped to it. */
	if (priority < HOST_PRIO_GREATEST)
		priority = HOST_PRIO_GREATEST;
	if (priority > HOST_PRIO_LEAST)
		priority = HOST_PRIO_LEAST;
	s->flags = flags;
	s->priority = priority;
	host_stream_attrs_init(&s->attrs);
	if (ctx) {
		pthread_mutex_lock(&host.lock);
		r = host_set_has(&host.ctxs, ctx) ? ctx->sticky : CUDA_ERROR_INVALID_CONTEXT;
		if (!r && host_set_add(&host.streams, s))
			r = CUDA_ERROR_OUT_OF_MEMORY;
		s->ctx = ctx;
		pthread_mutex_unlock(&host.lock);
	} else {
		r = add_to_current_ctx(&host.streams, s, &s->ctx);
	}
	if (r) {
		free(s);
		return r;
	}
	*ph = (CUstream)s;
	return CUDA_SUCCESS;
}

CUresult host_cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority)
{
	return host_stream_new(NULL, ph, flags, priority);
}

CUresult host_cuStreamDestroy_v2(CUstream h)
{
	struct host_stream *s = (struct host_stream *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.streams, s))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		host_stream_destroy(s);
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_stream_check(CUstream h)
{
	struct host_ctx *ctx = NULL;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_stream_ctx(h, &ctx);
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuStreamSynchronize(CUstream h)
{
	return host_stream_check(h);
}

CUresult host_cuStreamQuery(CUstream h)
{
	return host_stream_check(h);
}

CUresult host_cuStreamWaitEvent(CUstream h, CUevent ev, unsigned int flags)
{
	struct host_ctx *ctx = NULL;
	CUresult r;

	if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = host_stream_ctx(h, &ctx);
	if (!r && !host_set_has(&host.events, ev))
		r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuLaunchHostFunc(CUstream h, CUhostFn fn, void *data)
{
	CUresult r = host_stream_check(h);

	if (r)
		return r;
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	fn(data);
	return CUDA_SUCCESS;
}

/* --- events ------------------------------------------------------------- */

void host_event_destroy(struct host_event *e)
{
	host_set_del(&host.events, e);
	free(e);
}

CUresult host_cuEventCreate(CUevent *ph, unsigned int flags)
{
	const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
			       CU_EVENT_INTERPROCESS;
	struct host_event *e;
	CUresult r;

	if (!ph || (flags & ~known))
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->flags = flags;
	r = add_to_current_ctx(&host.events, e, &e->ctx);
	if (r) {
		free(e);
		return r;
	}
	*ph = (CUevent)e;
	return CUDA_SUCCESS;
}

CUresult host_cuEventDestroy_v2(CUevent h)
{
	struct host_event *e = (struct host_event *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.events, e))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		host_event_destroy(e);
	pthread_mutex_unlock(&host.lock);
	return r;
}

void host_event_mark(struct host_event *e)
{
	e->recorded = 1;
	e->ns = now_ns();
}

/* Records e now, as seen from stream h; under host.lock. */
static CUresult event_record(struct host_event *e, CUstream h)
{
	struct host_ctx *ctx = NULL;
	CUresult r = host_stream_ctx(h, &ctx);

	if (r)
		return r;
	if (!host_set_has(&host.events, e))
		return CUDA_ERROR_INVALID_HANDLE;
	if (e->ctx != ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	host_event_mark(e);
	return CUDA_SUCCESS;
}

CUresult host_cuEventRecordWithFlags(CUevent h, CUstream s, unsigned int flags)
{
	CUresult r;

	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return host_check_init() ? host_check_init() : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = event_record((struct host_event *)h, s);
	pthread_mutex_unlock(&host.lock);
	return r;
}

static CUresult event_check(CUevent h)
{
	struct host_event *e = (struct host_event *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.events, e))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		r = e->ctx->sticky;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* Never-recorded events are complete, as the driver's are. */
CUresult host_cuEventSynchronize(CUevent h)
{
	return event_check(h);
}

CUresult host_cuEventQuery(CUevent h)
{
	return event_check(h);
}

CUresult host_cuEventElapsedTime_v2(float *ms, CUevent hs, CUevent he)
{
	struct host_event *s = (struct host_event *)hs, *e = (struct host_event *)he;
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.events, s) || !host_set_has(&host.events, e))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (s->ctx->sticky || e->ctx->sticky)
		r = s->ctx->sticky ? s->ctx->sticky : e->ctx->sticky;
	else if ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (!s->recorded || !e->recorded)
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*ms = (float)((double)((int64_t)(e->ns - s->ns)) / 1e6);
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* --- launches ----------------------------------------------------------- */

static int occupancy(int block, size_t dyn_smem)
{
	int n;

	if (block <= 0 || block > HOST_MAX_THREADS)
		return 0;
	n = 2048 / block;
	if (n > 32)
		n = 32;
	if (dyn_smem) {
		size_t per_block = dyn_smem + HOST_SMEM_RESERVED;
		size_t by_smem = HOST_SMEM_PER_SM / per_block;

		if ((size_t)n > by_smem)
			n = (int)by_smem;
	}
	return n;
}

CUresult host_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *num, CUfunction f,
								  int block, size_t dyn,
								  unsigned int flags)
{
	struct host_func *fn = (struct host_func *)f;
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!num || block <= 0 || (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.funcs, fn))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (fn->mod->ctx->sticky)
		r = fn->mod->ctx->sticky;
	else if (dyn > (size_t)fn->max_dynamic_smem)
		*num = 0;
	else
		*num = occupancy(block, dyn);
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* Clusters that fit at once: whole clusters of the blocks every SM holds. */
CUresult host_cuOccupancyMaxActiveClusters(int *num, CUfunction f, const CUlaunchConfig *c)
{
	unsigned int cluster = 1;
	int per_sm = 0;
	CUresult r;

	if (!num || !c)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < c->numAttrs; i++)
		if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			cluster = c->attrs[i].value.clusterDim.x * c->attrs[i].value.clusterDim.y *
				  c->attrs[i].value.clusterDim.z;
	if (!cluster || cluster > 16)
		return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	r = host_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		&per_sm, f, (int)(c->blockDimX * c->blockDimY * c->blockDimZ), c->sharedMemBytes, 0);
	if (r)
		return r;
	*num = per_sm * 132 / (int)cluster;
	return CUDA_SUCCESS;
}

static CUresult check_dims(const CUlaunchConfig *c, const struct host_func *fn)
{
	uint64_t threads = (uint64_t)c->blockDimX * c->blockDimY * c->blockDimZ;

	if (!c->gridDimX || !c->gridDimY || !c->gridDimZ ||
	    !c->blockDimX || !c->blockDimY || !c->blockDimZ)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->gridDimX > 2147483647u || c->gridDimY > 65535 || c->gridDimZ > 65535)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->blockDimX > 1024 || c->blockDimY > 1024 || c->blockDimZ > 64 ||
	    threads > HOST_MAX_THREADS)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->sharedMemBytes > (unsigned)fn->max_dynamic_smem)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Launch attributes; events to record at completion go to *done. */
static CUresult check_attrs(const CUlaunchConfig *c, const struct host_func *fn,
			    struct host_event **done, size_t *ndone)
{
	uint64_t blocks = (uint64_t)c->gridDimX * c->gridDimY * c->gridDimZ;

	if (c->numAttrs && !c->attrs)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < c->numAttrs; i++) {
		const CUlaunchAttribute *a = &c->attrs[i];
		const CUlaunchAttributeValue *v = &a->value;
		uint64_t cl;

		switch (a->id) {
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			if (v->cooperative &&
			    blocks > (uint64_t)HOST_SM_COUNT *
					     occupancy((int)(c->blockDimX * c->blockDimY *
							     c->blockDimZ), c->sharedMemBytes))
				return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
			cl = (uint64_t)v->clusterDim.x * v->clusterDim.y * v->clusterDim.z;
			if (!cl || c->gridDimX % v->clusterDim.x || c->gridDimY % v->clusterDim.y ||
			    c->gridDimZ % v->clusterDim.z)
				return CUDA_ERROR_INVALID_CLUSTER_SIZE;
			if (cl > (fn->nonportable_cluster ? 16u : 8u))
				return CUDA_ERROR_INVALID_CLUSTER_SIZE;
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: {
			CUevent ev = a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
					     ? v->programmaticEvent.event
					     : v->launchCompletionEvent.event;

			if (!host_set_has(&host.events, ev))
				return CUDA_ERROR_INVALID_HANDLE;
			done[(*ndone)++] = (struct host_event *)ev;
			break;
		}
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
			break;	/* nothing to emulate */
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return CUDA_SUCCESS;
}

/* Packs the parameters into buf (k->params_size bytes). */
static CUresult pack(const struct host_kernel *k, void **params, void **extra, uint8_t *buf)
{
	const void *ebuf = NULL;
	size_t esize = 0;
	int have_size = 0;

	memset(buf, 0, k->params_size);
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (params) {
		for (unsigned i = 0; i < k->nparams; i++) {
			if (!params[i])
				return CUDA_ERROR_INVALID_VALUE;
			memcpy(buf + k->params[i].offset, params[i], k->params[i].size);
		}
		return CUDA_SUCCESS;
	}
	if (!extra)
		return k->nparams ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
			ebuf = extra[i + 1];
		} else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
			if (!extra[i + 1])
				return CUDA_ERROR_INVALID_VALUE;
			memcpy(&esize, extra[i + 1], sizeof(esize));
			have_size = 1;
		} else {
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	if (!ebuf || !have_size || esize < k->params_size)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(buf, ebuf, k->params_size);
	return CUDA_SUCCESS;
}

static int sticky_error(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_ASSERT:
		return 1;
	default:
		return 0;
	}
}

#define MAX_DONE 16

CUresult host_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	struct host_func *fn = (struct host_func *)f;
	struct host_event *done[MAX_DONE];
	const struct host_kernel *k;
	struct host_launch l = { 0 };
	struct host_ctx *ctx = NULL;
	size_t ndone = 0;
	uint8_t *buf;
	CUresult r;

	if ((r = host_check_init()))
		return r;
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->numAttrs > MAX_DONE)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = host_stream_ctx(c->hStream, &ctx);
	if (!r && !host_set_has(&host.funcs, fn))
		r = CUDA_ERROR_INVALID_HANDLE;
	if (!r && fn->mod->ctx != ctx)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (!r)
		r = check_dims(c, fn);
	if (!r)
		r = check_attrs(c, fn, done, &ndone);
	if (!r && !fn->kernel) {
		vlog_err("host backend: kernel %s has no host implementation in the host backend",
			 fn->name);
		r = CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!r && fn->layout_mismatch) {
		vlog_err("host backend: kernel %s: the image's parameters differ from the host "
			 "implementation's; not launching", fn->name);
		r = CUDA_ERROR_NOT_SUPPORTED;
	}
	/* The implementation is static: fn may be unloaded once unlocked. */
	k = r ? NULL : fn->kernel;
	pthread_mutex_unlock(&host.lock);
	if (r)
		return r;

	buf = malloc(k->params_size ? k->params_size : 1);
	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((r = pack(k, params, extra, buf))) {
		free(buf);
		return r;
	}
	l.grid[0] = c->gridDimX;
	l.grid[1] = c->gridDimY;
	l.grid[2] = c->gridDimZ;
	l.block[0] = c->blockDimX;
	l.block[1] = c->blockDimY;
	l.block[2] = c->blockDimZ;
	l.shared_bytes = c->sharedMemBytes;
	l.params = buf;
	l.params_size = k->params_size;

	pthread_rwlock_rdlock(&host.map);
	r = k->run(&l);
	pthread_rwlock_unlock(&host.map);
	free(buf);

	if (r && sticky_error(r)) {
		const char *name = "?";

		host_cuGetErrorName(r, &name);
		vlog_warn("host backend: kernel %s: %s; the context is now unusable", k->name, name);
		host_ctx_poison(ctx, r);
		return r;
	}
	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	for (size_t i = 0; i < ndone; i++)
		if (host_set_has(&host.events, done[i])) {
			done[i]->recorded = 1;
			done[i]->ns = now_ns();
		}
	pthread_mutex_unlock(&host.lock);
	return CUDA_SUCCESS;
}
