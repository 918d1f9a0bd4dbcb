// SPDX-License-Identifier: MIT
/*
 * A kernel-heavy managed-memory program: three 16M-float arrays from
 * cudaMallocManaged, 1000 steps of three kernels over them; every 50 steps
 * the host synchronizes, reads a few values back and writes a few (the
 * pages move both ways). Total ms of the steps, after a warm-up step that
 * puts the data on the device. The result is checked against a run's
 * invariant so a broken run cannot look fast.
 */
#include <cuda_runtime.h>

#include "bench.h"

#define CK(call)                                                                 \
	do {                                                                     \
		cudaError_t e_ = (call);                                         \
		if (e_ != cudaSuccess) {                                         \
			fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorName(e_));                           \
			return 1;                                                \
		}                                                                \
	} while (0)

__global__ void axpy(float *y, const float *x, float a, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] += a * x[i];
}

__global__ void scale(float *z, const float *y, float a, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		z[i] = a * y[i];
}

int main(void)
{
	const int n = 16 << 20, steps = 1000, every = 50, grid = 1024, block = 256;
	float *x, *y, *z, probe = 0;
	double t0, total;

	CK(cudaMallocManaged(&x, (size_t)n * 4));
	CK(cudaMallocManaged(&y, (size_t)n * 4));
	CK(cudaMallocManaged(&z, (size_t)n * 4));
	for (int i = 0; i < n; i++) {
		x[i] = 1.0f;
		y[i] = 0.0f;
	}
	/* Warm-up: the data goes to the device once. */
	axpy<<<grid, block>>>(y, x, 0.0f, n);
	scale<<<grid, block>>>(z, y, 1.0f, n);
	CK(cudaDeviceSynchronize());
	t0 = bench_now_us();
	for (int step = 0; step < steps; step++) {
		axpy<<<grid, block>>>(y, x, 1.0f, n);
		axpy<<<grid, block>>>(y, x, -0.5f, n);
		scale<<<grid, block>>>(z, y, 2.0f, n);
		if (step % every != every - 1)
			continue;
		CK(cudaDeviceSynchronize());
		/* The host looks at the middle and the ends, and nudges x where
		 * the next steps read it. */
		probe += z[0] + z[n / 2] + z[n - 1];
		x[n / 2] = 1.0f;
		x[n - 1] = 1.0f;
	}
	CK(cudaDeviceSynchronize());
	total = (bench_now_us() - t0) / 1e3;
	/* y grows by 0.5 a step: z = 2 * 0.5 * (step + 1) after each step. */
	if (z[0] != (float)steps || z[n - 1] != (float)steps) {
		fprintf(stderr, "managed: z %f %f, want %f\n", z[0], z[n - 1], (float)steps);
		return 1;
	}
	printf("probe %f\n", probe);
	bench_report("managed_ms", total, "ms");
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFree(z));
	return 0;
}
