// SPDX-License-Identifier: MIT
/*
 * The profiler control calls. They start and stop collection by a profiler
 * attached to the process that runs the GPU work, which is the worker, not
 * the program: a tool attached to the program (Nsight Systems' CUDA trace,
 * CUPTI) sees its driver calls here and needs no start from the device.
 * Forwarding them would turn on collection in a worker shared by no tool
 * of the tenant's, so they are answered here, with the driver's checks: an
 * initialized driver and a current context.
 */
#include "driver.h"
#include "entry.h"

#include <cudaProfiler.h>

static CUresult in_context(void)
{
	struct vgpu_ctx *ctx;

	return vgpu_enter_ctx(&ctx);
}

/* "Starting with CUDA 12.0, it always returns CUDA_ERROR_NOT_SUPPORTED"
 * (cudaProfiler.h): the old command-line profiler is gone. Defined here so
 * that the answer is the driver's, not vgpu's unsupported-call default. */
VGPU_EXPORT CUresult cuProfilerInitialize(const char *configFile, const char *outputFile,
					  CUoutput_mode outputMode)
{
	(void)configFile;
	(void)outputFile;
	(void)outputMode;
	return CUDA_ERROR_NOT_SUPPORTED;
}

VGPU_EXPORT CUresult cuProfilerStart(void)
{
	return in_context();
}

VGPU_EXPORT CUresult cuProfilerStop(void)
{
	return in_context();
}
