// SPDX-License-Identifier: MIT
/*
 * Streams and events: several streams at once, cudaEventRecord /
 * Synchronize / Query / ElapsedTime (vgpu_spin makes time pass: the elapsed
 * time is at least the spin), cudaStreamWaitEvent ordering across streams,
 * cudaStreamQuery, cudaLaunchHostFunc and cudaStreamAddCallback callbacks in
 * stream order.
 */
#include <atomic>

#include "e2e.h"
#include "kernels.cuh"

#define NSTREAMS 4

static void many_streams(void)
{
	const unsigned long long n = 1 << 20;
	cudaStream_t s[NSTREAMS];
	unsigned *d[NSTREAMS];
	unsigned long long *sum[NSTREAMS], got[NSTREAMS];

	for (int k = 0; k < NSTREAMS; k++) {
		CHECK(cudaStreamCreateWithFlags(&s[k], k % 2 ? cudaStreamNonBlocking : cudaStreamDefault));
		CHECK(cudaMalloc(&d[k], n * 4));
		CHECK(cudaMalloc(&sum[k], 8));
	}
	for (int k = 0; k < NSTREAMS; k++) {
		EXPECT_OK(cudaMemsetAsync(sum[k], 0, 8, s[k]));
		vgpu_iota_u32<<<256, 256, 0, s[k]>>>(d[k], 1000u * k, n);
		vgpu_checksum_u32<<<256, 256, 0, s[k]>>>(d[k], n, sum[k]);
		EXPECT_OK(cudaMemcpyAsync(&got[k], sum[k], 8, cudaMemcpyDeviceToHost, s[k]));
	}
	for (int k = 0; k < NSTREAMS; k++) {
		unsigned long long want = 0;

		EXPECT_OK(cudaStreamSynchronize(s[k]));
		for (unsigned long long i = 0; i < n; i++)
			want += (unsigned)(1000u * k + i);
		EXPECT(got[k] == want, "stream %d: checksum %llu, want %llu", k, got[k], want);
	}
	for (int k = 0; k < NSTREAMS; k++) {
		CHECK(cudaFree(d[k]));
		CHECK(cudaFree(sum[k]));
		EXPECT_OK(cudaStreamDestroy(s[k]));
	}
	e2e_section("several streams");
}

static void events(void)
{
	const unsigned long long spin_ns = 30 * 1000 * 1000;	/* 30 ms */
	cudaEvent_t a, b, c;
	cudaStream_t s;
	float ms = -1;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreateWithFlags(&b, cudaEventDefault));
	CHECK(cudaEventCreateWithFlags(&c, cudaEventBlockingSync));
	EXPECT_OK(cudaEventRecord(a, s));
	vgpu_spin<<<1, 1, 0, s>>>(spin_ns);
	EXPECT_OK(cudaGetLastError());
	EXPECT_OK(cudaEventRecord(b, s));
	EXPECT_OK(cudaEventSynchronize(b));
	EXPECT_OK(cudaEventQuery(b));
	EXPECT_OK(cudaEventElapsedTime(&ms, a, b));
	EXPECT(ms >= 29.9f && ms < 10000.0f, "elapsed %.3f ms over a 30 ms spin", ms);
	fprintf(stderr, "events: %.3f ms over a 30 ms spin\n", ms);

	/* While a spin runs, the event after it is not complete. The host
	 * backend runs work as it is submitted, so there nothing is ever
	 * still running: only a GPU can show NotReady. */
	vgpu_spin<<<1, 1, 0, s>>>(300ull * 1000 * 1000);
	EXPECT_OK(cudaEventRecord(c, s));
	if (!on_host_backend()) {
		EXPECT_ERR(cudaEventQuery(c), cudaErrorNotReady);
		EXPECT_ERR(cudaStreamQuery(s), cudaErrorNotReady);
	}
	EXPECT_OK(cudaEventSynchronize(c));
	EXPECT_OK(cudaEventQuery(c));
	EXPECT_OK(cudaStreamQuery(s));
	EXPECT_OK(cudaEventElapsedTime(&ms, b, c));
	EXPECT(ms >= 299.9f, "elapsed %.3f ms over a 300 ms spin", ms);

	/* An event recorded on an idle stream completes. */
	EXPECT_OK(cudaEventRecord(a, s));
	EXPECT_OK(cudaEventSynchronize(a));
	EXPECT_OK(cudaEventQuery(a));
	/* The legacy default stream. */
	EXPECT_OK(cudaEventRecord(a, 0));
	vgpu_spin<<<1, 1>>>(spin_ns);
	EXPECT_OK(cudaEventRecord(b, 0));
	EXPECT_OK(cudaDeviceSynchronize());
	EXPECT_OK(cudaEventElapsedTime(&ms, a, b));
	EXPECT(ms >= 29.9f, "default stream: elapsed %.3f ms over a 30 ms spin", ms);

	EXPECT_OK(cudaEventDestroy(a));
	EXPECT_OK(cudaEventDestroy(b));
	EXPECT_OK(cudaEventDestroy(c));
	EXPECT_OK(cudaStreamDestroy(s));
	e2e_section("events");
}

/* s1: spin, then write 1; s2 waits for s1's event, then writes 2. */
static void wait_event(void)
{
	const unsigned long long n = 4096;
	cudaStream_t s1, s2;
	cudaEvent_t e;
	unsigned *d, h[4096];
	int bad = 0;

	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	CHECK(cudaMalloc(&d, n * 4));
	CHECK(cudaMemset(d, 0, n * 4));
	CHECK(cudaDeviceSynchronize());
	vgpu_spin<<<1, 1, 0, s1>>>(100ull * 1000 * 1000);
	vgpu_fill_u32<<<4, 256, 0, s1>>>(d, 1, n);
	EXPECT_OK(cudaEventRecord(e, s1));
	EXPECT_OK(cudaStreamWaitEvent(s2, e, 0));
	vgpu_fill_u32<<<4, 256, 0, s2>>>(d, 2, n);
	EXPECT_OK(cudaMemcpyAsync(h, d, n * 4, cudaMemcpyDeviceToHost, s2));
	EXPECT_OK(cudaStreamSynchronize(s2));
	for (unsigned i = 0; i < n; i++)
		bad += h[i] != 2;
	EXPECT(bad == 0, "cudaStreamWaitEvent: %d words not written after the wait", bad);
	EXPECT_OK(cudaStreamQuery(s1));	/* s2 waited for it */

	/* Waiting for an event never recorded is no wait at all. */
	{
		cudaEvent_t fresh;

		CHECK(cudaEventCreate(&fresh));
		EXPECT_OK(cudaStreamWaitEvent(s2, fresh, 0));
		EXPECT_OK(cudaStreamSynchronize(s2));
		CHECK(cudaEventDestroy(fresh));
	}
	CHECK(cudaFree(d));
	CHECK(cudaEventDestroy(e));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	e2e_section("cudaStreamWaitEvent");
}

static std::atomic<int> flag;
static std::atomic<int> order;
static std::atomic<int> order_bad;
static double t_launch, t_first;
static unsigned *cb_host;

static void CUDART_CB first(void *arg)
{
	t_first = e2e_now_ms();
	if (flag.load() != 0)
		order_bad++;
	flag.store(1);
	(void)arg;
}

static void CUDART_CB second(void *arg)
{
	/* The copy before this callback has landed. */
	unsigned n = *(unsigned *)arg;

	for (unsigned i = 0; i < n; i++)
		if (cb_host[i] != 0xABCD0000u + i) {
			order_bad++;
			break;
		}
	if (flag.load() != 1)
		order_bad++;
	flag.store(2);
}

static void CUDART_CB count(void *arg)
{
	int want = (int)(intptr_t)arg;

	if (order.load() != want)
		order_bad++;
	order.store(want + 1);
}

static std::atomic<int> cb_status_bad, cb_ran;

static void CUDART_CB stream_cb(cudaStream_t stream, cudaError_t status, void *arg)
{
	if (status != cudaSuccess || arg != (void *)&cb_ran)
		cb_status_bad++;
	(void)stream;
	cb_ran++;
}

static void callbacks(void)
{
	const unsigned long long spin_ns = 50ull * 1000 * 1000;
	unsigned n = 1024;
	cudaStream_t s;
	unsigned *d;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMallocHost(&cb_host, n * 4));
	CHECK(cudaMalloc(&d, n * 4));
	memset(cb_host, 0, n * 4);
	flag = 0;
	order_bad = 0;

	t_launch = e2e_now_ms();
	vgpu_spin<<<1, 1, 0, s>>>(spin_ns);
	EXPECT_OK(cudaLaunchHostFunc(s, first, NULL));
	vgpu_iota_u32<<<4, 256, 0, s>>>(d, 0xABCD0000u, n);
	EXPECT_OK(cudaMemcpyAsync(cb_host, d, n * 4, cudaMemcpyDeviceToHost, s));
	EXPECT_OK(cudaLaunchHostFunc(s, second, &n));
	EXPECT_OK(cudaStreamSynchronize(s));
	EXPECT(flag.load() == 2, "host functions: flag %d after the sync", flag.load());
	EXPECT(order_bad.load() == 0, "host functions ran out of order (%d)", order_bad.load());
	EXPECT(t_first - t_launch >= 49.9, "the first host function ran %.3f ms after a 50 ms spin began",
	       t_first - t_launch);

	/* A hundred callbacks in a row, with work in between. */
	order = 0;
	order_bad = 0;
	for (int i = 0; i < 100; i++) {
		EXPECT_OK(cudaLaunchHostFunc(s, count, (void *)(intptr_t)i));
		if (i % 10 == 0)
			vgpu_fill_u32<<<1, 64>>>(d, i, n);	/* default stream: not ordered with s */
		if (i % 10 == 5)
			vgpu_fill_u32<<<1, 64, 0, s>>>(d, i, n);
	}
	EXPECT_OK(cudaStreamSynchronize(s));
	EXPECT(order.load() == 100 && order_bad.load() == 0, "100 host functions: %d ran, %d out of order",
	       order.load(), order_bad.load());

	/* cudaStreamAddCallback */
	cb_ran = 0;
	cb_status_bad = 0;
	vgpu_spin<<<1, 1, 0, s>>>(10ull * 1000 * 1000);
	EXPECT_OK(cudaStreamAddCallback(s, stream_cb, &cb_ran, 0));
	EXPECT_OK(cudaStreamAddCallback(s, stream_cb, &cb_ran, 0));
	EXPECT_OK(cudaStreamSynchronize(s));
	EXPECT(cb_ran.load() == 2 && cb_status_bad.load() == 0, "stream callbacks: %d ran, %d bad",
	       cb_ran.load(), cb_status_bad.load());

	/* A callback on the legacy default stream. */
	order = 5;
	order_bad = 0;
	EXPECT_OK(cudaLaunchHostFunc(0, count, (void *)(intptr_t)5));
	EXPECT_OK(cudaDeviceSynchronize());
	EXPECT(order.load() == 6 && order_bad.load() == 0, "default stream callback did not run");

	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(cb_host));
	CHECK(cudaStreamDestroy(s));
	e2e_section("host callbacks");
}

static void priorities(void)
{
	int lo = 0, hi = 0, p = 99;
	cudaStream_t s;

	EXPECT_OK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
	EXPECT(hi <= lo, "priority range %d..%d", lo, hi);
	CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, hi));
	EXPECT_OK(cudaStreamGetPriority(s, &p));
	EXPECT(p == hi, "stream priority %d, asked for %d", p, hi);
	vgpu_spin<<<1, 1, 0, s>>>(1000);
	EXPECT_OK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	e2e_section("stream priorities");
}

int main(void)
{
	CHECK(cudaSetDevice(0));
	many_streams();
	events();
	wait_event();
	callbacks();
	priorities();
	CHECK(cudaDeviceSynchronize());
	return e2e_finish("streams");
}
