// SPDX-License-Identifier: MIT
/*
 * Device printf: the text must reach the program's stdout, in order with
 * the host's own output (the program flushes before each launch and the
 * device output is printed by the synchronizing call).
 */
#include "../e2e/e2e.h"

__global__ void hello(int round, float f, unsigned long long big)
{
	printf("device: round %d, block %d, thread %d\n", round, blockIdx.x, threadIdx.x);
	printf("device: float %.3f, hex %x, big %llu, string %s, char %c\n", f, 0xbeef, big,
	       "text", 'Z');
}

__global__ void many_lines(int n)
{
	for (int i = 0; i < n; i++)
		printf("device line %03d of %d\n", i, n);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("host: before\n");
	for (int r = 0; r < 3; r++) {
		hello<<<1, 1>>>(r, 1.5f * r, 1ull << (40 + r));
		CHECK(cudaDeviceSynchronize());
		printf("host: after round %d\n", r);
	}
	many_lines<<<1, 1>>>(200);
	CHECK(cudaDeviceSynchronize());
	printf("host: after many lines\n");
	/* One thread per block, one block at a time: a fixed order. */
	for (int b = 0; b < 4; b++) {
		hello<<<1, 1>>>(100 + b, -0.25f, 0);
		CHECK(cudaStreamSynchronize(0));
	}
	printf("host: end\n");
	return e2e_finish("printf");
}
