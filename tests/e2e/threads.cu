// SPDX-License-Identifier: MIT
/*
 * Threads: 8 host threads, each with its own stream and buffers, allocate,
 * copy, launch and verify at the same time, many rounds each; events and
 * host functions from several threads at once.
 */
#include <atomic>
#include <thread>
#include <vector>

#include "e2e.h"
#include "kernels.cuh"

#define NTHREADS 8
#define ROUNDS 25

static std::atomic<int> failures;
static std::atomic<int> callbacks_run;

static void CUDART_CB bump(void *arg)
{
	(*(std::atomic<int> *)arg)++;
}

#define T_CHECK(call, what)                                                         \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			fprintf(stderr, "thread %d round %d: %s: %s\n", t, r, what,  \
				cudaGetErrorName(e_));                              \
			failures++;                                                 \
			return;                                                     \
		}                                                                   \
	} while (0)

static void worker(int t)
{
	const int n = (1 << 16) + t * 1001;
	cudaStream_t s;
	cudaEvent_t ev;
	float *hx, *hy, *dx, *dy;
	unsigned *du, *hu;
	unsigned long long *dsum, *hsum;
	std::atomic<int> mine{ 0 };
	int r = -1;

	T_CHECK(cudaSetDevice(0), "cudaSetDevice");
	T_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
	T_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
	T_CHECK(cudaMallocHost(&hx, n * 4), "cudaMallocHost");
	T_CHECK(cudaMallocHost(&hsum, 8), "cudaMallocHost");
	hy = (float *)malloc(n * 4);	/* pageable */
	hu = (unsigned *)malloc(n * 4);
	for (r = 0; r < ROUNDS; r++) {
		float a = 0.5f + r + t;
		int bad = 0;

		/* Allocate anew each round: allocations race with other threads'. */
		T_CHECK(cudaMalloc(&dx, n * 4), "cudaMalloc");
		T_CHECK(cudaMalloc(&dy, n * 4), "cudaMalloc");
		T_CHECK(cudaMalloc(&du, n * 4), "cudaMalloc");
		T_CHECK(cudaMalloc(&dsum, 8), "cudaMalloc");
		for (int i = 0; i < n; i++) {
			hx[i] = (float)(i % 977) + t;
			hy[i] = (float)r - i % 13;
		}
		T_CHECK(cudaMemcpyAsync(dx, hx, n * 4, cudaMemcpyHostToDevice, s), "H2D");
		T_CHECK(cudaMemcpyAsync(dy, hy, n * 4, cudaMemcpyHostToDevice, s), "H2D pageable");
		vgpu_saxpy_f32<<<64, 256, 0, s>>>(a, dx, dy, n);
		T_CHECK(cudaGetLastError(), "saxpy launch");
		T_CHECK(cudaMemsetAsync(dsum, 0, 8, s), "cudaMemsetAsync");
		vgpu_iota_u32<<<32, 256, 0, s>>>(du, t * 100000u + r, n);
		vgpu_checksum_u32<<<32, 256, 0, s>>>(du, n, dsum);
		T_CHECK(cudaGetLastError(), "iota/checksum launch");
		T_CHECK(cudaEventRecord(ev, s), "cudaEventRecord");
		T_CHECK(cudaLaunchHostFunc(s, bump, &mine), "cudaLaunchHostFunc");
		T_CHECK(cudaMemcpyAsync(hsum, dsum, 8, cudaMemcpyDeviceToHost, s), "D2H");
		T_CHECK(cudaMemcpyAsync(hx, dy, n * 4, cudaMemcpyDeviceToHost, s), "D2H");
		T_CHECK(cudaMemcpyAsync(hu, du, n * 4, cudaMemcpyDeviceToHost, s), "D2H pageable");
		T_CHECK(cudaEventSynchronize(ev), "cudaEventSynchronize");
		T_CHECK(cudaStreamSynchronize(s), "cudaStreamSynchronize");
		{
			unsigned long long want = 0;

			for (int i = 0; i < n; i++) {
				float y = fmaf(a, (float)(i % 977) + t, (float)r - i % 13);
				unsigned u = t * 100000u + r + i;

				bad += hx[i] != y;
				bad += hu[i] != u;
				want += u;
			}
			bad += *hsum != want;
		}
		if (bad) {
			fprintf(stderr, "thread %d round %d: %d wrong results\n", t, r, bad);
			failures++;
		}
		T_CHECK(cudaFree(dx), "cudaFree");
		T_CHECK(cudaFree(dy), "cudaFree");
		T_CHECK(cudaFree(du), "cudaFree");
		T_CHECK(cudaFree(dsum), "cudaFree");
	}
	if (mine.load() != ROUNDS) {
		fprintf(stderr, "thread %d: %d of %d host functions ran\n", t, mine.load(), ROUNDS);
		failures++;
	}
	callbacks_run += mine.load();
	T_CHECK(cudaFreeHost(hx), "cudaFreeHost");
	T_CHECK(cudaFreeHost(hsum), "cudaFreeHost");
	T_CHECK(cudaEventDestroy(ev), "cudaEventDestroy");
	T_CHECK(cudaStreamDestroy(s), "cudaStreamDestroy");
	free(hy);
	free(hu);
}

int main(void)
{
	std::vector<std::thread> th;

	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(0));	/* the context, before the threads */
	for (int t = 0; t < NTHREADS; t++)
		th.emplace_back(worker, t);
	for (auto &x : th)
		x.join();
	EXPECT(failures.load() == 0, "%d thread failures", failures.load());
	EXPECT(callbacks_run.load() == NTHREADS * ROUNDS, "%d host functions ran",
	       callbacks_run.load());
	e2e_section("8 threads");

	/* Threads that start with no context made current by the main thread. */
	{
		std::atomic<int> ok{ 0 };
		std::vector<std::thread> th2;

		for (int t = 0; t < NTHREADS; t++)
			th2.emplace_back([&ok, t]() {
				unsigned *d, h[64];
				int good = 1;

				if (cudaMalloc(&d, sizeof(h)) != cudaSuccess)
					return;
				vgpu_fill_u32<<<1, 64>>>(d, t, 64);
				if (cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess)
					good = 0;
				for (int i = 0; i < 64; i++)
					good &= h[i] == (unsigned)t;
				if (cudaFree(d) != cudaSuccess)
					good = 0;
				ok += good;
			});
		for (auto &x : th2)
			x.join();
		EXPECT(ok.load() == NTHREADS, "%d of %d threads on the default stream got it right",
		       ok.load(), NTHREADS);
	}
	e2e_section("threads on the default stream");
	return e2e_finish("threads");
}
