// SPDX-License-Identifier: MIT
/*
 * Sizes whose arithmetic wraps, through the driver API as a program would
 * pass them: a pitched allocation whose pitch * height wraps to a size
 * that fits, 2D and 3D copies and 2D memsets whose pitch * height wraps,
 * memsets and allocations of more than 2^64 bytes. Each is refused with
 * CUDA_ERROR_INVALID_VALUE (allocations larger than the device with
 * CUDA_ERROR_OUT_OF_MEMORY, as CUDA does), and the session works on.
 *
 *   vgpu run -- ./wrap_driver
 *
 * One line per check; exit 0 pass, 1 fail, 77 skip (no device).
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static const char *errname(CUresult rc)
{
	const char *s = NULL;

	if (cuGetErrorName(rc, &s) || !s)
		return "?";
	return s;
}

static void expect(CUresult got, CUresult want, const char *what)
{
	bool ok = got == want;

	printf("%s %s: %s\n", ok ? "ok  " : "FAIL", what, errname(got));
	if (!ok)
		fprintf(stderr, "FAIL %s: %s, expected %s\n", what, errname(got), errname(want));
	failures += !ok;
}

static CUresult copy2d_dd(CUdeviceptr src, size_t spitch, CUdeviceptr dst, size_t dpitch,
			  size_t width, size_t height)
{
	CUDA_MEMCPY2D m = {
		.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src, .srcPitch = spitch,
		.dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst, .dstPitch = dpitch,
		.WidthInBytes = width, .Height = height,
	};

	return cuMemcpy2D(&m);
}

static CUresult copy3d_dd(CUdeviceptr src, CUdeviceptr dst, size_t pitch, size_t height,
			  size_t width, size_t depth)
{
	CUDA_MEMCPY3D m = {
		.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src, .srcPitch = pitch,
		.srcHeight = height,
		.dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst, .dstPitch = pitch,
		.dstHeight = height,
		.WidthInBytes = width, .Height = height, .Depth = depth,
	};

	return cuMemcpy3D(&m);
}

int main(void)
{
	const size_t M = 1 << 20;
	CUdeviceptr buf, p = 0;
	uint32_t back[1024];
	CUcontext ctx;
	CUdevice dev;
	size_t pitch = 0;
	int n = 0;

	if (cuInit(0) || cuDeviceGetCount(&n) || n < 1) {
		printf("no device\n");
		return 77;
	}
	if (cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
	    cuMemAlloc(&buf, M)) {
		printf("FATAL: no context or memory\n");
		return 1;
	}
	/* 2^30-byte rows times 2^34 + 1 rows: 2^64 + 2^30 bytes, 1 GiB wrapped. */
	expect(cuMemAllocPitch(&p, &pitch, 1ull << 30, (1ull << 34) + 1, 4),
	       CUDA_ERROR_INVALID_VALUE, "cuMemAllocPitch whose size wraps to 1 GiB");
	expect(cuMemAllocPitch(&p, &pitch, SIZE_MAX - 8, 1, 4), CUDA_ERROR_INVALID_VALUE,
	       "cuMemAllocPitch whose pitch wraps");
	expect(cuMemAlloc(&p, SIZE_MAX - M), CUDA_ERROR_OUT_OF_MEMORY,
	       "cuMemAlloc of 2^64 - 1 MiB");
	/* 2^40 * 2^24 = 2^64: the span of each end wraps to its width. */
	expect(copy2d_dd(buf, 1ull << 40, buf + M / 2, 1ull << 40, 4096, (1ull << 24) + 1),
	       CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D whose pitch * height wraps");
	expect(cuMemsetD2D32(buf, 1ull << 40, 7, 1024, (1ull << 24) + 1), CUDA_ERROR_INVALID_VALUE,
	       "cuMemsetD2D32 whose pitch * height wraps");
	expect(cuMemsetD2D8(buf, 1ull << 40, 7, 4096, (1ull << 24) + 1), CUDA_ERROR_INVALID_VALUE,
	       "cuMemsetD2D8 whose pitch * height wraps");
	/* Slices of 2^20 rows of 2^22 bytes, 2^22 + 1 of them: 2^64 + 2^42. */
	expect(copy3d_dd(buf, buf + M / 2, 1ull << 22, 1ull << 20, 4096, (1ull << 22) + 1),
	       CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D whose pitch * height * depth wraps");
	expect(cuMemsetD32(buf, 7, (1ull << 62) + 1), CUDA_ERROR_INVALID_VALUE,
	       "cuMemsetD32 of 2^62 + 1 words (wraps to 4 bytes)");
	expect(cuMemcpyDtoD(buf + 16, buf, SIZE_MAX - 15), CUDA_ERROR_INVALID_VALUE,
	       "cuMemcpyDtoD whose end wraps");
	/* The session works on. */
	expect(cuMemsetD32(buf, 0x12345678, 1024), CUDA_SUCCESS, "a memset afterwards");
	expect(cuMemcpyDtoH(back, buf, sizeof(back)), CUDA_SUCCESS, "a copy back afterwards");
	for (int i = 0; i < 1024; i++)
		if (back[i] != 0x12345678) {
			expect(CUDA_ERROR_UNKNOWN, CUDA_SUCCESS, "the memset's words");
			break;
		}
	cuMemFree(buf);
	cuDevicePrimaryCtxRelease(dev);
	printf("wrap_driver: %d failures\n", failures);
	return failures ? 1 : 0;
}
