/* SPDX-License-Identifier: MIT */
/*
 * A backend is a CUDA driver: the worker calls the same entry points with
 * the same signatures whether they reach the real libcuda.so.1 (cuda) or
 * the emulation in host memory (host). One list names them all; each
 * backend fills every slot, so the worker never checks for NULL. The
 * generated calls' slots (backend_gen.h) are filled with what the backend
 * has, else with a NOT_SUPPORTED answer.
 */
#ifndef VGPU_BACKEND_H
#define VGPU_BACKEND_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#define VGPU_BACKEND_FUNCS(X) \
	X(cuInit) \
	X(cuGetErrorName) \
	X(cuDriverGetVersion) \
	X(cuDeviceGetCount) \
	X(cuDeviceGet) \
	X(cuDeviceGetName) \
	X(cuDeviceGetUuid_v2) \
	X(cuDeviceGetLuid) \
	X(cuDeviceTotalMem_v2) \
	X(cuDeviceGetAttribute) \
	X(cuDevicePrimaryCtxRetain) \
	X(cuDevicePrimaryCtxRelease_v2) \
	X(cuDevicePrimaryCtxReset_v2) \
	X(cuDevicePrimaryCtxSetFlags_v2) \
	X(cuCtxCreate_v4) \
	X(cuCtxDestroy_v2) \
	X(cuCtxSetCurrent) \
	X(cuCtxGetCurrent) \
	X(cuCtxSynchronize) \
	X(cuCtxSetCacheConfig) \
	X(cuMemGetInfo_v2) \
	X(cuMemAddressReserve) \
	X(cuMemAddressFree) \
	X(cuMemCreate) \
	X(cuMemRelease) \
	X(cuMemMap) \
	X(cuMemUnmap) \
	X(cuMemSetAccess) \
	X(cuMemGetAllocationGranularity) \
	X(cuMemHostRegister_v2) \
	X(cuMemHostUnregister) \
	X(cuMemcpyHtoDAsync_v2) \
	X(cuMemcpyDtoHAsync_v2) \
	X(cuMemcpyDtoDAsync_v2) \
	X(cuMemcpy2DAsync_v2) \
	X(cuMemsetD8Async) \
	X(cuMemsetD16Async) \
	X(cuMemsetD32Async) \
	X(cuMemsetD2D8Async) \
	X(cuMemsetD2D16Async) \
	X(cuMemsetD2D32Async) \
	X(cuStreamCreateWithPriority) \
	X(cuStreamDestroy_v2) \
	X(cuStreamSynchronize) \
	X(cuStreamQuery) \
	X(cuStreamWaitEvent) \
	X(cuLaunchHostFunc) \
	X(cuStreamBeginCapture_v2) \
	X(cuStreamEndCapture) \
	X(cuStreamGetCaptureInfo_v3) \
	X(cuGraphGetNodes) \
	X(cuGraphInstantiateWithFlags) \
	X(cuGraphLaunch) \
	X(cuGraphUpload) \
	X(cuGraphExecDestroy) \
	X(cuGraphDestroy) \
	X(cuEventCreate) \
	X(cuEventDestroy_v2) \
	X(cuEventRecordWithFlags) \
	X(cuEventSynchronize) \
	X(cuEventQuery) \
	X(cuEventElapsedTime_v2) \
	X(cuModuleLoadData) \
	X(cuModuleUnload) \
	X(cuModuleGetFunction) \
	X(cuModuleGetGlobal_v2) \
	X(cuFuncGetParamInfo) \
	X(cuFuncGetAttribute) \
	X(cuFuncSetAttribute) \
	X(cuFuncSetCacheConfig) \
	X(cuLaunchKernelEx) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) \
	X(cuOccupancyMaxActiveClusters) \
	X(cuModuleGetFunctionCount) \
	X(cuModuleEnumerateFunctions) \
	X(cuFuncGetName) \
	X(cuOccupancyMaxPotentialClusterSize) \
	X(cuGetExportTable) \
	X(cuTensorMapEncodeTiled) \
	X(cuTensorMapEncodeIm2col) \
	X(cuTensorMapEncodeIm2colWide) \
	X(cuTensorMapReplaceAddress) \
	X(cuDeviceGetDevResource) \
	X(cuCtxGetDevResource) \
	X(cuDevSmResourceSplitByCount) \
	X(cuDevResourceGenerateDesc) \
	X(cuGreenCtxCreate) \
	X(cuGreenCtxDestroy) \
	X(cuCtxFromGreenCtx) \
	X(cuGreenCtxGetDevResource) \
	X(cuGreenCtxStreamCreate) \
	X(cuGreenCtxRecordEvent) \
	X(cuGreenCtxWaitEvent) \
	X(cuLinkCreate_v2) \
	X(cuLinkAddData_v2) \
	X(cuLinkComplete) \
	X(cuLinkDestroy) \
	X(cuGraphGetRootNodes) \
	X(cuGraphNodeGetType) \
	X(cuGraphKernelNodeGetParams_v2) \
	X(cuGraphKernelNodeSetParams_v2) \
	X(cuGraphExecKernelNodeSetParams_v2) \
	X(cuGraphCreate) \
	X(cuGraphAddKernelNode_v2) \
	X(cuGraphAddDependencies_v2) \
	X(cuStreamGetAttribute) \
	X(cuStreamSetAttribute) \
	X(cuStreamCopyAttributes) \
	X(cuCtxRecordEvent) \
	X(cuCtxWaitEvent) \
	X(cuStreamWriteValue32_v2) \
	X(cuStreamWriteValue64_v2) \
	X(cuStreamWaitValue32_v2) \
	X(cuStreamWaitValue64_v2) \
	X(cuStreamBatchMemOp_v2) \
	X(cuMemPrefetchAsync_v2) \
	X(cuThreadExchangeStreamCaptureMode) \
	X(cuMemExportToShareableHandle) \
	X(cuMemImportFromShareableHandle) \
	X(cuMemGetHandleForAddressRange) \
	X(cuGraphAddNode_v2) \
	X(cuGraphNodeSetParams) \
	X(cuGraphExecNodeSetParams) \
	X(cuGraphDestroyNode) \
	X(cuStreamBeginCaptureToGraph) \
	X(cuGraphExecUpdate_v2) \
	X(cuGraphGetEdges_v2) \
	X(cuGraphNodeGetDependencies_v2) \
	X(cuGraphNodeGetDependentNodes_v2) \
	X(cuGraphRemoveDependencies_v2) \
	X(cuStreamUpdateCaptureDependencies_v2) \
	X(cuGraphChildGraphNodeGetGraph) \
	X(cuGraphEventRecordNodeGetEvent) \
	X(cuGraphEventWaitNodeGetEvent) \
	X(cuGraphClone) \
	X(cuGraphNodeFindInClone) \
	X(cuGraphKernelNodeGetAttribute) \
	X(cuGraphKernelNodeSetAttribute) \
	X(cuGraphMemcpyNodeGetParams) \
	X(cuIpcGetEventHandle) \
	X(cuIpcOpenEventHandle) \
	X(cuArray3DCreate_v2) \
	X(cuArrayDestroy) \
	X(cuArray3DGetDescriptor_v2) \
	X(cuArrayGetPlane) \
	X(cuArrayGetMemoryRequirements) \
	X(cuArrayGetSparseProperties) \
	X(cuMipmappedArrayCreate) \
	X(cuMipmappedArrayDestroy) \
	X(cuMipmappedArrayGetLevel) \
	X(cuMipmappedArrayGetMemoryRequirements) \
	X(cuMipmappedArrayGetSparseProperties) \
	X(cuMemcpy3DAsync_v2) \
	X(cuTexObjectCreate) \
	X(cuTexObjectDestroy) \
	X(cuTexObjectGetResourceDesc) \
	X(cuTexObjectGetTextureDesc) \
	X(cuTexObjectGetResourceViewDesc) \
	X(cuSurfObjectCreate) \
	X(cuSurfObjectDestroy) \
	X(cuSurfObjectGetResourceDesc) \
	X(cuTexRefSetArray) \
	X(cuTexRefGetArray) \
	X(cuTexRefSetMipmappedArray) \
	X(cuTexRefGetMipmappedArray) \
	X(cuGraphHostNodeGetParams) \
	X(cuGraphDebugDotPrint) \
	X(cuMemGetAllocationPropertiesFromHandle) \
	X(cuMemFree_v2) \
	X(cuMemFreeAsync)

#include "backend_gen.h"

#define VGPU_BACKEND_SLOT(fn) __typeof__(fn) *fn;

struct vgpu_backend {
	const char *name;
	uint32_t kind;			/* VGPU_BACKEND_* from vgpu/proto.h */
	VGPU_BACKEND_FUNCS(VGPU_BACKEND_SLOT)
VGPU_GEN_SLOTS_BEGIN
	VGPU_BACKEND_GEN_FUNCS(VGPU_BACKEND_SLOT)	/* optional (backend_gen.h) */
VGPU_GEN_SLOTS_END
};

/* Fill *b; returns 0 or -errno with a logged reason. */
int vgpu_backend_cuda_open(struct vgpu_backend *b);
int vgpu_backend_host_open(struct vgpu_backend *b);

/*
 * Host backend: a stream wait whose word does not hold yet calls hook(arg)
 * until it does; the hook runs other work or sleeps, and returns false to
 * abandon the wait (the wait then fails). Set by the worker.
 */
void vgpu_host_set_wait_hook(bool (*hook)(void *arg), void *arg);

#endif
