// SPDX-License-Identifier: MIT
/*
 * An illegal-address kernel: its client gets cudaErrorIllegalAddress at the
 * next sync, and keeps getting it (sticky). The runner runs a second client
 * at the same time, which must be unaffected. Exit 0 when the error came
 * back as it should.
 */
#include "../e2e/e2e.h"

__global__ void poke(unsigned *p, unsigned v)
{
	p[threadIdx.x * 1024] = v;
}

int main(void)
{
	unsigned *d, h = 0;
	cudaError_t e;

	CHECK(cudaMalloc(&d, 4096));
	CHECK(cudaMemset(d, 0, 4096));
	CHECK(cudaDeviceSynchronize());
	printf("illegal: context works\n");
	poke<<<1, 32>>>((unsigned *)(uintptr_t)0x100, 1);
	e = cudaDeviceSynchronize();
	printf("illegal: sync after the bad kernel: %s\n", cudaGetErrorName(e));
	EXPECT(e == cudaErrorIllegalAddress, "sync returned %s", cudaGetErrorName(e));
	e = cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost);
	printf("illegal: a copy after it: %s\n", cudaGetErrorName(e));
	EXPECT(e == cudaErrorIllegalAddress, "copy returned %s", cudaGetErrorName(e));
	return e2e_finish("illegal");
}
