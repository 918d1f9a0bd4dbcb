// SPDX-License-Identifier: MIT
/*
 * A session holding memory pools for a checkpoint or a move: the default
 * pool with a high release threshold and a freed block cached, a pool of
 * its own with tuned attributes, and live allocations of both filled with
 * known words. Prints "ready", waits for the file GO to exist (the test
 * checkpoints or moves the session meanwhile), then checks that the
 * contents, addresses, pools and attributes are as they were and that
 * allocation and free still work; prints "pool state: kept".
 *
 *   pool_ckpt GO
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "driver_check.h"

#define N (1 << 16)

static uint32_t *host;

static bool holds(CUdeviceptr d, uint32_t v, CUstream s)
{
	if (cuMemcpyDtoHAsync(host, d, N * 4, s) || cuStreamSynchronize(s))
		return false;
	for (int i = 0; i < N; i++)
		if (host[i] != v)
			return false;
	return true;
}

static cuuint64_t attr(CUmemoryPool p, CUmemPool_attribute a)
{
	cuuint64_t v = ~0ull;

	return cuMemPoolGetAttribute(p, a, &v) ? ~0ull : v;
}

#define CHECK(c) do { if (!(c)) { printf("FAIL %s\n", #c); return 1; } } while (0)

int main(int argc, char **argv)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
	cuuint64_t max = ~0ull, thr = 12345678, used, reserved;
	CUdeviceptr a, b, c, gone, again;
	CUmemoryPool dp, q, who = NULL;
	CUcontext ctx;
	CUdevice dev;
	CUstream s;
	int off = 0, flag = 1;

	if (argc != 2)
		return 2;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
	    cuMemAllocHost((void **)&host, N * 4) || cuDeviceGetDefaultMemPool(&dp, dev) ||
	    cuMemPoolSetAttribute(dp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max) ||
	    cuMemPoolCreate(&q, &props) ||
	    cuMemPoolSetAttribute(q, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr) ||
	    cuMemPoolSetAttribute(q, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off) ||
	    cuMemAllocAsync(&a, N * 4, s) || cuMemAllocAsync(&gone, N * 4, s) ||
	    cuMemAllocFromPoolAsync(&b, N * 4, q, s) || cuMemAllocFromPoolAsync(&c, 1000, q, s) ||
	    cuMemsetD32Async(a, 0xaaaa0001, N, s) || cuMemsetD32Async(b, 0xbbbb0002, N, s) ||
	    cuMemFreeAsync(gone, s) || cuStreamSynchronize(s)) {
		printf("FATAL setup\n");
		return 1;
	}
	used = attr(q, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
	reserved = attr(dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
	printf("ready\n");
	fflush(stdout);
	/* Five minutes at most: a checkpoint, two moves and a stop take a
	 * minute on a loaded two-core machine. */
	wait_for_file(argv[1], 300);

	CHECK(holds(a, 0xaaaa0001, s));
	CHECK(holds(b, 0xbbbb0002, s));
	CHECK(!cuPointerGetAttribute(&who, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, b) && who == q);
	CHECK(attr(q, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == thr);
	CHECK(!cuMemPoolGetAttribute(q, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag) && !flag);
	CHECK(attr(q, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == used);
	CHECK(attr(dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == reserved);
	/* The cached block is there to be reused in its stream. */
	CHECK(!cuMemAllocAsync(&again, N * 4, s));
	CHECK(attr(dp, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == reserved);
	CHECK(!cuMemsetD32Async(again, 0xcccc0003, N, s) && holds(again, 0xcccc0003, s));
	CHECK(holds(a, 0xaaaa0001, s));
	CHECK(!cuMemFreeAsync(a, s) && !cuMemFreeAsync(b, s) && !cuMemFreeAsync(c, s) &&
	      !cuMemFreeAsync(again, s) && !cuStreamSynchronize(s));
	CHECK(!cuMemPoolTrimTo(q, 0) && attr(q, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
	CHECK(!cuMemPoolDestroy(q));
	printf("pool state: kept\n");
	return 0;
}
