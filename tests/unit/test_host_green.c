// SPDX-License-Identifier: MIT
/*
 * The host backend's green contexts (daemon/backend/host/host_green.c),
 * driven through struct vgpu_backend as the worker drives it: a green
 * context holds its descriptor's SMs (the union of overlapping ones), its
 * context is a context of its own that cuCtxDestroy refuses, it retains
 * the primary context, its streams live in it, events are recorded on it
 * and waited on by it, and every handle is checked. One line per check;
 * exit 0 when all pass, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend_check.h"

static CUgreenCtx make(CUdevResource *res, unsigned int n, CUresult *rc)
{
	CUdevResourceDesc desc;
	CUgreenCtx g = NULL;

	*rc = b.cuDevResourceGenerateDesc(&desc, res, n);
	if (!*rc)
		*rc = b.cuGreenCtxCreate(&g, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM);
	return g;
}

int main(void)
{
	CUdevResource dev, groups[4], rest, r, both[2];
	CUdevResourceDesc desc;
	CUcontext primary, gctx, cur;
	CUgreenCtx g, g2;
	CUstream s, ps;
	CUevent ev, pev, other_ev;
	CUcontext other;
	unsigned int n = 4;
	CUresult rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("VGPU_HOST_DEVICE_MEM", "64M", 1);
	if (vgpu_backend_host_open(&b) || b.cuInit(0) || b.cuDevicePrimaryCtxRetain(&primary, 0) ||
	    b.cuCtxSetCurrent(primary) || b.cuDeviceGetDevResource(0, &dev, CU_DEV_RESOURCE_TYPE_SM) ||
	    b.cuDevSmResourceSplitByCount(groups, &n, &dev, &rest, 0, 16) || n < 2) {
		printf("FAIL - set up the host backend\n");
		return 1;
	}

	g = make(groups, 1, &rc);
	EXPECT(CUDA_SUCCESS, rc, "a green context of one group");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxGetDevResource(g, &r, CU_DEV_RESOURCE_TYPE_SM),
	       "its resource");
	CHECK(r.sm.smCount == groups[0].sm.smCount, "it has the group's %u SMs (%u)",
	      groups[0].sm.smCount, r.sm.smCount);
	EXPECT(CUDA_ERROR_INVALID_RESOURCE_TYPE,
	       b.cuGreenCtxGetDevResource(g, &r, CU_DEV_RESOURCE_TYPE_INVALID), "another type");
	n = 0;
	EXPECT(CUDA_SUCCESS, b.cuDevSmResourceSplitByCount(NULL, &n, &r, NULL, 0, 8),
	       "its SMs split again");
	CHECK(n == groups[0].sm.smCount / 8, "into %u groups of 8 (%u)", groups[0].sm.smCount / 8, n);
	EXPECT(CUDA_SUCCESS, b.cuCtxFromGreenCtx(&gctx, g), "it converts to a context");
	CHECK(gctx && gctx != primary, "a context of its own");
	EXPECT(CUDA_SUCCESS, b.cuCtxGetDevResource(gctx, &r, CU_DEV_RESOURCE_TYPE_SM),
	       "that context's resource");
	CHECK(r.sm.smCount == groups[0].sm.smCount, "is the group's");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuCtxDestroy_v2(gctx), "cuCtxDestroy refuses it");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuCtxFromGreenCtx(NULL, g), "no result pointer");

	/* Streams and events. */
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuGreenCtxStreamCreate(&s, g, 0, 0),
	       "a stream must be non-blocking");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0),
	       "a stream of it, the primary current");
	EXPECT(CUDA_SUCCESS, b.cuCtxGetCurrent(&cur), "the current context");
	CHECK(cur == primary, "is still the primary");
	EXPECT(CUDA_SUCCESS, b.cuStreamCreateWithPriority(&ps, 0, 0), "a stream of the primary");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&pev, 0), "an event of the primary");
	EXPECT(CUDA_SUCCESS, b.cuCtxSetCurrent(gctx), "its context made current");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&ev, 0), "an event in it");
	EXPECT(CUDA_SUCCESS, b.cuEventRecordWithFlags(ev, s, 0), "recorded on its stream");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuEventRecordWithFlags(pev, s, 0),
	       "the primary's event on its stream");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxRecordEvent(g, ev), "recorded on it");
	EXPECT(CUDA_SUCCESS, b.cuEventQuery(ev), "and complete");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxRecordEvent(g, pev), "the primary's event recorded on it");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxWaitEvent(g, pev), "it waits on the primary's event");
	EXPECT(CUDA_SUCCESS, b.cuCtxCreate_v4(&other, NULL, 0, 0), "another context");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&other_ev, 0), "an event of that one");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuGreenCtxRecordEvent(g, other_ev),
	       "another context's event is not recorded on it");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxWaitEvent(g, other_ev), "but waited on");
	EXPECT(CUDA_SUCCESS, b.cuCtxDestroy_v2(other), "that context goes");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuGreenCtxWaitEvent(g, other_ev),
	       "a destroyed event is not waited on");
	EXPECT(CUDA_SUCCESS, b.cuCtxSetCurrent(primary), "back to the primary");

	/* Overlapping resources: the union of their SMs. */
	both[0] = groups[0];
	both[1] = dev;
	g2 = make(both, 2, &rc);
	EXPECT(CUDA_SUCCESS, rc, "a green context of a group and the whole device");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxGetDevResource(g2, &r, CU_DEV_RESOURCE_TYPE_SM),
	       "its resource");
	CHECK(r.sm.smCount == dev.sm.smCount, "has the device's SMs once (%u)", r.sm.smCount);
	EXPECT(CUDA_SUCCESS, b.cuDevResourceGenerateDesc(&desc, groups, 1), "a descriptor");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuGreenCtxCreate(&g2, desc, 0, 0),
	       "no default stream flag");
	EXPECT(CUDA_ERROR_INVALID_DEVICE,
	       b.cuGreenCtxCreate(&g2, desc, 1, CU_GREEN_CTX_DEFAULT_STREAM), "a second device");

	/* The primary context is retained while a green context lives. */
	EXPECT(CUDA_SUCCESS, b.cuDevicePrimaryCtxRelease_v2(0), "the program's retain goes");
	EXPECT(CUDA_SUCCESS, b.cuEventQuery(pev), "the primary's objects stay");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxDestroy(g), "the green context goes");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuStreamQuery(s), "its stream with it");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuGreenCtxDestroy(g), "twice");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuCtxFromGreenCtx(&gctx, g), "a destroyed one");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuGreenCtxGetDevResource(g, &r, CU_DEV_RESOURCE_TYPE_SM),
	       "a destroyed one's resource");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0),
	       "a destroyed one's stream");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuGreenCtxRecordEvent(g, pev),
	       "a destroyed one records");
	EXPECT(CUDA_SUCCESS, b.cuEventQuery(pev), "the primary lives on (the second holds it)");
	EXPECT(CUDA_SUCCESS, b.cuGreenCtxDestroy(g2), "the second goes");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuEventQuery(pev), "and the primary with it");
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
