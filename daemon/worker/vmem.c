// SPDX-License-Identifier: MIT
#include "vmem.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

struct vmem_hole {
	CUdeviceptr addr;
	size_t size;
};

struct vmem_range {
	CUdeviceptr addr;
	size_t size;			/* mapped bytes */
	CUmemGenericAllocationHandle h;
	CUdevice dev;
	size_t user;			/* large: bytes asked for */
	uint32_t cls;			/* 0: large; else small block size */
	uint32_t nblocks, used;
	uint64_t *bits;			/* small: blocks in use */
	uint32_t *req;			/* small: bytes asked for, per block */
	size_t uoff;			/* ipc: the allocation's offset in the mapping */
	bool ipc;			/* another process's memory (cuIpcOpenMemHandle) */
};

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

CUresult vmem_init(struct vmem *m, const struct vgpu_backend *B, size_t size,
		   CUdeviceptr hint)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
	};
	CUresult rc;

	memset(m, 0, sizeof(*m));
	m->B = B;
	rc = B->cuMemGetAllocationGranularity(&m->gran, &prop,
					      CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (rc)
		return rc;
	size = round_up(size, m->gran);
	rc = B->cuMemAddressReserve(&m->base, size, m->gran, hint, 0);
	if (rc)
		return rc;
	if (hint && m->base != hint) {
		vlog_err("vmem: asked for the window at %#llx, driver gave %#llx",
			 (unsigned long long)hint, (unsigned long long)m->base);
		B->cuMemAddressFree(m->base, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->size = size;
	m->holes = malloc(sizeof(*m->holes) * 16);
	if (!m->holes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->hcap = 16;
	m->holes[0] = (struct vmem_hole){ m->base, size };
	m->nholes = 1;
	return CUDA_SUCCESS;
}

/* ---- free address space ------------------------------------------------- */

static int hole_take(struct vmem *m, size_t size, CUdeviceptr *out)
{
	for (size_t i = 0; i < m->nholes; i++) {
		struct vmem_hole *h = &m->holes[i];

		if (h->size < size)
			continue;
		*out = h->addr;
		h->addr += size;
		h->size -= size;
		if (!h->size) {
			memmove(h, h + 1, (m->nholes - i - 1) * sizeof(*h));
			m->nholes--;
		}
		return 0;
	}
	return -1;
}

/* Takes exactly [addr, addr + size) out of the free space, or fails. */
static int hole_take_at(struct vmem *m, CUdeviceptr addr, size_t size)
{
	for (size_t i = 0; i < m->nholes; i++) {
		struct vmem_hole h = m->holes[i];

		if (addr < h.addr || addr - h.addr > h.size || size > h.size - (addr - h.addr))
			continue;
		if (addr > h.addr && addr + size < h.addr + h.size) {
			/* Split in two: one more hole. */
			if (m->nholes == m->hcap) {
				struct vmem_hole *n = realloc(m->holes, 2 * m->hcap * sizeof(*n));

				if (!n)
					return -1;
				m->holes = n;
				m->hcap *= 2;
			}
			memmove(&m->holes[i + 1], &m->holes[i], (m->nholes - i) * sizeof(h));
			m->nholes++;
			m->holes[i].size = addr - h.addr;
			m->holes[i + 1].addr = addr + size;
			m->holes[i + 1].size = h.addr + h.size - (addr + size);
		} else if (addr > h.addr) {
			m->holes[i].size = addr - h.addr;
		} else if (size < h.size) {
			m->holes[i].addr += size;
			m->holes[i].size -= size;
		} else {
			memmove(&m->holes[i], &m->holes[i + 1], (m->nholes - i - 1) * sizeof(h));
			m->nholes--;
		}
		return 0;
	}
	return -1;
}

static void hole_give(struct vmem *m, CUdeviceptr addr, size_t size)
{
	size_t i = 0;

	while (i < m->nholes && m->holes[i].addr < addr)
		i++;
	if (i > 0 && m->holes[i - 1].addr + m->holes[i - 1].size == addr) {
		m->holes[i - 1].size += size;
		if (i < m->nholes && addr + size == m->holes[i].addr) {
			m->holes[i - 1].size += m->holes[i].size;
			memmove(&m->holes[i], &m->holes[i + 1],
				(m->nholes - i - 1) * sizeof(*m->holes));
			m->nholes--;
		}
		return;
	}
	if (i < m->nholes && addr + size == m->holes[i].addr) {
		m->holes[i].addr = addr;
		m->holes[i].size += size;
		return;
	}
	if (m->nholes == m->hcap) {
		struct vmem_hole *n = realloc(m->holes, 2 * m->hcap * sizeof(*n));

		if (!n) {
			vlog_err("vmem: out of memory tracking free space; %zu bytes of VA lost",
				 size);
			return;
		}
		m->holes = n;
		m->hcap *= 2;
	}
	memmove(&m->holes[i + 1], &m->holes[i], (m->nholes - i) * sizeof(*m->holes));
	m->holes[i] = (struct vmem_hole){ addr, size };
	m->nholes++;
}

/* ---- mapped ranges ------------------------------------------------------ */

/* Index of the range holding p, or -1. */
static long range_find(struct vmem *m, CUdeviceptr p)
{
	size_t lo = 0, hi = m->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct vmem_range *r = &m->r[mid];

		if (p < r->addr)
			hi = mid;
		else if (p >= r->addr + r->size)
			lo = mid + 1;
		else
			return (long)mid;
	}
	return -1;
}

static struct vmem_range *range_add(struct vmem *m, const struct vmem_range *nr)
{
	size_t i = 0;

	if (m->nr == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct vmem_range *n = realloc(m->r, cap * sizeof(*n));

		if (!n)
			return NULL;
		m->r = n;
		m->cap = cap;
	}
	while (i < m->nr && m->r[i].addr < nr->addr)
		i++;
	memmove(&m->r[i + 1], &m->r[i], (m->nr - i) * sizeof(*m->r));
	m->r[i] = *nr;
	m->nr++;
	return &m->r[i];
}

/* Whether @dev's memory can be exported as a POSIX descriptor (asked once). */
static bool exportable(struct vmem *m, CUdevice dev)
{
	uint64_t bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
	int v = 0;

	if (!bit)
		return false;
	if (!(m->fd_known & bit)) {
		if (!m->B->cuDeviceGetAttribute(
			    &v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev) &&
		    v)
			m->fd_ok |= bit;
		m->fd_known |= bit;
	}
	return m->fd_ok & bit;
}

/* Physical memory mapped at a free address (at 0), or exactly at @at. */
static CUresult map_new_typed(struct vmem *m, CUdevice dev, size_t size, CUdeviceptr at,
			      unsigned types, struct vmem_range *out)
{
	const struct vgpu_backend *B = m->B;
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
		.requestedHandleTypes = (CUmemAllocationHandleType)types,
	};
	CUmemAccessDesc access = {
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	CUresult rc;

	memset(out, 0, sizeof(*out));
	/* cuMemAlloc's memory may be exported with cuIpcGetMemHandle: the
	 * driver exports only what was made exportable. */
	if (!types && exportable(m, dev))
		prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	/* Memory the client created itself shares the session's limit. */
	if (size > m->size - m->mapped || m->created > m->size - m->mapped - size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (at) {
		out->addr = at;
		if (hole_take_at(m, at, size))
			return CUDA_ERROR_ALREADY_MAPPED;
	} else if (hole_take(m, size, &out->addr)) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = B->cuMemCreate(&out->h, size, &prop, 0);
	if (rc)
		goto give_va;
	rc = B->cuMemMap(out->addr, size, 0, out->h, 0);
	if (rc)
		goto release;
	rc = B->cuMemSetAccess(out->addr, size, &access, 1);
	if (rc)
		goto unmap;
	out->size = size;
	out->dev = dev;
	m->mapped += size;
	return CUDA_SUCCESS;
unmap:
	B->cuMemUnmap(out->addr, size);
release:
	B->cuMemRelease(out->h);
give_va:
	hole_give(m, out->addr, size);
	return rc;
}

static CUresult map_new(struct vmem *m, CUdevice dev, size_t size, CUdeviceptr at,
			struct vmem_range *out)
{
	return map_new_typed(m, dev, size, at, 0, out);
}

/* Undoes map_new_typed: the mapping, its memory and its place go. */
static void map_undo(struct vmem *m, const struct vmem_range *r)
{
	m->B->cuMemUnmap(r->addr, r->size);
	m->B->cuMemRelease(r->h);
	hole_give(m, r->addr, r->size);
	m->mapped -= r->size;
}

static void unmap_range(struct vmem *m, size_t i)
{
	struct vmem_range r = m->r[i];

	map_undo(m, &r);
	free(r.bits);
	free(r.req);
	memmove(&m->r[i], &m->r[i + 1], (m->nr - i - 1) * sizeof(*m->r));
	m->nr--;
}

/* ---- allocation --------------------------------------------------------- */

static uint32_t size_class(size_t bytes)
{
	uint32_t c = VMEM_MIN_ALIGN;

	while (c < bytes)
		c <<= 1;
	return c;
}

/* A chunk of class cls with a free block (at 0), or a new one at @at. */
static CUresult small_chunk(struct vmem *m, CUdevice dev, uint32_t cls, CUdeviceptr at,
			    struct vmem_range **out)
{
	struct vmem_range nr, *r;
	CUresult rc;

	for (size_t i = 0; i < m->nr && !at; i++) {
		r = &m->r[i];
		if (r->cls == cls && r->dev == dev && r->used < r->nblocks) {
			*out = r;
			return CUDA_SUCCESS;
		}
	}
	rc = map_new(m, dev, m->gran, at, &nr);
	if (rc)
		return rc;
	nr.cls = cls;
	nr.nblocks = m->gran / cls;
	nr.bits = calloc((nr.nblocks + 63) / 64, sizeof(uint64_t));
	nr.req = calloc(nr.nblocks, sizeof(uint32_t));
	r = nr.bits && nr.req ? range_add(m, &nr) : NULL;
	if (!r) {
		free(nr.bits);
		free(nr.req);
		map_undo(m, &nr);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = r;
	return CUDA_SUCCESS;
}

/* A large allocation just mapped (@nr) becomes @bytes in use at *out. */
static CUresult record_large(struct vmem *m, struct vmem_range *nr, size_t bytes,
			     CUdeviceptr *out)
{
	nr->user = bytes;
	if (!range_add(m, nr)) {
		map_undo(m, nr);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->in_use += bytes;
	*out = nr->addr;
	return CUDA_SUCCESS;
}

/* A large allocation: its own physical memory, at a free place (at 0) or at @at. */
static CUresult map_large(struct vmem *m, CUdevice dev, size_t bytes, CUdeviceptr at,
			  CUdeviceptr *out)
{
	struct vmem_range nr;
	CUresult rc = map_new(m, dev, round_up(bytes, m->gran), at, &nr);

	if (rc)
		return rc;
	return record_large(m, &nr, bytes, out);
}

CUresult vmem_alloc(struct vmem *m, CUdevice dev, size_t bytes, CUdeviceptr *out)
{
	struct vmem_range *r;
	CUresult rc;

	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	/* More than the window never fits; rounded up, it could wrap to 0. */
	if (bytes > m->size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (bytes <= VMEM_SMALL_MAX) {
		uint32_t cls = size_class(bytes);

		rc = small_chunk(m, dev, cls, 0, &r);
		if (rc)
			return rc;
		for (uint32_t b = 0; b < r->nblocks; b++) {
			if (r->bits[b / 64] & (1ull << (b % 64)))
				continue;
			r->bits[b / 64] |= 1ull << (b % 64);
			r->req[b] = bytes;
			r->used++;
			m->in_use += bytes;
			*out = r->addr + (CUdeviceptr)b * cls;
			return CUDA_SUCCESS;
		}
		return CUDA_ERROR_UNKNOWN;	/* small_chunk promised room */
	}
	return map_large(m, dev, bytes, 0, out);
}

static int empty_chunks(struct vmem *m, uint32_t cls)
{
	int n = 0;

	for (size_t i = 0; i < m->nr; i++)
		n += m->r[i].cls == cls && !m->r[i].used;
	return n;
}

CUresult vmem_free(struct vmem *m, CUdeviceptr p)
{
	long i = range_find(m, p);
	struct vmem_range *r;
	uint32_t b;

	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = &m->r[i];
	if (!r->cls) {
		if (p != r->addr || r->ipc)
			return CUDA_ERROR_INVALID_VALUE;
		m->in_use -= r->user;
		unmap_range(m, i);
		if (m->on_free)
			m->on_free(m->on_free_arg, p);
		return CUDA_SUCCESS;
	}
	if ((p - r->addr) % r->cls)
		return CUDA_ERROR_INVALID_VALUE;
	b = (p - r->addr) / r->cls;
	if (!(r->bits[b / 64] & (1ull << (b % 64))))
		return CUDA_ERROR_INVALID_VALUE;
	r->bits[b / 64] &= ~(1ull << (b % 64));
	m->in_use -= r->req[b];
	r->req[b] = 0;
	/* Keep one empty chunk per class so alloc/free loops stay cheap. */
	if (!--r->used && empty_chunks(m, r->cls) > 1)
		unmap_range(m, i);
	if (m->on_free)
		m->on_free(m->on_free_arg, p);
	return CUDA_SUCCESS;
}

CUresult vmem_range_of(struct vmem *m, CUdeviceptr p, CUdeviceptr *base, size_t *size)
{
	long i = range_find(m, p);
	struct vmem_range *r;
	uint32_t b;

	if (i < 0)
		return CUDA_ERROR_NOT_FOUND;
	r = &m->r[i];
	if (!r->cls) {
		if (p < r->addr + r->uoff || p - (r->addr + r->uoff) >= r->user)
			return CUDA_ERROR_NOT_FOUND;
		*base = r->addr + r->uoff;
		*size = r->user;
		return CUDA_SUCCESS;
	}
	b = (p - r->addr) / r->cls;
	if (!(r->bits[b / 64] & (1ull << (b % 64))) ||
	    p >= r->addr + (CUdeviceptr)b * r->cls + r->req[b])
		return CUDA_ERROR_NOT_FOUND;
	*base = r->addr + (CUdeviceptr)b * r->cls;
	*size = r->req[b];
	return CUDA_SUCCESS;
}

int vmem_contains(struct vmem *m, CUdeviceptr p, size_t len)
{
	CUdeviceptr base;
	size_t size;

	if (vmem_range_of(m, p, &base, &size))
		return 0;
	return len <= size - (p - base);
}

void vmem_destroy(struct vmem *m)
{
	while (m->nr)
		unmap_range(m, m->nr - 1);
	if (m->size)
		m->B->cuMemAddressFree(m->base, m->size);
	free(m->r);
	free(m->holes);
	memset(m, 0, sizeof(*m));
}

int vmem_for_each(const struct vmem *m, int (*fn)(void *arg, CUdeviceptr p, size_t bytes),
		  void *arg)
{
	for (size_t i = 0; i < m->nr; i++) {
		const struct vmem_range *r = &m->r[i];
		int ret = 0;

		if (!r->cls) {
			ret = fn(arg, r->addr + r->uoff, r->user);
		} else {
			for (uint32_t b = 0; b < r->nblocks && !ret; b++)
				if (r->bits[b / 64] & (1ull << (b % 64)))
					ret = fn(arg, r->addr + (CUdeviceptr)b * r->cls, r->req[b]);
		}
		if (ret)
			return ret;
	}
	return 0;
}

CUresult vmem_alloc_at(struct vmem *m, CUdevice dev, CUdeviceptr p, size_t bytes)
{
	struct vmem_range *r;
	CUdeviceptr chunk, got;
	uint32_t cls, b;
	long i;
	CUresult rc;

	if (!bytes || bytes > m->size || p < m->base || p - m->base >= m->size)
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes > VMEM_SMALL_MAX) {
		if ((p - m->base) % m->gran)
			return CUDA_ERROR_INVALID_VALUE;
		return map_large(m, dev, bytes, p, &got);
	}
	/* A small block: its chunk is the granule it lies in. */
	cls = size_class(bytes);
	chunk = m->base + (p - m->base) / m->gran * m->gran;
	if ((p - chunk) % cls)
		return CUDA_ERROR_INVALID_VALUE;
	i = range_find(m, p);
	if (i >= 0) {
		r = &m->r[i];
		if (r->cls != cls || r->dev != dev)
			return CUDA_ERROR_ALREADY_MAPPED;
	} else {
		rc = small_chunk(m, dev, cls, chunk, &r);
		if (rc)
			return rc;
	}
	b = (uint32_t)((p - r->addr) / cls);
	if (r->bits[b / 64] & (1ull << (b % 64)))
		return CUDA_ERROR_ALREADY_MAPPED;
	r->bits[b / 64] |= 1ull << (b % 64);
	r->req[b] = (uint32_t)bytes;
	r->used++;
	m->in_use += bytes;
	return CUDA_SUCCESS;
}

/* ---- the client's reservations and physical memory ---------------------- */

CUresult vmem_reserve(struct vmem *m, size_t size, size_t align, CUdeviceptr want,
		      CUdeviceptr *out)
{
	if (!size || size % m->gran || (align & (align - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	if (align < m->gran)
		align = m->gran;
	if (size > m->size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (want && want % align == 0 && !hole_take_at(m, want, size)) {
		*out = want;
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < m->nholes; i++) {
		CUdeviceptr h = m->holes[i].addr, end = h + m->holes[i].size;
		CUdeviceptr a = (h + align - 1) & ~(CUdeviceptr)(align - 1);

		if (a < h || a > end || size > end - a)
			continue;
		if (hole_take_at(m, a, size))
			return CUDA_ERROR_OUT_OF_MEMORY;
		*out = a;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult vmem_reserve_at(struct vmem *m, CUdeviceptr p, size_t size)
{
	if (!size || size % m->gran || p < m->base || (p - m->base) % m->gran)
		return CUDA_ERROR_INVALID_VALUE;
	return hole_take_at(m, p, size) ? CUDA_ERROR_ALREADY_MAPPED : CUDA_SUCCESS;
}

void vmem_unreserve(struct vmem *m, CUdeviceptr p, size_t size)
{
	hole_give(m, p, size);
}

CUresult vmem_charge(struct vmem *m, size_t bytes)
{
	if (bytes > m->size - m->mapped || m->created > m->size - m->mapped - bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->created += bytes;
	return CUDA_SUCCESS;
}

void vmem_uncharge(struct vmem *m, size_t bytes)
{
	m->created -= bytes;
}

/* ---- memory shared with other processes (pool_ipc.c) -------------------- */

CUresult vmem_alloc_shareable(struct vmem *m, CUdevice dev, size_t bytes, CUdeviceptr *out)
{
	struct vmem_range nr;
	CUresult rc;

	if (!bytes || bytes % m->gran)
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes > m->size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = map_new_typed(m, dev, bytes, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &nr);
	if (rc)
		return rc;
	return record_large(m, &nr, bytes, out);
}

CUresult vmem_export_fd(struct vmem *m, CUdeviceptr p, int *fd, size_t *size)
{
	long i = range_find(m, p);

	if (i < 0 || m->r[i].cls || m->r[i].addr != p)
		return CUDA_ERROR_INVALID_VALUE;
	*size = m->r[i].size;
	return m->B->cuMemExportToShareableHandle(fd, m->r[i].h,
						  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

CUresult vmem_map_imported(struct vmem *m, CUdevice dev, CUmemGenericAllocationHandle h,
			   size_t size, CUdeviceptr *out)
{
	const struct vgpu_backend *B = m->B;
	CUmemAccessDesc access = {
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	struct vmem_range nr = { .size = size, .h = h, .dev = dev, .user = size };
	CUresult rc;

	if (!size || size % m->gran)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > m->size - m->mapped || m->created > m->size - m->mapped - size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (hole_take(m, size, &nr.addr))
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* The backend bounds the mapping by what the allocation really is. */
	rc = B->cuMemMap(nr.addr, size, 0, h, 0);
	if (rc)
		goto give_va;
	rc = B->cuMemSetAccess(nr.addr, size, &access, 1);
	if (rc)
		goto unmap;
	if (!range_add(m, &nr)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto unmap;
	}
	m->mapped += size;
	m->in_use += size;
	*out = nr.addr;
	return CUDA_SUCCESS;
unmap:
	B->cuMemUnmap(nr.addr, size);
give_va:
	hole_give(m, nr.addr, size);
	return rc;
}

/* ---- CUDA IPC (daemon/worker/ipc/) --------------------------------------- */

CUresult vmem_export_alloc(struct vmem *m, CUdeviceptr p, int *fd, size_t *size, size_t *off,
			   size_t *bytes)
{
	CUdeviceptr base;
	long i = range_find(m, p);

	if (i < 0 || m->r[i].ipc || vmem_range_of(m, p, &base, bytes))
		return CUDA_ERROR_INVALID_VALUE;
	*size = m->r[i].size;
	*off = base - m->r[i].addr;
	return m->B->cuMemExportToShareableHandle(fd, m->r[i].h,
						  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

CUresult vmem_map_ipc(struct vmem *m, CUdevice dev, CUmemGenericAllocationHandle h, size_t size,
		      size_t off, size_t bytes, CUdeviceptr *out)
{
	CUdeviceptr p;
	long i;
	CUresult rc;

	if (!bytes || off > size || bytes > size - off)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vmem_map_imported(m, dev, h, size, &p);
	if (rc)
		return rc;
	i = range_find(m, p);
	m->r[i].ipc = true;
	m->r[i].uoff = off;
	m->r[i].user = bytes;
	m->in_use -= size - bytes;
	*out = p + off;
	return CUDA_SUCCESS;
}

CUresult vmem_unmap_ipc(struct vmem *m, CUdeviceptr p)
{
	long i = range_find(m, p);

	if (i < 0 || !m->r[i].ipc || p != m->r[i].addr + m->r[i].uoff)
		return CUDA_ERROR_INVALID_VALUE;
	m->in_use -= m->r[i].user;
	unmap_range(m, i);
	return CUDA_SUCCESS;
}
