/* SPDX-License-Identifier: MIT */
/*
 * The kernels end-to-end test programs launch. The host backend carries a C
 * implementation of each one (daemon/backend/host/host_kernels.c), found by the same
 * unmangled name, with the same parameter layout and the same semantics:
 * change one side, change the other.
 *
 * Programs meant to run on the host backend need no special flags: nvcc 13
 * only compresses PTX (not SASS) by default, and the host backend inflates
 * compressed fatbin entries anyway.
 */
#ifndef VGPU_E2E_KERNELS_CUH
#define VGPU_E2E_KERNELS_CUH

#include <stdio.h>

struct vgpu_big {
	unsigned v[1024];
};

/* p[i] = v for i < n */
extern "C" __global__ void vgpu_fill_u32(unsigned *p, unsigned v, unsigned long long n)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		p[i] = v;
}

/* c[i] = a[i] + b[i] for i < n */
extern "C" __global__ void vgpu_vecadd_f32(const float *a, const float *b, float *c, int n)
{
	int stride = gridDim.x * blockDim.x;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		c[i] = a[i] + b[i];
}

/* y[i] = a * x[i] + y[i] for i < n (fused multiply-add, as the host side) */
extern "C" __global__ void vgpu_saxpy_f32(float a, const float *x, float *y, int n)
{
	int stride = gridDim.x * blockDim.x;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		y[i] = __fmaf_rn(a, x[i], y[i]);
}

/* p[i] = base + i (mod 2^32) for i < n */
extern "C" __global__ void vgpu_iota_u32(unsigned *p, unsigned base, unsigned long long n)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		p[i] = base + (unsigned)i;
}

/* *out += sum of p[i] for i < n, 64-bit; *out must be zeroed by the caller. */
extern "C" __global__ void vgpu_checksum_u32(const unsigned *p, unsigned long long n,
					     unsigned long long *out)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
	unsigned long long sum = 0;

	for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		sum += p[i];
	if (sum)
		atomicAdd(out, sum);
}

/* *p = v, by one thread: with a bad p, an illegal address. */
extern "C" __global__ void vgpu_poke_u32(unsigned *p, unsigned v)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*p = v;
}

/* One line of device printf, by one thread (device printf following the
 * program's fd 1: tests/e2e/printf_driver.c). */
extern "C" __global__ void vgpu_print_u32(unsigned v)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		printf("vgpu_print_u32: %u\n", v);
}

/* Every thread busy-waits about ns nanoseconds. */
extern "C" __global__ void vgpu_spin(unsigned long long ns)
{
	unsigned long long start, now;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do {
		__nanosleep(1000);
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}

/* out[i] = s.v[i] for i < 1024: a 4 KiB by-value parameter. */
extern "C" __global__ void vgpu_big_param(struct vgpu_big s, unsigned *out)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < 1024;
	     i += gridDim.x * blockDim.x)
		out[i] = s.v[i];
}

#endif
