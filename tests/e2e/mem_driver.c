// SPDX-License-Identifier: MIT
/*
 * Memory through the driver API, as a program that calls libcuda directly
 * sees it: cuMemAlloc/Pitch/Free, pinned memory (cuMemHostAlloc,
 * cuMemAllocHost), registered memory, every copy kind (HtoD, DtoH, DtoD,
 * unified cuMemcpy, host to host; pageable and pinned; synchronous, async
 * on a stream, per-thread default stream), 2D and 3D copies with pitches,
 * memsets D8/D16/D32 and 2D, cuMemGetAddressRange, pointer attributes and
 * the errors a program may provoke.
 *
 *   gcc -std=gnu11 -I /usr/local/cuda/include tests/e2e/mem_driver.c \
 *       -L /usr/local/cuda/lib64/stubs -lcuda -o mem_driver
 *   vgpu run -- ./mem_driver [--big]
 *
 * --big also moves 5 GiB each way through pageable memory in single calls
 * (needs about 5 GiB of device memory and 10 GiB of host memory; the host
 * backend: VGPU_HOST_DEVICE_MEM=8589934592).
 *
 * One line per check on stdout, nothing that depends on addresses or
 * timing; exit 0 pass, 1 fail, 77 skip (no device).
 */
#include <cuda.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

/* The per-thread-default-stream entry points, which cuda.h names only
 * with CUDA_API_PER_THREAD_DEFAULT_STREAM. */
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int v, size_t n);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s);

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

static bool check(bool ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool check(bool ok, const char *what, const char *fmt, ...)
{
	checks++;
	if (ok) {
		printf("ok   %s\n", what);
	} else {
		va_list ap;

		failures++;
		printf("FAIL %s\n", what);
		fprintf(stderr, "FAIL %s: ", what);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fflush(stdout);
	return ok;
}

/* A call that must fail, with any error. */
#define EXPECT_FAIL(call, ...)                                                      \
	do {                                                                        \
		char what_[200];                                                    \
		CUresult rc_ = (call);                                              \
		snprintf(what_, sizeof(what_), __VA_ARGS__);                        \
		check(rc_ != CUDA_SUCCESS, what_, "%s succeeded", #call);           \
	} while (0)

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void pattern(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t v = mix(seed ^ (i >> 3));

		memcpy(b + i, &v, 8);
	}
	if (i < n) {
		uint64_t v = mix(seed ^ (i >> 3));

		memcpy(b + i, &v, n - i);
	}
}

/* First byte that differs from the pattern, or -1. */
static long long pattern_bad(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = mix(seed ^ (i >> 3));
		size_t k = n - i < 8 ? n - i : 8;

		if (memcmp(b + i, &v, k))
			for (size_t j = 0; j < k; j++)
				if (b[i + j] != ((unsigned char *)&v)[j])
					return (long long)(i + j);
	}
	return -1;
}

static void verify(const void *p, size_t n, uint64_t seed, const char *what, size_t size)
{
	char w[160];
	long long bad = pattern_bad(p, n, seed);

	snprintf(w, sizeof(w), "%s (%zu bytes)", what, size);
	check(bad < 0, w, "first wrong byte at %lld", bad);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		printf("FATAL out of host memory\n");
		exit(1);
	}
	return p;
}

static CUcontext ctx;
static CUstream stream;

/* ---- one-dimensional copies ------------------------------------------------ */

static void copies(size_t n)
{
	unsigned char *a = xmalloc(n), *b = xmalloc(n), *pa, *pb;
	CUdeviceptr d1, d2;
	uint64_t seed = n * 131;

	MUST(cuMemAlloc(&d1, n));
	MUST(cuMemAlloc(&d2, n));
	MUST(cuMemHostAlloc((void **)&pa, n, CU_MEMHOSTALLOC_PORTABLE));
	MUST(cuMemAllocHost((void **)&pb, n));

	/* pageable, synchronous */
	pattern(a, n, seed + 1);
	memset(b, 0, n);
	EXPECT_OK(cuMemcpyHtoD(d1, a, n), "HtoD pageable sync (%zu bytes)", n);
	EXPECT_OK(cuMemcpyDtoD(d2, d1, n), "DtoD sync (%zu bytes)", n);
	EXPECT_OK(cuMemcpyDtoH(b, d2, n), "DtoH pageable sync (%zu bytes)", n);
	verify(b, n, seed + 1, "pageable HtoD->DtoD->DtoH data", n);

	/* pinned, synchronous */
	pattern(pa, n, seed + 2);
	memset(pb, 0, n);
	EXPECT_OK(cuMemcpyHtoD(d1, pa, n), "HtoD pinned sync (%zu bytes)", n);
	EXPECT_OK(cuMemcpyDtoH(pb, d1, n), "DtoH pinned sync (%zu bytes)", n);
	verify(pb, n, seed + 2, "pinned HtoD->DtoH data", n);

	/* pageable, async on a stream */
	pattern(a, n, seed + 3);
	memset(b, 0, n);
	EXPECT_OK(cuMemcpyHtoDAsync(d2, a, n, stream), "HtoDAsync pageable (%zu bytes)", n);
	memset(a, 0xee, n);	/* CUDA: the source may be reused at once */
	EXPECT_OK(cuMemcpyDtoDAsync(d1, d2, n, stream), "DtoDAsync (%zu bytes)", n);
	EXPECT_OK(cuMemcpyDtoHAsync(b, d1, n, stream), "DtoHAsync pageable (%zu bytes)", n);
	EXPECT_OK(cuStreamSynchronize(stream), "stream sync (%zu bytes)", n);
	verify(b, n, seed + 3, "pageable async data", n);

	/* pinned, async on a stream */
	pattern(pa, n, seed + 4);
	memset(pb, 0, n);
	EXPECT_OK(cuMemcpyHtoDAsync(d1, pa, n, stream), "HtoDAsync pinned (%zu bytes)", n);
	EXPECT_OK(cuMemcpyDtoDAsync(d2, d1, n, stream), "DtoDAsync after pinned (%zu bytes)", n);
	EXPECT_OK(cuMemcpyDtoHAsync(pb, d2, n, stream), "DtoHAsync pinned (%zu bytes)", n);
	EXPECT_OK(cuStreamSynchronize(stream), "stream sync pinned (%zu bytes)", n);
	verify(pb, n, seed + 4, "pinned async data", n);

	/* unified cuMemcpy: direction from the addresses */
	pattern(a, n, seed + 5);
	memset(b, 0, n);
	memset(pb, 0, n);
	EXPECT_OK(cuMemcpy(d1, (CUdeviceptr)a, n), "cuMemcpy host->device (%zu bytes)", n);
	EXPECT_OK(cuMemcpy(d2, d1, n), "cuMemcpy device->device (%zu bytes)", n);
	EXPECT_OK(cuMemcpy((CUdeviceptr)pb, d2, n), "cuMemcpy device->pinned (%zu bytes)", n);
	EXPECT_OK(cuMemcpy((CUdeviceptr)b, (CUdeviceptr)pb, n),
		  "cuMemcpy pinned->pageable (%zu bytes)", n);
	verify(b, n, seed + 5, "cuMemcpy chain data", n);
	pattern(pa, n, seed + 6);
	memset(b, 0, n);
	EXPECT_OK(cuMemcpyAsync(d2, (CUdeviceptr)pa, n, stream),
		  "cuMemcpyAsync pinned->device (%zu bytes)", n);
	EXPECT_OK(cuMemcpyAsync((CUdeviceptr)b, d2, n, stream),
		  "cuMemcpyAsync device->pageable (%zu bytes)", n);
	EXPECT_OK(cuStreamSynchronize(stream), "stream sync unified (%zu bytes)", n);
	verify(b, n, seed + 6, "cuMemcpyAsync data", n);

	/* per-thread default stream entry points */
	pattern(a, n, seed + 7);
	memset(b, 0, n);
	EXPECT_OK(cuMemcpyHtoD_v2_ptds(d1, a, n), "HtoD ptds (%zu bytes)", n);
	EXPECT_OK(cuMemcpyDtoH_v2_ptds(b, d1, n), "DtoH ptds (%zu bytes)", n);
	verify(b, n, seed + 7, "ptds data", n);

	/* memsets over the whole buffer */
	EXPECT_OK(cuMemsetD8(d1, 0x5a, n), "memset D8 (%zu bytes)", n);
	memset(b, 0, n);
	EXPECT_OK(cuMemcpyDtoH(b, d1, n), "DtoH after D8 (%zu bytes)", n);
	{
		size_t bad = n;

		for (size_t i = 0; i < n && bad == n; i++)
			if (b[i] != 0x5a)
				bad = i;
		char w[96];

		snprintf(w, sizeof(w), "memset D8 data (%zu bytes)", n);
		check(bad == n, w, "byte %zu is %#x", bad, bad < n ? b[bad] : 0);
	}
	if (n >= 4) {
		size_t n16 = n / 2, n32 = n / 4;
		bool ok16 = true, ok32 = true;

		EXPECT_OK(cuMemsetD16(d1, 0xbeef, n16), "memset D16 (%zu bytes)", n);
		EXPECT_OK(cuMemcpyDtoH(b, d1, n16 * 2), "DtoH after D16 (%zu bytes)", n);
		for (size_t i = 0; i < n16; i++)
			ok16 &= ((uint16_t *)b)[i] == 0xbeef;
		check(ok16, "memset D16 data", "wrong value");
		EXPECT_OK(cuMemsetD32Async(d2, 0xdeadbeef, n32, stream),
			  "memset D32 async (%zu bytes)", n);
		EXPECT_OK(cuMemcpyDtoHAsync(b, d2, n32 * 4, stream), "DtoH after D32 (%zu bytes)", n);
		EXPECT_OK(cuStreamSynchronize(stream), "stream sync D32 (%zu bytes)", n);
		for (size_t i = 0; i < n32; i++)
			ok32 &= ((uint32_t *)b)[i] == 0xdeadbeef;
		check(ok32, "memset D32 async data", "wrong value");
		EXPECT_OK(cuMemsetD32_v2_ptds(d2, 7, n32), "memset D32 ptds (%zu bytes)", n);
	}

	/* host to host */
	pattern(a, n, seed + 8);
	EXPECT_OK(cuMemcpy((CUdeviceptr)b, (CUdeviceptr)a, n), "cuMemcpy host->host (%zu bytes)", n);
	verify(b, n, seed + 8, "host->host data", n);

	EXPECT_OK(cuMemFree(d1), "cuMemFree (%zu bytes)", n);
	EXPECT_OK(cuMemFree(d2), "cuMemFree second (%zu bytes)", n);
	EXPECT_OK(cuMemFreeHost(pa), "cuMemFreeHost HostAlloc (%zu bytes)", n);
	EXPECT_OK(cuMemFreeHost(pb), "cuMemFreeHost AllocHost (%zu bytes)", n);
	free(a);
	free(b);
}

/* ---- pitched copies and memsets ----------------------------------------------- */

static bool rows_match(const unsigned char *got, size_t gpitch, const unsigned char *want,
		       size_t wpitch, size_t w, size_t h)
{
	for (size_t y = 0; y < h; y++)
		if (memcmp(got + y * gpitch, want + y * wpitch, w))
			return false;
	return true;
}

static void copy2d(size_t w, size_t h)
{
	size_t hp = w + 13, hp2 = w + 100, dpitch;
	unsigned char *a = xmalloc(hp * h), *b = xmalloc(hp2 * h), *pin;
	CUdeviceptr dp, d2;
	CUDA_MEMCPY2D c;
	char w_[64];

	snprintf(w_, sizeof(w_), "%zux%zu", w, h);
	MUST(cuMemAllocPitch(&dp, &dpitch, w, h, 4));
	check(dpitch >= w, "cuMemAllocPitch pitch >= width", "pitch %zu < %zu", dpitch, w);
	MUST(cuMemAlloc(&d2, w * h));
	MUST(cuMemHostAlloc((void **)&pin, hp2 * h, 0));

	/* pageable (pitched) -> device (pitched) -> pageable (other pitch) */
	pattern(a, hp * h, w * 7 + h);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = a;
	c.srcPitch = hp;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dp;
	c.dstPitch = dpitch;
	c.WidthInBytes = w;
	c.Height = h;
	EXPECT_OK(cuMemcpy2D(&c), "2D pageable->device %s", w_);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dp;
	c.srcPitch = dpitch;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d2;
	c.dstPitch = w;
	c.WidthInBytes = w;
	c.Height = h;
	EXPECT_OK(cuMemcpy2D(&c), "2D device->device (packed) %s", w_);
	memset(b, 0, hp2 * h);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d2;
	c.srcPitch = w;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = b;
	c.dstPitch = hp2;
	c.WidthInBytes = w;
	c.Height = h;
	EXPECT_OK(cuMemcpy2D(&c), "2D device->pageable %s", w_);
	check(rows_match(b, hp2, a, hp, w, h), "2D pageable round trip data", "rows differ (%s)", w_);

	/* device (pitched) -> pinned (pitched), async; then a sub-rectangle */
	memset(pin, 0, hp2 * h);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dp;
	c.srcPitch = dpitch;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = pin;
	c.dstPitch = hp2;
	c.WidthInBytes = w;
	c.Height = h;
	EXPECT_OK(cuMemcpy2DAsync(&c, stream), "2D async device->pinned %s", w_);
	EXPECT_OK(cuStreamSynchronize(stream), "stream sync 2D %s", w_);
	check(rows_match(pin, hp2, a, hp, w, h), "2D pinned data", "rows differ (%s)", w_);
	if (w > 8 && h > 2) {
		memset(b, 0, hp2 * h);
		memset(&c, 0, sizeof(c));
		c.srcXInBytes = 3;
		c.srcY = 1;
		c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
		c.srcDevice = dp;
		c.srcPitch = dpitch;
		c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
		c.dstDevice = (CUdeviceptr)b;
		c.dstPitch = hp2;
		c.WidthInBytes = w - 8;
		c.Height = h - 2;
		EXPECT_OK(cuMemcpy2D(&c), "2D sub-rectangle unified %s", w_);
		check(rows_match(b, hp2, a + hp + 3, hp, w - 8, h - 2), "2D sub-rectangle data",
		      "rows differ (%s)", w_);
	}

	/* host -> host, as cudart's cudaMemcpy2D does it */
	memset(b, 0, hp2 * h);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = a;
	c.srcPitch = hp;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = b;
	c.dstPitch = hp2;
	c.WidthInBytes = w;
	c.Height = h;
	EXPECT_OK(cuMemcpy2DUnaligned(&c), "2D unaligned host->host %s", w_);
	check(rows_match(b, hp2, a, hp, w, h), "2D host->host data", "rows differ (%s)", w_);

	/* 2D memsets: the padding of each row stays as it was */
	if (w >= 16 && w % 4 == 0) {
		size_t iw = w - 8;
		bool ok = true;

		EXPECT_OK(cuMemsetD8(dp, 0, dpitch * h), "memset D8 whole pitched %s", w_);
		EXPECT_OK(cuMemsetD2D8(dp, dpitch, 0xa5, iw, h), "memset D2D8 %s", w_);
		memset(&c, 0, sizeof(c));
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = dp;
		c.srcPitch = dpitch;
		c.dstMemoryType = CU_MEMORYTYPE_HOST;
		c.dstHost = b;
		c.dstPitch = w;
		c.WidthInBytes = w;
		c.Height = h;
		EXPECT_OK(cuMemcpy2D(&c), "2D read back D2D8 %s", w_);
		for (size_t y = 0; y < h; y++)
			for (size_t x = 0; x < w; x++)
				ok &= b[y * w + x] == (x < iw ? 0xa5 : 0);
		check(ok, "memset D2D8 data", "wrong bytes (%s)", w_);

		ok = true;
		EXPECT_OK(cuMemsetD2D16Async(dp, dpitch, 0x1234, iw / 2, h, stream),
			  "memset D2D16 async %s", w_);
		EXPECT_OK(cuMemsetD2D32(dp + 4, dpitch, 0xcafef00d, 1, h), "memset D2D32 %s", w_);
		EXPECT_OK(cuMemcpy2DAsync(&c, stream), "2D async read back %s", w_);
		EXPECT_OK(cuStreamSynchronize(stream), "stream sync memset 2D %s", w_);
		for (size_t y = 0; y < h; y++) {
			const unsigned char *r = b + y * w;

			ok &= *(uint16_t *)r == 0x1234 && *(uint32_t *)(r + 4) == 0xcafef00d &&
			      *(uint16_t *)(r + iw - 2) == 0x1234 && r[iw] == 0;
		}
		check(ok, "memset D2D16/D2D32 data", "wrong bytes (%s)", w_);
	}

	EXPECT_OK(cuMemFree(dp), "cuMemFree pitched %s", w_);
	EXPECT_OK(cuMemFree(d2), "cuMemFree packed %s", w_);
	EXPECT_OK(cuMemFreeHost(pin), "cuMemFreeHost 2D %s", w_);
	free(a);
	free(b);
}

static void copy3d(void)
{
	const size_t w = 40, h = 6, d = 5, hp = 48, hh = 9;	/* host: 48 x 9 per slice */
	unsigned char *a = xmalloc(hp * hh * d), *b = xmalloc(hp * hh * d);
	CUdeviceptr dev;
	CUDA_MEMCPY3D c;
	bool ok = true;

	MUST(cuMemAlloc(&dev, w * h * d));
	pattern(a, hp * hh * d, 3333);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = a;
	c.srcPitch = hp;
	c.srcHeight = hh;
	c.srcXInBytes = 2;
	c.srcY = 1;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = w;
	c.dstHeight = h;
	c.WidthInBytes = w;
	c.Height = h;
	c.Depth = d;
	EXPECT_OK(cuMemcpy3D(&c), "3D pageable->device");
	memset(b, 0, hp * hh * d);
	EXPECT_OK(cuMemcpyDtoH(b, dev, w * h * d), "DtoH after 3D");
	for (size_t z = 0; z < d; z++)
		for (size_t y = 0; y < h; y++)
			ok &= !memcmp(b + (z * h + y) * w, a + (z * hh + y + 1) * hp + 2, w);
	check(ok, "3D data", "slices differ");
	EXPECT_OK(cuMemFree(dev), "cuMemFree 3D");
	free(a);
	free(b);
}

/* ---- ranges, attributes, host memory ------------------------------------------ */

static void ranges_and_attributes(void)
{
	size_t n = 3 * MiB + 5, size = 0, page = (size_t)sysconf(_SC_PAGESIZE);
	CUdeviceptr d, base = 0, dptr = 0;
	unsigned char *pin, *pageable = xmalloc(64), *reg;
	unsigned int type = 99, flags = 0;
	CUcontext c = NULL;
	void *hp = NULL;
	int ordinal = -1, managed = 1;
	unsigned long long id = 0;
	CUpointer_attribute attrs[4] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
					 CU_POINTER_ATTRIBUTE_HOST_POINTER,
					 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
	void *data[4];

	MUST(cuMemAlloc(&d, n));
	MUST(cuMemHostAlloc((void **)&pin, 10000, CU_MEMHOSTALLOC_PORTABLE |
						    CU_MEMHOSTALLOC_DEVICEMAP));

	EXPECT_OK(cuMemGetAddressRange(&base, &size, d + 1000), "cuMemGetAddressRange device");
	check(base == d && size == n, "device range base and size", "got size %zu", size);
	EXPECT_OK(cuMemGetAddressRange(&base, NULL, d + n - 1), "cuMemGetAddressRange last byte");
	check(base == d, "device range of last byte", "wrong base");
	EXPECT_OK(cuMemGetAddressRange(&base, &size, (CUdeviceptr)pin + 10),
		  "cuMemGetAddressRange pinned");
	check(base == (CUdeviceptr)pin && size == 10000, "pinned range base and size",
	      "got size %zu", size);
	EXPECT_RC(cuMemGetAddressRange(&base, &size, (CUdeviceptr)pageable), CUDA_ERROR_NOT_FOUND,
		  "cuMemGetAddressRange pageable -> NOT_FOUND");

	/* device pointer */
	EXPECT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 8),
		  "attribute MEMORY_TYPE device");
	check(type == CU_MEMORYTYPE_DEVICE, "device memory type is DEVICE", "got %u", type);
	EXPECT_OK(cuPointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, d + 8),
		  "attribute DEVICE_POINTER device");
	check(dptr == d + 8, "device pointer of device memory", "wrong pointer");
	EXPECT_OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, d),
		  "attribute CONTEXT device");
	check(c == ctx, "context of device memory", "wrong context");
	EXPECT_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d),
		  "attribute DEVICE_ORDINAL device");
	check(ordinal == 0, "device ordinal is 0", "got %d", ordinal);
	EXPECT_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d),
		  "attribute IS_MANAGED device");
	check(managed == 0, "device memory is not managed", "got %d", managed);
	EXPECT_OK(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 77),
		  "attribute RANGE_START_ADDR device");
	EXPECT_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 77),
		  "attribute RANGE_SIZE device");
	check(base == d && size == n, "attribute range of device memory", "size %zu", size);
	EXPECT_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, d),
		  "attribute BUFFER_ID device");
	check(id != 0, "buffer id is set", "0");
	EXPECT_RC(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, d),
		  CUDA_ERROR_INVALID_VALUE, "attribute HOST_POINTER device -> INVALID_VALUE");

	/* pinned pointer */
	EXPECT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pin),
		  "attribute MEMORY_TYPE pinned");
	check(type == CU_MEMORYTYPE_HOST, "pinned memory type is HOST", "got %u", type);
	EXPECT_OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER,
					(CUdeviceptr)pin + 4), "attribute HOST_POINTER pinned");
	check(hp == pin + 4, "host pointer of pinned memory", "wrong pointer");
	EXPECT_OK(cuPointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
					(CUdeviceptr)pin), "attribute DEVICE_POINTER pinned");
	check(dptr == (CUdeviceptr)pin, "device pointer of pinned memory", "wrong pointer");
	EXPECT_OK(cuMemHostGetDevicePointer(&dptr, pin + 16, 0), "cuMemHostGetDevicePointer");
	check(dptr == (CUdeviceptr)pin + 16, "mapped pointer is the host address", "differs");
	EXPECT_OK(cuMemHostGetFlags(&flags, pin), "cuMemHostGetFlags");
	check(flags == (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), "host alloc flags",
	      "got %#x", flags);

	/* pageable pointer */
	EXPECT_RC(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					(CUdeviceptr)pageable), CUDA_ERROR_INVALID_VALUE,
		  "attribute of pageable memory -> INVALID_VALUE");
	EXPECT_RC(cuMemHostGetDevicePointer(&dptr, pageable, 0), CUDA_ERROR_INVALID_VALUE,
		  "cuMemHostGetDevicePointer pageable -> INVALID_VALUE");
	type = 99;
	dptr = 1;
	data[0] = &type;
	data[1] = &dptr;
	data[2] = &hp;
	data[3] = &ordinal;
	EXPECT_OK(cuPointerGetAttributes(4, attrs, data, (CUdeviceptr)pageable),
		  "cuPointerGetAttributes pageable succeeds");
	check(type == 0 && dptr == 0, "pageable: memory type 0, no device pointer",
	      "type %u", type);
	EXPECT_OK(cuPointerGetAttributes(4, attrs, data, d), "cuPointerGetAttributes device");
	check(type == CU_MEMORYTYPE_DEVICE && dptr == d && hp == NULL && ordinal == 0,
	      "device attributes in one call", "type %u ordinal %d", type, ordinal);
	EXPECT_OK(cuPointerGetAttributes(4, attrs, data, (CUdeviceptr)pin),
		  "cuPointerGetAttributes pinned");
	check(type == CU_MEMORYTYPE_HOST && dptr == (CUdeviceptr)pin && hp == pin,
	      "pinned attributes in one call", "type %u", type);
	{
		unsigned int one = 1;

		EXPECT_OK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d),
			  "cuPointerSetAttribute SYNC_MEMOPS");
	}

	/* registered program memory */
	reg = aligned_alloc(page, 4 * page);
	pattern(reg, 4 * page, 99);
	EXPECT_OK(cuMemHostRegister(reg, 4 * page, 0), "cuMemHostRegister");
	EXPECT_RC(cuMemHostRegister(reg + page, page, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
		  "cuMemHostRegister overlap -> ALREADY_REGISTERED");
	EXPECT_OK(cuMemcpyHtoD(d, reg, 4 * page), "HtoD from registered memory");
	memset(reg, 0, 4 * page);
	EXPECT_OK(cuMemcpyDtoH(reg, d, 4 * page), "DtoH into registered memory");
	verify(reg, 4 * page, 99, "registered memory round trip", 4 * page);
	EXPECT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					(CUdeviceptr)reg + 5), "attribute MEMORY_TYPE registered");
	check(type == CU_MEMORYTYPE_HOST, "registered memory type is HOST", "got %u", type);
	EXPECT_OK(cuMemHostUnregister(reg), "cuMemHostUnregister");
	EXPECT_RC(cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
		  "cuMemHostUnregister again -> NOT_REGISTERED");
	{
		CUresult rc = cuMemHostRegister(reg, 4 * page, CU_MEMHOSTREGISTER_DEVICEMAP);

		/* Mapped registration works, with /dev/vgpu or without
		 * (runtime/ipc/hostreg_map.c; tests/e2e/hostreg_driver.c). */
		check(rc == CUDA_SUCCESS, "cuMemHostRegister DEVICEMAP", "%s", errname(rc));
		if (rc == CUDA_SUCCESS)
			cuMemHostUnregister(reg);
	}
	EXPECT_RC(cuMemHostRegister(reg, 4 * page, 0x80), CUDA_ERROR_INVALID_VALUE,
		  "cuMemHostRegister unknown flag -> INVALID_VALUE");
	free(reg);

	EXPECT_OK(cuMemFree(d), "cuMemFree attributes");
	EXPECT_OK(cuMemFreeHost(pin), "cuMemFreeHost attributes");
	free(pageable);
}

/* ---- errors ---------------------------------------------------------------------- */

static void errors(void)
{
	unsigned char host[64] = { 0 };
	CUdeviceptr d, gone;
	void *p;
	size_t f, t;

	MUST(cuMemAlloc(&d, 4096));
	EXPECT_RC(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc NULL -> INVALID_VALUE");
	EXPECT_RC(cuMemAlloc(&gone, 0), CUDA_ERROR_INVALID_VALUE,
		  "cuMemAlloc 0 bytes -> INVALID_VALUE");
	EXPECT_RC(cuMemHostAlloc(NULL, 16, 0), CUDA_ERROR_INVALID_VALUE,
		  "cuMemHostAlloc NULL -> INVALID_VALUE");
	EXPECT_RC(cuMemHostAlloc(&p, 16, 0x80), CUDA_ERROR_INVALID_VALUE,
		  "cuMemHostAlloc unknown flag -> INVALID_VALUE");
	EXPECT_RC(cuMemGetInfo(NULL, NULL), CUDA_SUCCESS,
		  "cuMemGetInfo(NULL, NULL) succeeds, as the driver does");
	EXPECT_RC(cuMemcpyHtoD(d, NULL, 16), CUDA_ERROR_INVALID_VALUE,
		  "cuMemcpyHtoD from NULL -> INVALID_VALUE");
	EXPECT_RC(cuMemcpyDtoH(NULL, d, 16), CUDA_ERROR_INVALID_VALUE,
		  "cuMemcpyDtoH to NULL -> INVALID_VALUE");
	EXPECT_RC(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d),
		  CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute NULL -> INVALID_VALUE");
	EXPECT_RC(cuMemsetD16(d + 1, 1, 4), CUDA_ERROR_INVALID_VALUE,
		  "memset D16 misaligned -> INVALID_VALUE");
	EXPECT_RC(cuMemsetD32(d + 2, 1, 4), CUDA_ERROR_INVALID_VALUE,
		  "memset D32 misaligned -> INVALID_VALUE");
	EXPECT_RC(cuMemcpy2D(NULL), CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D NULL -> INVALID_VALUE");
	EXPECT_RC(cuMemFree(d + 8), CUDA_ERROR_INVALID_VALUE,
		  "cuMemFree inside an allocation -> INVALID_VALUE");
	EXPECT_RC(cuMemFree((CUdeviceptr)host), CUDA_ERROR_INVALID_VALUE,
		  "cuMemFree of a host pointer -> INVALID_VALUE");
	EXPECT_RC(cuMemFreeHost(host), CUDA_ERROR_INVALID_VALUE,
		  "cuMemFreeHost of pageable memory -> INVALID_VALUE");
	EXPECT_FAIL(cuMemcpyHtoD((CUdeviceptr)host + 64 * MiB, host, 16),
		    "cuMemcpyHtoD to a non-device address fails");

	/* A copy into device memory that was freed: an error, not a crash. */
	MUST(cuMemAlloc(&gone, 64 * MiB));
	MUST(cuMemFree(gone));
	MUST(cuCtxSynchronize());
	EXPECT_FAIL(cuMemcpyHtoD(gone + 4096, host, sizeof(host)),
		    "cuMemcpyHtoD into freed device memory fails");
	EXPECT_FAIL(cuMemcpyDtoH(host, gone + 4096, sizeof(host)),
		    "cuMemcpyDtoH from freed device memory fails");
	EXPECT_RC(cuMemFree(gone), CUDA_ERROR_INVALID_VALUE, "double cuMemFree -> INVALID_VALUE");

	/* still usable afterwards */
	EXPECT_OK(cuMemGetInfo(&f, &t), "cuMemGetInfo after errors");
	check(t > 0 && f <= t, "free <= total", "free %zu total %zu", f, t);
	pattern(host, sizeof(host), 5);
	EXPECT_OK(cuMemcpyHtoD(d, host, sizeof(host)), "HtoD after errors");
	memset(host, 0, sizeof(host));
	EXPECT_OK(cuMemcpyDtoH(host, d, sizeof(host)), "DtoH after errors");
	verify(host, sizeof(host), 5, "data after errors", sizeof(host));
	EXPECT_OK(cuMemFree(d), "cuMemFree errors");
	EXPECT_OK(cuMemFree(0), "cuMemFree(0) succeeds");
}

/* ---- 5 GiB each way, pageable --------------------------------------------------- */

static uint64_t checksum(const uint64_t *p, size_t words)
{
	uint64_t s = 0;

	for (size_t i = 0; i < words; i++)
		s = (s ^ p[i]) * 0x100000001b3ull + i;
	return s;
}

static void big(void)
{
	const size_t n = 5 * GiB;
	uint64_t *h = malloc(n), want, got;
	CUdeviceptr d;
	CUresult rc;

	if (!h) {
		printf("SKIP big: no 5 GiB of host memory\n");
		return;
	}
	rc = cuMemAlloc(&d, n);
	if (rc) {
		printf("SKIP big: no 5 GiB of device memory (%s)\n", errname(rc));
		free(h);
		return;
	}
	for (size_t i = 0; i < n / 8; i++)
		h[i] = mix(i);
	want = checksum(h, n / 8);
	EXPECT_OK(cuMemcpyHtoD(d, h, n), "HtoD 5 GiB pageable");
	memset(h, 0, n);
	EXPECT_OK(cuMemcpyDtoH(h, d, n), "DtoH 5 GiB pageable");
	got = checksum(h, n / 8);
	check(got == want, "5 GiB round trip checksum", "checksum differs");
	EXPECT_OK(cuMemFree(d), "cuMemFree 5 GiB");
	free(h);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1, 4 * KiB, 64 * KiB + 1, 8 * MiB + 3, 100 * MiB };
	bool want_big = argc > 1 && !strcmp(argv[1], "--big");
	CUdeviceptr d;
	CUdevice dev;
	CUresult rc;

	EXPECT_RC(cuMemAlloc(&d, 16), CUDA_ERROR_NOT_INITIALIZED,
		  "cuMemAlloc before cuInit -> NOT_INITIALIZED");
	rc = cuInit(0);
	if (rc == CUDA_ERROR_NO_DEVICE) {
		printf("SKIP no device\n");
		return 77;
	}
	MUST(rc);
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		copies(sizes[i]);
	copy2d(1000, 37);
	copy2d(64, 4096);		/* many short rows */
	copy2d(4 * MiB + 16, 3);	/* rows larger than any bounce buffer */
	copy2d(1, 1);
	copy3d();
	ranges_and_attributes();
	errors();
	if (want_big)
		big();

	MUST(cuStreamDestroy(stream));
	MUST(cuDevicePrimaryCtxRelease(dev));
	printf("%s: %d checks, %d failed\n", failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
