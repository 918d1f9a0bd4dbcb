// SPDX-License-Identifier: MIT
/*
 * Kernel launches: the sustained rate of empty-kernel launches (100k
 * launches, then one sync), and the latency of one launch followed by a
 * stream sync (median over 20k).
 */
#include <cuda_runtime.h>

#include "bench.h"

#define N 100000
#define M 20000

#define CK(call)                                                                 \
	do {                                                                     \
		cudaError_t e_ = (call);                                         \
		if (e_ != cudaSuccess) {                                         \
			fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorName(e_));                           \
			return 1;                                                \
		}                                                                \
	} while (0)

__global__ void empty(void)
{
}

static double t[M];

int main(void)
{
	cudaStream_t s;
	double t0, us;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int i = 0; i < 1000; i++)
		empty<<<1, 32, 0, s>>>();
	CK(cudaStreamSynchronize(s));

	t0 = bench_now_us();
	for (int i = 0; i < N; i++)
		empty<<<1, 32, 0, s>>>();
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(s));
	us = bench_now_us() - t0;
	bench_report("launch_rate", N / (us / 1e6), "launches/s");

	for (int i = 0; i < M; i++) {
		t0 = bench_now_us();
		empty<<<1, 32, 0, s>>>();
		cudaStreamSynchronize(s);
		t[i] = bench_now_us() - t0;
	}
	CK(cudaGetLastError());
	bench_report("launch_sync_us", bench_median(t, M), "us");
	CK(cudaStreamDestroy(s));
	return 0;
}
