// SPDX-License-Identifier: MIT
/*
 * Dynamic shared memory (extern __shared__) of several sizes, above 48 KiB
 * with cudaFuncAttributeMaxDynamicSharedMemorySize, and large by-value
 * parameters: 4 KiB, and 32000 bytes (the limit since CUDA 12.1 is 32764).
 */
#include "../e2e/e2e.h"

struct p4k {
	unsigned v[1024];
};
struct p32k {
	unsigned v[8000];
};

/* Reverses each block's chunk through shared memory. */
__global__ void reverse(const unsigned *in, unsigned *out, int per_block)
{
	extern __shared__ unsigned sm[];
	const unsigned *src = in + (size_t)blockIdx.x * per_block;
	unsigned *dst = out + (size_t)blockIdx.x * per_block;

	for (int i = threadIdx.x; i < per_block; i += blockDim.x)
		sm[i] = src[i];
	__syncthreads();
	for (int i = threadIdx.x; i < per_block; i += blockDim.x)
		dst[i] = sm[per_block - 1 - i];
}

__global__ void take4k(struct p4k p, unsigned *out)
{
	for (int i = threadIdx.x; i < 1024; i += blockDim.x)
		out[i] = p.v[i] * 3;
}

__global__ void take32k(struct p32k p, int k, unsigned *out)
{
	for (int i = threadIdx.x; i < 8000; i += blockDim.x)
		out[i] = p.v[i] + k;
}

int main(void)
{
	static const int sizes[] = { 1, 1000, 12288, 24576, 40000 };	/* words: 4 B .. 160 KB */
	const int blocks = 8;
	int optin = 0;
	unsigned *din, *dout, *h, *back;

	CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
	CHECK(cudaFuncSetAttribute(reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
	CHECK(cudaMalloc(&din, 40000 * 4 * blocks));
	CHECK(cudaMalloc(&dout, 40000 * 4 * blocks));
	h = (unsigned *)malloc(40000 * 4 * blocks);
	back = (unsigned *)malloc(40000 * 4 * blocks);
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int w = sizes[s], bad = 0;
		size_t smem = (size_t)w * 4;

		if (smem > (size_t)optin) {
			printf("dynsmem %zu bytes: above the device's limit\n", smem);
			continue;
		}
		for (int i = 0; i < w * blocks; i++)
			h[i] = i * 2654435761u;
		CHECK(cudaMemcpy(din, h, (size_t)w * blocks * 4, cudaMemcpyHostToDevice));
		reverse<<<blocks, 256, smem>>>(din, dout, w);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(back, dout, (size_t)w * blocks * 4, cudaMemcpyDeviceToHost));
		for (int b = 0; b < blocks; b++)
			for (int i = 0; i < w; i++)
				bad += back[b * w + i] != h[b * w + w - 1 - i];
		EXPECT(bad == 0, "%zu bytes of dynamic shared memory: %d wrong", smem, bad);
		printf("dynsmem %zu bytes: %s\n", smem, bad ? "wrong" : "ok");
	}
	/* More than the opt-in limit: a launch error. */
	reverse<<<1, 32, (size_t)optin + 1024>>>(din, dout, 1);
	EXPECT(cudaGetLastError() != cudaSuccess, "a launch above the shared memory limit succeeded");
	{
		static struct p4k a;
		static struct p32k b;
		int bad = 0;

		for (int i = 0; i < 1024; i++)
			a.v[i] = i + 1;
		for (int i = 0; i < 8000; i++)
			b.v[i] = i * 5;
		take4k<<<1, 256>>>(a, dout);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(back, dout, 1024 * 4, cudaMemcpyDeviceToHost));
		for (int i = 0; i < 1024; i++)
			bad += back[i] != (unsigned)(i + 1) * 3;
		EXPECT(bad == 0, "4 KiB parameter: %d wrong", bad);
		printf("4 KiB parameter: %s\n", bad ? "wrong" : "ok");
		bad = 0;
		take32k<<<1, 512>>>(b, 11, dout);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(back, dout, 8000 * 4, cudaMemcpyDeviceToHost));
		for (int i = 0; i < 8000; i++)
			bad += back[i] != (unsigned)i * 5 + 11;
		EXPECT(bad == 0, "32000-byte parameter: %d wrong", bad);
		printf("32000-byte parameter: %s\n", bad ? "wrong" : "ok");
	}
	CHECK(cudaFree(din));
	CHECK(cudaFree(dout));
	return e2e_finish("dynsmem");
}
