// SPDX-License-Identifier: MIT
/*
 * Stream-level driver calls the CUDA 13 libraries use: stream attributes
 * (set, get, copy), stream write/wait value and batch memory operations
 * (a waiter that only a later write on another stream releases), context
 * record/wait event, prefetch of memory that is not managed, peer access
 * on one device, the profiler calls, and bad input refused.
 *
 * One line per check on stdout, nothing that depends on addresses, timing
 * or the backend (an answer the driver alone decides is printed by name, so
 * the GPU suite compares it with a native run's); exit 0 pass, 1 fail.
 * The answers asserted are the driver's (580, H100), probed natively. Where
 * the driver crashes on bad input (a NULL attribute value), or takes what
 * vgpu must refuse (an access window on memory not the program's), the
 * check runs under vgpu only and reports on stderr.
 *
 *   streamops_driver              the checks
 *   streamops_driver ckpt GOFILE  set attributes on a stream and the NULL
 *                                 stream's sync policy, print "ready",
 *                                 wait for GOFILE (the session is suspended
 *                                 and restored meanwhile), check them again
 *   streamops_driver stall        a stream waits on a word nothing writes;
 *                                 prints "waiting", then synchronizes with
 *                                 it (for ever: the test kills it)
 */
#include <cuda.h>
#include <cudaProfiler.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver_check.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* A host function that takes its time, so that what follows it on its
 * stream comes late. */
static void CUDA_CB slow(void *arg)
{
	(void)arg;
	sleep_ms(100);
}

/* A host function that sets a word of pinned memory from the CPU. */
static void CUDA_CB cpu_write(void *arg)
{
	sleep_ms(50);
	__atomic_store_n((volatile uint32_t *)arg, 3, __ATOMIC_SEQ_CST);
}

static int ran_late;

static void CUDA_CB mark(void *arg)
{
	(void)arg;
	sleep_ms(100);
	__atomic_store_n(&ran_late, 1, __ATOMIC_SEQ_CST);
}

static CUresult set_attr(CUstream s, CUstreamAttrID id, CUstreamAttrValue v)
{
	return cuStreamSetAttribute(s, id, &v);
}

/* The attributes the checkpoint case sets, and checks after the restore. */
static CUresult set_all(CUstream s, CUdeviceptr win)
{
	CUstreamAttrValue v;
	CUresult rc;

	memset(&v, 0, sizeof(v));
	v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)win;
	v.accessPolicyWindow.num_bytes = 1 << 20;
	v.accessPolicyWindow.hitRatio = 0.5f;
	v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
	v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
	rc = set_attr(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v);
	memset(&v, 0, sizeof(v));
	v.syncPolicy = CU_SYNC_POLICY_SPIN;
	if (!rc)
		rc = set_attr(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v);
	memset(&v, 0, sizeof(v));
	v.priority = -3;
	if (!rc)
		rc = set_attr(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, v);
	memset(&v, 0, sizeof(v));
	v.memSyncDomainMap.default_ = 1;
	v.memSyncDomainMap.remote = 0;
	if (!rc)
		rc = set_attr(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, v);
	memset(&v, 0, sizeof(v));
	v.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
	if (!rc)
		rc = set_attr(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, v);
	return rc;
}

/* The attributes set_all sets. */
static bool has_all(CUstream s, CUdeviceptr win, CUresult *rc)
{
	CUstreamAttrValue w, p, sp, m, d;
	int prio = 0;

	*rc = cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &w);
	if (!*rc)
		*rc = cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &sp);
	if (!*rc)
		*rc = cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, &p);
	if (!*rc)
		*rc = cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, &m);
	if (!*rc)
		*rc = cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &d);
	if (!*rc)
		*rc = cuStreamGetPriority(s, &prio);
	return !*rc && w.accessPolicyWindow.base_ptr == (void *)(uintptr_t)win &&
	       w.accessPolicyWindow.num_bytes == 1 << 20 &&
	       w.accessPolicyWindow.hitRatio == 0.5f &&
	       w.accessPolicyWindow.hitProp == CU_ACCESS_PROPERTY_PERSISTING &&
	       w.accessPolicyWindow.missProp == CU_ACCESS_PROPERTY_STREAMING &&
	       sp.syncPolicy == CU_SYNC_POLICY_SPIN &&
	       p.priority == -3 && prio == -3 &&
	       m.memSyncDomainMap.default_ == 1 && m.memSyncDomainMap.remote == 0 &&
	       d.memSyncDomain == CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
}

static void attributes(CUstream s1, CUstream s2, CUdeviceptr win)
{
	CUstreamAttrValue v;
	int local = 0, prio = 0, least = 0, greatest = 0;
	CUresult rc;

	/* The driver answers -1, no policy of the stream's own (the
	 * context's applies), for every stream, the NULL one too. */
	rc = cuStreamGetAttribute(s1, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v);
	expect(!rc && (int)v.syncPolicy == -1, "a new stream has no sync policy of its own (-1)", rc);
	rc = cuStreamGetAttribute(NULL, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v);
	expect(!rc && (int)v.syncPolicy == -1, "nor has the NULL stream", rc);
	rc = cuStreamGetAttribute(s1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v);
	expect(!rc && v.accessPolicyWindow.num_bytes == 0, "a new stream has no access window", rc);
	rc = cuStreamGetAttribute(s1, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, &v);
	expect(!rc && v.memSyncDomainMap.default_ == 0 && v.memSyncDomainMap.remote == 1,
	       "a new stream maps the default domain to 0, the remote one to 1", rc);
	rc = cuStreamGetAttribute(s1, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &v);
	expect(!rc && v.memSyncDomain == CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT,
	       "a new stream is in the default domain", rc);

	rc = set_all(s1, win);
	expect(!rc, "window, policy, priority, domain map and domain are set", rc);
	expect(has_all(s1, win, &rc), "and read back as set", rc);
	/* The copy takes the priority too. */
	rc = cuStreamCopyAttributes(s2, s1);
	expect(!rc && has_all(s2, win, &rc),
	       "copied to another stream, they are the same, the priority too", rc);

	/* A priority out of the range is clamped to it, as at creation. */
	rc = cuCtxGetStreamPriorityRange(&least, &greatest);
	memset(&v, 0, sizeof(v));
	v.priority = -100;
	if (!rc)
		rc = set_attr(s2, CU_LAUNCH_ATTRIBUTE_PRIORITY, v);
	prio = 0;
	if (!rc)
		rc = cuStreamGetPriority(s2, &prio);
	expect(!rc && prio == greatest, "a priority of -100 is clamped to the greatest", rc);
	v.priority = 100;
	rc = set_attr(s2, CU_LAUNCH_ATTRIBUTE_PRIORITY, v);
	prio = 1;
	if (!rc)
		rc = cuStreamGetPriority(s2, &prio);
	expect(!rc && prio == least, "a priority of 100 is clamped to the least", rc);

	/* The legacy NULL stream takes a priority too. */
	memset(&v, 0, sizeof(v));
	v.priority = -3;
	rc = set_attr(NULL, CU_LAUNCH_ATTRIBUTE_PRIORITY, v);
	prio = 0;
	if (!rc)
		rc = cuStreamGetPriority(NULL, &prio);
	memset(&v, 0, sizeof(v));
	if (!rc)
		rc = cuStreamGetAttribute(NULL, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
	expect(!rc && prio == -3 && v.priority == -3, "the NULL stream takes a priority", rc);

	memset(&v, 0, sizeof(v));
	rc = set_attr(s1, (CUstreamAttrID)999, v);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown attribute is refused (set)", rc);
	rc = cuStreamGetAttribute(s1, (CUstreamAttrID)999, &v);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown attribute is refused (get)", rc);
	v.syncPolicy = (CUsynchronizationPolicy)9;
	rc = set_attr(s1, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown sync policy is refused", rc);
	memset(&v, 0, sizeof(v));
	v.memSyncDomain = (CUlaunchMemSyncDomain)7;
	rc = set_attr(s1, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, v);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown domain is refused", rc);
	memset(&v, 0, sizeof(v));
	v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)win;
	v.accessPolicyWindow.num_bytes = 4096;
	v.accessPolicyWindow.hitRatio = 2.0f;
	rc = set_attr(s1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a hit ratio above 1 is refused", rc);
	v.accessPolicyWindow.hitRatio = 0.5f;
	v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_PERSISTING;
	rc = set_attr(s1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "misses that persist are refused", rc);
	v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
	v.accessPolicyWindow.num_bytes = (size_t)1 << 30;
	rc = set_attr(s1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a window above the device's maximum is refused", rc);
	expect(has_all(s1, win, &rc), "refused values change nothing", rc);
	/* The driver dereferences a NULL value of a known attribute (it
	 * crashes): vgpu refuses it. */
	if (under_vgpu()) {
		rc = cuStreamSetAttribute(s1, CU_LAUNCH_ATTRIBUTE_PRIORITY, NULL);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a NULL value is refused (set)", rc);
		rc = cuStreamGetAttribute(s1, CU_LAUNCH_ATTRIBUTE_PRIORITY, NULL);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a NULL value is refused (get)", rc);
	}
	rc = cuStreamGetAttribute(s1, (CUstreamAttrID)999, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown attribute is refused before its value",
	       rc);

	/* The driver takes any address in a window (it is a hint); vgpu
	 * takes only the program's memory. */
	if (under_vgpu()) {
		memset(&v, 0, sizeof(v));
		v.accessPolicyWindow.base_ptr = &local;
		v.accessPolicyWindow.num_bytes = 4096;
		v.accessPolicyWindow.hitRatio = 1.0f;
		rc = set_attr(s1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
			    "an access window on memory not the program's is refused", rc);
	}
}

static CUresult read_word(CUdeviceptr p, uint64_t *out, size_t size)
{
	*out = 0;
	return cuMemcpyDtoH(out, p, size);
}

static CUresult order_through_event(CUstream s1, CUstream s2, CUdeviceptr flag,
				    CUdeviceptr data, uint32_t *pinned)
{
	CUevent before, after;
	CUstream s3;
	CUresult rc = cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING);

	if (!rc)
		rc = cuEventCreate(&before, CU_EVENT_DISABLE_TIMING);
	if (!rc)
		rc = cuEventCreate(&after, CU_EVENT_DISABLE_TIMING);
	if (!rc)
		rc = cuMemsetD32(flag, 0, 1);
	if (!rc)
		rc = cuMemsetD32(data + 64, 0, 1);
	pinned[2] = 0;
	if (!rc)
		rc = cuEventRecord(before, s2);
	if (!rc)
		rc = cuStreamWaitValue32(s1, flag, 1, CU_STREAM_WAIT_VALUE_EQ);
	if (!rc)
		rc = cuMemsetD32Async(data + 64, 0x77, 1, s1);
	if (!rc)
		rc = cuEventRecord(after, s1);
	if (!rc)
		rc = cuStreamWaitEvent(s3, after, 0);
	if (!rc)
		rc = cuMemcpyDtoHAsync(&pinned[2], data + 64, 4, s3);
	if (!rc)
		rc = cuEventSynchronize(before);
	if (!rc)
		rc = cuLaunchHostFunc(s2, slow, NULL);
	if (!rc)
		rc = cuStreamWriteValue32(s2, flag, 1, 0);
	if (!rc)
		rc = cuStreamSynchronize(s3);
	cuEventDestroy(before);
	cuEventDestroy(after);
	cuStreamDestroy(s3);
	return rc;
}

/* Whether the device flushes remote writes (CU_STREAM_WAIT_VALUE_FLUSH and
 * the batch operation); the driver answers NOT_SUPPORTED where not. */
static int can_flush;

static void write_wait(CUstream s1, CUstream s2, CUdeviceptr flag, CUdeviceptr data,
		       uint32_t *pinned, CUdeviceptr pinned_dev)
{
	uint64_t got = 0;
	uint32_t local = 0;
	CUresult rc;

	rc = cuMemsetD32(flag, 0, 4);
	if (!rc)
		rc = cuMemsetD32(data, 0, 1);
	pinned[0] = 0;
	/* The waiter first: only the writer, later and on another stream,
	 * lets it go on; its copy must see the writer's memset. */
	if (!rc)
		rc = cuStreamWaitValue32(s1, flag, 1, CU_STREAM_WAIT_VALUE_GEQ);
	if (!rc)
		rc = cuMemcpyDtoHAsync(&pinned[1], data, 4, s1);
	if (!rc)
		rc = cuLaunchHostFunc(s2, slow, NULL);
	if (!rc)
		rc = cuMemsetD32Async(data, 0xC0FFEE, 1, s2);
	if (!rc)
		rc = cuStreamWriteValue32(s2, flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT);
	if (!rc)
		rc = cuStreamSynchronize(s1);
	expect(!rc && pinned[1] == 0xC0FFEE,
	       "a waiter goes on once another stream writes, after that stream's work", rc);

	/* Through an event: a third stream waits on an event the waiter
	 * records after its wait; an event recorded before is synchronized
	 * with meanwhile, from this same thread. */
	if (!rc)
		rc = order_through_event(s1, s2, flag, data, pinned);
	expect(!rc && pinned[2] == 0x77,
	       "a stream waiting on the waiter's event goes on after the write too", rc);

	/* 64-bit, equality, written later on the other stream. */
	if (!rc)
		rc = cuStreamWaitValue64(s1, flag + 8, 0x500000005ull, CU_STREAM_WAIT_VALUE_EQ);
	if (!rc)
		rc = cuStreamWriteValue32(s1, flag, 7, 0);
	if (!rc)
		rc = cuStreamWriteValue64(s2, flag + 8, 0x500000005ull, 0);
	if (!rc)
		rc = cuStreamSynchronize(s1);
	if (!rc)
		rc = read_word(flag, &got, 4);
	expect(!rc && got == 7, "a 64-bit equality wait, then a write behind it", rc);

	/* Conditions that hold at once: AND and NOR (the word is 7). */
	if (!rc)
		rc = cuStreamWaitValue32(s1, flag, 2, CU_STREAM_WAIT_VALUE_AND);
	if (!rc)
		rc = cuStreamWaitValue32(s1, flag, 8, CU_STREAM_WAIT_VALUE_NOR);
	if (!rc)
		rc = cuStreamSynchronize(s1);
	expect(!rc, "AND and NOR waits that hold pass", rc);

	/* A word of pinned host memory the CPU writes (a host function). */
	if (!rc)
		rc = cuStreamWaitValue32(s1, pinned_dev, 3, CU_STREAM_WAIT_VALUE_EQ);
	if (!rc)
		rc = cuMemsetD32Async(data, 0xABC, 1, s1);
	if (!rc)
		rc = cuLaunchHostFunc(s2, cpu_write, pinned);
	if (!rc)
		rc = cuStreamSynchronize(s1);
	if (!rc)
		rc = read_word(data, &got, 4);
	expect(!rc && got == 0xABC, "a wait on pinned memory the CPU writes", rc);

	rc = cuStreamWriteValue32(s1, flag + 2, 1, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a misaligned word is refused", rc);
	rc = cuStreamWaitValue64(s1, flag + 4, 1, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a 64-bit word 4-aligned is refused", rc);
	rc = cuStreamWaitValue32(s1, flag, 1, 0x7);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown wait condition is refused", rc);
	rc = cuStreamWriteValue32(s1, flag, 1, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "NO_MEMORY_BARRIER is refused by the v2 API", rc);
	rc = cuStreamWriteValue32(s1, 0, 1, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a write to address 0 is refused", rc);
	rc = cuStreamWaitValue32(s1, flag, 0, CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_FLUSH);
	expect(rc == (can_flush ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED),
	       "a wait that flushes remote writes is refused where the device cannot", rc);
	rc = cuStreamWriteValue32(s1, (CUdeviceptr)(uintptr_t)&local, 1, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a write to memory not the program's is refused", rc);
	rc = cuStreamWaitValue32(s1, (CUdeviceptr)(uintptr_t)&local, 1, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a wait on memory not the program's is refused", rc);
	rc = cuStreamSynchronize(s1);
	expect(!rc, "the stream is still usable", rc);
}

static void batches(CUstream s1, CUdeviceptr flag)
{
	static CUstreamBatchMemOpParams many[256];
	CUstreamBatchMemOpParams op[4], one;
	uint64_t a = 0, b = 0;
	int local = 0;
	CUresult rc;

	memset(op, 0, sizeof(op));
	op[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	op[0].writeValue.address = flag;
	op[0].writeValue.value = 11;
	op[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
	op[1].writeValue.address = flag + 8;
	op[1].writeValue.value64 = 0x1200000012ull;
	op[2].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
	op[2].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
	op[3].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
	op[3].waitValue.address = flag;
	op[3].waitValue.value = 11;
	op[3].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
	rc = cuStreamBatchMemOp(s1, 4, op, 0);
	if (!rc)
		rc = cuStreamSynchronize(s1);
	if (!rc)
		rc = read_word(flag, &a, 4);
	if (!rc)
		rc = read_word(flag + 8, &b, 8);
	expect(!rc && a == 11 && b == 0x1200000012ull, "a batch writes, fences and waits", rc);

	rc = cuStreamBatchMemOp(s1, 0, NULL, 0);
	expect(rc == CUDA_SUCCESS, "an empty batch does nothing", rc);
	rc = cuStreamBatchMemOp(s1, 4, op, 1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "batch flags are refused", rc);
	rc = cuStreamBatchMemOp(s1, 0, NULL, 1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "flags are refused in an empty batch too", rc);
	/* "Must be less than 256." */
	for (int i = 0; i < 256; i++)
		many[i] = op[1];
	rc = cuStreamBatchMemOp(s1, 256, many, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a batch of 256 operations is refused", rc);
	rc = cuStreamBatchMemOp(s1, 255, many, 0);
	if (!rc)
		rc = cuStreamSynchronize(s1);
	expect(!rc, "one of 255 runs", rc);
	one = op[2];
	one.memoryBarrier.flags = 2;
	rc = cuStreamBatchMemOp(s1, 1, &one, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown barrier scope is refused", rc);
	memset(&one, 0, sizeof(one));
	one.flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
	rc = cuStreamBatchMemOp(s1, 1, &one, 0);
	expect(rc == (can_flush ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED),
	       "a flush of remote writes is refused where the device cannot", rc);
	one = op[0];
	one.writeValue.flags = CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
	rc = cuStreamBatchMemOp(s1, 1, &one, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "NO_MEMORY_BARRIER is refused in a v2 batch", rc);
	op[0].operation = (CUstreamBatchMemOpType)99;
	rc = cuStreamBatchMemOp(s1, 4, op, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown operation is refused", rc);
	op[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	op[0].writeValue.address = (CUdeviceptr)(uintptr_t)&local;
	rc = cuStreamBatchMemOp(s1, 1, op, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a batch writing memory not the program's is refused",
	       rc);
	rc = cuStreamSynchronize(s1);
	expect(!rc, "the stream is still usable after refused batches", rc);
}

static void ctx_events(CUcontext ctx, CUstream s1)
{
	CUevent ev;
	CUresult rc = cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);

	__atomic_store_n(&ran_late, 0, __ATOMIC_SEQ_CST);
	if (!rc)
		rc = cuLaunchHostFunc(s1, mark, NULL);
	if (!rc)
		rc = cuCtxRecordEvent(ctx, ev);
	if (!rc)
		rc = cuEventSynchronize(ev);
	expect(!rc && __atomic_load_n(&ran_late, __ATOMIC_SEQ_CST),
	       "an event recorded on the context follows every stream's work", rc);
	rc = cuCtxWaitEvent(ctx, ev);
	if (!rc)
		rc = cuCtxSynchronize();
	expect(!rc, "the context waits on an event", rc);
	cuEventDestroy(ev);
}

static void prefetch(CUstream s1, CUdeviceptr data)
{
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	CUdeviceptr ptrs[2] = { data, data + 64 };
	size_t sizes[2] = { 64, 64 }, idx[2] = { 0, 0 };
	int local = 0;
	CUresult rc;

	rc = cuMemPrefetchAsync(data, 4096, loc, 0, s1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "memory that is not managed is not prefetched", rc);
	loc.id = 4242;
	rc = cuMemPrefetchAsync(data, 4096, loc, 0, s1);
	expect(rc == CUDA_ERROR_INVALID_DEVICE, "nor to an unknown device", rc);
	loc.id = 0;
	rc = cuMemPrefetchAsync((CUdeviceptr)(uintptr_t)&local, 4, loc, 0, s1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "nor memory not the program's", rc);
	rc = cuMemPrefetchBatchAsync(ptrs, sizes, 2, &loc, idx, 2, 0, s1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a batch whose location indices do not rise is refused",
	       rc);
	rc = cuStreamSynchronize(s1);
	expect(!rc, "the stream is still usable after refused prefetches", rc);
}

static void peers(CUcontext ctx, CUdevice dev)
{
	int can = -1, v = -1;
	CUresult rc;

	rc = cuDeviceCanAccessPeer(&can, dev, dev);
	expect(!rc && can == 0, "a device is not its own peer", rc);
	rc = cuDeviceCanAccessPeer(&can, dev, 4242);
	expect(rc == CUDA_ERROR_INVALID_DEVICE, "an unknown peer device is refused", rc);
	rc = cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev, dev);
	expect(rc == CUDA_ERROR_INVALID_DEVICE, "P2P attributes of one device are refused", rc);
	{
		CUatomicOperation op = CU_ATOMIC_OPERATION_INTEGER_ADD;
		unsigned int caps = 7;

		rc = cuDeviceGetP2PAtomicCapabilities(&caps, &op, 1, dev, dev);
		expect(rc == CUDA_ERROR_INVALID_DEVICE, "P2P atomics of one device are refused", rc);
	}
	rc = cuCtxEnablePeerAccess(ctx, 0);
	expect(rc == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
	       "peer access to a context of the same device is unsupported", rc);
	rc = cuCtxEnablePeerAccess(ctx, 1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "peer access flags are refused", rc);
	rc = cuCtxDisablePeerAccess(ctx);
	expect(rc == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access never enabled is not disabled",
	       rc);
	rc = cuCtxEnablePeerAccess(NULL, 0);
	expect(rc == CUDA_ERROR_INVALID_CONTEXT, "peer access to no context is refused", rc);
}

static void profiler(void)
{
	CUresult rc = cuProfilerStart();

	expect(!rc, "the profiler starts", rc);
	rc = cuProfilerStop();
	expect(!rc, "and stops", rc);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	rc = cuProfilerInitialize("none", "none", CU_OUT_CSV);
#pragma GCC diagnostic pop
	expect(rc == CUDA_ERROR_NOT_SUPPORTED, "cuProfilerInitialize is gone since CUDA 12", rc);
}

static int ckpt(CUstream s, CUdeviceptr win, const char *go)
{
	CUstreamAttrValue v = { .syncPolicy = CU_SYNC_POLICY_YIELD };
	CUresult rc = set_all(s, win);

	if (!rc)
		rc = set_attr(NULL, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v);
	memset(&v, 0, sizeof(v));
	v.priority = -2;
	if (!rc)
		rc = set_attr(NULL, CU_LAUNCH_ATTRIBUTE_PRIORITY, v);
	expect(!rc, "attributes set before the checkpoint", rc);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < 1200 && access(go, F_OK); i++)
		sleep_ms(100);
	expect(has_all(s, win, &rc), "attributes the same after the restore", rc);
	memset(&v, 0, sizeof(v));
	rc = cuStreamGetAttribute(NULL, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v);
	expect(!rc && v.syncPolicy == CU_SYNC_POLICY_YIELD, "and the NULL stream's", rc);
	/* Asked of the worker: the runtime's own copy outlives any restore. */
	memset(&v, 0, sizeof(v));
	rc = cuStreamGetAttribute(NULL, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
	expect(!rc && v.priority == -2, "the NULL stream's priority too", rc);
	rc = cuStreamSynchronize(s);
	expect(!rc, "the stream works after the restore", rc);
	return checks_done("streamops_driver");
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUdevice dev;
	CUstream s1, s2;
	CUdeviceptr flag, data, pinned_dev;
	uint32_t *pinned;

	/* Line by line, so that what a crash leaves shows where it came. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING) ||
	    cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING) || cuMemAlloc(&flag, 4096) ||
	    cuMemAlloc(&data, 4 << 20) ||
	    cuMemHostAlloc((void **)&pinned, 4096, CU_MEMHOSTALLOC_DEVICEMAP) ||
	    cuMemHostGetDevicePointer(&pinned_dev, pinned, 0)) {
		printf("FATAL setup\n");
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "ckpt"))
		return ckpt(s1, data, argv[2]);
	if (argc == 2 && !strcmp(argv[1], "stall")) {
		if (cuMemsetD32(flag, 0, 1) || cuStreamWaitValue32(s1, flag, 1, CU_STREAM_WAIT_VALUE_EQ))
			return 1;
		printf("waiting\n");
		fflush(stdout);
		cuStreamSynchronize(s1);
		return 1;
	}
	if (cuDeviceGetAttribute(&can_flush, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, dev)) {
		printf("FATAL setup\n");
		return 1;
	}
	attributes(s1, s2, data);
	write_wait(s1, s2, flag, data, pinned, pinned_dev);
	batches(s1, flag);
	ctx_events(ctx, s1);
	prefetch(s1, data);
	peers(ctx, dev);
	profiler();
	return checks_done("streamops_driver");
}
