// SPDX-License-Identifier: MIT
/* The kernels of tests/e2e/kernels.cuh, run on the host over the whole grid. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "content_digest.h"
#include "host_kernels.h"

static const void *arg_ptr(const struct host_launch *l, uint32_t off)
{
	uint64_t v;

	memcpy(&v, l->params + off, sizeof(v));
	return (const void *)(uintptr_t)v;
}

#define ARG(l, off, type) ({ type v_; memcpy(&v_, (l)->params + (off), sizeof(v_)); v_; })

/* Checks an array of n elements of size sz at p: alignment, then range. */
static CUresult check_array(const void *p, uint64_t n, uint64_t sz, int writable)
{
	uint64_t bytes;

	if (n == 0)
		return CUDA_SUCCESS;
	if ((uintptr_t)p % sz)
		return CUDA_ERROR_MISALIGNED_ADDRESS;
	if (__builtin_mul_overflow(n, sz, &bytes) || !host_check_range(p, bytes, writable))
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	return CUDA_SUCCESS;
}

static CUresult fill_u32(const struct host_launch *l)
{
	unsigned *p = (unsigned *)arg_ptr(l, 0);
	unsigned v = ARG(l, 8, unsigned);
	uint64_t n = ARG(l, 16, uint64_t);
	CUresult r = check_array(p, n, 4, 1);

	if (r)
		return r;
	for (uint64_t i = 0; i < n; i++)
		p[i] = v;
	return CUDA_SUCCESS;
}

static CUresult vecadd_f32(const struct host_launch *l)
{
	const float *a = arg_ptr(l, 0), *b = arg_ptr(l, 8);
	float *c = (float *)arg_ptr(l, 16);
	int n = ARG(l, 24, int);
	CUresult r;

	if (n <= 0)
		return CUDA_SUCCESS;
	if ((r = check_array(a, n, 4, 0)) || (r = check_array(b, n, 4, 0)) ||
	    (r = check_array(c, n, 4, 1)))
		return r;
	for (int i = 0; i < n; i++)
		c[i] = a[i] + b[i];
	return CUDA_SUCCESS;
}

static CUresult saxpy_f32(const struct host_launch *l)
{
	float a = ARG(l, 0, float);
	const float *x = arg_ptr(l, 8);
	float *y = (float *)arg_ptr(l, 16);
	int n = ARG(l, 24, int);
	CUresult r;

	if (n <= 0)
		return CUDA_SUCCESS;
	if ((r = check_array(x, n, 4, 0)) || (r = check_array(y, n, 4, 1)))
		return r;
	/* __fmaf_rn on the device: one rounding, as fmaf. */
	for (int i = 0; i < n; i++)
		y[i] = fmaf(a, x[i], y[i]);
	return CUDA_SUCCESS;
}

static CUresult iota_u32(const struct host_launch *l)
{
	unsigned *p = (unsigned *)arg_ptr(l, 0);
	unsigned base = ARG(l, 8, unsigned);
	uint64_t n = ARG(l, 16, uint64_t);
	CUresult r = check_array(p, n, 4, 1);

	if (r)
		return r;
	for (uint64_t i = 0; i < n; i++)
		p[i] = base + (unsigned)i;
	return CUDA_SUCCESS;
}

static CUresult checksum_u32(const struct host_launch *l)
{
	const unsigned *p = arg_ptr(l, 0);
	uint64_t n = ARG(l, 8, uint64_t);
	uint64_t *out = (uint64_t *)arg_ptr(l, 16);
	uint64_t sum = 0;
	CUresult r = check_array(p, n, 4, 0);

	if (r)
		return r;
	for (uint64_t i = 0; i < n; i++)
		sum += p[i];
	/* The device adds only non-zero partial sums, so with a zero sum it
	 * never touches out. */
	if (!sum)
		return CUDA_SUCCESS;
	if ((r = check_array(out, 1, 8, 1)))
		return r;
	__atomic_fetch_add(out, sum, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

static CUresult poke_u32(const struct host_launch *l)
{
	unsigned *p = (unsigned *)arg_ptr(l, 0);
	unsigned v = ARG(l, 8, unsigned);
	CUresult r = check_array(p, 1, 4, 1);

	if (r)
		return r;
	*p = v;
	return CUDA_SUCCESS;
}

/* Device printf: the worker's stdout is the pipe the worker relays to the
 * program's fd 1 (daemon/worker/worker.c), as the driver's printf is. */
static CUresult print_u32(const struct host_launch *l)
{
	printf("vgpu_print_u32: %u\n", ARG(l, 0, unsigned));
	return CUDA_SUCCESS;
}

static CUresult spin(const struct host_launch *l)
{
	uint64_t ns = ARG(l, 0, uint64_t);
	struct timespec now, until;

	/* Every thread of the grid waits at once on the device: once here. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	until.tv_sec = now.tv_sec + (time_t)(ns / 1000000000ull);
	until.tv_nsec = now.tv_nsec + (long)(ns % 1000000000ull);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
	return CUDA_SUCCESS;
}

static CUresult big_param(const struct host_launch *l)
{
	unsigned *out = (unsigned *)arg_ptr(l, 4096);
	CUresult r = check_array(out, 1024, 4, 1);

	if (r)
		return r;
	memcpy(out, l->params, 4096);
	return CUDA_SUCCESS;
}

/* daemon/checkpoint/gpu_digest.cu: a digest of each tile of memory (32-byte records). */
static CUresult content_digest(const struct host_launch *l)
{
	const uint64_t *tiles = arg_ptr(l, 0);
	unsigned n = ARG(l, 8, unsigned);
	uint64_t *out = (uint64_t *)arg_ptr(l, 16);
	CUresult r;

	if ((r = check_array(tiles, (uint64_t)n * 4, 8, 0)) || (r = check_array(out, 2ull * n, 8, 1)))
		return r;
	for (unsigned t = 0; t < n; t++) {
		const void *p = (const void *)(uintptr_t)tiles[4 * t];
		struct content_digest d = { 0, 0 };

		if ((r = check_array(p, tiles[4 * t + 1] ? tiles[4 * t + 1] : 1, 1, 0)))
			return r;
		if ((uintptr_t)p % 16)
			return CUDA_ERROR_MISALIGNED_ADDRESS;
		digest_bytes(&d, p, tiles[4 * t + 1], tiles[4 * t + 2]);
		out[2 * t] = d.a;
		out[2 * t + 1] = d.b;
	}
	return CUDA_SUCCESS;
}

#define PARAMS(...) (const struct host_param[]){ __VA_ARGS__ }
#define NPARAMS(...) \
	(sizeof((const struct host_param[]){ __VA_ARGS__ }) / sizeof(struct host_param))
#define KERNEL(nm, fn, size, ...) \
	{ .name = nm, .nparams = NPARAMS(__VA_ARGS__), .params = PARAMS(__VA_ARGS__), \
	  .params_size = size, .run = fn }

static const struct host_kernel kernels[] = {
	KERNEL("vgpu_fill_u32", fill_u32, 24, { 0, 8 }, { 8, 4 }, { 16, 8 }),
	KERNEL("vgpu_vecadd_f32", vecadd_f32, 28, { 0, 8 }, { 8, 8 }, { 16, 8 }, { 24, 4 }),
	KERNEL("vgpu_saxpy_f32", saxpy_f32, 28, { 0, 4 }, { 8, 8 }, { 16, 8 }, { 24, 4 }),
	KERNEL("vgpu_iota_u32", iota_u32, 24, { 0, 8 }, { 8, 4 }, { 16, 8 }),
	KERNEL("vgpu_checksum_u32", checksum_u32, 24, { 0, 8 }, { 8, 8 }, { 16, 8 }),
	KERNEL("vgpu_poke_u32", poke_u32, 12, { 0, 8 }, { 8, 4 }),
	KERNEL("vgpu_print_u32", print_u32, 4, { 0, 4 }),
	KERNEL("vgpu_spin", spin, 8, { 0, 8 }),
	KERNEL("vgpu_big_param", big_param, 4104, { 0, 4096 }, { 4096, 8 }),
	KERNEL("vgpu_content_digest", content_digest, 24, { 0, 8 }, { 8, 4 }, { 16, 8 }),
};

const struct host_kernel *host_kernel_find(const char *name)
{
	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (!strcmp(kernels[i].name, name))
			return &kernels[i];
	return NULL;
}
