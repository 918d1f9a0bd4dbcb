// SPDX-License-Identifier: MIT
/*
 * Cooperative launch: a kernel that synchronises the whole grid
 * (cooperative_groups::this_grid().sync()) between phases, launched with
 * cudaLaunchCooperativeKernel on as many blocks as fit at once.
 */
#include <cooperative_groups.h>

#include "../e2e/e2e.h"

namespace cg = cooperative_groups;

/* Phase 1: each thread writes its value; phase 2: each reads its
 * neighbour's, written by another block; phase 3: block 0 sums. */
__global__ void phases(unsigned *a, unsigned *b, unsigned long long *sum, int n)
{
	cg::grid_group grid = cg::this_grid();
	int tid = blockIdx.x * blockDim.x + threadIdx.x, nthreads = gridDim.x * blockDim.x;

	for (int i = tid; i < n; i += nthreads)
		a[i] = i * 3u + 1;
	grid.sync();
	for (int i = tid; i < n; i += nthreads)
		b[i] = a[(i + n / 2 + 17) % n];
	grid.sync();
	if (tid == 0) {
		unsigned long long s = 0;

		for (int i = 0; i < n; i++)
			s += b[i] ^ i;
		*sum = s;
	}
}

int main(void)
{
	int coop = 0, sms = 0, per_sm = 0, n = 1 << 20;
	unsigned *a, *b;
	unsigned long long *dsum, sum = 0, want = 0;
	const int threads = 256;

	CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
	if (!coop) {
		printf("coop: no cooperative launch on this device\n");
		return E2E_SKIP;
	}
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, threads, 0));
	CHECK(cudaMalloc(&a, n * 4));
	CHECK(cudaMalloc(&b, n * 4));
	CHECK(cudaMalloc(&dsum, 8));
	{
		dim3 grid(sms * per_sm), block(threads);
		void *args[] = { &a, &b, &dsum, &n };

		printf("coop: %d SMs x %d blocks of %d threads\n", sms, per_sm, threads);
		CHECK(cudaLaunchCooperativeKernel((void *)phases, grid, block, args, 0, 0));
		CHECK(cudaDeviceSynchronize());
		/* One block too many: not all co-resident, refused. */
		EXPECT_ERR(cudaLaunchCooperativeKernel((void *)phases, dim3(sms * per_sm + 1), block,
						       args, 0, 0),
			   cudaErrorCooperativeLaunchTooLarge);
		(void)cudaGetLastError();
	}
	CHECK(cudaMemcpy(&sum, dsum, 8, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		want += ((unsigned)((i + n / 2 + 17) % n) * 3u + 1) ^ (unsigned)i;
	EXPECT(sum == want, "sum %llu, want %llu", sum, want);
	printf("coop: grid-synchronised sum %llu\n", sum);
	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	CHECK(cudaFree(dsum));
	return e2e_finish("coop");
}
