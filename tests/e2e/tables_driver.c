// SPDX-License-Identifier: MIT
/*
 * A module's functions, all of them (cuModuleGetFunctionCount,
 * cuModuleEnumerateFunctions, the cuLibrary* pair, cuFuncGetName), and the
 * hidden tables that build on them: ToolsModule's function iterator (slot
 * 7, what cuFFT calls) and ClusterPrototype's slots, each compared with the
 * public call it stands for. Runs on any backend: the module is PTX text
 * naming kernels the host backend knows, and nothing is launched.
 *
 * One line per check on stdout, the same natively and through vgpu; exit 0
 * pass, 1 fail. What only vgpu promises goes to stderr.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_check.h"

#define NFUNCS 3
static const char *const names[NFUNCS] = { "vgpu_poke_u32", "vgpu_fill_u32", "vgpu_spin" };
static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry vgpu_poke_u32(.param .u64 p, .param .u32 v)\n{\n\tret;\n}\n"
	".visible .entry vgpu_fill_u32(.param .u64 p, .param .u32 v, .param .u64 n)\n{\n\tret;\n}\n"
	".visible .entry vgpu_spin(.param .u64 ns)\n{\n\tret;\n}\n";

static const CUuuid tools_module_id = { .bytes = {
	0x6e, 0x16, 0x3f, (char)0xbe, (char)0xb9, 0x58, 0x44, 0x4d,
	(char)0x83, 0x5c, (char)0xe1, (char)0x82, (char)0xaf, (char)0xf1, (char)0x99, 0x1e } };
static const CUuuid cluster_id = { .bytes = {
	0x17, 0x34, (char)0xdc, 0x26, (char)0x80, 0x0d, 0x47, 0x45,
	(char)0x87, 0x26, (char)0xc0, (char)0xf1, (char)0xe7, (char)0xdd, (char)0x8b, (char)0xca } };

/* Whether each of fs[0..n) is the function of that name, and each name is there once. */
static bool same_functions(CUmodule mod, const CUfunction *fs, unsigned int n)
{
	int seen[NFUNCS] = { 0 };

	for (unsigned int i = 0; i < n; i++) {
		const char *name = NULL;
		CUfunction by_name = NULL;
		int k;

		if (cuFuncGetName(&name, fs[i]) || !name)
			return false;
		for (k = 0; k < NFUNCS && strcmp(names[k], name); k++)
			;
		if (k == NFUNCS || seen[k]++)
			return false;
		if (cuModuleGetFunction(&by_name, mod, name) || by_name != fs[i])
			return false;
	}
	return true;
}

static CUfunction visited[8];
static int nvisited;

static void visit(void *user, CUfunction f, void *third)
{
	(void)third;
	if (user == (void *)&nvisited && nvisited < 8)
		visited[nvisited++] = f;
}

static void tools_module(CUmodule mod)
{
	typedef CUresult (*iterate_fn)(CUcontext, CUmodule, void (*)(void *, CUfunction, void *),
				       void *);
	typedef CUresult (*count_fn)(CUfunction, size_t *);
	const uintptr_t *t = NULL;
	CUcontext ctx = NULL;
	CUfunction f = NULL;
	size_t n = 0;
	CUresult rc = cuGetExportTable((const void **)&t, &tools_module_id);

	expect(rc == CUDA_SUCCESS && t && t[0] == 0x318, "ToolsModule: 0x318 bytes", rc);
	if (rc || !t)
		return;
	cuCtxGetCurrent(&ctx);
	rc = ((iterate_fn)t[7])(ctx, mod, visit, &nvisited);
	expect(nvisited == NFUNCS && same_functions(mod, visited, NFUNCS),
	       "ToolsModule[7] visits each function once, as cuModuleGetFunction hands it out", rc);
	/* What the return value is was seen only for one function (1). */
	fprintf(stderr, "ToolsModule[7] on %d functions returned %d\n", NFUNCS, (int)rc);
	rc = cuModuleGetFunction(&f, mod, "vgpu_fill_u32");
	if (!rc)
		rc = ((count_fn)t[33])(f, &n);
	expect(rc == CUDA_SUCCESS && n == 3, "ToolsModule[33]: vgpu_fill_u32 has 3 parameters", rc);
}

static void cluster_prototype(CUdevice dev, CUmodule mod)
{
	const uintptr_t *t = NULL;
	CUfunction f = NULL;
	int a = -1, b = -2, x = -1, y = -1, z = -1;
	CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
			       .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1 };
	CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
	unsigned char *vgpc = NULL, *mtpc = NULL;
	CUresult rc = cuGetExportTable((const void **)&t, &cluster_id), rc2;

	expect(rc == CUDA_SUCCESS && t && t[0] == 0x88, "ClusterPrototype: 0x88 bytes", rc);
	if (rc || !t || cuModuleGetFunction(&f, mod, "vgpu_spin"))
		return;
	rc = ((CUresult (*)(CUdevice, int *))t[8])(dev, &a);
	rc2 = cuDeviceGetAttribute(&b, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev);
	expect(rc == rc2 && a == b, "ClusterPrototype[8] = CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH", rc);
	rc = ((CUresult (*)(CUfunction, int, int, int))t[1])(f, 2, 1, 1);
	expect(rc == CUDA_SUCCESS, "ClusterPrototype[1] sets cluster dims 2x1x1", rc);
	rc = ((CUresult (*)(CUfunction, int *, int *, int *))t[5])(f, &x, &y, &z);
	rc2 = cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f);
	expect(rc == CUDA_SUCCESS && !rc2 && x == 2 && y == 1 && z == 1 && a == 2,
	       "ClusterPrototype[5] reads them back, as cuFuncGetAttribute does", rc);
	((CUresult (*)(CUfunction, int, int, int))t[1])(f, 0, 0, 0);
	rc = ((CUresult (*)(CUfunction, int))t[3])(f, 1);
	rc2 = cuFuncGetAttribute(&b, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, f);
	a = -1;
	((CUresult (*)(CUfunction, int *))t[7])(f, &a);
	expect(rc == CUDA_SUCCESS && !rc2 && a == 1 && b == 1,
	       "ClusterPrototype[3]/[7] = NON_PORTABLE_CLUSTER_SIZE_ALLOWED", rc);
	((CUresult (*)(CUfunction, int))t[3])(f, 0);
	rc = ((CUresult (*)(CUfunction, int *))t[12])(f, &a);
	rc2 = cuFuncGetAttribute(&b, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, f);
	expect(rc == rc2 && a == b, "ClusterPrototype[12] = CLUSTER_SIZE_MUST_BE_SET", rc);
	rc = ((CUresult (*)(CUfunction, int, size_t, int *))t[9])(f, 128, 0, &a);
	rc2 = cuOccupancyMaxPotentialClusterSize(&b, f, &cfg);
	expect(rc == rc2 && a == b, "ClusterPrototype[9] = cuOccupancyMaxPotentialClusterSize", rc);
	attr.value.clusterDim.x = 2;
	attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
	cfg.gridDimX = 2;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	rc = ((CUresult (*)(CUfunction, int, size_t, int, int *))t[10])(f, 128, 0, 2, &a);
	rc2 = cuOccupancyMaxActiveClusters(&b, f, &cfg);
	expect(rc == rc2 && a == b, "ClusterPrototype[10] = cuOccupancyMaxActiveClusters", rc);
	rc = ((CUresult (*)(unsigned char **, unsigned char **))t[4])(&vgpc, &mtpc);
	if (!rc) {
		fprintf(stderr, "ClusterPrototype[4]: vGPC of TPC 0..7: %u %u %u %u %u %u %u %u\n",
			vgpc[0], vgpc[1], vgpc[2], vgpc[3], vgpc[4], vgpc[5], vgpc[6], vgpc[7]);
		((CUresult (*)(unsigned char *, unsigned char *))t[13])(vgpc, mtpc);
	} else {
		fprintf(stderr, "ClusterPrototype[4]: %d (no real GPU behind)\n", (int)rc);
	}
}

/* vgpu's own export (include/vgpu/export_tables.h): the driver behind the daemon. */
static void driver_table_info(void)
{
	CUresult (*info)(const CUuuid *, uint64_t *) =
		(CUresult (*)(const CUuuid *, uint64_t *))dlsym(RTLD_DEFAULT,
								 "vgpuDriverExportTableInfo");
	CUuuid zero = { { 0 } };
	uint64_t size = 1;
	CUresult rc;

	expect_vgpu(info != NULL, "vgpuDriverExportTableInfo is exported", 0);
	if (!info)
		return;
	rc = info(NULL, &size);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "no id -> INVALID_VALUE", rc);
	rc = info(&cluster_id, &size);
	expect_vgpu((rc == CUDA_SUCCESS && size == 0x88) || (rc == CUDA_ERROR_NOT_FOUND && !size),
		    "ClusterPrototype: 0x88 bytes (cuda) or no real driver (host)", rc);
	rc = info(&zero, &size);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_NOT_FOUND,
		    "an id no driver serves -> INVALID_VALUE (cuda) or NOT_FOUND (host)", rc);
}

int main(void)
{
	CUfunction fs[NFUNCS + 1] = { 0 };
	CUkernel ks[NFUNCS] = { 0 };
	CUmodule mod = NULL;
	CUlibrary lib = NULL;
	CUkernel k = NULL;
	unsigned int n = 0;
	CUcontext ctx;
	CUdevice dev;
	CUresult rc;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "tables_driver: no device\n");
		return 1;
	}
	rc = cuModuleLoadData(&mod, ptx);
	expect(rc == CUDA_SUCCESS, "load a module of three kernels", rc);
	if (rc)
		return 1;
	rc = cuModuleGetFunctionCount(&n, mod);
	expect(rc == CUDA_SUCCESS && n == NFUNCS, "cuModuleGetFunctionCount: 3", rc);
	rc = cuModuleEnumerateFunctions(fs, NFUNCS, mod);
	expect(rc == CUDA_SUCCESS && same_functions(mod, fs, NFUNCS),
	       "cuModuleEnumerateFunctions: the handles cuModuleGetFunction gives", rc);
	memset(fs, 0, sizeof(fs));
	rc = cuModuleEnumerateFunctions(fs, 2, mod);
	expect(rc == CUDA_SUCCESS && fs[0] && fs[1] && !fs[2] && same_functions(mod, fs, 2),
	       "cuModuleEnumerateFunctions with room for 2: 2 of them", rc);
	rc = cuModuleGetFunctionCount(NULL, mod);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a NULL count -> INVALID_VALUE", rc);
	rc = cuModuleEnumerateFunctions(NULL, NFUNCS, mod);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a NULL array -> INVALID_VALUE", rc);
	if (under_vgpu()) {
		rc = cuModuleGetFunctionCount(&n, NULL);
		expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "a NULL module -> INVALID_HANDLE", rc);
		rc = cuModuleEnumerateFunctions(fs, 0, mod);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "room for none -> INVALID_VALUE", rc);
	}

	rc = cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0);
	expect(rc == CUDA_SUCCESS, "the same as a library", rc);
	if (!rc) {
		rc = cuLibraryGetKernelCount(&n, lib);
		expect(rc == CUDA_SUCCESS && n == NFUNCS, "cuLibraryGetKernelCount: 3", rc);
		rc = cuLibraryEnumerateKernels(ks, NFUNCS, lib);
		expect(rc == CUDA_SUCCESS, "cuLibraryEnumerateKernels", rc);
		rc = cuLibraryGetKernel(&k, lib, "vgpu_spin");
		expect(rc == CUDA_SUCCESS && (k == ks[0] || k == ks[1] || k == ks[2]),
		       "cuLibraryGetKernel gives one of them", rc);
		cuLibraryUnload(lib);
	}

	tools_module(mod);
	cluster_prototype(dev, mod);
	if (under_vgpu())
		driver_table_info();

	rc = cuModuleUnload(mod);
	expect(rc == CUDA_SUCCESS, "unload", rc);
	cuDevicePrimaryCtxRelease(dev);
	printf("tables_driver: %d checks, %s\n", checks, failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
