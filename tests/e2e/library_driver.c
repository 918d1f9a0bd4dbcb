// SPDX-License-Identifier: MIT
/*
 * Libraries through the driver API: cuLibraryLoadData's options as the
 * driver takes them (cuBLASLt loads its GEMM kernels with
 * CU_LIBRARY_BINARY_IS_PRESERVED and no value array: refusing that failed
 * every GEMM), kernel lookup and its errors. Runs on any backend: the
 * library is PTX text and nothing is launched.
 *
 * One line per check on stdout, the same natively and through vgpu; exit 0
 * pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver_check.h"

/* A name the host backend knows (daemon/backend/host/host_kernels.c), with its
 * parameters, so that the lookup succeeds there too. */
#define KERNEL "vgpu_poke_u32"
static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry vgpu_poke_u32(.param .u64 p, .param .u32 v)\n{\n\tret;\n}\n";

static CUresult load(CUlibrary *lib, CUlibraryOption *opt, void **val, unsigned int n)
{
	return cuLibraryLoadData(lib, ptx, NULL, NULL, 0, opt, val, n);
}

int main(void)
{
	CUlibraryOption preserved = CU_LIBRARY_BINARY_IS_PRESERVED;
	CUlibraryOption table = CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE;
	CUlibraryOption beyond = CU_LIBRARY_NUM_OPTIONS;
	void *one = (void *)1;
	CUlibrary lib = NULL, lib2 = NULL, junk = NULL;
	CUkernel k = NULL, k2 = NULL;
	CUfunction f = NULL;
	CUcontext ctx;
	CUdevice dev;
	CUresult rc;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "library_driver: no device\n");
		return 1;
	}

	rc = load(&lib, &preserved, NULL, 1);
	expect(rc == CUDA_SUCCESS, "load with BINARY_IS_PRESERVED and no value array", rc);
	rc = load(&lib2, &preserved, &one, 1);
	expect(rc == CUDA_SUCCESS, "load with BINARY_IS_PRESERVED and a value", rc);
	rc = lib ? cuLibraryGetKernel(&k, lib, KERNEL) : CUDA_ERROR_INVALID_HANDLE;
	expect(rc == CUDA_SUCCESS && k, "kernel of that library", rc);
	rc = lib ? cuLibraryGetKernel(&k2, lib, KERNEL) : CUDA_ERROR_INVALID_HANDLE;
	expect(rc == CUDA_SUCCESS && k2 == k, "the same kernel asked twice", rc);
	rc = k ? cuKernelGetFunction(&f, k) : CUDA_ERROR_INVALID_HANDLE;
	expect(rc == CUDA_SUCCESS && f, "its function in the current context", rc);
	rc = lib ? cuLibraryGetKernel(&k2, lib, "nonesuch") : CUDA_ERROR_INVALID_HANDLE;
	expect(rc == CUDA_ERROR_NOT_FOUND, "an unknown kernel name -> NOT_FOUND", rc);
	rc = cuLibraryGetKernel(&k2, NULL, KERNEL);
	expect(rc == CUDA_ERROR_INVALID_HANDLE, "a NULL library -> INVALID_HANDLE", rc);
	rc = load(&junk, &preserved, NULL, 0);
	expect(rc == CUDA_SUCCESS, "options ignored when their count is 0", rc);
	if (!rc)
		cuLibraryUnload(junk);

	if (under_vgpu()) {	/* the real driver crashes on these */
		rc = load(&junk, &table, NULL, 1);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
			    "HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE with no value -> INVALID_VALUE",
			    rc);
		rc = load(&junk, NULL, NULL, 1);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a count with no options -> INVALID_VALUE",
			    rc);
		rc = load(&junk, &beyond, &one, 1);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "an unknown option -> INVALID_VALUE", rc);
	}

	rc = lib ? cuLibraryUnload(lib) : CUDA_ERROR_INVALID_HANDLE;
	expect(rc == CUDA_SUCCESS, "unload", rc);
	rc = lib2 ? cuLibraryUnload(lib2) : CUDA_ERROR_INVALID_HANDLE;
	expect(rc == CUDA_SUCCESS, "unload the second", rc);
	cuDevicePrimaryCtxRelease(dev);
	printf("library_driver: %d checks, %s\n", checks, failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
