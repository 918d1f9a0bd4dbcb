// SPDX-License-Identifier: MIT
/* Relocatable device code: kernels calling device code of rdc_dev.cu. */
#include "../e2e/e2e.h"

extern __device__ int rdc_calls;
extern __device__ float rdc_poly(float x);
extern __device__ unsigned rdc_hash(unsigned x);

__global__ void apply(float *y, unsigned *hashes, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		y[i] = rdc_poly((float)i / n);
		hashes[i] = rdc_hash(i);
	}
}

static unsigned hash(unsigned x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

int main(void)
{
	const int n = 10000;
	float *dy, y[10000];
	unsigned *dh, h[10000];
	int calls = -1, bad = 0;
	unsigned long long hsum = 0;

	CHECK(cudaMalloc(&dy, sizeof(y)));
	CHECK(cudaMalloc(&dh, sizeof(h)));
	apply<<<(n + 255) / 256, 256>>>(dy, dh, n);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(y, dy, sizeof(y), cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpy(h, dh, sizeof(h), cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpyFromSymbol(&calls, rdc_calls, sizeof(calls)));
	for (int i = 0; i < n; i++) {
		float x = (float)i / n, want = 3.0f * x * x - 2.0f * x + 1.0f;

		bad += fabsf(y[i] - want) > 1e-5f;
		bad += h[i] != hash(i);
		hsum += h[i];
	}
	EXPECT(bad == 0, "%d wrong", bad);
	EXPECT(calls == n, "rdc_calls %d", calls);
	printf("rdc: calls %d, hash sum %llu\n", calls, hsum);
	CHECK(cudaFree(dy));
	CHECK(cudaFree(dh));
	return e2e_finish("rdc");
}
