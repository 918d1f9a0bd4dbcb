// SPDX-License-Identifier: MIT
/*
 * Device memory for the host backend: the CUDA virtual memory API over
 * mmap. A reservation is PROT_NONE address space; a physical allocation is
 * a memfd; cuMemMap maps the memfd into the reservation, still PROT_NONE;
 * cuMemSetAccess opens it. Device address = host address, so copies are
 * memcpy and kernels dereference device pointers directly.
 *
 * The address map is two sorted arrays: reservations, and regions that
 * may be touched (mapped pieces of allocations, module globals, registered
 * host memory). Every copy, memset and kernel checks its whole range
 * against the regions first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_backend.h"
#include "host_kernels.h"
#include "log.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct host_alloc {
	int fd;
	uint64_t size;
	unsigned maps;		/* live cuMemMap mappings of it */
	int released;		/* cuMemRelease called: free at the last unmap */
	int imported;		/* another process's memory: not in our budget */
	CUmemAllocationProp prop;	/* what cuMemGetAllocationPropertiesFromHandle says */
};

/*
 * What makes a memfd one of ours: its name, and seals that keep its size
 * for ever (a descriptor that could shrink would fault whoever maps it).
 * Exported descriptors carry them; imported ones must.
 */
#define HOST_MEMFD_NAME "vgpu-host-device"
#define HOST_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

enum region_kind { R_DEVICE, R_GLOBAL, R_HOST };

struct region {
	uint64_t start, end;
	enum region_kind kind;
	unsigned acc;			/* HOST_READ | HOST_WRITE */
	struct host_alloc *alloc;	/* R_DEVICE */
	uint64_t map_start, map_end;	/* R_DEVICE: the cuMemMap call's range */
	uint64_t alloc_off;		/* R_DEVICE: offset of start in alloc */
};

struct resv {
	uint64_t start, end;
};

/* Under host.map. */
static struct {
	struct region *r;
	size_t n, cap;
	struct resv *v;
	size_t nv, capv;
} amap;

static uint64_t page_size(void)
{
	static uint64_t ps;

	if (!ps)
		ps = (uint64_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* Index of the first region ending after p. */
static size_t region_find(uint64_t p)
{
	size_t lo = 0, hi = amap.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (amap.r[mid].end <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t resv_find(uint64_t p)
{
	size_t lo = 0, hi = amap.nv;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (amap.v[mid].end <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether [p, e) overlaps any region. */
static int region_overlaps(uint64_t p, uint64_t e)
{
	size_t i = region_find(p);

	return i < amap.n && amap.r[i].start < e;
}

static int resv_overlaps(uint64_t p, uint64_t e)
{
	size_t i = resv_find(p);

	return i < amap.nv && amap.v[i].start < e;
}

static int region_insert(const struct region *r)
{
	size_t i = region_find(r->start);

	if (amap.n == amap.cap) {
		size_t cap = amap.cap ? amap.cap * 2 : 64;
		struct region *n = realloc(amap.r, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		amap.r = n;
		amap.cap = cap;
	}
	memmove(&amap.r[i + 1], &amap.r[i], (amap.n - i) * sizeof(*amap.r));
	amap.r[i] = *r;
	amap.n++;
	return 0;
}

static void region_remove(size_t i)
{
	memmove(&amap.r[i], &amap.r[i + 1], (amap.n - i - 1) * sizeof(*amap.r));
	amap.n--;
}

/* Splits the region containing p so that one starts at p. */
static int region_split_at(uint64_t p)
{
	size_t i = region_find(p);
	struct region hi;

	if (i == amap.n || amap.r[i].start >= p)
		return 0;
	hi = amap.r[i];
	hi.alloc_off += p - hi.start;
	hi.start = p;
	amap.r[i].end = p;
	return region_insert(&hi);
}

int host_range_ok(uint64_t p, uint64_t n, unsigned acc)
{
	uint64_t end;
	size_t i;

	if (__builtin_add_overflow(p, n, &end))
		return 0;
	if (!n)
		return 1;
	for (i = region_find(p); p < end; i++) {
		if (i == amap.n || amap.r[i].start > p)
			return 0;
		if ((amap.r[i].acc & acc) != acc)
			return 0;
		p = amap.r[i].end;
	}
	return 1;
}

int host_check_range(const void *ptr, uint64_t bytes, int writable)
{
	return host_range_ok((uintptr_t)ptr, bytes, HOST_READ | (writable ? HOST_WRITE : 0));
}

int host_budget_take(uint64_t n)
{
	if (n > host.mem_total - host.mem_used)
		return -1;
	host.mem_used += n;
	return 0;
}

void host_budget_give(uint64_t n)
{
	host.mem_used -= n;
}

/* --- reservations ------------------------------------------------------ */

static void *reserve_at(uint64_t size, uint64_t align, uint64_t addr)
{
	int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	uint8_t *p, *a;
	uint64_t span;

	if (addr) {
		p = mmap((void *)(uintptr_t)addr, size, PROT_NONE, fl | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		if ((uintptr_t)p != addr) {	/* a kernel that took it as a hint */
			munmap(p, size);
			return NULL;
		}
		return p;
	}
	if (__builtin_add_overflow(size, align, &span))
		return NULL;
	p = mmap(NULL, span, PROT_NONE, fl, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, a - p);
	if (a + size < p + span)
		munmap(a + size, p + span - (a + size));
	return a;
}

CUresult host_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				  CUdeviceptr addr, unsigned long long flags)
{
	CUresult r = host_check_init();
	struct resv v;
	void *p;
	size_t i;

	if (r)
		return r;
	if (!ptr || !size || flags || size % HOST_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	if (alignment & (alignment - 1))
		return CUDA_ERROR_INVALID_VALUE;
	if (alignment < HOST_GRANULARITY)
		alignment = HOST_GRANULARITY;
	if (addr % alignment)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_rwlock_wrlock(&host.map);
	p = reserve_at(size, alignment, addr);
	if (!p) {
		pthread_rwlock_unlock(&host.map);
		/* The real driver calls addr a hint; here it is a demand. */
		if (addr) {
			vlog_debug("host backend: cannot reserve %zu bytes at 0x%llx: %s", size,
				   (unsigned long long)addr, strerror(errno));
			return CUDA_ERROR_INVALID_VALUE;
		}
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (amap.nv == amap.capv) {
		size_t cap = amap.capv ? amap.capv * 2 : 16;
		struct resv *n = realloc(amap.v, cap * sizeof(*n));

		if (!n) {
			munmap(p, size);
			pthread_rwlock_unlock(&host.map);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		amap.v = n;
		amap.capv = cap;
	}
	v.start = (uintptr_t)p;
	v.end = v.start + size;
	i = resv_find(v.start);
	memmove(&amap.v[i + 1], &amap.v[i], (amap.nv - i) * sizeof(*amap.v));
	amap.v[i] = v;
	amap.nv++;
	pthread_rwlock_unlock(&host.map);
	*ptr = v.start;
	return CUDA_SUCCESS;
}

CUresult host_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult r = host_check_init();
	size_t i;

	if (r)
		return r;
	pthread_rwlock_wrlock(&host.map);
	i = resv_find(ptr);
	if (i == amap.nv || amap.v[i].start != ptr || amap.v[i].end - ptr != size) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (region_overlaps(ptr, ptr + size)) {
		vlog_debug("host backend: cuMemAddressFree of a range still mapped");
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		munmap((void *)(uintptr_t)ptr, size);
		memmove(&amap.v[i], &amap.v[i + 1], (amap.nv - i - 1) * sizeof(*amap.v));
		amap.nv--;
	}
	pthread_rwlock_unlock(&host.map);
	return r;
}

/* --- physical allocations ---------------------------------------------- */

static void alloc_free(struct host_alloc *a)
{
	close(a->fd);
	if (!a->imported)
		host_budget_give(a->size);
	host_set_del(&host.allocs, a);
	free(a);
}

CUresult host_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			  const CUmemAllocationProp *prop, unsigned long long flags)
{
	CUresult r = host_check_init();
	struct host_alloc *a;

	if (r)
		return r;
	if (!handle || !size || flags || size % HOST_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = host_check_alloc_prop(prop)))
		return r;
	if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (prop->allocFlags.gpuDirectRDMACapable)
		return CUDA_ERROR_NOT_SUPPORTED;
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->size = size;
	host_granted_prop(&a->prop, prop);
	a->fd = memfd_create(HOST_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (a->fd < 0 || ftruncate(a->fd, (off_t)size) < 0 ||
	    fcntl(a->fd, F_ADD_SEALS, HOST_SEALS) < 0) {
		vlog_warn("host backend: memfd of %zu bytes: %s", size, strerror(errno));
		if (a->fd >= 0)
			close(a->fd);
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&host.lock);
	if (host_budget_take(size) || host_set_add(&host.allocs, a)) {
		pthread_mutex_unlock(&host.lock);
		close(a->fd);
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&host.lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
	return CUDA_SUCCESS;
}

CUresult host_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct host_alloc *a = (struct host_alloc *)(uintptr_t)handle;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.allocs, a) || a->released) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		a->released = 1;
		if (!a->maps)
			alloc_free(a);
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						     CUmemGenericAllocationHandle handle)
{
	struct host_alloc *a = (struct host_alloc *)(uintptr_t)handle;
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.allocs, a) || a->released)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*prop = a->prop;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* --- sharing ------------------------------------------------------------ */

CUresult host_cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle handle,
					   CUmemAllocationHandleType type,
					   unsigned long long flags)
{
	struct host_alloc *a = (struct host_alloc *)(uintptr_t)handle;
	CUresult r = host_check_init();
	int fd = -1;

	if (r)
		return r;
	if (!shareable || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
		vlog_debug("host backend: handle type %d cannot be exported (POSIX descriptors "
			   "only)", (int)type);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.allocs, a) || a->released)
		r = CUDA_ERROR_INVALID_VALUE;
	else if ((fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0)) < 0)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_unlock(&host.lock);
	if (!r)
		*(int *)shareable = fd;
	return r;
}

/* Whether fd is a memfd this backend made: its name and its seals; *size. */
static int memfd_of_ours(int fd, uint64_t *size)
{
	char link[64], name[PATH_MAX];
	struct stat st;
	ssize_t n;
	int seals;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, name, sizeof(name) - 1);
	if (n < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	name[n] = 0;
	if (strcmp(name, "/memfd:" HOST_MEMFD_NAME " (deleted)"))
		return 0;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & HOST_SEALS) != HOST_SEALS)
		return 0;
	if (st.st_size <= 0 || (uint64_t)st.st_size % HOST_GRANULARITY)
		return 0;
	*size = (uint64_t)st.st_size;
	return 1;
}

CUresult host_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *os,
					     CUmemAllocationHandleType type)
{
	CUresult r = host_check_init();
	int fd = (int)(intptr_t)os;
	struct host_alloc *a;
	uint64_t size = 0;

	if (r)
		return r;
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
		vlog_debug("host backend: handle type %d cannot be imported (POSIX descriptors "
			   "only)", (int)type);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (fd < 0 || !memfd_of_ours(fd, &size)) {
		vlog_info("host backend: descriptor %d is not device memory of this backend", fd);
		return CUDA_ERROR_INVALID_VALUE;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->size = size;
	a->imported = 1;
	host_granted_prop(&a->prop, NULL);
	a->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_lock(&host.lock);
	if (a->fd < 0 || host_set_add(&host.allocs, a)) {
		pthread_mutex_unlock(&host.lock);
		if (a->fd >= 0)
			close(a->fd);
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&host.lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
	return CUDA_SUCCESS;
}

CUresult host_cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
					    CUmemRangeHandleType type, unsigned long long flags)
{
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!handle || !dptr || !size || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
	    (flags & ~(unsigned long long)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE))
		return CUDA_ERROR_INVALID_VALUE;
	/* Host memory is no device a dma-buf could be exported from. */
	vlog_debug("host backend: no dma-buf support");
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* --- mappings ----------------------------------------------------------- */

CUresult host_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		       CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct host_alloc *a = (struct host_alloc *)(uintptr_t)handle;
	CUresult r = host_check_init();
	struct region reg = { 0 };
	uint64_t end;
	size_t i;
	void *p;

	if (r)
		return r;
	/* cuda.h: "offset ... Note: currently must be zero", and drivers say so. */
	if (flags || !size || ptr % HOST_GRANULARITY || size % HOST_GRANULARITY || offset ||
	    __builtin_add_overflow(ptr, size, &end))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.allocs, a) || a->released || offset > a->size ||
	    size > a->size - offset) {
		pthread_mutex_unlock(&host.lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_rwlock_wrlock(&host.map);
	i = resv_find(ptr);
	if (i == amap.nv || amap.v[i].start > ptr || amap.v[i].end < end ||
	    region_overlaps(ptr, end)) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, a->fd,
		 (off_t)offset);
	if (p == MAP_FAILED) {
		vlog_warn("host backend: mapping %zu bytes: %s", size, strerror(errno));
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	reg.start = reg.map_start = ptr;
	reg.end = reg.map_end = end;
	reg.kind = R_DEVICE;
	reg.alloc = a;
	reg.alloc_off = offset;
	if (region_insert(&reg)) {
		mmap(p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		     -1, 0);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a->maps++;
out:
	pthread_rwlock_unlock(&host.map);
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult r = host_check_init();
	uint64_t end;
	size_t i;

	if (r)
		return r;
	if (!size || ptr % HOST_GRANULARITY || size % HOST_GRANULARITY ||
	    __builtin_add_overflow(ptr, size, &end))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	pthread_rwlock_wrlock(&host.map);
	/* Whole cuMemMap ranges only, and nothing else in between. */
	i = region_find(ptr);
	for (uint64_t p = ptr; p < end; i++) {
		if (i == amap.n || amap.r[i].start != p || amap.r[i].kind != R_DEVICE ||
		    amap.r[i].map_start < ptr || amap.r[i].map_end > end) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
		p = amap.r[i].end;
	}
	mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	i = region_find(ptr);
	while (i < amap.n && amap.r[i].start < end) {
		struct host_alloc *a = amap.r[i].alloc;

		if (amap.r[i].start == amap.r[i].map_start && --a->maps == 0 && a->released)
			alloc_free(a);
		region_remove(i);
	}
out:
	pthread_rwlock_unlock(&host.map);
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
			     size_t count)
{
	CUresult r = host_check_init();
	unsigned acc = 0;
	uint64_t end;
	size_t i;
	int prot;

	if (r)
		return r;
	if (!desc || !count || !size || ptr % HOST_GRANULARITY || size % HOST_GRANULARITY ||
	    __builtin_add_overflow(ptr, size, &end))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t k = 0; k < count; k++) {
		if (desc[k].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
			return CUDA_ERROR_INVALID_VALUE;
		if (desc[k].location.id != 0)
			return CUDA_ERROR_INVALID_DEVICE;
		switch (desc[k].flags) {
		case CU_MEM_ACCESS_FLAGS_PROT_NONE:
			acc = 0;
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_READ:
			acc = HOST_READ;
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
			acc = HOST_READ | HOST_WRITE;
			break;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	prot = (acc & HOST_READ ? PROT_READ : 0) | (acc & HOST_WRITE ? PROT_WRITE : 0);
	pthread_rwlock_wrlock(&host.map);
	/* The whole range must be mapped device memory. */
	i = region_find(ptr);
	for (uint64_t p = ptr; p < end; i++) {
		if (i == amap.n || amap.r[i].start > p || amap.r[i].kind != R_DEVICE) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
		p = amap.r[i].end;
	}
	if (region_split_at(ptr) || region_split_at(end)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (mprotect((void *)(uintptr_t)ptr, size, prot)) {
		vlog_warn("host backend: mprotect: %s", strerror(errno));
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (i = region_find(ptr); i < amap.n && amap.r[i].start < end; i++)
		amap.r[i].acc = acc;
out:
	pthread_rwlock_unlock(&host.map);
	return r;
}

/* --- module globals ----------------------------------------------------- */

CUresult host_global_block_alloc(size_t size, void **out)
{
	struct region reg = { 0 };
	void *p;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	reg.start = (uintptr_t)p;
	reg.end = reg.start + size;
	reg.kind = R_GLOBAL;
	reg.acc = HOST_READ | HOST_WRITE;
	pthread_rwlock_wrlock(&host.map);
	if (region_insert(&reg)) {
		pthread_rwlock_unlock(&host.map);
		munmap(p, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_rwlock_unlock(&host.map);
	*out = p;
	return CUDA_SUCCESS;
}

void host_global_block_free(void *p, size_t size)
{
	size_t i;

	pthread_rwlock_wrlock(&host.map);
	i = region_find((uintptr_t)p);
	if (i < amap.n && amap.r[i].start == (uintptr_t)p && amap.r[i].kind == R_GLOBAL)
		region_remove(i);
	munmap(p, size);
	pthread_rwlock_unlock(&host.map);
}

/* --- registered host memory --------------------------------------------- */

CUresult host_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
			       CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	uint64_t start = (uintptr_t)p, end, pstart, pend;
	struct region reg = { 0 };
	struct host_ctx *ctx;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	pthread_mutex_unlock(&host.lock);
	if (r)
		return r;
	if (!p || !bytesize || (Flags & ~known) || __builtin_add_overflow(start, bytesize, &end))
		return CUDA_ERROR_INVALID_VALUE;
	if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
		return CUDA_ERROR_NOT_SUPPORTED;
	pstart = start & ~(page_size() - 1);
	pend = (end + page_size() - 1) & ~(page_size() - 1);
	/* The real driver pins the pages: every one must exist. */
	if (msync((void *)(uintptr_t)pstart, pend - pstart, MS_ASYNC))
		return CUDA_ERROR_INVALID_VALUE;
	reg.start = start;
	reg.end = end;
	reg.kind = R_HOST;
	reg.acc = HOST_READ | (Flags & CU_MEMHOSTREGISTER_READ_ONLY ? 0 : HOST_WRITE);
	pthread_rwlock_wrlock(&host.map);
	if (region_overlaps(start, end)) {
		size_t i = region_find(start);

		r = amap.r[i].kind == R_HOST ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
					     : CUDA_ERROR_INVALID_VALUE;
	} else if (resv_overlaps(start, end)) {
		r = CUDA_ERROR_INVALID_VALUE;	/* emulated device memory is not host memory */
	} else if (region_insert(&reg)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_rwlock_unlock(&host.map);
	return r;
}

CUresult host_cuMemHostUnregister(void *p)
{
	struct host_ctx *ctx;
	CUresult r;
	size_t i;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	pthread_mutex_unlock(&host.lock);
	if (r)
		return r;
	pthread_rwlock_wrlock(&host.map);
	i = region_find((uintptr_t)p);
	if (!p || i == amap.n || amap.r[i].start != (uintptr_t)p || amap.r[i].kind != R_HOST)
		r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	else
		region_remove(i);
	pthread_rwlock_unlock(&host.map);
	return r;
}

/* --- copies and memsets ------------------------------------------------- */

/* Takes host.map shared for an operation on stream s: the caller unlocks. */
static CUresult begin_op(CUstream s)
{
	struct host_ctx *ctx;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_stream_ctx(s, &ctx);
	pthread_mutex_unlock(&host.lock);
	if (r)
		return r;
	pthread_rwlock_rdlock(&host.map);
	return CUDA_SUCCESS;
}

static CUresult copy(uint64_t dst, unsigned dacc, uint64_t src, unsigned sacc, size_t n,
		     CUstream s)
{
	CUresult r = begin_op(s);

	if (r)
		return r;
	if ((dacc && !host_range_ok(dst, n, dacc)) || (sacc && !host_range_ok(src, n, sacc)))
		r = CUDA_ERROR_INVALID_VALUE;
	else if (n)
		memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	pthread_rwlock_unlock(&host.map);
	return r;
}

CUresult host_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	if (!src && n)
		return CUDA_ERROR_INVALID_VALUE;
	return copy(dst, HOST_WRITE, (uintptr_t)src, 0, n, s);
}

CUresult host_cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	if (!dst && n)
		return CUDA_ERROR_INVALID_VALUE;
	return copy((uintptr_t)dst, 0, src, HOST_READ, n, s);
}

CUresult host_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy(dst, HOST_WRITE, src, HOST_READ, n, s);
}

/*
 * One side of a 2D copy: its base address, and the access it needs checked
 * (0: host memory, not checkable). Unified addresses in a reservation are
 * device memory; any other is host memory.
 */
static CUresult side_2d(CUmemorytype type, const void *h, CUdeviceptr d, unsigned acc,
			uint64_t *base, unsigned *check)
{
	switch (type) {
	case CU_MEMORYTYPE_HOST:
		*base = (uintptr_t)h;
		*check = 0;
		break;
	case CU_MEMORYTYPE_DEVICE:
		*base = d;
		*check = acc;
		break;
	case CU_MEMORYTYPE_UNIFIED:
		*base = d;
		*check = resv_overlaps(d, d + 1) || region_overlaps(d, d + 1) ? acc : 0;
		break;
	default:	/* arrays do not exist here */
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!*base)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Whether every row of a pitched range passes host_range_ok. */
static int rows_ok(uint64_t base, size_t pitch, size_t width, size_t height, unsigned acc)
{
	uint64_t span;

	if (!acc || !width || !height)
		return 1;
	if (__builtin_mul_overflow(pitch, height - 1, &span) ||
	    __builtin_add_overflow(span, width, &span))
		return 0;
	if (host_range_ok(base, span, acc))
		return 1;
	for (size_t y = 0; y < height; y++)
		if (!host_range_ok(base + y * pitch, width, acc))
			return 0;
	return 1;
}

CUresult host_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s)
{
	uint64_t src, dst, off;
	unsigned sacc, dacc;
	CUresult r;

	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->Height > 1 && (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = begin_op(s)))
		return r;
	if ((r = side_2d(c->srcMemoryType, c->srcHost, c->srcDevice, HOST_READ, &src, &sacc)) ||
	    (r = side_2d(c->dstMemoryType, c->dstHost, c->dstDevice, HOST_WRITE, &dst, &dacc)))
		goto out;
	if (__builtin_mul_overflow(c->srcY, c->srcPitch, &off) ||
	    __builtin_add_overflow(off, c->srcXInBytes, &off) ||
	    __builtin_add_overflow(src, off, &src) ||
	    __builtin_mul_overflow(c->dstY, c->dstPitch, &off) ||
	    __builtin_add_overflow(off, c->dstXInBytes, &off) ||
	    __builtin_add_overflow(dst, off, &dst) ||
	    !rows_ok(src, c->srcPitch, c->WidthInBytes, c->Height, sacc) ||
	    !rows_ok(dst, c->dstPitch, c->WidthInBytes, c->Height, dacc)) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (size_t y = 0; y < c->Height && c->WidthInBytes; y++)
		memmove((void *)(uintptr_t)(dst + y * c->dstPitch),
			(const void *)(uintptr_t)(src + y * c->srcPitch), c->WidthInBytes);
out:
	pthread_rwlock_unlock(&host.map);
	return r;
}

static void fill(void *p, uint32_t v, size_t esz, size_t n)
{
	if (esz == 1 || (esz == 2 && (v & 0xff) == (v >> 8)) ||
	    (esz == 4 && v == (v & 0xff) * 0x01010101u)) {
		memset(p, (int)(v & 0xff), n * esz);
	} else if (esz == 2) {
		uint16_t *q = p;

		for (size_t i = 0; i < n; i++)
			q[i] = (uint16_t)v;
	} else {
		uint32_t *q = p;

		for (size_t i = 0; i < n; i++)
			q[i] = v;
	}
}

static CUresult memset_2d(CUdeviceptr dst, size_t pitch, uint32_t v, size_t esz, size_t width,
			  size_t height, CUstream s)
{
	size_t wbytes;
	CUresult r;

	if (dst % esz || __builtin_mul_overflow(width, esz, &wbytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (height > 1 && (pitch < wbytes || pitch % esz))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = begin_op(s)))
		return r;
	if (!rows_ok(dst, pitch, wbytes, height, HOST_WRITE)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		for (size_t y = 0; y < height && width; y++)
			fill((void *)(uintptr_t)(dst + y * pitch), v, esz, width);
	}
	pthread_rwlock_unlock(&host.map);
	return r;
}

CUresult host_cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream s)
{
	return memset_2d(dst, 0, uc, 1, n, 1, s);
}

CUresult host_cuMemsetD16Async(CUdeviceptr dst, unsigned short us, size_t n, CUstream s)
{
	return memset_2d(dst, 0, us, 2, n, 1, s);
}

CUresult host_cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream s)
{
	return memset_2d(dst, 0, ui, 4, n, 1, s);
}

CUresult host_cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char uc, size_t w,
				size_t h, CUstream s)
{
	return memset_2d(dst, pitch, uc, 1, w, h, s);
}

CUresult host_cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short us, size_t w,
				 size_t h, CUstream s)
{
	return memset_2d(dst, pitch, us, 2, w, h, s);
}

CUresult host_cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int ui, size_t w,
				 size_t h, CUstream s)
{
	return memset_2d(dst, pitch, ui, 4, w, h, s);
}

CUresult host_cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	struct host_ctx *ctx;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	if (!r && (!free_bytes || !total))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		*free_bytes = host.mem_total - host.mem_used;
		*total = host.mem_total;
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}
