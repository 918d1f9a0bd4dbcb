// SPDX-License-Identifier: MIT
/*
 * The worker's device allocator over the host backend: every allocation
 * aligned, inside the window, disjoint and really backed; frees validated;
 * address ranges exact; memory returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "vmem.h"

#include "check.h"


#define N 600

int main(void)
{
	static const size_t sizes[] = { 1, 255, 256, 257, 4096, 65537, 1 << 20,
					(1 << 20) + 1, 3 << 20, 17 << 20 };
	struct vgpu_backend B;
	CUdeviceptr p[N], base, hint = 0x200000000000ull;
	size_t len[N], size;
	CUcontext ctx;
	CUdevice dev;
	struct vmem m;

	if (vgpu_backend_host_open(&B) || B.cuInit(0) || B.cuDeviceGet(&dev, 0) ||
	    B.cuDevicePrimaryCtxRetain(&ctx, dev) || B.cuCtxSetCurrent(ctx)) {
		printf("test_vmem: host backend did not start\n");
		return 1;
	}
	CHECK(vmem_init(&m, &B, 4ull << 30, hint) == CUDA_SUCCESS, "init");
	CHECK(m.base == hint, "window at the hint");
	CHECK(vmem_alloc(&m, dev, 0, &p[0]) == CUDA_ERROR_INVALID_VALUE, "zero bytes");
	for (int i = 0; i < N; i++) {
		len[i] = sizes[i % 10];
		CHECK(vmem_alloc(&m, dev, len[i], &p[i]) == CUDA_SUCCESS, "alloc %zu", len[i]);
		CHECK(p[i] % VMEM_MIN_ALIGN == 0, "aligned");
		CHECK(p[i] >= m.base && p[i] + len[i] <= m.base + m.size, "inside window");
		memset((void *)(uintptr_t)p[i], i & 0xff, len[i]);	/* really backed */
	}
	for (int i = 0; i < N; i++) {
		const unsigned char *q = (const unsigned char *)(uintptr_t)p[i];

		CHECK(q[0] == (i & 0xff) && q[len[i] - 1] == (i & 0xff), "no overlap (%d)", i);
		CHECK(vmem_range_of(&m, p[i] + len[i] - 1, &base, &size) == CUDA_SUCCESS &&
		      base == p[i] && size == len[i], "range of %d", i);
	}
	CHECK(m.in_use > 0, "accounted");
	CHECK(vmem_free(&m, p[3] + 1) == CUDA_ERROR_INVALID_VALUE, "free inside");
	CHECK(vmem_free(&m, m.base + m.size - 4096) == CUDA_ERROR_INVALID_VALUE, "free unmapped");
	CHECK(vmem_range_of(&m, m.base + m.size - 1, &base, &size) == CUDA_ERROR_NOT_FOUND,
	      "range of nothing");
	for (int i = 0; i < N; i += 2)
		CHECK(vmem_free(&m, p[i]) == CUDA_SUCCESS, "free %d", i);
	CHECK(vmem_free(&m, p[0]) == CUDA_ERROR_INVALID_VALUE, "double free");
	for (int i = 0; i < N; i += 2)
		CHECK(vmem_alloc(&m, dev, len[i], &p[i]) == CUDA_SUCCESS, "realloc %d", i);
	for (int i = 0; i < N; i++)
		CHECK(vmem_free(&m, p[i]) == CUDA_SUCCESS, "free all %d", i);
	CHECK(m.in_use == 0, "nothing in use (%zu)", m.in_use);
	/* At most one cached empty 2 MiB chunk per size class stays mapped. */
	CHECK(m.mapped <= 13 * m.gran, "memory returned (%zu mapped)", m.mapped);
	CHECK(vmem_alloc(&m, dev, 8ull << 30, &p[0]) != CUDA_SUCCESS, "bigger than the window");
	vmem_destroy(&m);

	/* A restore: every allocation again at its address, in another order,
	 * in a fresh window; new ones then land elsewhere. */
	CHECK(vmem_init(&m, &B, 4ull << 30, hint) == CUDA_SUCCESS, "init again");
	for (int i = 0; i < N; i++)
		CHECK(vmem_alloc(&m, dev, len[i], &p[i]) == CUDA_SUCCESS, "alloc %zu", len[i]);
	vmem_destroy(&m);
	CHECK(vmem_init(&m, &B, 4ull << 30, hint) == CUDA_SUCCESS, "a fresh window");
	for (int i = N - 1; i >= 0; i--)
		CHECK(vmem_alloc_at(&m, dev, p[i], len[i]) == CUDA_SUCCESS, "alloc %zu at %#llx",
		      len[i], (unsigned long long)p[i]);
	CHECK(vmem_alloc_at(&m, dev, p[0], len[0]) == CUDA_ERROR_ALREADY_MAPPED, "taken block");
	CHECK(vmem_alloc_at(&m, dev, p[N - 1], len[N - 1]) == CUDA_ERROR_ALREADY_MAPPED,
	      "taken range");
	CHECK(vmem_alloc_at(&m, dev, p[0] + 1, len[0]) == CUDA_ERROR_INVALID_VALUE, "misaligned");
	CHECK(vmem_alloc_at(&m, dev, m.base + m.size, 4096) == CUDA_ERROR_INVALID_VALUE,
	      "outside the window");
	for (int i = 0; i < N; i++) {
		memset((void *)(uintptr_t)p[i], i & 0xff, len[i]);
		CHECK(vmem_range_of(&m, p[i], &base, &size) == CUDA_SUCCESS && base == p[i] &&
		      size == len[i], "restored range of %d", i);
	}
	for (int i = 0; i < N; i++) {
		CUdeviceptr q;

		CHECK(vmem_alloc(&m, dev, len[i], &q) == CUDA_SUCCESS, "new alloc %d", i);
		for (int k = 0; k < N; k++)
			CHECK(q + len[i] <= p[k] || q >= p[k] + len[k], "new %d clear of %d", i, k);
	}
	for (int i = 0; i < N; i++) {
		const unsigned char *q = (const unsigned char *)(uintptr_t)p[i];

		CHECK(q[0] == (i & 0xff) && q[len[i] - 1] == (i & 0xff), "restored bytes kept (%d)", i);
		CHECK(vmem_free(&m, p[i]) == CUDA_SUCCESS, "free restored %d", i);
	}
	vmem_destroy(&m);

	/* The client's reservations: carved from the window's free space,
	 * aligned, at the address asked for when it is free, never over an
	 * allocation, and given back. */
	CHECK(vmem_init(&m, &B, 1ull << 30, hint) == CUDA_SUCCESS, "a window for reservations");
	{
		CUdeviceptr a, b, c, d, q;
		size_t g = m.gran;

		CHECK(vmem_alloc(&m, dev, 3 * g, &q) == CUDA_SUCCESS, "an allocation first");
		CHECK(vmem_reserve(&m, 0, 0, 0, &a) == CUDA_ERROR_INVALID_VALUE, "reserve 0 bytes");
		CHECK(vmem_reserve(&m, g + 1, 0, 0, &a) == CUDA_ERROR_INVALID_VALUE,
		      "reserve off the granularity");
		CHECK(vmem_reserve(&m, g, 3 * g, 0, &a) == CUDA_ERROR_INVALID_VALUE,
		      "alignment not a power of two");
		CHECK(vmem_reserve(&m, 2ull << 30, 0, 0, &a) == CUDA_ERROR_OUT_OF_MEMORY,
		      "more than the window");
		CHECK(vmem_reserve(&m, 4 * g, 0, 0, &a) == CUDA_SUCCESS, "reserve 4 granules");
		CHECK(a % g == 0 && a >= m.base && a + 4 * g <= m.base + m.size, "inside, aligned");
		CHECK(a + 4 * g <= q || a >= q + 3 * g, "clear of the allocation");
		CHECK(vmem_reserve(&m, g, 64 * g, 0, &b) == CUDA_SUCCESS && b % (64 * g) == 0,
		      "a large alignment honoured");
		CHECK(vmem_reserve(&m, g, 0, q, &c) == CUDA_SUCCESS && c != q,
		      "an address that is taken: elsewhere");
		CHECK(vmem_reserve(&m, g, 0, a + g, &d) == CUDA_SUCCESS && d != a + g,
		      "inside another reservation: elsewhere");
		vmem_unreserve(&m, d, g);
		vmem_unreserve(&m, a, 4 * g);
		CHECK(vmem_reserve(&m, 2 * g, 0, a + g, &d) == CUDA_SUCCESS && d == a + g,
		      "a free address asked for is given");
		CHECK(vmem_reserve(&m, g, 0, a + 4096, &c) == CUDA_SUCCESS && c != a + 4096 &&
		      c % g == 0, "an unaligned address asked for: elsewhere, aligned");
		CHECK(vmem_reserve(&m, g, (size_t)1 << 63, 0, &c) == CUDA_ERROR_OUT_OF_MEMORY,
		      "an alignment nothing meets");
		CHECK(vmem_reserve_at(&m, d, g) == CUDA_ERROR_ALREADY_MAPPED, "restore over a taken one");
		vmem_unreserve(&m, d, 2 * g);
		CHECK(vmem_reserve_at(&m, d, 2 * g) == CUDA_SUCCESS, "restore at the same place");
		CHECK(vmem_reserve_at(&m, d + 1, g) == CUDA_ERROR_INVALID_VALUE, "restore misaligned");
		CHECK(vmem_alloc(&m, dev, 2 * g, &c) == CUDA_SUCCESS && (c + 2 * g <= d || c >= d + 2 * g),
		      "allocations avoid reservations");
		/* Created memory shares the session's limit with allocations. */
		CHECK(vmem_charge(&m, m.size) == CUDA_ERROR_OUT_OF_MEMORY, "charge beyond the limit");
		CHECK(vmem_charge(&m, m.size - m.mapped) == CUDA_SUCCESS, "charge up to the limit");
		CHECK(vmem_alloc(&m, dev, 2 * g, &c) == CUDA_ERROR_OUT_OF_MEMORY,
		      "no allocation beyond it");
		vmem_uncharge(&m, m.size - m.mapped);
		CHECK(m.created == 0, "uncharged");
		CHECK(vmem_alloc(&m, dev, 2 * g, &c) == CUDA_SUCCESS, "allocations again");
	}
	vmem_destroy(&m);
	printf("test_vmem: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
