// SPDX-License-Identifier: MIT
/*
 * The host backend's stream attributes, stream write/wait value, batches,
 * context events and prefetch (daemon/backend/host/host_streamops.c), driven through
 * struct vgpu_backend as the worker drives it: every check the driver
 * makes, the wait conditions (the cyclic >=, 64-bit NOR), and the wait
 * hook (a word written meanwhile ends the wait; a hook that gives up fails
 * it). One line per check; exit 0 when all pass, 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_check.h"
#include "vgpu/proto.h"

#define SIZE (2ull << 20)

static CUdeviceptr dev_alloc(void)
{
	const CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
	};
	CUmemAccessDesc acc = { .location = prop.location,
				.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h;
	CUdeviceptr p = 0;

	if (b.cuMemAddressReserve(&p, SIZE, 0, 0, 0) || b.cuMemCreate(&h, SIZE, &prop, 0) ||
	    b.cuMemMap(p, SIZE, 0, h, 0) || b.cuMemSetAccess(p, SIZE, &acc, 1))
		return 0;
	return p;
}

static CUresult set(CUstream s, CUstreamAttrID id, CUstreamAttrValue v)
{
	return b.cuStreamSetAttribute(s, id, &v);
}

static void test_attributes(CUstream s, CUstream t)
{
	CUstreamAttrValue v, g;

	EXPECT(CUDA_SUCCESS, b.cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &g),
	       "get the sync policy");
	CHECK((int)g.syncPolicy == -1, "a new stream has no policy of its own (-1, as the driver)");
	EXPECT(CUDA_SUCCESS, b.cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, &g),
	       "get the domain map");
	CHECK(g.memSyncDomainMap.default_ == 0 && g.memSyncDomainMap.remote == 1,
	      "a new stream's domain map is {0, 1}");

	memset(&v, 0, sizeof(v));
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, (CUstreamAttrID)999, v), "unknown attribute");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamGetAttribute(s, (CUstreamAttrID)999, &g),
	       "unknown attribute (get)");
	EXPECT(CUDA_ERROR_INVALID_VALUE,
	       set(s, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, v), "a launch-only attribute on a stream");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, NULL),
	       "a NULL value");
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v),
	       "sync policy 0");
	v.syncPolicy = (CUsynchronizationPolicy)5;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v),
	       "sync policy 5");
	v.syncPolicy = (CUsynchronizationPolicy)-1;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v),
	       "sync policy -1 (what a new stream answers) cannot be set");
	memset(&v, 0, sizeof(v));
	v.accessPolicyWindow.hitRatio = -0.1f;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v),
	       "hit ratio -0.1");
	v.accessPolicyWindow.hitRatio = NAN;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v),
	       "hit ratio NaN");
	v.accessPolicyWindow.hitRatio = 1.0f;
	v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_PERSISTING;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v),
	       "misses persisting");
	v.accessPolicyWindow.missProp = (CUaccessProperty)7;
	v.accessPolicyWindow.hitProp = (CUaccessProperty)7;
	EXPECT(CUDA_SUCCESS, set(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v),
	       "unknown properties are taken, as the driver takes them");
	v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_NORMAL;
	v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
	v.accessPolicyWindow.num_bytes = 134213632 + 1;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, v),
	       "a window beyond the device's maximum");
	memset(&v, 0, sizeof(v));
	v.memSyncDomainMap.remote = 4;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, v),
	       "domain 4 of 4");
	v.memSyncDomain = (CUlaunchMemSyncDomain)2;
	EXPECT(CUDA_ERROR_INVALID_VALUE, set(s, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, v),
	       "domain kind 2");

	memset(&v, 0, sizeof(v));
	v.priority = -9;
	EXPECT(CUDA_SUCCESS, set(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, v), "priority -9");
	EXPECT(CUDA_SUCCESS, b.cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, &g),
	       "get the priority");
	CHECK(g.priority == -5, "priority -9 clamped to -5 (got %d)", g.priority);
	EXPECT(CUDA_SUCCESS, set(NULL, CU_LAUNCH_ATTRIBUTE_PRIORITY, v),
	       "the NULL stream takes a priority (as the driver's)");
	EXPECT(CUDA_SUCCESS, b.cuStreamGetAttribute(NULL, CU_LAUNCH_ATTRIBUTE_PRIORITY, &g),
	       "get the NULL stream's priority");
	CHECK(g.priority == -5, "the NULL stream's priority -9 clamped to -5 (got %d)", g.priority);
	memset(&v, 0, sizeof(v));
	v.syncPolicy = CU_SYNC_POLICY_YIELD;
	EXPECT(CUDA_SUCCESS, set(NULL, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, v),
	       "the NULL stream's policy");
	EXPECT(CUDA_SUCCESS, b.cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &g),
	       "a stream's policy");
	CHECK((int)g.syncPolicy == -1, "is its own, not the NULL stream's");
	EXPECT(CUDA_SUCCESS, b.cuStreamCopyAttributes(t, NULL), "copy from the NULL stream");
	EXPECT(CUDA_SUCCESS, b.cuStreamGetAttribute(t, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &g),
	       "the copy's policy");
	CHECK(g.syncPolicy == CU_SYNC_POLICY_YIELD, "is the NULL stream's");
	EXPECT(CUDA_SUCCESS, b.cuStreamCopyAttributes(t, s), "copy from a stream");
	EXPECT(CUDA_SUCCESS, b.cuStreamGetAttribute(t, CU_LAUNCH_ATTRIBUTE_PRIORITY, &g),
	       "the copy's priority");
	CHECK(g.priority == -5, "is the source's (got %d)", g.priority);
}

static int hook_calls, hook_write_at;
static uint32_t *hook_word;

/* Writes the word on call hook_write_at (as a later stream would); gives
 * up after 100 calls. */
static bool hook(void *arg)
{
	(void)arg;
	if (++hook_calls == hook_write_at)
		__atomic_store_n(hook_word, 42, __ATOMIC_SEQ_CST);
	return hook_calls < 100;
}

static void test_words(CUstream s, CUdeviceptr p)
{
	uint32_t *w32 = (uint32_t *)(uintptr_t)p;
	uint64_t *w64 = (uint64_t *)(uintptr_t)(p + 8);

	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamWriteValue32_v2(s, p + 2, 1, 0), "misaligned");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamWriteValue64_v2(s, p + 4, 1, 0),
	       "64-bit on 4 bytes");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamWriteValue32_v2(s, p + SIZE, 1, 0),
	       "past the mapping");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamWriteValue32_v2(s, p, 1, 1),
	       "NO_MEMORY_BARRIER in v2");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamWaitValue32_v2(s, p, 1, 4), "condition 4");
	EXPECT(CUDA_ERROR_NOT_SUPPORTED,
	       b.cuStreamWaitValue32_v2(s, p, 1, CU_STREAM_WAIT_VALUE_FLUSH), "flush");
	EXPECT(CUDA_SUCCESS, b.cuStreamWriteValue32_v2(s, p, 1, 0), "write 1");
	EXPECT(CUDA_SUCCESS, b.cuStreamWriteValue64_v2(s, p + 8, 0xF0F0F0F0F0F0F0F0ull, 0),
	       "write 64");
	CHECK(*w32 == 1 && *w64 == 0xF0F0F0F0F0F0F0F0ull, "the words are written");
	/* Cyclic: 1 - 0xFFFFFFFF is 2 as an int32. */
	EXPECT(CUDA_SUCCESS, b.cuStreamWaitValue32_v2(s, p, 0xFFFFFFFF, CU_STREAM_WAIT_VALUE_GEQ),
	       ">= across the wrap holds");
	EXPECT(CUDA_SUCCESS, b.cuStreamWaitValue64_v2(s, p + 8, 0x0F0F0F0F0F0F0F0Eull,
						      CU_STREAM_WAIT_VALUE_NOR),
	       "64-bit NOR holds (bit 0 clear in both)");
	EXPECT(CUDA_SUCCESS, b.cuStreamWaitValue32_v2(s, p, 3, CU_STREAM_WAIT_VALUE_AND), "AND holds");

	/* Not holding: without a hook the wait cannot go on. */
	EXPECT(CUDA_ERROR_LAUNCH_FAILED, b.cuStreamWaitValue32_v2(s, p, 42, CU_STREAM_WAIT_VALUE_EQ),
	       "a wait that cannot hold, no hook");
	vgpu_host_set_wait_hook(hook, NULL);
	hook_word = w32;
	hook_calls = 0;
	hook_write_at = 3;
	EXPECT(CUDA_SUCCESS, b.cuStreamWaitValue32_v2(s, p, 42, CU_STREAM_WAIT_VALUE_EQ),
	       "a wait the hook's third call satisfies");
	CHECK(hook_calls == 3, "the hook ran 3 times (%d)", hook_calls);
	hook_calls = 0;
	hook_write_at = 0;
	EXPECT(CUDA_ERROR_LAUNCH_FAILED, b.cuStreamWaitValue32_v2(s, p, 7, CU_STREAM_WAIT_VALUE_EQ),
	       "a wait the hook gives up on");
	vgpu_host_set_wait_hook(NULL, NULL);
}

static void test_batches(CUstream s, CUdeviceptr p)
{
	CUstreamBatchMemOpParams op[3];
	uint32_t *w = (uint32_t *)(uintptr_t)(p + 64);

	memset(op, 0, sizeof(op));
	op[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	op[0].writeValue.address = p + 64;
	op[0].writeValue.value = 5;
	op[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
	op[2].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
	op[2].waitValue.address = p + 64;
	op[2].waitValue.value = 5;
	op[2].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
	*w = 0;
	EXPECT(CUDA_SUCCESS, b.cuStreamBatchMemOp_v2(s, 0, NULL, 0), "count 0 is nothing to do");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamBatchMemOp_v2(s, 0, NULL, 1),
	       "flags 1, checked before the count");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamBatchMemOp_v2(s, 256, op, 0),
	       "count 256 (must be less)");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamBatchMemOp_v2(s, 3, op, 1), "flags 1");
	op[1].memoryBarrier.flags = 2;
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamBatchMemOp_v2(s, 3, op, 0), "barrier kind 2");
	CHECK(*w == 0, "a refused batch writes nothing, not even before the bad operation");
	op[1].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
	EXPECT(CUDA_SUCCESS, b.cuStreamBatchMemOp_v2(s, 3, op, 0), "write, barrier, wait");
	CHECK(*w == 5, "the batch wrote");
	op[0].operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, b.cuStreamBatchMemOp_v2(s, 1, op, 0), "flush remote writes");
	op[0].flushRemoteWrites.flags = 1;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, b.cuStreamBatchMemOp_v2(s, 1, op, 0),
	       "flush remote writes with flags: the device is asked first");
}

static void test_rest(CUcontext ctx, CUstream s, CUdeviceptr p)
{
	CUmemLocation dev = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	CUmemLocation dev1 = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1 };
	CUevent ev;

	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemPrefetchAsync_v2(p, 4096, dev, 0, s),
	       "prefetch of memory that is not managed");
	EXPECT(CUDA_ERROR_INVALID_DEVICE, b.cuMemPrefetchAsync_v2(p, 4096, dev1, 0, s),
	       "prefetch to device 1");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemPrefetchAsync_v2(p, 4096, dev, 1, s),
	       "prefetch flags");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&ev, 0), "event");
	EXPECT(CUDA_SUCCESS, b.cuCtxRecordEvent(ctx, ev), "record on the context");
	EXPECT(CUDA_SUCCESS, b.cuEventQuery(ev), "and it is complete");
	EXPECT(CUDA_SUCCESS, b.cuCtxWaitEvent(ctx, ev), "the context waits on it");
	EXPECT(CUDA_SUCCESS, b.cuEventDestroy_v2(ev), "destroy it");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuCtxRecordEvent(ctx, ev), "record a destroyed event");
}

static void test_two_contexts(CUcontext ctx, CUstream s)
{
	CUcontext other;
	CUstream o;
	CUevent ev;

	EXPECT(CUDA_SUCCESS, b.cuCtxCreate_v4(&other, NULL, 0, 0), "a second context");
	EXPECT(CUDA_SUCCESS, b.cuStreamCreateWithPriority(&o, 0, 0), "a stream in it");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&ev, 0), "an event in it");
	EXPECT(CUDA_SUCCESS, b.cuCtxSetCurrent(ctx), "back to the first");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamCopyAttributes(s, o),
	       "attributes copied across contexts");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuCtxRecordEvent(ctx, ev),
	       "a context records another's event");
	EXPECT(CUDA_SUCCESS, b.cuCtxDestroy_v2(other), "the second context goes");
}

int main(void)
{
	CUcontext ctx;
	CUstream s, t;
	CUdeviceptr p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("VGPU_HOST_DEVICE_MEM", "64M", 1);
	if (vgpu_backend_host_open(&b) || b.cuInit(0) || b.cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    b.cuCtxSetCurrent(ctx) || b.cuStreamCreateWithPriority(&s, 0, 0) ||
	    b.cuStreamCreateWithPriority(&t, CU_STREAM_NON_BLOCKING, 0) || !(p = dev_alloc())) {
		printf("FAIL - set up the host backend\n");
		return 1;
	}
	test_attributes(s, t);
	test_words(s, p);
	test_batches(s, p);
	test_rest(ctx, s, p);
	test_two_contexts(ctx, s);
	EXPECT(CUDA_SUCCESS, b.cuStreamDestroy_v2(s), "destroy the stream");
	EXPECT(CUDA_ERROR_INVALID_HANDLE,
	       b.cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, &(CUstreamAttrValue){ 0 }),
	       "a destroyed stream's attribute");
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
