// SPDX-License-Identifier: MIT
/*
 * Device resources (the green-context queries cuDNN and cuBLASLt make):
 * the device's and the context's SMs match the device attribute, splits
 * add up and honour the minimum, descriptors are made from one split and
 * across two, and bad input is refused as the driver (580, an H100) does,
 * which is not always as documented (see each check). Creating a
 * green context may succeed (a real driver) or be refused as not
 * supported (vgpu): either is accepted, and nothing printed tells which.
 *
 * One line per check on stdout, nothing that depends on the device or the
 * backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "driver_check.h"

int main(void)
{
	CUdevResource dr, cr, bad, groups[4], rest, other[2], mixed[2];
	CUdevResourceDesc desc = NULL;
	CUgreenCtx green = NULL;
	unsigned int n = 0, m, sum = 0;
	CUcontext ctx;
	CUdevice dev;
	int sms = 0, count = 0;
	bool min_ok = true;
	CUresult rc;

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

	rc = cuDevResourceGenerateDesc(&desc, groups, 1);
	if (!rc)
		rc = cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
	expect(rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_SUPPORTED,
	       "a green context is created, or refused as not supported", rc);
	if (!rc)
		cuGreenCtxDestroy(green);

	return checks_done("green_driver");
}
