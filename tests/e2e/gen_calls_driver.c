// SPDX-License-Identifier: MIT
/*
 * Driver calls that vgpu forwards through its generator (include/vgpu/
 * calls.def): the legacy launch API (block shape and parameters kept by
 * the driver per function, then cuLaunch, cuLaunchGrid, cuLaunchGridAsync),
 * graph nodes disabled and enabled in an instance, a memset node's
 * parameters read back, the instance's flags, texture references made,
 * set, read back and destroyed, the context limits, and the context and
 * device queries. The GPU suite compares this output with the native run's.
 * On the host backend, which emulates the limits and texture references but
 * not the rest, a part whose first call answers NOT_SUPPORTED says so on
 * stderr and is left out (the backend logs which call).
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

/* The legacy launch API is deprecated, and what this test is about. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static const char ptx[] = POKE_U32_PTX;
static int parts_skipped;

/* A part this backend does not run (vgpu's host backend only). */
static bool unsupported(CUresult rc, const char *part)
{
	if (rc != CUDA_ERROR_NOT_SUPPORTED || !under_vgpu())
		return false;
	fprintf(stderr, "skip: %s: this backend does not emulate it\n", part);
	parts_skipped++;
	return true;
}

static uint32_t read_u32(CUdeviceptr p)
{
	uint32_t v = 0;

	MUST(cuMemcpyDtoH(&v, p, sizeof(v)));
	return v;
}

static void legacy_launch(CUfunction f, CUdeviceptr p, CUstream s)
{
	CUresult rc = cuFuncSetBlockShape(f, 1, 1, 1);

	if (unsupported(rc, "the legacy launch API"))
		return;
	expect(!rc, "cuFuncSetBlockShape", rc);
	EXPECT_OK(cuFuncSetSharedSize(f, 0), "cuFuncSetSharedSize");
	EXPECT_OK(cuParamSetv(f, 0, &p, sizeof(p)), "cuParamSetv (the pointer)");
	EXPECT_OK(cuParamSeti(f, 8, 0x1234), "cuParamSeti (the value)");
	EXPECT_OK(cuParamSetSize(f, 12), "cuParamSetSize");
	EXPECT_OK(cuLaunchGrid(f, 1, 1), "cuLaunchGrid");
	MUST(cuCtxSynchronize());
	expect(read_u32(p) == 0x1234, "cuLaunchGrid wrote the value", CUDA_SUCCESS);

	EXPECT_OK(cuParamSeti(f, 8, 0x5678), "cuParamSeti (a second value)");
	EXPECT_OK(cuLaunchGridAsync(f, 1, 1, s), "cuLaunchGridAsync");
	MUST(cuStreamSynchronize(s));
	expect(read_u32(p) == 0x5678, "cuLaunchGridAsync wrote the value", CUDA_SUCCESS);

	EXPECT_OK(cuParamSeti(f, 8, 0x9abc), "cuParamSeti (a third value)");
	EXPECT_OK(cuLaunch(f), "cuLaunch");
	MUST(cuCtxSynchronize());
	expect(read_u32(p) == 0x9abc, "cuLaunch wrote the value", CUDA_SUCCESS);
	printf("cuFuncSetSharedMemConfig: %s\n",
	       errname(cuFuncSetSharedMemConfig(f, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE)));
}

static void graph_nodes(CUcontext ctx, CUfunction f, CUdeviceptr p, CUstream s)
{
	CUDA_MEMSET_NODE_PARAMS mp = { .dst = p + 64, .value = 0x42, .elementSize = 4,
				       .width = 4, .height = 1 }, got;
	uint32_t value = 0x77;
	void *params[] = { &p, &value };
	CUDA_KERNEL_NODE_PARAMS kp = { .func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				       .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				       .kernelParams = params };
	CUgraphNode kn, mn;
	CUgraphExec exec;
	cuuint64_t flags = 99;
	unsigned int on = 9;
	CUgraph g;
	CUresult rc = cuGraphCreate(&g, 0);

	if (unsupported(rc, "graphs"))
		return;
	MUST(rc);
	MUST(cuGraphAddKernelNode(&kn, g, NULL, 0, &kp));
	MUST(cuGraphAddMemsetNode(&mn, g, NULL, 0, &mp, ctx));
	memset(&got, 0, sizeof(got));
	EXPECT_OK(cuGraphMemsetNodeGetParams(mn, &got), "cuGraphMemsetNodeGetParams");
	expect(got.dst == mp.dst && got.value == mp.value && got.elementSize == 4 &&
	       got.width == 4 && got.height == 1, "the memset node's parameters read back",
	       CUDA_SUCCESS);
	MUST(cuGraphInstantiate(&exec, g, 0));
	EXPECT_OK(cuGraphExecGetFlags(exec, &flags), "cuGraphExecGetFlags");
	printf("instance flags: %llu\n", (unsigned long long)flags);
	EXPECT_OK(cuGraphNodeGetEnabled(exec, kn, &on), "cuGraphNodeGetEnabled");
	expect(on == 1, "a node is enabled at first", CUDA_SUCCESS);

	MUST(cuMemsetD32(p, 0, 1));
	EXPECT_OK(cuGraphNodeSetEnabled(exec, kn, 0), "cuGraphNodeSetEnabled 0");
	EXPECT_OK(cuGraphNodeGetEnabled(exec, kn, &on), "cuGraphNodeGetEnabled");
	expect(on == 0, "the kernel node reads disabled", CUDA_SUCCESS);
	MUST(cuGraphLaunch(exec, s));
	MUST(cuStreamSynchronize(s));
	expect(read_u32(p) == 0, "a disabled kernel node does not run", CUDA_SUCCESS);
	expect(read_u32(p + 64) == 0x42, "the enabled memset node runs", CUDA_SUCCESS);
	EXPECT_OK(cuGraphNodeSetEnabled(exec, kn, 1), "cuGraphNodeSetEnabled 1");
	MUST(cuGraphLaunch(exec, s));
	MUST(cuStreamSynchronize(s));
	expect(read_u32(p) == 0x77, "the enabled kernel node runs again", CUDA_SUCCESS);
	MUST(cuGraphExecDestroy(exec));
	MUST(cuGraphDestroy(g));
}

static void texrefs(CUdeviceptr p)
{
	float border[4] = { 1, 2, 3, 4 }, got[4] = { 0 };
	CUaddress_mode am = CU_TR_ADDRESS_MODE_WRAP;
	CUfilter_mode fm = CU_TR_FILTER_MODE_POINT;
	CUarray_format fmt = CU_AD_FORMAT_UNSIGNED_INT8;
	CUdeviceptr addr = 0;
	unsigned int flags = 0;
	size_t offset = 99;
	int channels = 0;
	CUtexref t;
	CUresult rc;

	rc = cuTexRefCreate(&t);
	if (unsupported(rc, "texture references"))
		return;
	printf("cuTexRefCreate: %s\n", errname(rc));
	if (rc)
		return;
	EXPECT_OK(cuTexRefSetFormat(t, CU_AD_FORMAT_FLOAT, 2), "cuTexRefSetFormat");
	EXPECT_OK(cuTexRefGetFormat(&fmt, &channels, t), "cuTexRefGetFormat");
	expect(fmt == CU_AD_FORMAT_FLOAT && channels == 2, "the format reads back", CUDA_SUCCESS);
	EXPECT_OK(cuTexRefSetAddressMode(t, 1, CU_TR_ADDRESS_MODE_CLAMP), "cuTexRefSetAddressMode");
	EXPECT_OK(cuTexRefGetAddressMode(&am, t, 1), "cuTexRefGetAddressMode");
	expect(am == CU_TR_ADDRESS_MODE_CLAMP, "the address mode reads back", CUDA_SUCCESS);
	EXPECT_OK(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_LINEAR), "cuTexRefSetFilterMode");
	EXPECT_OK(cuTexRefGetFilterMode(&fm, t), "cuTexRefGetFilterMode");
	expect(fm == CU_TR_FILTER_MODE_LINEAR, "the filter mode reads back", CUDA_SUCCESS);
	EXPECT_OK(cuTexRefSetFlags(t, CU_TRSF_NORMALIZED_COORDINATES), "cuTexRefSetFlags");
	EXPECT_OK(cuTexRefGetFlags(&flags, t), "cuTexRefGetFlags");
	expect(flags == CU_TRSF_NORMALIZED_COORDINATES, "the flags read back", CUDA_SUCCESS);
	EXPECT_OK(cuTexRefSetBorderColor(t, border), "cuTexRefSetBorderColor");
	EXPECT_OK(cuTexRefGetBorderColor(got, t), "cuTexRefGetBorderColor");
	expect(!memcmp(got, border, sizeof(got)), "the border colour reads back", CUDA_SUCCESS);
	rc = cuTexRefSetAddress(&offset, t, p, 4096);
	printf("cuTexRefSetAddress: %s, offset %zu\n", errname(rc), rc ? (size_t)0 : offset);
	rc = cuTexRefGetAddress(&addr, t);
	printf("cuTexRefGetAddress: %s, %s\n", errname(rc), !rc && addr == p ? "the same" : "other");
	EXPECT_OK(cuTexRefDestroy(t), "cuTexRefDestroy");
}

static void queries(CUdevice dev)
{
	CUexecAffinityParam aff;
	CUatomicOperation ops[2] = { CU_ATOMIC_OPERATION_INTEGER_ADD, CU_ATOMIC_OPERATION_CAS };
	unsigned int caps[2] = { 0, 0 };
	CUmulticastObjectProp prop = { .numDevices = 1, .size = 2u << 20,
				       .handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR };
	size_t gran = 0;
	CUresult rc;

	memset(&aff, 0, sizeof(aff));
	rc = cuCtxGetExecAffinity(&aff, CU_EXEC_AFFINITY_TYPE_SM_COUNT);
	printf("cuCtxGetExecAffinity: %s, %s SMs\n", errname(rc),
	       rc ? "no" : aff.param.smCount.val > 0 ? "some" : "zero");
	printf("cuFlushGPUDirectRDMAWrites: %s\n",
	       errname(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
						  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER)));
	rc = cuDeviceGetHostAtomicCapabilities(caps, ops, 2, dev);
	printf("cuDeviceGetHostAtomicCapabilities: %s, %#x %#x\n", errname(rc), caps[0], caps[1]);
	rc = cuMulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_MINIMUM);
	printf("cuMulticastGetGranularity: %s, %zu\n", errname(rc), rc ? (size_t)0 : gran);
	EXPECT_RC(cuDeviceGetHostAtomicCapabilities(caps, ops, 2, 999), CUDA_ERROR_INVALID_DEVICE,
		  "a device that does not exist");
}

/*
 * "hold GO": a session holding a texture reference (a generated kind) with
 * settings made, until the file GO exists; meanwhile the session is moved to
 * another worker (tests/e2e/run gen_ckpt), which makes the reference and
 * its settings again from the calls the checkpoint recorded. Then they must
 * read back as set, and the reference goes.
 */
static int hold(const char *go)
{
	float border[4] = { 0.5f, 0.25f, 0.125f, 1 }, got[4] = { 0 };
	CUaddress_mode am = CU_TR_ADDRESS_MODE_WRAP;
	CUfilter_mode fm = CU_TR_FILTER_MODE_POINT;
	CUcontext ctx;
	CUdevice dev;
	CUtexref t;
	bool ok;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuTexRefCreate(&t));
	MUST(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_LINEAR));
	MUST(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_POINT));
	MUST(cuTexRefSetFilterMode(t, CU_TR_FILTER_MODE_LINEAR));
	MUST(cuTexRefSetAddressMode(t, 1, CU_TR_ADDRESS_MODE_MIRROR));
	MUST(cuTexRefSetBorderColor(t, border));
	printf("ready\n");
	fflush(stdout);
	while (access(go, F_OK))
		usleep(20000);
	MUST(cuTexRefGetFilterMode(&fm, t));
	MUST(cuTexRefGetAddressMode(&am, t, 1));
	MUST(cuTexRefGetBorderColor(got, t));
	ok = fm == CU_TR_FILTER_MODE_LINEAR && am == CU_TR_ADDRESS_MODE_MIRROR &&
	     !memcmp(got, border, sizeof(got));
	MUST(cuTexRefDestroy(t));
	MUST(cuDevicePrimaryCtxRelease(dev));
	printf("hold: %s\n", ok ? "the texture reference kept its settings"
				  : "the texture reference lost its settings");
	return ok ? 0 : 1;
}

/* The context limits: kept by the driver, read back as set. */
static void limits(void)
{
	size_t old = 0, v = 0;

	EXPECT_OK(cuCtxGetLimit(&old, CU_LIMIT_STACK_SIZE), "cuCtxGetLimit (the stack size)");
	EXPECT_OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096), "cuCtxSetLimit (the stack size)");
	EXPECT_OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE), "cuCtxGetLimit (again)");
	expect(v == 4096, "the stack size reads back as set", CUDA_SUCCESS);
	EXPECT_RC(cuCtxGetLimit(NULL, CU_LIMIT_STACK_SIZE), CUDA_ERROR_INVALID_VALUE,
		  "cuCtxGetLimit without an output");
	EXPECT_OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, old), "cuCtxSetLimit (the old stack size)");
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUdeviceptr p;
	CUstream s;
	CUresult rc;

	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2]);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	limits();
	rc = cuCtxResetPersistingL2Cache();
	if (!unsupported(rc, "cuCtxResetPersistingL2Cache"))
		expect(rc == CUDA_SUCCESS, "cuCtxResetPersistingL2Cache", rc);
	MUST(cuModuleLoadData(&mod, ptx));
	MUST(cuModuleGetFunction(&f, mod, "vgpu_poke_u32"));
	MUST(cuMemAlloc(&p, 4096));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	legacy_launch(f, p, s);
	graph_nodes(ctx, f, p, s);
	texrefs(p);
	if (parts_skipped < 4)
		queries(dev);
	MUST(cuStreamDestroy(s));
	MUST(cuMemFree(p));
	MUST(cuModuleUnload(mod));
	MUST(cuDevicePrimaryCtxRelease(dev));
	if (parts_skipped == 4) {
		printf("skip: this backend emulates none of the generated calls tried\n");
		return 77;
	}
	return checks_done("gen_calls_driver");
}
