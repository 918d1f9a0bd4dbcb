/* SPDX-License-Identifier: MIT */
/*
 * The session's pinned host memory (cuMemAllocHost, cuMemHostAlloc): one
 * sparse memfd mapped at the same address in client and worker, carved
 * into allocations that the worker registers with the GPU. Copies to and
 * from it are DMA with no extra copy, and device pointers to mapped host
 * memory are the host addresses themselves (unified addressing).
 */
#ifndef VGPU_HOSTPOOL_H
#define VGPU_HOSTPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct hostpool_block;

struct hostpool {
	const struct vgpu_backend *B;
	int fd;
	uint8_t *base;
	size_t size;
	size_t in_use;
	struct hostpool_block *blk;	/* allocations, sorted by address */
	size_t nblk, cap;
};

/* Creates the memfd and maps it at @hint (0: anywhere). */
int hostpool_init(struct hostpool *p, const struct vgpu_backend *B, size_t size,
		  uintptr_t hint);
void hostpool_destroy(struct hostpool *p);
CUresult hostpool_alloc(struct hostpool *p, size_t bytes, unsigned int flags, void **out);
CUresult hostpool_free(struct hostpool *p, void *ptr);
/* True when [ptr, ptr + len) lies inside one live allocation. */
int hostpool_contains(struct hostpool *p, uint64_t ptr, uint64_t len);
/* Takes over another worker's pool (a migration): maps @fd where this
 * pool was (it must be the same size and place) and registers the blocks
 * the other worker had, [addr[i], addr[i] + size[i]). Else -errno. */
int hostpool_adopt(struct hostpool *p, int fd, const uint64_t *addr, const uint64_t *size,
		   size_t n);
/* Calls fn for every live allocation in address order; stops at the
 * first non-zero return and returns it. */
int hostpool_for_each(const struct hostpool *p, int (*fn)(void *arg, uint64_t addr, size_t size),
		      void *arg);

#endif
