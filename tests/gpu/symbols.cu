// SPDX-License-Identifier: MIT
/*
 * __constant__ and __device__ symbols used by kernels: a constant table
 * read by every thread, a device counter incremented atomically, a device
 * array written by one kernel and read by the next; host access through
 * cudaMemcpyToSymbol/FromSymbol and cudaGetSymbolAddress.
 */
#include "../e2e/e2e.h"

__constant__ float coef[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
__constant__ int offsets[64];
__device__ unsigned long long counter;
__device__ float stage[4096];
__device__ int init_values[3] = { 7, 8, 9 };

__global__ void poly(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float x = (float)i / n, y = 0;

		for (int k = 7; k >= 0; k--)
			y = y * x + coef[k];
		stage[i] = y + offsets[i % 64] + init_values[i % 3];
		atomicAdd(&counter, 1ull);
	}
}

__global__ void copy_stage(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = stage[i] * 2;
}

int main(void)
{
	const int n = 4096;
	int offs[64];
	float h[4096], c8[8] = { 0.5f, 0.25f, 0, 0, 0, 0, 0, 1 };
	unsigned long long cnt = 100, got = 0;
	float *out, *stage_addr;
	double sum = 0;
	int bad = 0;

	for (int i = 0; i < 64; i++)
		offs[i] = i * 10;
	CHECK(cudaMemcpyToSymbol(offsets, offs, sizeof(offs)));
	CHECK(cudaMemcpyToSymbol(counter, &cnt, sizeof(cnt)));
	CHECK(cudaMalloc(&out, n * 4));
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			CHECK(cudaMemcpyToSymbol(coef, c8, sizeof(c8)));
		poly<<<n / 128, 128>>>(out, n);
		copy_stage<<<n / 128, 128>>>(out, n);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(h, out, n * 4, cudaMemcpyDeviceToHost));
		sum = 0;
		bad = 0;
		for (int i = 0; i < n; i++) {
			float x = (float)i / n, y = 0;
			static const float c0[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
			const float *cf = pass ? c8 : c0;

			for (int k = 7; k >= 0; k--)
				y = y * x + cf[k];
			y = (y + offs[i % 64] + (7 + i % 3)) * 2;
			bad += fabsf(h[i] - y) > 1e-4f * fabsf(y) + 1e-5f;
			sum += h[i];
		}
		EXPECT(bad == 0, "pass %d: %d wrong", pass, bad);
		printf("symbols pass %d: checksum %.3f\n", pass, sum);
	}
	CHECK(cudaMemcpyFromSymbol(&got, counter, sizeof(got)));
	EXPECT(got == 100 + 2ull * n, "counter %llu", got);
	printf("counter: %llu\n", got);
	CHECK(cudaGetSymbolAddress((void **)&stage_addr, stage));
	CHECK(cudaMemcpy(h, stage_addr, 16, cudaMemcpyDeviceToHost));
	printf("stage[0..3]: %.4f %.4f %.4f %.4f\n", h[0], h[1], h[2], h[3]);
	CHECK(cudaFree(out));
	return e2e_finish("symbols");
}
