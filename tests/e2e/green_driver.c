// SPDX-License-Identifier: MIT
/*
 * Device resources and green contexts: the device's and the context's SMs
 * match the device attribute, splits add up and honour the minimum,
 * descriptors are made from one split and across two, and bad input is
 * refused as the driver (580, an H100) does, which is not always as
 * documented (see each check). Then green contexts: one made of a group
 * has the group's SMs (itself and its context), an id of its own, streams
 * of its own that name it, a kernel runs on them, events are recorded on
 * it and waited on by it, a second one is another.
 *
 * "green_driver hold GO": a session holding a green context that waits
 * for the file GO (tests/e2e/run green_ckpt: checkpoints are refused).
 *
 * One line per check on stdout, nothing that depends on the device or the
 * backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

/* *p = v on @stream, from a module loaded in the current context. */
static CUresult poke(CUfunction f, CUstream stream, CUdeviceptr p, unsigned int v)
{
	void *args[] = { &p, &v };

	return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL);
}

static unsigned int peek(CUdeviceptr p)
{
	unsigned int v = 0;

	return cuMemcpyDtoH(&v, p, sizeof(v)) ? ~0u : v;
}

/* A green context of @group, made current, a kernel launched on a stream
 * of its own; events recorded on it and waited on by it. */
static void green_checks(CUdevice dev, const CUdevResource *group, const CUdevResource *other)
{
	CUgreenCtx green = NULL, green2 = NULL, found = NULL;
	CUcontext gctx = NULL, got = NULL;
	CUdevResource gr, cr, g2r;
	CUdevResourceDesc desc;
	CUstream gs = NULL, ps = NULL;
	CUevent ev = NULL, pev = NULL;
	CUmodule mod = NULL;
	CUfunction poke_fn = NULL;
	CUdeviceptr word = 0;
	unsigned long long id = 0, id2 = 0, cur_id = 0;
	unsigned int n = 0;
	CUresult rc;

	MUST(cuDevResourceGenerateDesc(&desc, (CUdevResource *)group, 1));
	rc = cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
	expect(!rc && green, "a green context of one group", rc);
	if (rc)
		return;
	rc = cuGreenCtxGetDevResource(green, &gr, CU_DEV_RESOURCE_TYPE_SM);
	expect(!rc && gr.type == CU_DEV_RESOURCE_TYPE_SM && gr.sm.smCount == group->sm.smCount,
	       "it has the group's SMs", rc);
	rc = cuGreenCtxGetDevResource(green, NULL, CU_DEV_RESOURCE_TYPE_SM);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "its resource with no result pointer is refused",
	       rc);
	rc = cuDevSmResourceSplitByCount(NULL, &n, &gr, NULL, 0, 8);
	expect(!rc && n >= 1, "its SMs split again", rc);
	rc = cuCtxFromGreenCtx(&gctx, green);
	expect(!rc && gctx, "it converts to a context", rc);
	rc = cuCtxFromGreenCtx(NULL, green);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "converting with no result pointer is refused", rc);
	rc = cuCtxGetDevResource(gctx, &cr, CU_DEV_RESOURCE_TYPE_SM);
	expect(!rc && cr.sm.smCount == group->sm.smCount, "that context has the group's SMs", rc);
	rc = cuGreenCtxGetId(green, &id);
	expect(!rc && id != 0, "it has an id", rc);
	rc = cuGreenCtxGetId(green, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an id with no result pointer is refused", rc);

	rc = cuGreenCtxStreamCreate(&gs, green, CU_STREAM_NON_BLOCKING, 0);
	expect(!rc && gs, "a stream of the green context", rc);
	rc = cuStreamGetGreenCtx(gs, &found);
	expect(!rc && found == green, "the stream names its green context", rc);
	rc = cuStreamGetCtx(gs, &got);
	expect(!rc && got == gctx, "the stream's context is the converted one", rc);
	MUST(cuStreamCreate(&ps, CU_STREAM_NON_BLOCKING));
	found = green;
	rc = cuStreamGetGreenCtx(ps, &found);
	expect(!rc && !found, "a stream of the primary context names none", rc);

	MUST(cuCtxPushCurrent(gctx));
	found = NULL;
	rc = cuStreamGetGreenCtx(NULL, &found);
	expect(!rc && found == green, "with it current, the NULL stream names it", rc);
	rc = cuGreenCtxGetId(NULL, &cur_id);
	expect(!rc && cur_id == id, "with it current, no green context means it", rc);
	MUST(cuModuleLoadData(&mod, POKE_U32_PTX));
	MUST(cuModuleGetFunction(&poke_fn, mod, "vgpu_poke_u32"));
	MUST(cuMemAlloc(&word, sizeof(unsigned int)));
	MUST(cuMemsetD32(word, 0, 1));
	MUST(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	rc = poke(poke_fn, gs, word, 7);
	if (!rc)
		rc = cuStreamSynchronize(gs);
	expect(!rc && peek(word) == 7, "a kernel runs on its stream", rc);
	rc = poke(poke_fn, gs, word, 8);
	if (!rc)
		rc = cuGreenCtxRecordEvent(green, ev);
	if (!rc)
		rc = cuEventSynchronize(ev);
	expect(!rc && peek(word) == 8, "an event recorded on it follows its work", rc);
	rc = cuEventQuery(ev);
	expect(rc == CUDA_SUCCESS, "the event is complete", rc);
	MUST(cuCtxPopCurrent(&got));

	/* Primary-context work the green context waits for. */
	MUST(cuEventCreate(&pev, CU_EVENT_DISABLE_TIMING));
	MUST(cuMemsetD32Async(word, 9, 1, ps));
	MUST(cuEventRecord(pev, ps));
	rc = cuGreenCtxWaitEvent(green, pev);
	expect(!rc, "it waits on an event of the primary context", rc);
	MUST(cuCtxPushCurrent(gctx));
	rc = poke(poke_fn, gs, word, 10);	/* after the memset of 9, by the wait */
	if (!rc)
		rc = cuCtxSynchronize();
	if (!rc)
		rc = cuStreamSynchronize(ps);
	expect(!rc && peek(word) == 10, "its work after the wait follows the primary's", rc);
	MUST(cuCtxPopCurrent(&got));

	if (other) {
		MUST(cuDevResourceGenerateDesc(&desc, (CUdevResource *)other, 1));
		rc = cuGreenCtxCreate(&green2, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
		if (!rc)
			rc = cuGreenCtxGetId(green2, &id2);
		if (!rc)
			rc = cuGreenCtxGetDevResource(green2, &g2r, CU_DEV_RESOURCE_TYPE_SM);
		expect(!rc && green2 != green && id2 != id && g2r.sm.smCount == other->sm.smCount,
		       "a second green context is another, with its own SMs", rc);
		if (!rc)
			expect(!cuGreenCtxDestroy(green2), "the second one is destroyed", rc);
	}

	MUST(cuEventDestroy(pev));
	MUST(cuStreamDestroy(ps));
	MUST(cuCtxPushCurrent(gctx));
	MUST(cuEventDestroy(ev));
	MUST(cuModuleUnload(mod));
	MUST(cuCtxPopCurrent(&got));
	MUST(cuMemFree(word));
	rc = cuStreamDestroy(gs);
	expect(!rc, "its stream is destroyed", rc);
	rc = cuGreenCtxDestroy(green);
	expect(!rc, "the green context is destroyed", rc);
}

/* A session that holds a green context until @go exists. */
static int hold(const char *go)
{
	CUdevResource dr, group;
	CUdevResourceDesc desc;
	CUgreenCtx green;
	CUcontext ctx;
	CUdevice dev;
	unsigned int n = 1;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuDeviceGetDevResource(dev, &dr, CU_DEV_RESOURCE_TYPE_SM));
	MUST(cuDevSmResourceSplitByCount(&group, &n, &dr, NULL, 0, 8));
	MUST(cuDevResourceGenerateDesc(&desc, &group, 1));
	MUST(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < 1200 && access(go, F_OK); i++)
		usleep(100000);
	MUST(cuGreenCtxDestroy(green));
	MUST(cuCtxSynchronize());
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	CUdevResource dr, cr, bad, groups[4], rest, other[2], mixed[2];
	CUdevResourceDesc desc = NULL;
	CUgreenCtx green = NULL;
	unsigned int n = 0, m, sum = 0, ngroups;
	CUcontext ctx;
	CUdevice dev;
	int sms = 0, count = 0;
	bool min_ok = true;
	CUresult rc;

	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);	/* a crash shows where */
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuDeviceGetCount(&count) ||
	    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) {
		printf("FATAL setup\n");
		return 1;
	}

	rc = cuDeviceGetDevResource(dev, &dr, CU_DEV_RESOURCE_TYPE_SM);
	expect(!rc && dr.type == CU_DEV_RESOURCE_TYPE_SM && dr.sm.smCount == (unsigned)sms,
	       "the device's SM resource has the device's SM count", rc);
	/* The SM count need not be a multiple of the alignment (132 and 8). */
	expect(!rc && dr.sm.minSmPartitionSize > 0 && dr.sm.smCoscheduledAlignment > 0 &&
	       dr.sm.minSmPartitionSize % dr.sm.smCoscheduledAlignment == 0,
	       "its partition size and alignment are set, the size a multiple of the alignment",
	       rc);
	rc = cuCtxGetDevResource(ctx, &cr, CU_DEV_RESOURCE_TYPE_SM);
	expect(!rc && cr.sm.smCount == (unsigned)sms, "the context's SM resource is the device's", rc);
	/* NULL is not the current context here, though one is current. */
	rc = cuCtxGetDevResource(NULL, &cr, CU_DEV_RESOURCE_TYPE_SM);
	expect(rc == CUDA_ERROR_INVALID_CONTEXT, "no context is refused, even with one current", rc);
	rc = cuDeviceGetDevResource(dev, &bad, CU_DEV_RESOURCE_TYPE_INVALID);
	expect(rc == CUDA_ERROR_INVALID_RESOURCE_TYPE, "an invalid resource type is refused", rc);
	rc = cuDeviceGetDevResource(dev, NULL, CU_DEV_RESOURCE_TYPE_SM);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "no result pointer is refused", rc);
	rc = cuDeviceGetDevResource(count, &bad, CU_DEV_RESOURCE_TYPE_SM);
	expect(rc == CUDA_ERROR_INVALID_DEVICE, "a device past the last is refused", rc);

	rc = cuDevSmResourceSplitByCount(NULL, &n, &dr, NULL, 0, 0);
	expect(!rc && n >= 1, "a split counts its groups", rc);
	m = 4;
	rc = cuDevSmResourceSplitByCount(groups, &m, &dr, &rest, 0, 16);
	for (unsigned int i = 0; !rc && i < m; i++) {
		sum += groups[i].sm.smCount;
		min_ok &= groups[i].type == CU_DEV_RESOURCE_TYPE_SM && groups[i].sm.smCount >= 16;
	}
	expect(!rc && m >= 1 && m <= 4 && min_ok, "a split into groups of at least 16 SMs", rc);
	ngroups = rc ? 0 : m;
	expect(!rc && sum + rest.sm.smCount == (unsigned)sms, "the groups and the rest add up", rc);
	rc = cuDevSmResourceSplitByCount(groups, NULL, &dr, NULL, 0, 16);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a split without a group count is refused", rc);
	n = 1;
	rc = cuDevSmResourceSplitByCount(groups, &n, &dr, NULL, 0, (unsigned)sms + 1);
	expect(rc == CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
	       "a minimum over the SM count is refused", rc);
	memcpy(&bad, &dr, sizeof(bad));
	bad.type = CU_DEV_RESOURCE_TYPE_INVALID;
	n = 1;
	rc = cuDevSmResourceSplitByCount(groups, &n, &bad, NULL, 0, 8);
	expect(rc == CUDA_ERROR_INVALID_RESOURCE_TYPE, "splitting a non-SM resource is refused", rc);

	rc = cuDevResourceGenerateDesc(&desc, groups, 1);
	expect(!rc && desc, "a descriptor of one group", rc);
	rc = cuDevResourceGenerateDesc(NULL, groups, 1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a descriptor with no output is refused", rc);
	rc = cuDevResourceGenerateDesc(&desc, NULL, 1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a descriptor of no resources is refused", rc);
	if (under_vgpu()) {	/* a count of 0: the driver crashes */
		rc = cuDevResourceGenerateDesc(&desc, groups, 0);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a descriptor of 0 resources is refused",
			    rc);
	}
	m = 2;
	rc = cuDevSmResourceSplitByCount(other, &m, &dr, NULL, 0, 8);
	if (!rc && m >= 1 && sms >= 32) {
		mixed[0] = groups[0];
		mixed[1] = other[0];
		/* The documentation suggests one split; the driver takes two. */
		rc = cuDevResourceGenerateDesc(&desc, mixed, 2);
		expect(!rc && desc, "a descriptor of groups from two splits", rc);
		mixed[1] = rest;
		rc = cuDevResourceGenerateDesc(&desc, mixed, 2);
		expect(!rc && desc, "a descriptor of a group and the rest", rc);
		rc = cuDevResourceGenerateDesc(&desc, &dr, 1);
		expect(!rc && desc, "a descriptor of the whole device", rc);
	} else {
		expect(false, "a second split for the mixed descriptor", rc);
	}

	if (under_vgpu()) {	/* cuda.h: the flag is required; the driver's answer untried */
		rc = cuDevResourceGenerateDesc(&desc, groups, 1);
		if (!rc)
			rc = cuGreenCtxCreate(&green, desc, dev, 0);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
			    "a green context without its default stream flag is refused", rc);
		rc = cuGreenCtxCreate(&green, NULL, dev, CU_GREEN_CTX_DEFAULT_STREAM);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
			    "a green context of no descriptor is refused", rc);
	}
	green_checks(dev, &groups[0], ngroups >= 2 ? &groups[1] : NULL);

	return checks_done("green_driver");
}
