// SPDX-License-Identifier: MIT
/*
 * Stream-ordered allocation and memory pools. The pools live in the
 * worker (daemon/worker/pool.c); here are their handles, each device's current
 * pool, and which pool each live allocation came from, so that frees of
 * unknown pointers and pointer queries are answered without a round trip.
 * cuMemAllocAsync waits for its address; cuMemFreeAsync is posted.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "calls_hand_gen.h"
#include "driver.h"
#include "entry.h"
#include "forward.h"
#include "handles.h"
#include "init.h"
#include "log.h"
#include "memory.h"
#include "unsupported.h"
#include "vmm.h"
#include "fdpass.h"

/* Live allocations by address: sorted, small, searched in halves. */
struct pool_alloc {
	uint64_t addr;
	struct vgpu_pool *pool;		/* NULL: a graph's, or its pool was destroyed */
	bool graph;			/* a graph's memory (a captured allocation) */
};

static struct {
	pthread_mutex_t lock;
	struct vgpu_pool defaults[VGPU_MAX_DEVICES];
	struct vgpu_pool *current[VGPU_MAX_DEVICES];	/* NULL: the default */
	struct pool_alloc *a;
	size_t n, cap;
} P = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t lower(uint64_t p)
{
	size_t lo = 0, hi = P.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (P.a[mid].addr < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Called with P.lock held. */
static bool note(uint64_t p, struct vgpu_pool *pool, bool graph)
{
	size_t i = lower(p);

	if (i < P.n && P.a[i].addr == p) {
		P.a[i].pool = graph ? NULL : pool;
		P.a[i].graph = graph;
		return true;
	}
	if (P.n == P.cap) {
		size_t cap = P.cap ? P.cap * 2 : 64;
		struct pool_alloc *n = realloc(P.a, cap * sizeof(*n));

		if (!n)
			return false;
		P.a = n;
		P.cap = cap;
	}
	memmove(&P.a[i + 1], &P.a[i], (P.n - i) * sizeof(*P.a));
	P.a[i] = (struct pool_alloc){ .addr = p, .pool = graph ? NULL : pool, .graph = graph };
	P.n++;
	return true;
}

/* Called with P.lock held: the entry's index, or -1. */
static long find(uint64_t p)
{
	size_t i = lower(p);

	return i < P.n && P.a[i].addr == p ? (long)i : -1;
}

static void drop(long i)
{
	memmove(&P.a[i], &P.a[i + 1], (P.n - (size_t)i - 1) * sizeof(*P.a));
	P.n--;
}

CUmemoryPool vgpu_pool_of(uint64_t p)
{
	struct vgpu_pool *pool = NULL;
	long i;

	pthread_mutex_lock(&P.lock);
	i = find(p);
	if (i >= 0)
		pool = P.a[i].pool;
	pthread_mutex_unlock(&P.lock);
	return (CUmemoryPool)pool;
}

void vgpu_pool_forget(uint64_t p)
{
	long i;

	pthread_mutex_lock(&P.lock);
	i = find(p);
	if (i >= 0)
		drop(i);
	pthread_mutex_unlock(&P.lock);
}

/* ---- handles ----------------------------------------------------------------- */

static CUresult device_ok(CUdevice dev)
{
	return dev >= 0 && dev < vgpu_device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static struct vgpu_pool *default_pool(CUdevice dev)
{
	struct vgpu_pool *d = &P.defaults[dev];

	/* Made on first use: the worker's default pools exist from the start. */
	if (!d->magic) {
		d->id = (uint32_t)dev + 1;
		d->dev = dev;
		d->is_default = true;
		__atomic_store_n(&d->magic, VGPU_POOL_MAGIC, __ATOMIC_RELEASE);
	}
	return d;
}

static CUresult pool_resolve(CUmemoryPool h, struct vgpu_pool **out)
{
	struct vgpu_pool *p = (struct vgpu_pool *)h;

	if (!p || __atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) != VGPU_POOL_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	*out = p;
	return CUDA_SUCCESS;
}

/* An entry point's opening: cuInit, then the pool. */
static CUresult pool_enter(CUmemoryPool h, struct vgpu_pool **out)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : pool_resolve(h, out);
}

static struct vgpu_pool *current_pool(CUdevice dev)
{
	struct vgpu_pool *p;

	pthread_mutex_lock(&P.lock);
	p = P.current[dev] ? P.current[dev] : default_pool(dev);
	pthread_mutex_unlock(&P.lock);
	return p;
}

/* Pools belong to devices, not contexts: a pool call needs none. */
static CUresult some_ctx(uint32_t *id)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_session(&s);
	*id = !rc && !vgpu_ctx_current(&ctx) ? ctx->id : 0;
	return rc;
}

/* ---- allocation ---------------------------------------------------------------- */

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, struct vgpu_pool *pool,
			    CUstream h, bool ptds)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	struct vgpu_cqe c = { 0 };
	uint32_t sid;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_session(&s);
	if (rc)
		return rc;
	if (!dptr || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_stream_resolve(h, ptds, &ctx, &sid);
	if (rc)
		return rc;
	if (!pool)
		pool = current_pool(ctx->dev);
	rc = vgpu_call5(VGPU_OP_MEM_ALLOC_ASYNC, ctx->id, sid, pool->id, bytes, 0, 0, 0, &c);
	if (rc) {
		/* It may have succeeded with an earlier error folded in. */
		if (c.val[0] && vgpu_is_device(s, c.val[0]))
			vgpu_post5(VGPU_OP_MEM_FREE_ASYNC, ctx->id, sid, c.val[0], 0, 0, 0, 0);
		return rc;
	}
	if (!vgpu_is_device(s, c.val[0])) {
		vlog_err("worker allocated %#llx outside the device window",
			 (unsigned long long)c.val[0]);
		return CUDA_ERROR_UNKNOWN;
	}
	/* During capture the memory is the graph's: no pool answers for it. */
	pthread_mutex_lock(&P.lock);
	note(c.val[0], pool, c.val[1] != 0);
	pthread_mutex_unlock(&P.lock);
	/* A graph's memory goes with the graph, which this table would not
	 * see: the worker answers for its range. */
	if (!c.val[1])
		vgpu_mem_note_device(c.val[0], bytes, ctx);
	*dptr = c.val[0];
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuMemAllocAsync(bool ptds, CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, hStream, ptds);
}

CUresult vgpu_hand_cuMemAllocFromPoolAsync(bool ptds, CUdeviceptr *dptr, size_t bytes,
					   CUmemoryPool h, CUstream st)
{
	struct vgpu_pool *pool;
	CUresult rc = pool_enter(h, &pool);

	return rc ? rc : alloc_async(dptr, bytes, pool, st, ptds);
}

/*
 * Pool memory, memory a graph allocated, or memory from cuMemAlloc (whose
 * free then waits for the device, as cuMemFree's does). Anything else is
 * no allocation of this process: refused here, as the driver refuses it.
 */
CUresult vgpu_hand_cuMemFreeAsync(bool ptds, CUdeviceptr p, CUstream h)
{
	struct vgpu_session *s;
	struct vgpu_mem_range r;
	struct vgpu_ctx *ctx;
	uint32_t sid;
	long i;
	bool known, graph;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_session(&s);
	if (rc)
		return rc;
	if (!p || !vgpu_is_device(s, p))
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_stream_resolve(h, ptds, &ctx, &sid);
	if (rc)
		return rc;
	pthread_mutex_lock(&P.lock);
	i = find(p);
	known = i >= 0;
	graph = known && P.a[i].graph;
	if (known && !graph)
		drop(i);	/* a graph's memory stays known: launches make it again */
	pthread_mutex_unlock(&P.lock);
	if (!known && !vgpu_graph_mem_is_alloc(p) &&
	    !(vgpu_mem_classify(s, p, 1, &r) == VGPU_MEM_DEVICE && r.size && r.base == p))
		return CUDA_ERROR_INVALID_VALUE;
	vgpu_mem_forget_device(p);
	return vgpu_post5(VGPU_OP_MEM_FREE_ASYNC, ctx->id, sid, p, 0, 0, 0, 0);
}

/* ---- pools ------------------------------------------------------------------------ */

static CUresult location_device(const CUmemLocation *loc, CUdevice *dev)
{
	if (!loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (device_ok(loc->id))
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = loc->id;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *out, const CUmemPoolProps *props)
{
	const unsigned int known = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
				   CU_MEM_HANDLE_TYPE_FABRIC;
	struct vgpu_pool *p;
	uint32_t ctx;
	CUdevice dev;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!out || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    props->win32SecurityAttributes || (props->handleTypes & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	if (props->location.type == CU_MEM_LOCATION_TYPE_HOST ||
	    props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return vgpu_unsupported("cuMemPoolCreate(host memory pool)");
	rc = location_device(&props->location, &dev);
	if (!rc)
		rc = some_ctx(&ctx);
	if (rc)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->id = vgpu_id_alloc(VGPU_K_POOL);
	p->dev = dev;
	p->handle_types = props->handleTypes;
	rc = p->id ? vgpu_call5(VGPU_OP_POOL_CREATE, ctx, 0, p->id, (uint64_t)dev,
				props->handleTypes, props->maxSize, 0, NULL)
		   : CUDA_ERROR_OUT_OF_MEMORY;
	if (rc) {
		if (p->id)
			vgpu_id_free(VGPU_K_POOL, p->id);
		free(p);
		return rc;
	}
	__atomic_store_n(&p->magic, VGPU_POOL_MAGIC, __ATOMIC_RELEASE);
	*out = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool h)
{
	struct vgpu_pool *p;
	uint32_t ctx;
	CUresult rc = pool_enter(h, &p);

	if (!rc && p->is_default)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = some_ctx(&ctx);
	if (!rc)
		rc = vgpu_call5(VGPU_OP_POOL_DESTROY, ctx, 0, p->id, 0, 0, 0, 0, NULL);
	if (rc)
		return rc;
	/* A destroyed current pool leaves its device with the default one;
	 * its allocations live on without a pool to name. */
	pthread_mutex_lock(&P.lock);
	if (P.current[p->dev] == p)
		P.current[p->dev] = NULL;
	for (size_t i = 0; i < P.n; i++)
		if (P.a[i].pool == p)
			P.a[i].pool = NULL;
	pthread_mutex_unlock(&P.lock);
	__atomic_store_n(&p->magic, 0, __ATOMIC_RELEASE);
	vgpu_id_free(VGPU_K_POOL, p->id);
	free(p);
	return CUDA_SUCCESS;
}

static bool int_attr(CUmemPool_attribute a)
{
	return a == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
	       a == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
	       a == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

VGPU_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool h, CUmemPool_attribute attr, void *value)
{
	struct vgpu_pool *p;
	uint32_t ctx;
	uint64_t v;
	CUresult rc = pool_enter(h, &p);

	if (!rc && !value)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = some_ctx(&ctx);
	if (rc)
		return rc;
	v = int_attr(attr) ? (uint64_t)(*(int *)value != 0) : *(cuuint64_t *)value;
	return vgpu_call5(VGPU_OP_POOL_SET_ATTR, ctx, 0, p->id, (uint64_t)attr, v, 0, 0, NULL);
}

VGPU_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool h, CUmemPool_attribute attr, void *value)
{
	struct vgpu_pool *p;
	struct vgpu_cqe c = { 0 };
	uint32_t ctx;
	CUresult rc = pool_enter(h, &p);

	if (!rc && !value)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = some_ctx(&ctx);
	if (!rc)
		rc = vgpu_call5(VGPU_OP_POOL_GET_ATTR, ctx, 0, p->id, (uint64_t)attr, 0, 0, 0, &c);
	if (rc)
		return rc;
	if (int_attr(attr))
		*(int *)value = (int)c.val[0];
	else
		*(cuuint64_t *)value = c.val[0];
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool h, size_t minBytesToKeep)
{
	struct vgpu_pool *p;
	uint32_t ctx;
	CUresult rc = pool_enter(h, &p);

	if (!rc)
		rc = some_ctx(&ctx);
	return rc ? rc : vgpu_call5(VGPU_OP_POOL_TRIM, ctx, 0, p->id, minBytesToKeep, 0, 0, 0,
				    NULL);
}

/*
 * A pool's memory is mapped for its own device only: that one must keep
 * read-write access; giving another device access needs the window mapped
 * there too, which this build does not do.
 */
VGPU_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool h, const CUmemAccessDesc *map, size_t count)
{
	struct vgpu_pool *p;
	CUresult rc = pool_enter(h, &p);

	if (!rc && !map && count)
		rc = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !rc && i < count; i++) {
		CUdevice dev;

		if (map[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE ||
		    (rc = location_device(&map[i].location, &dev)))
			rc = rc ? rc : CUDA_ERROR_INVALID_VALUE;
		else if (dev == p->dev && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			rc = CUDA_ERROR_INVALID_VALUE;
		else if (dev != p->dev && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
			rc = vgpu_unsupported("cuMemPoolSetAccess(another device)");
	}
	return rc;
}

VGPU_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool h,
					CUmemLocation *location)
{
	struct vgpu_pool *p;
	CUdevice dev;
	CUresult rc = pool_enter(h, &p);

	if (!rc && !flags)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = location_device(location, &dev);
	if (rc)
		return rc;
	*flags = dev == p->dev ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	return CUDA_SUCCESS;
}

/* ---- a device's pools ----------------------------------------------------------- */

VGPU_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev)
{
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc)
		rc = device_ok(dev);
	if (rc)
		return rc;
	pthread_mutex_lock(&P.lock);
	*out = (CUmemoryPool)default_pool(dev);
	pthread_mutex_unlock(&P.lock);
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *out, CUdevice dev)
{
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc)
		rc = device_ok(dev);
	if (!rc)
		*out = (CUmemoryPool)current_pool(dev);
	return rc;
}

VGPU_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool h)
{
	struct vgpu_pool *p;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = device_ok(dev);
	if (!rc)
		rc = pool_resolve(h, &p);
	if (!rc && p->dev != dev)
		rc = CUDA_ERROR_INVALID_DEVICE;
	if (!rc && p->imported)
		rc = CUDA_ERROR_INVALID_VALUE;	/* it cannot allocate */
	if (rc)
		return rc;
	pthread_mutex_lock(&P.lock);
	P.current[dev] = p->is_default ? NULL : p;
	pthread_mutex_unlock(&P.lock);
	return CUDA_SUCCESS;
}

/* CUDA 13: the same by location; only device memory pools exist here. */
static CUresult location_of(const CUmemLocation *loc, CUmemAllocationType type, CUdevice *dev)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED)
		return CUDA_ERROR_INVALID_VALUE;
	if (type == CU_MEM_ALLOCATION_TYPE_MANAGED)
		return vgpu_unsupported("managed memory pools");
	if (loc && (loc->type == CU_MEM_LOCATION_TYPE_HOST ||
		    loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
		    loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT))
		return vgpu_unsupported("host memory pools");
	return location_device(loc, dev);
}

VGPU_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *out, CUmemLocation *location,
					    CUmemAllocationType type)
{
	CUdevice dev = 0;
	CUresult rc = location_of(location, type, &dev);

	return rc ? rc : cuDeviceGetDefaultMemPool(out, dev);
}

VGPU_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *out, CUmemLocation *location,
				     CUmemAllocationType type)
{
	CUdevice dev = 0;
	CUresult rc = location_of(location, type, &dev);

	return rc ? rc : cuDeviceGetMemPool(out, dev);
}

VGPU_EXPORT CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
				     CUmemoryPool pool)
{
	CUdevice dev = 0;
	CUresult rc = location_of(location, type, &dev);

	return rc ? rc : cuDeviceSetMemPool(dev, pool);
}

/* ---- graph memory ------------------------------------------------------------------ */

static CUresult graph_mem(CUdevice dev, CUgraphMem_attribute attr, bool set, uint64_t v,
			  uint64_t *out)
{
	struct vgpu_cqe c = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = device_ok(dev);
	if (!rc)
		rc = vgpu_call5(VGPU_OP_GRAPH_MEM_ATTR, 0, 0, (uint64_t)dev, (uint64_t)attr, set,
				v, 0, &c);
	if (!rc && out)
		*out = c.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
						  void *value)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	return graph_mem(device, attr, false, 0, (uint64_t *)value);
}

VGPU_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
						  void *value)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	return graph_mem(device, attr, true, *(cuuint64_t *)value, NULL);
}

VGPU_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
	struct vgpu_cqe c = { 0 };
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = device_ok(device);
	return rc ? rc : vgpu_call5(VGPU_OP_GRAPH_MEM_TRIM, 0, 0, (uint64_t)device, 0, 0, 0, 0, &c);
}

/* ---- sharing ---------------------------------------------------------------------- */

/*
 * Pools made with POSIX descriptor handle types are shared between
 * processes; the worker (daemon/worker/pool_ipc.c) holds the truth: the pool's
 * descriptor is a socket its exporter's worker serves, a pointer's export
 * data name one exported block of it, and an imported pointer is memory
 * mapped at a place of this session's window.
 */
VGPU_EXPORT CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool h,
						      CUmemAllocationHandleType type,
						      unsigned long long flags)
{
	struct vgpu_session *s;
	struct vgpu_pool *p;
	uint64_t token;
	uint32_t ctx;
	int fd = -1;
	CUresult rc = pool_enter(h, &p);

	if (rc)
		return rc;
	/* Only the handle types the pool was made with, and no flags; an
	 * imported pool is not exported again. */
	if (!handle_out || flags || !type || (p->handle_types & type) != (unsigned int)type ||
	    p->imported)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return vgpu_unsupported("cuMemPoolExportToShareableHandle(fabric handle)");
	if ((rc = some_ctx(&ctx)) || (rc = vgpu_session(&s)))
		return rc;
	token = vgpu_fd_token();
	vgpu_fd_lock();
	rc = vgpu_call5(VGPU_OP_POOL_EXPORT, ctx, 0, p->id, token, 0, 0, 0, NULL);
	if (!rc)
		rc = vgpu_fd_take(s, token, &fd);
	vgpu_fd_unlock();
	if (!rc)
		*(int *)handle_out = fd;
	return rc;
}

VGPU_EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *out, void *handle,
							CUmemAllocationHandleType type,
							unsigned long long flags)
{
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC };
	int fd = (int)(intptr_t)handle;
	struct vgpu_session *s;
	struct vgpu_ctx *cur = NULL;
	struct vgpu_pool *p;
	uint32_t ctx;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!out || flags || (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
			      type != CU_MEM_HANDLE_TYPE_FABRIC))
		return CUDA_ERROR_INVALID_VALUE;
	if (type == CU_MEM_HANDLE_TYPE_FABRIC)
		return vgpu_unsupported("cuMemPoolImportFromShareableHandle(fabric handle)");
	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = some_ctx(&ctx)) || (rc = vgpu_session(&s)))
		return rc;
	p = vgpu_obj_new(sizeof(*p), offsetof(struct vgpu_pool, id), VGPU_K_POOL);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* The pool is taken to be of the current context's device. */
	p->dev = !vgpu_ctx_current(&cur) && cur ? cur->dev : 0;
	p->handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	p->imported = true;
	/* The descriptor first: the worker keeps it until the entry comes. */
	m.token = vgpu_fd_token();
	vgpu_fd_lock();
	if (vgpu_send_fds(s->sock, &m, sizeof(m), &fd, 1) != (int)sizeof(m))
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	else
		rc = vgpu_call5(VGPU_OP_POOL_IMPORT, ctx, 0, p->id, m.token, (uint64_t)p->dev, 0,
				0, NULL);
	vgpu_fd_unlock();
	if (rc) {
		vgpu_id_free(VGPU_K_POOL, p->id);
		free(p);
		return rc;
	}
	__atomic_store_n(&p->magic, VGPU_POOL_MAGIC, __ATOMIC_RELEASE);
	*out = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr ptr)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_POOL_EXPORT_PTR } };
	struct vgpu_pool *p;
	uint32_t ctx;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	p = (struct vgpu_pool *)vgpu_pool_of(ptr);
	if (!out || !p || !(p->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
	    p->imported)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = some_ctx(&ctx)))
		return rc;
	r.sqe.ctx = ctx;
	r.sqe.arg[0] = ptr;
	return vgpu_call_exact(&r, out, sizeof(*out));
}

VGPU_EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool h,
					    CUmemPoolPtrExportData *data)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_POOL_IMPORT_PTR } };
	struct vgpu_session *s;
	struct vgpu_ctx *cur = NULL;
	struct vgpu_pool *p;
	uint32_t ctx;
	CUresult rc = pool_enter(h, &p);

	if (rc)
		return rc;
	/* Pointers come from pools imported from another process. */
	if (!out || !data || !p->imported)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = some_ctx(&ctx)) || (rc = vgpu_session(&s)))
		return rc;
	r.sqe.ctx = ctx;
	r.sqe.arg[0] = p->id;
	r.payload = data;
	r.payload_len = sizeof(*data);
	rc = vgpu_call(&r);
	if (rc)
		return rc;
	if (!vgpu_is_device(s, r.cqe.val[0]) || !r.cqe.val[1]) {
		vlog_err("worker imported memory at %#llx outside the device window",
			 (unsigned long long)r.cqe.val[0]);
		return CUDA_ERROR_UNKNOWN;
	}
	pthread_mutex_lock(&P.lock);
	note(r.cqe.val[0], p, false);
	pthread_mutex_unlock(&P.lock);
	vgpu_mem_note_device(r.cqe.val[0], r.cqe.val[1],
			     !vgpu_ctx_current(&cur) ? cur : NULL);
	*out = r.cqe.val[0];
	return CUDA_SUCCESS;
}
