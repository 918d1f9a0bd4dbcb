// SPDX-License-Identifier: MIT
/*
 * Driver calls that vgpu forwards through its generator (include/vgpu/
 * calls.def): the legacy launch API (block shape and parameters kept by
 * the driver per function, then cuLaunch, cuLaunchGrid, cuLaunchGridAsync),
 * graph nodes disabled and enabled in an instance, a memset node's
 * parameters read back, the instance's flags, and the context and device
 * queries. The GPU suite compares this output with the native run's. The
 * host backend emulates only the context limits: past them the program
 * says so and is skipped.
 */
#include <stdint.h>
#include <string.h>

#include "driver_check.h"

/* The legacy launch API is deprecated, and what this test is about. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static const char ptx[] = POKE_U32_PTX;

static uint32_t read_u32(CUdeviceptr p)
{
	uint32_t v = 0;

	MUST(cuMemcpyDtoH(&v, p, sizeof(v)));
	return v;
}

static void legacy_launch(CUfunction f, CUdeviceptr p, CUstream s)
{
	EXPECT_OK(cuFuncSetBlockShape(f, 1, 1, 1), "cuFuncSetBlockShape");
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

	MUST(cuGraphCreate(&g, 0));
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

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUdeviceptr p;
	CUstream s;
	CUresult rc;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	limits();
	rc = cuCtxResetPersistingL2Cache();
	if (rc == CUDA_ERROR_NOT_SUPPORTED && under_vgpu()) {
		if (failures)
			return checks_done("gen_calls_driver");
		printf("skip: this backend forwards the generated calls to no driver "
		       "(the host backend emulates none of them but the limits)\n");
		return 77;
	}
	expect(rc == CUDA_SUCCESS, "cuCtxResetPersistingL2Cache", rc);
	MUST(cuModuleLoadData(&mod, ptx));
	MUST(cuModuleGetFunction(&f, mod, "vgpu_poke_u32"));
	MUST(cuMemAlloc(&p, 4096));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	legacy_launch(f, p, s);
	graph_nodes(ctx, f, p, s);
	queries(dev);
	MUST(cuStreamDestroy(s));
	MUST(cuMemFree(p));
	MUST(cuModuleUnload(mod));
	MUST(cuDevicePrimaryCtxRelease(dev));
	return checks_done("gen_calls_driver");
}
