// SPDX-License-Identifier: MIT
#include "hostpool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

#define POOL_ALIGN 4096u

struct hostpool_block {
	uint64_t addr;
	size_t size;
};

int hostpool_init(struct hostpool *p, const struct vgpu_backend *B, size_t size,
		  uintptr_t hint)
{
	int flags = MAP_SHARED | MAP_NORESERVE | (hint ? MAP_FIXED_NOREPLACE : 0);

	memset(p, 0, sizeof(*p));
	p->B = B;
	p->fd = memfd_create("vgpu-host-pool", MFD_CLOEXEC);
	if (p->fd < 0)
		return -errno;
	if (ftruncate(p->fd, size) < 0)
		goto fail;
	p->base = mmap((void *)hint, size, PROT_READ | PROT_WRITE, flags, p->fd, 0);
	if (p->base == MAP_FAILED)
		goto fail;
	if (hint && (uintptr_t)p->base != hint) {
		munmap(p->base, size);
		errno = EEXIST;
		goto fail;
	}
	p->size = size;
	return 0;
fail:
	close(p->fd);
	p->fd = -1;
	p->base = NULL;
	return -errno;
}

void hostpool_destroy(struct hostpool *p)
{
	for (size_t i = 0; i < p->nblk; i++)
		p->B->cuMemHostUnregister((void *)(uintptr_t)p->blk[i].addr);
	if (p->base)
		munmap(p->base, p->size);
	if (p->fd >= 0)
		close(p->fd);
	free(p->blk);
	memset(p, 0, sizeof(*p));
	p->fd = -1;
}

/* First fit between live blocks; returns the insertion index. */
static long find_gap(struct hostpool *p, size_t size, uint64_t *addr)
{
	uint64_t at = (uint64_t)(uintptr_t)p->base, end = at + p->size;

	for (size_t i = 0; i <= p->nblk; i++) {
		uint64_t next = i < p->nblk ? p->blk[i].addr : end;

		if (next - at >= size) {
			*addr = at;
			return (long)i;
		}
		if (i < p->nblk)
			at = p->blk[i].addr + p->blk[i].size;
	}
	return -1;
}

CUresult hostpool_alloc(struct hostpool *p, size_t bytes, unsigned int flags, void **out)
{
	size_t size = (bytes + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
	uint64_t addr;
	CUresult rc;
	long i;

	(void)flags;	/* every pool block is portable and device-mapped */
	if (!bytes || size < bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->nblk == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct hostpool_block *n = realloc(p->blk, cap * sizeof(*n));

		if (!n)
			return CUDA_ERROR_OUT_OF_MEMORY;
		p->blk = n;
		p->cap = cap;
	}
	i = find_gap(p, size, &addr);
	if (i < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = p->B->cuMemHostRegister_v2((void *)(uintptr_t)addr, size,
					CU_MEMHOSTREGISTER_PORTABLE |
					CU_MEMHOSTREGISTER_DEVICEMAP);
	if (rc)
		return rc;
	memmove(&p->blk[i + 1], &p->blk[i], (p->nblk - i) * sizeof(*p->blk));
	p->blk[i] = (struct hostpool_block){ addr, size };
	p->nblk++;
	p->in_use += size;
	*out = (void *)(uintptr_t)addr;
	return CUDA_SUCCESS;
}

static long block_of(struct hostpool *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nblk;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (addr < p->blk[mid].addr)
			hi = mid;
		else if (addr >= p->blk[mid].addr + p->blk[mid].size)
			lo = mid + 1;
		else
			return (long)mid;
	}
	return -1;
}

CUresult hostpool_free(struct hostpool *p, void *ptr)
{
	uint64_t addr = (uint64_t)(uintptr_t)ptr;
	long i = block_of(p, addr);
	struct hostpool_block b;

	if (i < 0 || p->blk[i].addr != addr)
		return CUDA_ERROR_INVALID_VALUE;
	b = p->blk[i];
	p->B->cuMemHostUnregister(ptr);
	/* Give the pages back; the next user of this range sees zeroes. */
	if (fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      b.addr - (uint64_t)(uintptr_t)p->base, b.size) < 0)
		vlog_warn("host pool: cannot release %zu bytes: %s", b.size, strerror(errno));
	memmove(&p->blk[i], &p->blk[i + 1], (p->nblk - i - 1) * sizeof(*p->blk));
	p->nblk--;
	p->in_use -= b.size;
	return CUDA_SUCCESS;
}

int hostpool_contains(struct hostpool *p, uint64_t ptr, uint64_t len)
{
	long i = block_of(p, ptr);

	return i >= 0 && len <= p->blk[i].addr + p->blk[i].size - ptr;
}

int hostpool_for_each(const struct hostpool *p, int (*fn)(void *arg, uint64_t addr, size_t size),
		      void *arg)
{
	for (size_t i = 0; i < p->nblk; i++) {
		int ret = fn(arg, p->blk[i].addr, p->blk[i].size);

		if (ret)
			return ret;
	}
	return 0;
}

int hostpool_adopt(struct hostpool *p, int fd, const uint64_t *addr, const uint64_t *size,
		   size_t n)
{
	uint64_t lo = (uint64_t)(uintptr_t)p->base, hi = lo + p->size;
	void *at;

	if (p->nblk || !p->base)
		return -EBUSY;
	for (size_t i = 0; i < n; i++)
		if (addr[i] < lo || addr[i] > hi || size[i] > hi - addr[i] ||
		    (i && addr[i] < addr[i - 1] + size[i - 1]))
			return -EINVAL;
	at = mmap(p->base, p->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE | MAP_FIXED,
		  fd, 0);
	if (at == MAP_FAILED)
		return -errno;
	close(p->fd);
	p->fd = fd;
	p->blk = calloc(n ? n : 1, sizeof(*p->blk));
	if (!p->blk)
		return -ENOMEM;
	p->cap = n ? n : 1;
	for (size_t i = 0; i < n; i++) {
		if (p->B->cuMemHostRegister_v2((void *)(uintptr_t)addr[i], size[i],
					       CU_MEMHOSTREGISTER_PORTABLE |
					       CU_MEMHOSTREGISTER_DEVICEMAP))
			return -EIO;
		p->blk[p->nblk++] = (struct hostpool_block){ addr[i], size[i] };
		p->in_use += size[i];
	}
	return 0;
}
