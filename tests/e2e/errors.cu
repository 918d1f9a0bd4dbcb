// SPDX-License-Identifier: MIT
/*
 * Errors: invalid arguments return the cudaError_t CUDA returns, and leave
 * the context usable; then a kernel that writes through a bad pointer makes
 * the next synchronizing call return cudaErrorIllegalAddress, and every call
 * after it too (a sticky error: the context is lost).
 */
#include "e2e.h"
#include "kernels.cuh"

__device__ unsigned g_small[4];

/* A valid launch and copy still work. */
static void still_works(const char *after)
{
	unsigned *d, h[256];
	int bad = 0;

	CHECK(cudaMalloc(&d, sizeof(h)));
	vgpu_iota_u32<<<1, 256>>>(d, 5, 256);
	EXPECT_OK(cudaGetLastError());
	EXPECT_OK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	for (unsigned i = 0; i < 256; i++)
		bad += h[i] != 5 + i;
	EXPECT(bad == 0, "after %s: a launch gave %d wrong words", after, bad);
	EXPECT_OK(cudaFree(d));
}

static void bad_arguments(void)
{
	void *d = NULL, *bogus = (void *)(uintptr_t)0x1000;
	unsigned char h[4096];
	size_t big = (size_t)1 << 52;	/* 4 PiB */
	int dev = -1, count = 0;

	CHECK(cudaMalloc(&d, sizeof(h)));
	memset(h, 0, sizeof(h));

	/* Allocation */
	EXPECT_ERR(cudaMalloc(&bogus, big), cudaErrorMemoryAllocation);
	EXPECT_ERR(cudaGetLastError(), cudaErrorMemoryAllocation);
	EXPECT_OK(cudaGetLastError());	/* not sticky: cleared */
	EXPECT_ERR(cudaMallocHost(&bogus, big), cudaErrorMemoryAllocation);
	(void)cudaGetLastError();

	/* Frees */
	EXPECT_ERR(cudaFree((void *)(uintptr_t)0x1000), cudaErrorInvalidValue);
	EXPECT_ERR(cudaFree(h), cudaErrorInvalidValue);	/* a host stack address */
	{
		void *p;

		CHECK(cudaMalloc(&p, 4096));
		EXPECT_OK(cudaFree(p));
		EXPECT_ERR(cudaFree(p), cudaErrorInvalidValue);	/* twice */
		EXPECT_ERR(cudaFree((char *)d + 16), cudaErrorInvalidValue);	/* inside */
	}
	EXPECT_ERR(cudaFreeHost((void *)(uintptr_t)0x1000), cudaErrorInvalidValue);
	(void)cudaGetLastError();

	/* Copies */
	EXPECT_ERR(cudaMemcpy((void *)(uintptr_t)0x1000, h, 64, cudaMemcpyHostToDevice),
		   cudaErrorInvalidValue);
	EXPECT_ERR(cudaMemcpy(h, (void *)(uintptr_t)0x1000, 64, cudaMemcpyDeviceToHost),
		   cudaErrorInvalidValue);
	EXPECT_ERR(cudaMemcpy(d, (void *)(uintptr_t)0x1000, 64, cudaMemcpyDeviceToDevice),
		   cudaErrorInvalidValue);
	EXPECT_ERR(cudaMemcpy(d, h, 64, (cudaMemcpyKind)42), cudaErrorInvalidMemcpyDirection);
	EXPECT_ERR(cudaMemset((void *)(uintptr_t)0x1000, 0, 64), cudaErrorInvalidValue);
	EXPECT_ERR(cudaMemcpyToSymbol(g_small, h, sizeof(g_small) + 4), cudaErrorInvalidValue);
	EXPECT_ERR(cudaMemcpyFromSymbol(h, g_small, 8, sizeof(g_small)), cudaErrorInvalidValue);
	(void)cudaGetLastError();
	{
		void *dp = NULL;

		EXPECT_ERR(cudaHostGetDevicePointer(&dp, h, 0), cudaErrorInvalidValue);
		(void)cudaGetLastError();
	}
	still_works("bad copies");

	/* Launch configurations: CUDA 13's driver answers these with
	 * cudaErrorInvalidValue (measured natively on an H200, driver 580). */
	vgpu_fill_u32<<<1, 2048>>>((unsigned *)d, 1, 16);
	EXPECT_ERR(cudaPeekAtLastError(), cudaErrorInvalidValue);
	EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	EXPECT_OK(cudaGetLastError());
	vgpu_fill_u32<<<0, 32>>>((unsigned *)d, 1, 16);
	EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	vgpu_fill_u32<<<dim3(1, 1, 65536), 32>>>((unsigned *)d, 1, 16);
	EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	vgpu_fill_u32<<<1, dim3(32, 32, 2)>>>((unsigned *)d, 1, 16);
	EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	EXPECT_OK(cudaDeviceSynchronize());	/* none of them was an error of the context */
	still_works("bad launch configurations");

	/* Devices, streams, events */
	EXPECT_OK(cudaGetDeviceCount(&count));
	EXPECT_ERR(cudaSetDevice(count + 7), cudaErrorInvalidDevice);
	EXPECT_OK(cudaGetDevice(&dev));
	EXPECT(dev == 0, "current device %d after a failed cudaSetDevice", dev);
	(void)cudaGetLastError();
	{
		cudaEvent_t a, b, notime;
		float ms;

		CHECK(cudaEventCreate(&a));
		CHECK(cudaEventCreate(&b));
		CHECK(cudaEventCreateWithFlags(&notime, cudaEventDisableTiming));
		/* Never recorded. */
		EXPECT_ERR(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);
		CHECK(cudaEventRecord(a, 0));
		CHECK(cudaEventRecord(notime, 0));
		CHECK(cudaEventSynchronize(notime));
		EXPECT_ERR(cudaEventElapsedTime(&ms, a, notime), cudaErrorInvalidResourceHandle);
		(void)cudaGetLastError();
		CHECK(cudaEventDestroy(a));
		CHECK(cudaEventDestroy(b));
		CHECK(cudaEventDestroy(notime));
	}
	EXPECT_ERR(cudaStreamCreateWithFlags(NULL, 0), cudaErrorInvalidValue);
	(void)cudaGetLastError();

	/* Names and strings */
	EXPECT(!strcmp(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress"),
	       "cudaGetErrorName: %s", cudaGetErrorName(cudaErrorIllegalAddress));
	EXPECT(!strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument"),
	       "cudaGetErrorString: %s", cudaGetErrorString(cudaErrorInvalidValue));

	still_works("the bad arguments");
	EXPECT_OK(cudaFree(d));
	EXPECT_OK(cudaGetLastError());
	e2e_section("invalid arguments");
}

/* A kernel writes through a bad pointer: a sticky error. */
static void illegal_address(void)
{
	unsigned *d, h = 0;

	CHECK(cudaMalloc(&d, 4096));
	CHECK(cudaDeviceSynchronize());
	vgpu_poke_u32<<<1, 1>>>((unsigned *)(uintptr_t)0x100, 1);
	EXPECT_ERR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
	/* Sticky: every call that reports errors says so from now on. */
	EXPECT_ERR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
	EXPECT_ERR(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
	EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
	/* cudart's last-error word clears (measured natively); the context
	 * stays poisoned, as the next calls show. */
	EXPECT_OK(cudaGetLastError());
	vgpu_fill_u32<<<1, 32>>>(d, 1, 16);
	EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
	EXPECT_ERR(cudaStreamSynchronize(0), cudaErrorIllegalAddress);
	{
		void *p = NULL;

		EXPECT_ERR(cudaMalloc(&p, 4096), cudaErrorIllegalAddress);
	}
	e2e_section("illegal address (sticky)");
}

int main(void)
{
	CHECK(cudaSetDevice(0));
	bad_arguments();
	illegal_address();
	return e2e_finish("errors");
}
