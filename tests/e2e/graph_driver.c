// SPDX-License-Identifier: MIT
/*
 * Stream capture and graphs through the driver API: argument checks that
 * hold on any backend, and, where the backend captures (the GPU; the host
 * backend says CUDA_ERROR_NOT_SUPPORTED), a captured memset + copy graph
 * launched three times and checked on the host.
 *
 * One line per check on stdout, nothing that depends on addresses, timing
 * or the backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver_check.h"

#define N 4096

int main(void)
{
	CUcontext ctx;
	CUdevice dev;
	CUstream s;
	CUgraph g = NULL;
	CUgraphExec ge = NULL;
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	CUdeviceptr a, b;
	uint32_t *host;
	size_t nodes = 0;
	uint64_t junk[4] = { 0 };
	CUresult rc;
	int bad = 0;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
	    cuMemAlloc(&a, N * 4) || cuMemAlloc(&b, N * 4) || cuMemAllocHost((void **)&host, N * 4)) {
		printf("FATAL setup\n");
		return 1;
	}

	rc = cuStreamIsCapturing(s, &st);
	expect(!rc && st == CU_STREAM_CAPTURE_STATUS_NONE, "a fresh stream is not capturing", rc);
	rc = cuStreamBeginCapture(s, (CUstreamCaptureMode)7);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an unknown capture mode is refused", rc);
	rc = cuStreamEndCapture(s, &g);
	expect(rc == CUDA_ERROR_ILLEGAL_STATE, "ending a capture never begun is refused", rc);
	rc = cuGraphLaunch(NULL, s);
	expect(rc == CUDA_ERROR_INVALID_HANDLE || rc == CUDA_ERROR_INVALID_VALUE,
	       "launching a NULL graph instance is refused", rc);
	rc = cuGraphLaunch((CUgraphExec)junk, s);
	expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "launching a bogus graph instance is refused", rc);
	rc = cuGraphDestroy((CUgraph)junk);
	expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "destroying a bogus graph is refused", rc);
	rc = cuThreadExchangeStreamCaptureMode(&mode);
	expect(!rc && mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "the thread's mode starts global", rc);
	rc = cuThreadExchangeStreamCaptureMode(&mode);
	expect(!rc && mode == CU_STREAM_CAPTURE_MODE_RELAXED, "and takes the mode given", rc);

	rc = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "graph_driver: this backend does not capture streams\n");
		return checks_done("graph_driver");
	}
	expect(rc == CUDA_SUCCESS, "a capture begins", rc);
	rc = cuStreamIsCapturing(s, &st);
	expect(!rc && st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "the stream is capturing", rc);
	rc = cuMemsetD32Async(a, 0x5eed, N, s);
	if (!rc)
		rc = cuMemcpyDtoDAsync(b, a, N * 4, s);
	if (!rc)
		rc = cuMemcpyDtoHAsync(host, b, N * 4, s);
	expect(rc == CUDA_SUCCESS, "memset and copies are captured", rc);
	rc = cuStreamEndCapture(s, &g);
	expect(rc == CUDA_SUCCESS && g, "the capture ends with a graph", rc);
	rc = cuStreamIsCapturing(s, &st);
	expect(!rc && st == CU_STREAM_CAPTURE_STATUS_NONE, "the stream no longer captures", rc);
	rc = cuGraphGetNodes(g, NULL, &nodes);
	expect(!rc && nodes == 3, "the graph has three nodes", rc);
	rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	expect(!rc && ge, "the graph is instantiated", rc);
	for (int r = 0; r < 3 && !rc; r++) {
		for (int i = 0; i < N; i++)
			host[i] = 0;
		rc = cuGraphLaunch(ge, s);
		if (!rc)
			rc = cuStreamSynchronize(s);
		for (int i = 0; i < N; i++)
			bad += host[i] != 0x5eed;
	}
	expect(!rc && !bad, "three launches fill the host buffer", rc);
	rc = cuGraphExecDestroy(ge);
	if (!rc)
		rc = cuGraphDestroy(g);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(rc == CUDA_SUCCESS, "instance and graph are destroyed", rc);
	return checks_done("graph_driver");
}
