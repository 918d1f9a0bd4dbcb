// SPDX-License-Identifier: MIT
/*
 * Graph kernel nodes through the driver API: a captured kernel launch is
 * enumerated (the same handle every time, as a root too), its type and
 * parameters read back, its parameters changed in the graph and in an
 * instance, and each replay shows the new value written. Argument checks
 * hold on any backend; the rest runs where the backend captures (the GPU;
 * the host backend says CUDA_ERROR_NOT_SUPPORTED).
 *
 * One line per check on stdout, nothing that depends on addresses or the
 * backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_check.h"

static const char ptx[] = POKE_U32_PTX;

static uint32_t replay(CUgraphExec ge, CUstream s, CUdeviceptr d, CUresult *rc)
{
	uint32_t got = 0;

	*rc = cuMemsetD32(d, 0, 1);
	if (!*rc)
		*rc = cuGraphLaunch(ge, s);
	if (!*rc)
		*rc = cuStreamSynchronize(s);
	if (!*rc)
		*rc = cuMemcpyDtoH(&got, d, 4);
	return got;
}

/* A graph built by hand: two kernel nodes and an edge between them. */
static void built(CUfunction f, CUstream s, CUdeviceptr d)
{
	CUDA_KERNEL_NODE_PARAMS kp = { .func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				       .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 };
	CUgraphNode a = NULL, b = NULL, roots[2] = { NULL, NULL };
	CUdeviceptr d2 = d, e = 0;
	uint32_t va = 0x44, vb = 0x55, got[2] = { 0, 0 };
	CUgraphExec ge = NULL;
	CUgraph g = NULL;
	size_t n = 2;
	CUresult rc;

	rc = cuGraphCreate(&g, 0);
	expect(!rc && g, "an empty graph is created", rc);
	rc = cuMemAlloc(&e, 4);
	{
		void *args[] = { &d2, &va };

		kp.kernelParams = args;
		if (!rc)
			rc = cuGraphAddKernelNode(&a, g, NULL, 0, &kp);
	}
	{
		void *args[] = { &e, &vb };

		kp.kernelParams = args;
		if (!rc)
			rc = cuGraphAddKernelNode(&b, g, NULL, 0, &kp);
	}
	expect(!rc && a && b && a != b, "two kernel nodes are added", rc);
	rc = cuGraphAddDependencies(g, &a, &b, NULL, 1);
	expect(!rc, "an edge is added between them", rc);
	rc = cuGraphGetRootNodes(g, roots, &n);
	expect(!rc && n == 1 && roots[0] == a, "the first is the only root", rc);
	rc = cuGraphAddKernelNode(&b, g, &a, 1, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a node without parameters is refused", rc);
	rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	if (!rc)
		rc = cuGraphLaunch(ge, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	if (!rc)
		rc = cuMemcpyDtoH(&got[0], d, 4);
	if (!rc)
		rc = cuMemcpyDtoH(&got[1], e, 4);
	expect(!rc && got[0] == va && got[1] == vb, "its launch runs both kernels", rc);
	if (ge)
		cuGraphExecDestroy(ge);
	if (e)
		cuMemFree(e);
	cuGraphDestroy(g);
}

int main(void)
{
	CUgraphNode nodes[3] = { NULL, NULL, NULL }, again = NULL, root = NULL;
	CUDA_KERNEL_NODE_PARAMS kp;
	CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
	CUcontext ctx;
	CUdevice dev;
	CUmodule mod;
	CUfunction f;
	CUstream s;
	CUgraph g = NULL;
	CUgraphExec ge = NULL;
	CUdeviceptr d;
	uint32_t v = 0x11, v2 = 0x22, v3 = 0x33;
	size_t n = 0;
	uint64_t junk[4] = { 0 };
	CUresult rc;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
	    cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&f, mod, "vgpu_poke_u32") ||
	    cuMemAlloc(&d, 4)) {
		printf("FATAL setup\n");
		return 1;
	}
	rc = cuGraphNodeGetType(NULL, &type);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "the type of a NULL node is refused", rc);
	rc = cuGraphKernelNodeGetParams(NULL, &kp);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "the parameters of a NULL node are refused", rc);
	rc = cuGraphGetNodes(NULL, nodes, &n);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "the nodes of a NULL graph are refused", rc);
	rc = cuGraphCreate(&g, 1);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a graph with flags is refused", rc);
	rc = cuGraphNodeGetType((CUgraphNode)junk, &type);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "the type of a bogus node is refused", rc);

	rc = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "graph_node_driver: this backend does not capture streams\n");
		return checks_done("graph_node_driver");
	}
	{
		void *args[] = { &d, &v };

		if (!rc)
			rc = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
	}
	if (!rc)
		rc = cuStreamEndCapture(s, &g);
	expect(!rc && g, "a kernel launch is captured", rc);

	n = 3;
	rc = cuGraphGetNodes(g, nodes, &n);
	expect(!rc && n == 1 && nodes[0] && !nodes[1], "one node, the rest of the array NULL", rc);
	n = 1;
	rc = cuGraphGetNodes(g, &again, &n);
	expect(!rc && again == nodes[0], "the same handle at the next enumeration", rc);
	n = 1;
	rc = cuGraphGetRootNodes(g, &root, &n);
	expect(!rc && n == 1 && root == nodes[0], "it is the root", rc);
	rc = cuGraphNodeGetType(nodes[0], &type);
	expect(!rc && type == CU_GRAPH_NODE_TYPE_KERNEL, "it is a kernel node", rc);

	memset(&kp, 0, sizeof(kp));
	rc = cuGraphKernelNodeGetParams(nodes[0], &kp);
	expect(!rc && kp.func == f && kp.gridDimX == 1 && kp.blockDimX == 1 &&
	       kp.sharedMemBytes == 0, "its function and dimensions read back", rc);
	expect(!rc && kp.kernelParams && *(CUdeviceptr *)kp.kernelParams[0] == d &&
	       *(uint32_t *)kp.kernelParams[1] == v, "its parameters read back", rc);
	rc = cuGraphKernelNodeGetParams(nodes[0], NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "reading into NULL is refused", rc);

	{
		void *args[] = { &d, &v2 };

		kp.kernelParams = args;
		rc = cuGraphKernelNodeSetParams(nodes[0], &kp);
	}
	expect(!rc, "new parameters are set in the graph", rc);
	memset(&kp, 0, sizeof(kp));
	rc = cuGraphKernelNodeGetParams(nodes[0], &kp);
	expect(!rc && *(uint32_t *)kp.kernelParams[1] == v2, "and read back", rc);
	rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	expect(!rc && ge, "the graph is instantiated", rc);
	expect(replay(ge, s, d, &rc) == v2 && !rc, "a replay writes the new value", rc);

	{
		void *args[] = { &d, &v3 };

		kp.kernelParams = args;
		rc = cuGraphExecKernelNodeSetParams(ge, nodes[0], &kp);
	}
	expect(!rc, "new parameters are set in the instance", rc);
	expect(replay(ge, s, d, &rc) == v3 && !rc, "a replay writes the instance's value", rc);
	memset(&kp, 0, sizeof(kp));
	rc = cuGraphKernelNodeGetParams(nodes[0], &kp);
	expect(!rc && *(uint32_t *)kp.kernelParams[1] == v2, "the graph keeps its own value", rc);

	kp.kernelParams = NULL;
	rc = cuGraphKernelNodeSetParams(nodes[0], &kp);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "parameters without kernelParams are refused", rc);
	rc = cuGraphExecKernelNodeSetParams(NULL, nodes[0], &kp);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "setting in a NULL instance is refused", rc);

	cuGraphExecDestroy(ge);
	cuGraphDestroy(g);
	built(f, s, d);
	cuMemFree(d);
	return checks_done("graph_node_driver");
}
