// SPDX-License-Identifier: MIT
/*
 * An end-to-end compute program of many small kernels and copies: 2000
 * steps of a small simulation (copy inputs in, five kernels, copy a result
 * out, sync every step), total ms. The result is checked against a run's
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
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] += a * x[i];
}

__global__ void clampk(float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = fminf(fmaxf(y[i], -1e6f), 1e6f);
}

__global__ void reduce(const float *y, float *out, int n)
{
	__shared__ float s[256];
	float acc = 0;

	for (int i = threadIdx.x; i < n; i += 256)
		acc += y[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int w = 128; w; w >>= 1) {
		if (threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (!threadIdx.x)
		*out = s[0];
}

int main(void)
{
	const int n = 16384, steps = 2000;
	float *hx, *hout, *x, *y, *out;
	cudaStream_t s;
	double t0, total = 0;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMallocHost(&hx, n * 4));
	CK(cudaMallocHost(&hout, 4));
	CK(cudaMalloc(&x, n * 4));
	CK(cudaMalloc(&y, n * 4));
	CK(cudaMalloc(&out, 4));
	for (int i = 0; i < n; i++)
		hx[i] = 1.0f;
	CK(cudaMemset(y, 0, n * 4));
	CK(cudaDeviceSynchronize());
	t0 = bench_now_us();
	for (int step = 0; step < steps; step++) {
		CK(cudaMemcpyAsync(x, hx, n * 4, cudaMemcpyHostToDevice, s));
		axpy<<<n / 256, 256, 0, s>>>(y, x, 1.0f, n);
		axpy<<<n / 256, 256, 0, s>>>(y, x, -0.5f, n);
		clampk<<<n / 256, 256, 0, s>>>(y, n);
		axpy<<<n / 256, 256, 0, s>>>(y, x, 0.5f, n);
		reduce<<<1, 256, 0, s>>>(y, out, n);
		CK(cudaMemcpyAsync(hout, out, 4, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
	}
	total = (bench_now_us() - t0) / 1e3;
	/* y[i] = steps after the loop: the sum is n * steps. */
	if (*hout != (float)n * steps) {
		fprintf(stderr, "compute: result %f, want %f\n", *hout, (float)n * steps);
		return 1;
	}
	bench_report("compute_ms", total, "ms");
	return 0;
}
