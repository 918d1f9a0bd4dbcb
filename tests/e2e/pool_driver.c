// SPDX-License-Identifier: MIT
/*
 * Stream-ordered allocation and memory pools through the driver API:
 * allocations on streams, same-stream reuse, reuse across streams ordered
 * by events, pools made, tuned, trimmed and destroyed, default and current
 * pools, usage accounting, bad input, and, where the backend captures (the
 * GPU), a graph that allocates, uses and frees, launched three times.
 *
 * One line per check on stdout, nothing that depends on addresses, sizes
 * the driver rounds to, timing or the backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver_check.h"

#define N 4096

static uint32_t *host;

static cuuint64_t attr(CUmemoryPool p, CUmemPool_attribute a)
{
	cuuint64_t v = ~0ull;

	if (cuMemPoolGetAttribute(p, a, &v))
		return ~0ull;
	return v;
}

/* Every word of d (N words) is v, as read back through the host. */
static bool holds(CUdeviceptr d, uint32_t v, CUstream s)
{
	int bad = 0;

	for (int i = 0; i < N; i++)
		host[i] = 0;
	if (cuMemcpyDtoHAsync(host, d, N * 4, s) || cuStreamSynchronize(s))
		return false;
	for (int i = 0; i < N; i++)
		bad += host[i] != v;
	return !bad;
}

static void default_pool(CUdevice dev, CUstream s, CUmemoryPool *dp)
{
	CUmemoryPool cur = NULL, vialoc = NULL, p = NULL;
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev };
	CUdeviceptr a = 0, b = 0;
	cuuint64_t max = ~0ull, zero = 0, r1, r2;
	CUresult rc;

	rc = cuDeviceGetDefaultMemPool(dp, dev);
	expect(!rc && *dp, "the device has a default pool", rc);
	rc = cuDeviceGetMemPool(&cur, dev);
	expect(!rc && cur == *dp, "and it is the current pool", rc);
	rc = cuMemGetDefaultMemPool(&vialoc, &loc, CU_MEM_ALLOCATION_TYPE_PINNED);
	expect(!rc && vialoc == *dp, "the location form names the same default pool", rc);
	rc = cuMemGetMemPool(&vialoc, &loc, CU_MEM_ALLOCATION_TYPE_PINNED);
	expect(!rc && vialoc == *dp, "and the same current pool", rc);

	rc = cuMemAllocAsync(&a, N * 4, s);
	expect(!rc && a, "cuMemAllocAsync gives memory", rc);
	rc = cuMemsetD32Async(a, 0xa11c, N, s);
	expect(!rc && holds(a, 0xa11c, s), "work after the allocation in its stream uses it", rc);
	rc = cuPointerGetAttribute(&p, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a);
	expect(!rc && p == *dp, "the pointer names its pool", rc);
	expect(attr(*dp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) >= N * 4, "the pool counts it as used", 0);

	rc = cuMemPoolSetAttribute(*dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max);
	expect(!rc && attr(*dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == max,
	       "the release threshold is set", rc);
	r1 = attr(*dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
	rc = cuMemFreeAsync(a, s);
	if (!rc)
		rc = cuMemAllocAsync(&b, N * 4, s);
	r2 = attr(*dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
	expect(!rc && b && r1 == r2 && r1 >= N * 4,
	       "a free then an allocation in one stream reuses the memory", rc);
	rc = cuMemsetD32Async(b, 0xb0b, N, s);
	expect(!rc && holds(b, 0xb0b, s), "the reused memory works", rc);
	rc = cuMemFreeAsync(b, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc && attr(*dp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0 &&
	       attr(*dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= N * 4,
	       "freed memory stays reserved under a high threshold", rc);
	rc = cuMemPoolSetAttribute(*dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc && attr(*dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0,
	       "with threshold 0 a synchronize returns it", rc);
}

static void cross_stream(CUstream s, CUstream t)
{
	CUdeviceptr a = 0, b = 0;
	CUevent e;
	CUresult rc;

	rc = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
	if (!rc)
		rc = cuMemAllocAsync(&a, N * 4, s);
	if (!rc)
		rc = cuMemsetD32Async(a, 0x5a5a, N, s);
	if (!rc)
		rc = cuMemFreeAsync(a, s);
	if (!rc)
		rc = cuEventRecord(e, s);
	if (!rc)
		rc = cuStreamWaitEvent(t, e, 0);
	if (!rc)
		rc = cuMemAllocAsync(&b, N * 4, t);
	if (!rc)
		rc = cuMemsetD32Async(b, 0x7e7e, N, t);
	expect(!rc && holds(b, 0x7e7e, t), "an allocation in another stream after an event works",
	       rc);
	rc = cuMemFreeAsync(b, t);
	if (!rc)
		rc = cuStreamSynchronize(t);
	if (!rc)
		rc = cuEventDestroy(e);
	expect(!rc, "and is freed there", rc);
}

static void own_pool(CUdevice dev, CUstream s, CUmemoryPool dp)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
	CUmemLocation loc = props.location;
	CUmemAccess_flags fl = CU_MEM_ACCESS_FLAGS_PROT_NONE;
	CUmemoryPool q = NULL, cur = NULL, who = NULL;
	CUdeviceptr a[3] = { 0 }, c = 0;
	cuuint64_t max = ~0ull, zero = 0, one = 1;
	int on = 0, off = 0;
	CUresult rc;

	rc = cuMemPoolCreate(&q, &props);
	expect(!rc && q && q != dp, "a pool is created", rc);
	expect(attr(q, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0, "its release threshold starts at 0", 0);
	rc = cuMemPoolGetAttribute(q, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &on);
	expect(!rc && on == 1, "opportunistic reuse starts enabled", rc);
	rc = cuMemPoolSetAttribute(q, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &off);
	if (!rc)
		rc = cuMemPoolGetAttribute(q, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &on);
	expect(!rc && on == 0, "internal dependencies can be turned off", rc);
	rc = cuMemPoolGetAccess(&fl, q, &loc);
	expect(!rc && fl == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "its device may read and write it", rc);

	rc = cuMemPoolSetAttribute(q, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max);
	for (int i = 0; i < 3 && !rc; i++)
		rc = cuMemAllocFromPoolAsync(&a[i], N * 4, q, s);
	expect(!rc && attr(q, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) >= 3 * N * 4 &&
	       attr(q, CU_MEMPOOL_ATTR_USED_MEM_HIGH) >= 3 * N * 4, "three allocations are counted",
	       rc);
	rc = cuPointerGetAttribute(&who, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a[1]);
	expect(!rc && who == q, "a pointer names the pool it came from", rc);
	expect(attr(dp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0, "the default pool holds none of them",
	       0);
	for (int i = 0; i < 3 && !rc; i++)
		rc = cuMemFreeAsync(a[i], s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc && attr(q, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0 &&
	       attr(q, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= 3 * N * 4,
	       "freed, they stay reserved", rc);
	rc = cuMemPoolTrimTo(q, 0);
	expect(!rc && attr(q, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0, "a trim releases them", rc);
	expect(attr(q, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) >= 3 * N * 4, "the high mark stays", 0);
	rc = cuMemPoolSetAttribute(q, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero);
	expect(!rc && attr(q, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 0, "a reset brings it down", rc);
	rc = cuMemPoolSetAttribute(q, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &one);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a high mark cannot be set to non-zero", rc);
	rc = cuMemPoolSetAttribute(q, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "the current usage cannot be set", rc);
	rc = cuMemPoolGetAttribute(q, (CUmemPool_attribute)999, &zero);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown attribute is refused", rc);

	rc = cuDeviceSetMemPool(dev, q);
	if (!rc)
		rc = cuDeviceGetMemPool(&cur, dev);
	expect(!rc && cur == q, "the pool becomes the device's current pool", rc);
	rc = cuMemAllocAsync(&c, N * 4, s);
	if (!rc)
		rc = cuPointerGetAttribute(&who, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, c);
	expect(!rc && who == q, "cuMemAllocAsync takes from the current pool", rc);
	rc = cuDeviceSetMemPool(dev, dp);
	if (!rc)
		rc = cuDeviceGetMemPool(&cur, dev);
	expect(!rc && cur == dp, "the default pool is current again", rc);

	/* The driver defers the destruction until the last allocation goes. */
	rc = cuMemPoolDestroy(q);
	expect(!rc, "a pool with a live allocation is destroyed", rc);
	rc = cuMemsetD32Async(c, 0xdead, N, s);
	expect(!rc && holds(c, 0xdead, s), "its allocation still works", rc);
	rc = cuMemFreeAsync(c, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc, "and is freed", rc);
}

static void bad_input(CUdevice dev, CUstream s, CUmemoryPool dp)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_INVALID,
				 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
	CUmemoryPool q = NULL;
	CUdeviceptr a = 0;
	char handle[64];
	CUresult rc;

	rc = cuMemPoolCreate(&q, &props);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a pool of no allocation type is refused", rc);
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.id = 4096;
	rc = cuMemPoolCreate(&q, &props);
	expect(rc != CUDA_SUCCESS, "a pool on a device that does not exist is refused", rc);
	rc = cuMemPoolCreate(&q, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a pool without properties is refused", rc);
	rc = cuMemAllocAsync(NULL, 16, s);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an allocation without a result is refused", rc);
	rc = cuDeviceGetDefaultMemPool(&q, 4096);
	expect(rc == CUDA_ERROR_INVALID_DEVICE, "a default pool of no device is refused", rc);

	rc = cuMemPoolDestroy(dp);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "the default pool cannot be destroyed", rc);
	rc = cuMemAllocAsync(&a, 0, s);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "an empty allocation is refused", rc);
	rc = cuMemAllocAsync(&a, 256, s);
	if (!rc)
		rc = cuMemFreeAsync(a, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc, "a small allocation comes and goes", rc);
	/* Undefined for the driver, which may take them: vgpu's runs only. */
	if (under_vgpu()) {
		rc = cuMemFreeAsync(a, s);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a second free is refused", rc);
		rc = cuMemFreeAsync((CUdeviceptr)host, s);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a free of host memory is refused", rc);
		rc = cuMemPoolExportToShareableHandle(handle, dp,
						      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
			    "a pool made without handle types is not exported", rc);
	}
	rc = cuStreamSynchronize(s);
	expect(!rc, "the stream is still fine", rc);
}

/* A captured allocation is the graph's: each launch has it again. */
static void graph(CUdevice dev, CUstream s)
{
	CUdeviceptr out = 0, t = 0;
	CUgraph g = NULL;
	CUgraphExec ge = NULL;
	cuuint64_t used = 0;
	bool ok = true;
	CUresult rc;

	rc = cuMemAlloc(&out, N * 4);
	if (!rc)
		rc = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "pool_driver: this backend does not capture streams\n");
		cuMemFree(out);
		return;
	}
	if (!rc)
		rc = cuMemAllocAsync(&t, N * 4, s);
	if (!rc)
		rc = cuMemsetD32Async(t, 0x6a6a, N, s);
	if (!rc)
		rc = cuMemcpyDtoDAsync(out, t, N * 4, s);
	if (!rc)
		rc = cuMemFreeAsync(t, s);
	expect(!rc, "a capture allocates, uses and frees", rc);
	rc = cuStreamEndCapture(s, &g);
	if (!rc)
		rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	expect(!rc && ge, "the graph is instantiated", rc);
	for (int r = 0; r < 3 && !rc; r++) {
		rc = cuMemsetD32Async(out, 0, N, s);
		if (!rc)
			rc = cuGraphLaunch(ge, s);
		ok = ok && !rc && holds(out, 0x6a6a, s);
	}
	expect(!rc && ok, "three launches bring the data", rc);
	rc = cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &used);
	expect(!rc && used >= N * 4, "graph memory is counted", rc);
	rc = cuGraphExecDestroy(ge);
	if (!rc)
		rc = cuGraphDestroy(g);
	if (!rc)
		rc = cuStreamSynchronize(s);
	if (!rc)
		rc = cuDeviceGraphMemTrim(dev);
	if (!rc)
		rc = cuMemFree(out);
	expect(!rc, "graph, instance and memory go", rc);
}

int main(void)
{
	CUcontext ctx;
	CUdevice dev;
	CUstream s, t;
	CUmemoryPool dp = NULL;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
	    cuStreamCreate(&t, CU_STREAM_NON_BLOCKING) ||
	    cuMemAllocHost((void **)&host, N * 4)) {
		printf("FATAL setup\n");
		return 1;
	}
	default_pool(dev, s, &dp);
	cross_stream(s, t);
	own_pool(dev, s, dp);
	bad_input(dev, s, dp);
	graph(dev, s);
	return checks_done("pool_driver");
}
