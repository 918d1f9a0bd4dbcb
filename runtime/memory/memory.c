// SPDX-License-Identifier: MIT
/*
 * Device memory, pinned host memory and pointer attributes.
 *
 * Device memory lives on the worker; the runtime keeps a sorted table of
 * what it allocated so that frees of bad pointers fail at once (MEM_FREE
 * itself is asynchronous) and pointer queries cost no round trip. Pinned
 * memory is a block of the pool shared with the worker, mapped at the same
 * address on both sides: copies from it are DMA with no extra copy.
 * Registered program memory is recorded; copies from it take the pageable
 * path. Registered with DEVICEMAP, its pages are also shared with the
 * worker at the same address (runtime/ipc/hostreg_map.c), so kernels reach
 * it through its host address.
 */
#include "calls_hand_gen.h"
#include "hostreg_map.h"
#include "ipc.h"
#include "memory.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "init.h"
#include "log.h"
#include "managed.h"
#include "unsupported.h"
#include "vmm.h"

struct rtab {
	struct vgpu_mem_range *v;	/* sorted by base, never overlapping */
	size_t n, cap;
};

static struct {
	pthread_rwlock_t lock;
	struct rtab dev, pool, reg;
	uint64_t next_id;
} mem = { .lock = PTHREAD_RWLOCK_INITIALIZER, .next_id = 1 };

/* ---- the tables ----------------------------------------------------------- */

/* Index of the last range whose base is <= p, or -1. */
static long floor_of(const struct rtab *t, uint64_t p)
{
	long lo = 0, hi = (long)t->n - 1, ans = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (t->v[mid].base <= p) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

/* Index of the range holding p, or -1. */
static long find(const struct rtab *t, uint64_t p)
{
	long i = floor_of(t, p);

	if (i < 0 || p - t->v[i].base >= t->v[i].size)
		return -1;
	return i;
}

static bool overlaps(const struct rtab *t, uint64_t base, uint64_t size)
{
	long i = floor_of(t, base + size - 1);

	return i >= 0 && t->v[i].base + t->v[i].size > base;
}

static int insert(struct rtab *t, const struct vgpu_mem_range *r)
{
	long i;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct vgpu_mem_range *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	i = floor_of(t, r->base) + 1;
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->v[i] = *r;
	t->n++;
	return 0;
}

static void remove_at(struct rtab *t, long i)
{
	memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
	t->n--;
}

static int track(struct rtab *t, enum vgpu_mem_kind kind, uint64_t base, uint64_t size,
		 unsigned int flags, struct vgpu_ctx *ctx)
{
	struct vgpu_mem_range r = { .kind = kind, .base = base, .size = size, .flags = flags,
				     .ctx = ctx };
	int ret;

	pthread_rwlock_wrlock(&mem.lock);
	r.id = mem.next_id++;
	/* A stale entry at this address (its context went away behind our
	 * back) is replaced: the worker just handed the address out again. */
	while (overlaps(t, base, size))
		remove_at(t, floor_of(t, base + size - 1));
	ret = insert(t, &r);
	pthread_rwlock_unlock(&mem.lock);
	if (ret)
		vlog_warn("memory table full: %#llx not tracked", (unsigned long long)base);
	return ret;
}

/* Removes the range starting exactly at base; false if there is none. */
static bool untrack(struct rtab *t, uint64_t base, struct vgpu_mem_range *out)
{
	long i;

	pthread_rwlock_wrlock(&mem.lock);
	i = find(t, base);
	if (i >= 0 && t->v[i].base == base) {
		if (out)
			*out = t->v[i];
		remove_at(t, i);
		pthread_rwlock_unlock(&mem.lock);
		return true;
	}
	pthread_rwlock_unlock(&mem.lock);
	return false;
}

static bool lookup(const struct rtab *t, uint64_t p, struct vgpu_mem_range *out)
{
	long i;

	pthread_rwlock_rdlock(&mem.lock);
	i = find(t, p);
	if (i >= 0 && out)
		*out = t->v[i];
	pthread_rwlock_unlock(&mem.lock);
	return i >= 0;
}

enum vgpu_mem_kind vgpu_mem_classify(const struct vgpu_session *s, uint64_t p, uint64_t len,
				     struct vgpu_mem_range *out)
{
	struct vgpu_mem_range r = { .kind = VGPU_MEM_PAGEABLE };

	if (!len)
		len = 1;
	/* Module globals are device memory outside the window: look them up
	 * wherever they are. */
	if (lookup(&mem.dev, p, &r)) {
		/* a known device allocation or global */
	} else if (vgpu_is_device(s, p)) {
		r = (struct vgpu_mem_range){ .kind = VGPU_MEM_DEVICE };
	} else if (vgpu_is_pool(s, p, len) && lookup(&mem.pool, p, &r) &&
		   len <= r.size - (p - r.base)) {
		/* a live pinned block */
	} else if (!lookup(&mem.reg, p, &r)) {
		r = (struct vgpu_mem_range){ .kind = VGPU_MEM_PAGEABLE };
	}
	if (out)
		*out = r;
	return r.kind;
}

void vgpu_mem_note_device(uint64_t base, uint64_t size, struct vgpu_ctx *ctx)
{
	if (size)
		track(&mem.dev, VGPU_MEM_DEVICE, base, size, 0, ctx);
}

void vgpu_mem_note_managed(uint64_t base, uint64_t size, struct vgpu_ctx *ctx)
{
	long i;

	if (track(&mem.dev, VGPU_MEM_DEVICE, base, size, 0, ctx))
		return;
	pthread_rwlock_wrlock(&mem.lock);
	i = find(&mem.dev, base);
	if (i >= 0)
		mem.dev.v[i].managed = true;
	pthread_rwlock_unlock(&mem.lock);
}

void vgpu_mem_forget_device(uint64_t base)
{
	untrack(&mem.dev, base, NULL);
}

void vgpu_mem_forget_ctx(struct vgpu_ctx *ctx)
{
	struct rtab *tabs[] = { &mem.dev, &mem.pool, &mem.reg };

	pthread_rwlock_wrlock(&mem.lock);
	for (size_t t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++)
		for (size_t i = 0; i < tabs[t]->n; i++)
			if (tabs[t]->v[i].ctx == ctx)
				tabs[t]->v[i].ctx = NULL;
	pthread_rwlock_unlock(&mem.lock);
}

/* ---- device memory ---------------------------------------------------------- */

/* The session and the current context, which every entry here needs. */
static CUresult begin(struct vgpu_session **s, struct vgpu_ctx **ctx)
{
	CUresult rc = vgpu_session(s);

	return rc ? rc : vgpu_ctx_current(ctx);
}

VGPU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	rc = begin(&s, &ctx);
	if (rc)
		return rc;
	rc = vgpu_call5(VGPU_OP_MEM_ALLOC, ctx->id, 0, bytesize, 0, 0, 0, 0, &c);
	if (rc) {
		/* It may have succeeded with an earlier error folded in. */
		if (c.val[0] && vgpu_is_device(s, c.val[0]))
			vgpu_post5(VGPU_OP_MEM_FREE, ctx->id, 0, c.val[0], 0, 0, 0, 0);
		return rc;
	}
	if (!vgpu_is_device(s, c.val[0])) {
		vlog_err("worker allocated %#llx outside the device window",
			 (unsigned long long)c.val[0]);
		return CUDA_ERROR_UNKNOWN;
	}
	track(&mem.dev, VGPU_MEM_DEVICE, c.val[0], bytesize, 0, ctx);
	*dptr = c.val[0];
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
					size_t Height, unsigned int ElementSizeBytes)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	if (!dptr || !pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	rc = begin(&s, &ctx);
	if (rc)
		return rc;
	rc = vgpu_call5(VGPU_OP_MEM_ALLOC_PITCH, ctx->id, 0, WidthInBytes, Height,
			ElementSizeBytes, 0, 0, &c);
	if (rc) {
		if (c.val[0] && vgpu_is_device(s, c.val[0]))
			vgpu_post5(VGPU_OP_MEM_FREE, ctx->id, 0, c.val[0], 0, 0, 0, 0);
		return rc;
	}
	if (!vgpu_is_device(s, c.val[0]) || c.val[1] < WidthInBytes ||
	    c.val[1] > UINT64_MAX / Height)
		return CUDA_ERROR_UNKNOWN;
	track(&mem.dev, VGPU_MEM_DEVICE, c.val[0], c.val[1] * Height, 0, ctx);
	*dptr = c.val[0];
	*pPitch = c.val[1];
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	struct vgpu_mem_range r;
	CUresult rc;

	ENTER();
	if (!dptr)
		return CUDA_SUCCESS;
	rc = vgpu_session(&s);
	if (rc)
		return rc;
	if (!vgpu_is_device(s, dptr) || vgpu_ipc_is_open(dptr))
		return CUDA_ERROR_INVALID_VALUE;	/* IPC memory: cuIpcCloseMemHandle */
	if (lookup(&mem.dev, dptr, &r) && r.base != dptr)
		return CUDA_ERROR_INVALID_VALUE;	/* inside an allocation */
	rc = vgpu_ctx_current(&ctx);
	if (untrack(&mem.dev, dptr, &r)) {
		vgpu_pool_forget(dptr);
		if (r.managed)
			vgpu_managed_release(dptr);
		if (r.ctx)
			ctx = r.ctx;
		else if (rc)
			return rc;
		/* Asynchronous, as CUDA's free is for the program: the worker
		 * waits for the device before it unmaps. */
		return vgpu_post5(VGPU_OP_MEM_FREE, ctx->id, 0, dptr, 0, 0, 0, 0);
	}
	if (rc)
		return rc;
	/* Not ours to judge (another part of the runtime allocated it, or
	 * nobody did): the worker answers. */
	return vgpu_call5(VGPU_OP_MEM_FREE, ctx->id, 0, dptr, 0, 0, 0, 0, NULL);
}

VGPU_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	rc = begin(&s, &ctx);
	if (!rc)
		rc = vgpu_call5(VGPU_OP_MEM_GET_INFO, ctx->id, 0, 0, 0, 0, 0, 0, &c);
	if (rc)
		return rc;
	/* The driver accepts NULL for either answer (measured on driver 580). */
	if (free_bytes)
		*free_bytes = c.val[0];
	if (total)
		*total = c.val[1];
	return CUDA_SUCCESS;
}

/* A range mapped with cuMemMap: the mapping, as the driver answers. */
static CUresult vmm_range_of(uint64_t p, struct vgpu_mem_range *r)
{
	struct vgpu_vmm_info in;
	CUresult rc = vgpu_vmm_lookup(p, &in);

	if (rc)
		return rc;
	*r = (struct vgpu_mem_range){ .kind = VGPU_MEM_DEVICE, .base = in.base, .size = in.size,
				      .id = in.base };
	r->vmm = true;
	r->vmm_dev = in.device;
	r->vmm_access = in.access;
	r->vmm_rdma = in.rdma;
	r->vmm_types = in.handle_types;
	return CUDA_SUCCESS;
}

/* Base and size of the device allocation or pinned block holding p. */
static CUresult range_of(struct vgpu_session *s, uint64_t p, struct vgpu_mem_range *r)
{
	struct vgpu_cqe c = { 0 };
	struct vgpu_ctx *ctx = NULL;
	enum vgpu_mem_kind k = vgpu_mem_classify(s, p, 1, r);
	CUresult rc;

	if (k == VGPU_MEM_POOL || (k == VGPU_MEM_DEVICE && r->size))
		return CUDA_SUCCESS;
	if (k != VGPU_MEM_DEVICE)
		return CUDA_ERROR_NOT_FOUND;
	rc = vgpu_call5(VGPU_OP_MEM_GET_RANGE, 0, 0, p, 0, 0, 0, 0, &c);
	if (rc == CUDA_ERROR_NOT_FOUND)
		return vmm_range_of(p, r);
	if (rc)
		return rc;
	if (!c.val[1] || p - c.val[0] >= c.val[1])
		return CUDA_ERROR_NOT_FOUND;
	vgpu_ctx_current(&ctx);
	*r = (struct vgpu_mem_range){ .kind = VGPU_MEM_DEVICE, .base = c.val[0], .size = c.val[1],
				      .id = c.val[0], .ctx = ctx };
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct vgpu_session *s;
	struct vgpu_mem_range r;
	CUresult rc;

	ENTER();
	rc = vgpu_session(&s);
	if (!rc)
		rc = range_of(s, dptr, &r);
	if (rc)
		return rc;
	if (pbase)
		*pbase = r.base;
	if (psize)
		*psize = r.size;
	return CUDA_SUCCESS;
}

/* ---- the legacy 32-bit entry points ----------------------------------------- */

static void legacy_refused(const char *name)
{
	static int once;

	if (!__atomic_exchange_n(&once, 1, __ATOMIC_RELAXED))
		vlog_warn("%s: device addresses do not fit the 32-bit legacy API", name);
}

VGPU_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
	CUdeviceptr p;
	CUresult rc;

	ENTER();
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	rc = cuMemAlloc_v2(&p, bytesize);
	if (rc)
		return rc;
	if (p > UINT32_MAX) {
		cuMemFree_v2(p);
		legacy_refused("cuMemAlloc");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*dptr = (CUdeviceptr_v1)p;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
				     unsigned int WidthInBytes, unsigned int Height,
				     unsigned int ElementSizeBytes)
{
	CUdeviceptr p;
	size_t pitch;
	CUresult rc;

	ENTER();
	if (!dptr || !pPitch)
		return CUDA_ERROR_INVALID_VALUE;
	rc = cuMemAllocPitch_v2(&p, &pitch, WidthInBytes, Height, ElementSizeBytes);
	if (rc)
		return rc;
	if (p > UINT32_MAX || pitch > UINT_MAX) {
		cuMemFree_v2(p);
		legacy_refused("cuMemAllocPitch");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*dptr = (CUdeviceptr_v1)p;
	*pPitch = (unsigned int)pitch;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
	return cuMemFree_v2(dptr);
}

VGPU_EXPORT CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total)
{
	size_t f, t;
	CUresult rc;

	ENTER();
	rc = cuMemGetInfo_v2(&f, &t);
	if (rc)
		return rc;
	if (free_bytes)
		*free_bytes = f > UINT_MAX ? UINT_MAX : (unsigned int)f;
	if (total)
		*total = t > UINT_MAX ? UINT_MAX : (unsigned int)t;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
					  CUdeviceptr_v1 dptr)
{
	CUdeviceptr b;
	size_t n;
	CUresult rc = cuMemGetAddressRange_v2(&b, &n, dptr);

	if (rc)
		return rc;
	if (b > UINT32_MAX || n > UINT_MAX)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (pbase)
		*pbase = (CUdeviceptr_v1)b;
	if (psize)
		*psize = (unsigned int)n;
	return CUDA_SUCCESS;
}

/* ---- pinned host memory ------------------------------------------------------ */

#define HOSTALLOC_FLAGS (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | \
			 CU_MEMHOSTALLOC_WRITECOMBINED)

/* @wire: Flags and the worker's own VGPU_HOST_ALLOC_* bits. */
static CUresult host_alloc(void **pp, size_t bytesize, unsigned int Flags, unsigned int wire)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	if (!pp || !bytesize || (Flags & ~HOSTALLOC_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	rc = begin(&s, &ctx);
	if (rc)
		return rc;
	rc = vgpu_call5(VGPU_OP_HOST_ALLOC, ctx->id, 0, bytesize, Flags | wire, 0, 0, 0, &c);
	if (rc) {
		if (c.val[0] && vgpu_is_pool(s, c.val[0], bytesize))
			vgpu_post5(VGPU_OP_HOST_FREE, ctx->id, 0, c.val[0], 0, 0, 0, 0);
		return rc;
	}
	if (!vgpu_is_pool(s, c.val[0], bytesize)) {
		vlog_err("worker's pinned block %#llx+%zu is outside the pool",
			 (unsigned long long)c.val[0], bytesize);
		return CUDA_ERROR_UNKNOWN;
	}
	track(&mem.pool, VGPU_MEM_POOL, c.val[0], bytesize, Flags, ctx);
	*pp = (void *)(uintptr_t)c.val[0];
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	return host_alloc(pp, bytesize, Flags, 0);
}

CUresult vgpu_host_alloc_staging(void **pp, size_t bytesize)
{
	return host_alloc(pp, bytesize, 0, VGPU_HOST_ALLOC_FOR_CAPTURE);
}

VGPU_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

VGPU_EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

VGPU_EXPORT CUresult cuMemFreeHost(void *p)
{
	struct vgpu_mem_range r;
	struct vgpu_ctx *ctx;
	CUresult rc;

	ENTER();
	if (!p)
		return CUDA_SUCCESS;
	if (!untrack(&mem.pool, (uintptr_t)p, &r))
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_ctx_current(&ctx);
	if (r.ctx)
		ctx = r.ctx;
	else if (rc)
		return rc;
	/* Synchronous, as CUDA's: the worker waits for the device first. */
	return vgpu_call5(VGPU_OP_HOST_FREE, ctx->id, 0, (uintptr_t)p, 0, 0, 0, 0, NULL);
}

VGPU_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	struct vgpu_session *s;
	struct vgpu_mem_range r;
	enum vgpu_mem_kind kind;
	CUresult rc;

	ENTER();
	if (!pdptr || !p || Flags)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_session(&s);
	if (rc)
		return rc;
	/* Pool memory, and program memory registered with DEVICEMAP
	 * (runtime/ipc/hostreg_map.c), are mapped for the device at their
	 * host addresses. */
	kind = vgpu_mem_classify(s, (uintptr_t)p, 1, &r);
	if (kind != VGPU_MEM_POOL &&
	    !(kind == VGPU_MEM_REGISTERED && (r.flags & CU_MEMHOSTREGISTER_DEVICEMAP)))
		return CUDA_ERROR_INVALID_VALUE;
	*pdptr = (uintptr_t)p;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int Flags)
{
	CUdeviceptr d;
	CUresult rc;

	ENTER();
	if (!pdptr)
		return CUDA_ERROR_INVALID_VALUE;
	rc = cuMemHostGetDevicePointer_v2(&d, p, Flags);
	if (rc)
		return rc;
	if (d > UINT32_MAX) {
		legacy_refused("cuMemHostGetDevicePointer");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*pdptr = (CUdeviceptr_v1)d;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	struct vgpu_session *s;
	struct vgpu_mem_range r;
	CUresult rc;

	ENTER();
	if (!pFlags || !p)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_session(&s);
	if (rc)
		return rc;
	if (vgpu_mem_classify(s, (uintptr_t)p, 1, &r) != VGPU_MEM_POOL)
		return CUDA_ERROR_INVALID_VALUE;
	*pFlags = r.flags;
	return CUDA_SUCCESS;
}

/* ---- registered program memory ---------------------------------------------- */

#define HOSTREGISTER_FLAGS (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | \
			    CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)

CUresult vgpu_hand_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	uint64_t a = (uintptr_t)p;
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	CUresult rc;
	int full;

	ENTER();
	if (!p || !bytesize || (Flags & ~HOSTREGISTER_FLAGS) || bytesize > UINT64_MAX - a)
		return CUDA_ERROR_INVALID_VALUE;
	if (Flags & CU_MEMHOSTREGISTER_IOMEMORY) {
		static int once;

		if (!__atomic_exchange_n(&once, 1, __ATOMIC_RELAXED))
			vlog_warn("cuMemHostRegister: registration of I/O memory is not supported");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	rc = begin(&s, &ctx);
	if (rc)
		return rc;
	if (vgpu_is_device(s, a) || vgpu_is_device(s, a + bytesize - 1))
		return CUDA_ERROR_INVALID_VALUE;
	if (vgpu_is_pool(s, a, 1) || vgpu_is_pool(s, a + bytesize - 1, 1))
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	pthread_rwlock_wrlock(&mem.lock);
	full = overlaps(&mem.reg, a, bytesize);
	pthread_rwlock_unlock(&mem.lock);
	if (full)
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	/* Mapped for the device: the pages become the worker's too (not under
	 * the lock: the call waits for the worker). */
	if ((Flags & CU_MEMHOSTREGISTER_DEVICEMAP) &&
	    (rc = vgpu_hostreg_map(ctx, a, bytesize, Flags)))
		return rc;
	pthread_rwlock_wrlock(&mem.lock);
	full = overlaps(&mem.reg, a, bytesize) ? -1
		: insert(&mem.reg, &(struct vgpu_mem_range){ .kind = VGPU_MEM_REGISTERED,
							     .base = a, .size = bytesize,
							     .id = mem.next_id++, .flags = Flags,
							     .ctx = ctx });
	pthread_rwlock_unlock(&mem.lock);
	if (full && (Flags & CU_MEMHOSTREGISTER_DEVICEMAP))
		vgpu_hostreg_unmap(a, &rc);
	if (full < 0)
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;	/* another thread's */
	return full ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemHostUnregister(void *p)
{
	struct vgpu_mem_range r;
	CUresult rc = CUDA_SUCCESS;

	ENTER();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (!untrack(&mem.reg, (uintptr_t)p, &r))
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	if ((r.flags & CU_MEMHOSTREGISTER_DEVICEMAP) && vgpu_hostreg_unmap(r.base, &rc) && rc) {
		/* Still mapped for the device: still registered. */
		pthread_rwlock_wrlock(&mem.lock);
		insert(&mem.reg, &r);
		pthread_rwlock_unlock(&mem.lock);
	}
	return rc;
}

/* ---- pointer attributes ----------------------------------------------------- */

/* What a pointer is, with its range resolved; kind PAGEABLE: unknown. */
static CUresult pointer_info(uint64_t p, struct vgpu_mem_range *r)
{
	struct vgpu_session *s;
	CUresult rc = vgpu_session(&s);

	if (rc)
		return rc;
	if (vgpu_mem_classify(s, p, 1, r) == VGPU_MEM_DEVICE && !r->size) {
		rc = range_of(s, p, r);
		if (rc == CUDA_ERROR_NOT_FOUND)
			*r = (struct vgpu_mem_range){ .kind = VGPU_MEM_PAGEABLE };
		else if (rc)
			return rc;
	}
	return CUDA_SUCCESS;
}

static int ordinal_of(const struct vgpu_mem_range *r)
{
	struct vgpu_ctx *ctx = r->ctx;

	if (!ctx && vgpu_ctx_current(&ctx))
		return 0;
	return ctx->dev;
}

#define PUT(type, v) (*(type *)data = (type)(v))

/*
 * One attribute of a known pointer. @none: whether "no such value" (a host
 * pointer of device memory, ...) is an error (cuPointerGetAttribute) or a
 * zero (cuPointerGetAttributes).
 */
static CUresult attr_known(const struct vgpu_mem_range *r, uint64_t p, CUpointer_attribute a,
			   void *data, bool none_is_error)
{
	bool dev = r->kind == VGPU_MEM_DEVICE, reg = r->kind == VGPU_MEM_REGISTERED;
	bool reg_mapped = reg && (r->flags & CU_MEMHOSTREGISTER_DEVICEMAP);

	if (r->vmm) {
		/* Virtual memory API mappings belong to no context. */
		switch ((int)a) {
		case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
			PUT(int, (int)r->vmm_dev);
			return CUDA_SUCCESS;
		case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
			PUT(int, (int)r->vmm_access);
			return CUDA_SUCCESS;
		case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
			PUT(unsigned long long, r->vmm_types);
			return CUDA_SUCCESS;
		case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
			PUT(int, r->vmm_rdma != 0);
			return CUDA_SUCCESS;
		default:
			break;
		}
	}
	switch ((int)a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		PUT(CUcontext, r->ctx);
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		PUT(unsigned int, dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		/* Registered with DEVICEMAP: at its host address (hostreg_map.c). */
		if (reg && !reg_mapped && none_is_error)
			return CUDA_ERROR_INVALID_VALUE;
		PUT(CUdeviceptr, reg && !reg_mapped ? 0 : p);
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		/* Managed memory is at the same address on the host. */
		if (dev && !r->managed && none_is_error)
			return CUDA_ERROR_INVALID_VALUE;
		PUT(void *, dev && !r->managed ? 0 : p);
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		/* Synchronous copies here always are. */
		PUT(int, 1);
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		PUT(unsigned long long, r->id);
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		PUT(int, ordinal_of(r));
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		PUT(CUdeviceptr, r->base);
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		PUT(size_t, r->size);
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		PUT(int, !reg || reg_mapped);
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		PUT(int, reg && !reg_mapped ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE
			 : reg && (r->flags & CU_MEMHOSTREGISTER_READ_ONLY)
			 ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
			 : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		PUT(int, r->managed);
		break;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		PUT(int, 0);
		break;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		PUT(unsigned long long, 0);
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		PUT(CUmemoryPool, dev ? vgpu_pool_of(r->base) : NULL);
		break;
	case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
		return vgpu_unsupported("cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_P2P_TOKENS)");
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* What cuPointerGetAttributes answers for memory CUDA does not know. */
static CUresult attr_unknown(uint64_t p, bool in_window, CUpointer_attribute a, void *data)
{
	switch ((int)a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		/* The host may still dereference the program's own memory. */
		PUT(void *, a == CU_POINTER_ATTRIBUTE_HOST_POINTER && !in_window ? p : 0);
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		PUT(unsigned long long, 0);
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		PUT(size_t, 0);
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		PUT(int, CU_DEVICE_INVALID);
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		PUT(unsigned int, 0);
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_MAPPED:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		PUT(int, 0);
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
					   CUdeviceptr ptr)
{
	struct vgpu_mem_range r;
	CUresult rc;

	ENTER();
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	rc = pointer_info(ptr, &r);
	if (rc)
		return rc;
	if (r.kind == VGPU_MEM_PAGEABLE)
		return CUDA_ERROR_INVALID_VALUE;
	return attr_known(&r, ptr, attribute, data, true);
}

VGPU_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
					    CUpointer_attribute *attributes, void **data,
					    CUdeviceptr ptr)
{
	struct vgpu_session *s;
	struct vgpu_mem_range r;
	CUresult rc;

	ENTER();
	if (!numAttributes || !attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < numAttributes; i++)
		if (!data[i])
			return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_session(&s);
	if (!rc)
		rc = pointer_info(ptr, &r);
	if (rc)
		return rc;
	for (unsigned int i = 0; i < numAttributes; i++) {
		if (r.kind == VGPU_MEM_PAGEABLE)
			rc = attr_unknown(ptr, vgpu_is_device(s, ptr), attributes[i], data[i]);
		else
			rc = attr_known(&r, ptr, attributes[i], data[i], false);
		if (rc)
			return rc;
	}
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
					   CUdeviceptr ptr)
{
	struct vgpu_mem_range r;
	CUresult rc;

	ENTER();
	if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
		return CUDA_ERROR_INVALID_VALUE;
	rc = pointer_info(ptr, &r);
	if (rc)
		return rc;
	/* Synchronous memory operations always synchronize here: the
	 * attribute asks for what already holds. */
	return r.kind == VGPU_MEM_DEVICE || r.kind == VGPU_MEM_POOL ? CUDA_SUCCESS
								    : CUDA_ERROR_INVALID_VALUE;
}
