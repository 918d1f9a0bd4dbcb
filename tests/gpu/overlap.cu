// SPDX-License-Identifier: MIT
/*
 * Multi-stream overlap with events: a pipeline of chunks, each copied in,
 * processed and copied out on one of 4 streams, with events timing each
 * stream and cross-stream waits joining them at the end. The result is
 * checked; the time of the pipeline against the same work on one stream
 * goes to stderr (not compared: timing).
 */
#include "../e2e/e2e.h"

__global__ void work(float *p, int n, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float x = p[i];

		for (int k = 0; k < iters; k++)
			x = x * 0.999f + 0.001f;
		p[i] = x;
	}
}

static float expected(float x, int iters)
{
	for (int k = 0; k < iters; k++)
		x = __builtin_fmaf(x, 0.999f, 0.001f);
	return x;
}

static float run(int nstreams, float *h, float *d, int chunks, int chunk, int iters)
{
	cudaStream_t s[4];
	cudaEvent_t start, stop, done[4];
	float ms = 0;

	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));
	for (int k = 0; k < nstreams; k++) {
		CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
		CHECK(cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming));
	}
	CHECK(cudaEventRecord(start, s[0]));
	for (int k = 1; k < nstreams; k++)
		CHECK(cudaStreamWaitEvent(s[k], start, 0));
	for (int c = 0; c < chunks; c++) {
		cudaStream_t st = s[c % nstreams];
		size_t off = (size_t)c * chunk;

		CHECK(cudaMemcpyAsync(d + off, h + off, chunk * 4, cudaMemcpyHostToDevice, st));
		work<<<(chunk + 255) / 256, 256, 0, st>>>(d + off, chunk, iters);
		CHECK(cudaMemcpyAsync(h + off, d + off, chunk * 4, cudaMemcpyDeviceToHost, st));
	}
	for (int k = 1; k < nstreams; k++) {
		CHECK(cudaEventRecord(done[k], s[k]));
		CHECK(cudaStreamWaitEvent(s[0], done[k], 0));
	}
	CHECK(cudaEventRecord(stop, s[0]));
	CHECK(cudaEventSynchronize(stop));
	CHECK(cudaEventElapsedTime(&ms, start, stop));
	for (int k = 0; k < nstreams; k++) {
		CHECK(cudaStreamDestroy(s[k]));
		CHECK(cudaEventDestroy(done[k]));
	}
	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	return ms;
}

int main(void)
{
	const int chunks = 32, chunk = 1 << 20, iters = 200;
	const size_t n = (size_t)chunks * chunk;
	float *h, *d, ms1, ms4;
	size_t bad = 0;

	CHECK(cudaMallocHost(&h, n * 4));
	CHECK(cudaMalloc(&d, n * 4));
	for (size_t i = 0; i < n; i++)
		h[i] = (float)(i % 1000);
	ms1 = run(1, h, d, chunks, chunk, iters);
	ms4 = run(4, h, d, chunks, chunk, iters);
	/* Two passes of `iters` iterations each. */
	for (int v = 0; v < 1000; v++) {
		float want = expected(expected((float)v, iters), iters);

		for (size_t i = v; i < n; i += 1000)
			bad += fabsf(h[i] - want) > 1e-5f * fabsf(want) + 1e-6f;
	}
	EXPECT(bad == 0, "%zu wrong", bad);
	fprintf(stderr, "one stream %.2f ms, four streams %.2f ms\n", ms1, ms4);
	EXPECT(ms1 > 0 && ms4 > 0, "event times %.3f %.3f", ms1, ms4);
	printf("overlap: %zu elements through 4 streams: %s\n", n, bad ? "wrong" : "ok");
	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(h));
	return e2e_finish("overlap");
}
