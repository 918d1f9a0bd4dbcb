// SPDX-License-Identifier: MIT
/*
 * What three of NVIDIA's cuda-samples do, call for call, that failed
 * through vgpu before the calls were served (issue 13):
 * - asyncAPI and matrixMul: cudaProfilerStart/Stop around asynchronous
 *   work, once right after cudaSetDevice (matrixMul: no other call has
 *   made the context current yet) and once after a synchronize (asyncAPI);
 * - simpleAttributes: an L2 set-aside (cudaDeviceSetLimit of the
 *   persisting L2 size), an access policy window on a stream over a device
 *   buffer, cudaCtxResetPersistingL2Cache, work on the stream;
 * - p2pBandwidthLatencyTest on one GPU: a device is not its own peer, so
 *   enabling access to it fails and the copies between "peers" are copies
 *   within the device, which must move the data.
 * Every answer is printed (stdout is compared with a native run in the
 * GPU suite) and checked.
 */
#include <cuda_profiler_api.h>

#include "e2e.h"
#include "kernels.cuh"

/* matrixMul: findCudaDevice's cudaSetDevice, then straight to the profiler. */
static void profiler_first(void)
{
	CHECK(cudaSetDevice(0));
	EXPECT_OK(cudaProfilerStart());
	EXPECT_OK(cudaProfilerStop());
	e2e_section("profiler right after cudaSetDevice");
}

/* asyncAPI: the work issued to stream 0 between start and stop. */
static void profiler_async(void)
{
	const unsigned long long n = 1 << 20;
	unsigned *a, *d;
	cudaEvent_t start, stop;

	CHECK(cudaMallocHost(&a, n * 4));
	CHECK(cudaMalloc(&d, n * 4));
	CHECK(cudaMemset(d, 255, n * 4));
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));
	CHECK(cudaDeviceSynchronize());
	EXPECT_OK(cudaProfilerStart());
	EXPECT_OK(cudaEventRecord(start, 0));
	vgpu_iota_u32<<<256, 256>>>(d, 26, n);
	EXPECT_OK(cudaMemcpyAsync(a, d, n * 4, cudaMemcpyDeviceToHost, 0));
	EXPECT_OK(cudaEventRecord(stop, 0));
	EXPECT_OK(cudaProfilerStop());
	while (cudaEventQuery(stop) == cudaErrorNotReady)
		;
	EXPECT_OK(cudaGetLastError());
	unsigned long long bad = n;
	for (unsigned long long i = 0; i < n && bad == n; i++)
		if (a[i] != (unsigned)(26 + i))
			bad = i;
	EXPECT(bad == n, "element %llu is %u", bad, bad < n ? a[bad] : 0);
	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(a));
	e2e_section("profiler around asynchronous work");
}

static void access_policy(void)
{
	cudaDeviceProp prop;
	cudaStream_t s;
	cudaStreamAttrValue v, got;
	size_t limit = 0;
	unsigned *h, *d, *check;

	CHECK(cudaGetDeviceProperties(&prop, 0));
	if (prop.persistingL2CacheMaxSize == 0) {
		printf("access policy: the device has no persisting L2 (waived as the sample does)\n");
		return;
	}
	const size_t n = prop.l2CacheSize / 4 / sizeof(unsigned);

	CHECK(cudaStreamCreate(&s));
	EXPECT_OK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, prop.persistingL2CacheMaxSize));
	EXPECT_OK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
	EXPECT(limit > 0 && limit <= (size_t)prop.persistingL2CacheMaxSize,
	       "the set-aside is %zu of at most %d", limit, prop.persistingL2CacheMaxSize);
	CHECK(cudaMallocHost(&h, n * 4));
	CHECK(cudaMallocHost(&check, n * 4));
	CHECK(cudaMalloc(&d, n * 4));
	e2e_pattern(h, n * 4, 7);
	EXPECT_OK(cudaMemcpyAsync(d, h, n * 4, cudaMemcpyHostToDevice, s));

	memset(&v, 0, sizeof(v));
	v.accessPolicyWindow.base_ptr = d;
	v.accessPolicyWindow.num_bytes = n * 4;
	v.accessPolicyWindow.hitRatio = 1.f;
	v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
	v.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
	EXPECT_OK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
	EXPECT_OK(cudaCtxResetPersistingL2Cache());
	EXPECT_OK(cudaStreamSynchronize(s));

	memset(&got, 0, sizeof(got));
	EXPECT_OK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &got));
	EXPECT(got.accessPolicyWindow.base_ptr == (void *)d &&
	       got.accessPolicyWindow.num_bytes == n * 4 &&
	       got.accessPolicyWindow.hitRatio == 1.f &&
	       got.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting &&
	       got.accessPolicyWindow.missProp == cudaAccessPropertyNormal,
	       "the window reads back as %zu bytes, hit ratio %f, props %d/%d",
	       got.accessPolicyWindow.num_bytes, got.accessPolicyWindow.hitRatio,
	       (int)got.accessPolicyWindow.hitProp, (int)got.accessPolicyWindow.missProp);

	/* Work on the stream under the window sees the data. */
	EXPECT_OK(cudaMemcpyAsync(check, d, n * 4, cudaMemcpyDeviceToHost, s));
	EXPECT_OK(cudaStreamSynchronize(s));
	EXPECT(e2e_pattern_check(check, n * 4, 7) < 0, "the data under the window changed");

	/* The sample's end: the window emptied, the set-aside given back. */
	v.accessPolicyWindow.num_bytes = 0;
	EXPECT_OK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
	EXPECT_OK(cudaCtxResetPersistingL2Cache());
	EXPECT_OK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
	EXPECT_OK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
	EXPECT(limit == 0, "the set-aside is %zu after setting 0", limit);
	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(h));
	CHECK(cudaFreeHost(check));
	CHECK(cudaStreamDestroy(s));
	e2e_section("access policy window and persisting L2");
}

static void peer_one_gpu(void)
{
	const size_t n = 3 << 20;
	int can = -1;
	unsigned char *a, *b, *h;
	cudaStream_t s;
	cudaError_t e;

	EXPECT_OK(cudaDeviceCanAccessPeer(&can, 0, 0));
	printf("device 0 can access peer device 0: %d\n", can);
	EXPECT(can == 0, "a device is its own peer (%d)", can);
	/* The driver refuses a pair that cannot access each other: the answer
	 * is printed for the comparison with a native run. */
	e = cudaDeviceEnablePeerAccess(0, 0);
	printf("enable peer access to itself: %s\n", e2e_err(e));
	EXPECT(e != cudaSuccess, "peer access to the device itself was enabled");
	e = cudaDeviceDisablePeerAccess(0);
	printf("disable peer access to itself: %s\n", e2e_err(e));
	EXPECT(e != cudaSuccess, "peer access to the device itself was disabled");
	(void)cudaGetLastError();

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&a, n));
	CHECK(cudaMalloc(&b, n));
	CHECK(cudaMallocHost(&h, n));
	e2e_pattern(h, n, 11);
	CHECK(cudaMemcpy(a, h, n, cudaMemcpyHostToDevice));
	CHECK(cudaMemset(b, 0, n));
	for (int r = 0; r < 5; r++)
		EXPECT_OK(cudaMemcpyPeerAsync(b, 0, a, 0, n, s));
	EXPECT_OK(cudaStreamSynchronize(s));
	memset(h, 0, n);
	CHECK(cudaMemcpy(h, b, n, cudaMemcpyDeviceToHost));
	EXPECT(e2e_pattern_check(h, n, 11) < 0, "cudaMemcpyPeerAsync within device 0 lost data");

	e2e_pattern(h, n, 12);
	CHECK(cudaMemcpy(b, h, n, cudaMemcpyHostToDevice));
	EXPECT_OK(cudaMemcpyPeer(a + 1, 0, b + 1, 0, n - 2));
	memset(h, 0, n);
	CHECK(cudaMemcpy(h, a + 1, n - 2, cudaMemcpyDeviceToHost));
	{
		unsigned char *want = (unsigned char *)malloc(n);

		e2e_pattern(want, n, 12);
		EXPECT(want && !memcmp(h, want + 1, n - 2), "cudaMemcpyPeer within device 0 lost data");
		free(want);
	}
	/* A device that does not exist is refused. */
	EXPECT_ERR(cudaMemcpyPeer(b, 1 << 20, a, 0, 16), cudaErrorInvalidDevice);
	(void)cudaGetLastError();
	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	CHECK(cudaFreeHost(h));
	CHECK(cudaStreamDestroy(s));
	e2e_section("peer access and copies on one GPU");
}

int main(void)
{
	profiler_first();
	profiler_async();
	access_policy();
	peer_one_gpu();
	return e2e_finish("samples_misc");
}
