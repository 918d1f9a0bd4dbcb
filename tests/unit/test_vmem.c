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
	printf("test_vmem: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
