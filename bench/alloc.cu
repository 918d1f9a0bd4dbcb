// SPDX-License-Identifier: MIT
/* cudaMalloc + cudaFree of 1 MiB: median of 10k pairs, us. */
#include <cuda_runtime.h>

#include "bench.h"

#define N 10000

static double t[N];

int main(void)
{
	void *p;

	if (cudaFree(0) != cudaSuccess)
		return 1;
	for (int i = 0; i < 1000; i++) {
		if (cudaMalloc(&p, 1 << 20) || cudaFree(p))
			return 1;
	}
	for (int i = 0; i < N; i++) {
		double t0 = bench_now_us();

		if (cudaMalloc(&p, 1 << 20) != cudaSuccess || cudaFree(p) != cudaSuccess) {
			fprintf(stderr, "cudaMalloc/cudaFree failed\n");
			return 1;
		}
		t[i] = bench_now_us() - t0;
	}
	bench_report("alloc_free_1m_us", bench_median(t, N), "us");
	return 0;
}
