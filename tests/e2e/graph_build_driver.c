// SPDX-License-Identifier: MIT
/*
 * Graphs built node by node, as XLA builds its command buffers: memset,
 * copy, empty, kernel, child graph and event record nodes added with
 * cuGraphAddNode and the typed calls, instantiated and launched; their
 * parameters then changed in the instance (cuGraphExecNodeSetParams and the
 * typed calls) and in the graph (cuGraphNodeSetParams, then
 * cuGraphExecUpdate), each launch's results checked; a node destroyed; a
 * capture recorded into a graph the program made (cuStreamBeginCaptureToGraph);
 * bad parameters refused. Argument checks hold on any backend; the rest runs
 * where the backend has graphs (the GPU, and the host backend, which says
 * CUDA_ERROR_NOT_SUPPORTED to captures: that part is left out there).
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

#define N 1024	/* u32 elements a buffer */

static const char ptx[] = POKE_U32_PTX;

static CUfunction poke;
static CUstream s;

/* Every element of buffer @d is @v. */
static bool all(CUdeviceptr d, uint32_t v, CUresult *rc)
{
	static uint32_t h[N];

	*rc = cuMemcpyDtoH(h, d, sizeof(h));
	for (int i = 0; !*rc && i < N; i++)
		if (h[i] != v)
			return false;
	return !*rc;
}

static uint32_t word(CUdeviceptr d, CUresult *rc)
{
	uint32_t v = 0;

	*rc = cuMemcpyDtoH(&v, d, 4);
	return v;
}

static CUresult run(CUgraphExec ge)
{
	/* s does not wait for the legacy stream: the memsets that clear the
	 * buffers before a run must be done first (natively they raced the
	 * graph's copy once on the H100). */
	CUresult rc = cuCtxSynchronize();

	if (!rc)
		rc = cuGraphLaunch(ge, s);

	return rc ? rc : cuStreamSynchronize(s);
}

static CUDA_MEMCPY3D copy1d(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
				.dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
				.WidthInBytes = bytes, .Height = 1, .Depth = 1 };
}

static CUgraphNodeParams memset_params(CUdeviceptr d, uint32_t v)
{
	CUgraphNodeParams p = { .type = CU_GRAPH_NODE_TYPE_MEMSET };

	p.memset.dst = d;
	p.memset.value = v;
	p.memset.elementSize = 4;
	p.memset.width = N;
	p.memset.height = 1;
	return p;
}

/* A graph of one memset node: @d set to @v. */
static CUgraph memset_graph(CUdeviceptr d, uint32_t v, CUresult *rc)
{
	CUDA_MEMSET_NODE_PARAMS m = { .dst = d, .value = v, .elementSize = 4, .width = N,
				      .height = 1 };
	CUcontext ctx = NULL;
	CUgraphNode n;
	CUgraph g = NULL;

	*rc = cuCtxGetCurrent(&ctx);
	if (!*rc)
		*rc = cuGraphCreate(&g, 0);
	if (!*rc)
		*rc = cuGraphAddMemsetNode(&n, g, NULL, 0, &m, ctx);
	return g;
}

int main(void)
{
	CUdeviceptr a, b, c, e, d;
	CUgraphNode nset, ncopy, nempty, nkern, nchild, nrec, extra, list[8];
	CUgraphNodeParams p;
	CUgraph g = NULL, child = NULL, child2 = NULL, g2 = NULL, got = NULL;
	CUgraphExec ge = NULL, ge2 = NULL;
	CUgraphExecUpdateResultInfo info;
	CUgraphNodeType type;
	CUcontext ctx;
	CUdevice dev;
	CUmodule mod;
	CUevent ev;
	uint32_t v1 = 0x42, v2 = 0x43;
	void *args[2];
	size_t n;
	CUresult rc;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
	    cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&poke, mod, "vgpu_poke_u32") ||
	    cuMemAlloc(&a, 4 * N) || cuMemAlloc(&b, 4 * N) || cuMemAlloc(&c, 4 * N) ||
	    cuMemAlloc(&e, 4 * N) || cuMemAlloc(&d, 4) || cuEventCreate(&ev, 0)) {
		printf("FATAL setup\n");
		return 1;
	}
	p = memset_params(a, 7);
	rc = cuGraphAddNode(&nset, NULL, NULL, NULL, 0, &p);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "a node added to a NULL graph is refused", rc);
	rc = cuGraphNodeSetParams(NULL, &p);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "parameters for a NULL node are refused", rc);
	rc = cuGraphDestroyNode(NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "destroying a NULL node is refused", rc);

	rc = cuGraphCreate(&g, 0);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "graph_build_driver: this backend has no graphs\n");
		return checks_done("graph_build_driver");
	}
	expect(!rc && g, "a graph is created", rc);

	/* memset a = 7 -> copy a to b -> empty -> poke d -> child (e = 9) -> record */
	p = memset_params(a, 7);
	rc = cuGraphAddNode(&nset, g, NULL, NULL, 0, &p);
	expect(!rc, "a memset node is added (cuGraphAddNode)", rc);
	memset(&p, 0, sizeof(p));
	p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
	p.memcpy.copyCtx = ctx;
	p.memcpy.copyParams = copy1d(b, a, 4 * N);
	rc = cuGraphAddNode(&ncopy, g, &nset, NULL, 1, &p);
	expect(!rc, "a copy node is added after it", rc);
	rc = cuGraphAddEmptyNode(&nempty, g, &ncopy, 1);
	expect(!rc, "an empty node is added after that", rc);
	memset(&p, 0, sizeof(p));
	p.type = CU_GRAPH_NODE_TYPE_KERNEL;
	p.kernel.func = poke;
	p.kernel.gridDimX = p.kernel.gridDimY = p.kernel.gridDimZ = 1;
	p.kernel.blockDimX = p.kernel.blockDimY = p.kernel.blockDimZ = 1;
	args[0] = &d, args[1] = &v1;
	p.kernel.kernelParams = args;
	rc = cuGraphAddNode(&nkern, g, &nempty, NULL, 1, &p);
	expect(!rc, "a kernel node is added (cuGraphAddNode)", rc);
	child = memset_graph(e, 9, &rc);
	expect(!rc && child, "a child graph is built (cuGraphAddMemsetNode)", rc);
	rc = cuGraphAddChildGraphNode(&nchild, g, &nkern, 1, child);
	expect(!rc, "it is added as a child graph node", rc);
	rc = cuGraphAddEventRecordNode(&nrec, g, &nchild, 1, ev);
	expect(!rc, "an event record node ends the graph", rc);
	n = 0;
	rc = cuGraphGetNodes(g, NULL, &n);
	expect(!rc && n == 6, "the graph has six nodes", rc);
	n = 8;
	rc = cuGraphGetRootNodes(g, list, &n);
	expect(!rc && n == 1 && list[0] == nset, "the memset is the only root", rc);
	rc = cuGraphNodeGetType(ncopy, &type);
	expect(!rc && type == CU_GRAPH_NODE_TYPE_MEMCPY, "the copy node says so", rc);
	rc = cuGraphNodeGetType(nchild, &type);
	expect(!rc && type == CU_GRAPH_NODE_TYPE_GRAPH, "the child graph node says so", rc);

	rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	expect(!rc && ge, "the graph is instantiated", rc);
	cuMemsetD32(b, 0, N);
	cuMemsetD32(e, 0, N);
	rc = run(ge);
	expect(!rc, "the instance runs", rc);
	expect(all(a, 7, &rc), "the memset wrote a", rc);
	expect(all(b, 7, &rc), "the copy wrote b", rc);
	expect(word(d, &rc) == v1 && !rc, "the kernel wrote its value", rc);
	expect(all(e, 9, &rc), "the child graph wrote e", rc);
	expect(cuEventQuery(ev) == CUDA_SUCCESS, "the event is recorded", rc);

	/* The instance changed: memset a = 5, copy a to c, poke v2, child e = 11. */
	p = memset_params(a, 5);
	rc = cuGraphExecNodeSetParams(ge, nset, &p);
	expect(!rc, "the instance's memset is changed", rc);
	{
		CUDA_MEMCPY3D cp = copy1d(c, a, 4 * N);

		rc = cuGraphExecMemcpyNodeSetParams(ge, ncopy, &cp, ctx);
	}
	expect(!rc, "the instance's copy gets a new destination", rc);
	memset(&p, 0, sizeof(p));
	p.type = CU_GRAPH_NODE_TYPE_KERNEL;
	p.kernel.func = poke;
	p.kernel.gridDimX = p.kernel.gridDimY = p.kernel.gridDimZ = 1;
	p.kernel.blockDimX = p.kernel.blockDimY = p.kernel.blockDimZ = 1;
	args[0] = &d, args[1] = &v2;
	p.kernel.kernelParams = args;
	rc = cuGraphExecNodeSetParams(ge, nkern, &p);
	expect(!rc, "the instance's kernel gets a new value", rc);
	child2 = memset_graph(e, 11, &rc);
	if (!rc)
		rc = cuGraphExecChildGraphNodeSetParams(ge, nchild, child2);
	expect(!rc, "the instance's child graph is replaced", rc);
	cuMemsetD32(b, 0, N);
	cuMemsetD32(c, 0, N);
	rc = run(ge);
	expect(!rc, "the changed instance runs", rc);
	expect(all(a, 5, &rc), "a holds the new memset value", rc);
	expect(all(c, 5, &rc), "the copy went to c", rc);
	expect(all(b, 0, &rc), "and no longer to b", rc);
	expect(word(d, &rc) == v2 && !rc, "the kernel wrote its new value", rc);
	expect(all(e, 11, &rc), "the new child graph ran", rc);

	/* The graph changed, the instance updated from it. */
	p = memset_params(a, 6);
	rc = cuGraphNodeSetParams(nset, &p);
	expect(!rc, "the graph's memset is changed", rc);
	{
		CUDA_MEMSET_NODE_PARAMS m = { .dst = a, .value = 3, .elementSize = 4, .width = N,
					      .height = 1 };

		rc = cuGraphExecMemsetNodeSetParams(ge, nset, &m, ctx);
	}
	expect(!rc, "the instance's memset is changed again (typed call)", rc);
	memset(&info, 0, sizeof(info));
	rc = cuGraphExecUpdate(ge, g, &info);
	expect(!rc && info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS,
	       "the instance is updated from the graph", rc);
	cuMemsetD32(b, 0, N);
	cuMemsetD32(c, 0, N);
	rc = run(ge);
	expect(!rc, "the updated instance runs", rc);
	expect(all(a, 6, &rc), "a holds the graph's memset value", rc);
	expect(all(b, 6, &rc), "the copy is the graph's again (to b)", rc);
	expect(all(c, 0, &rc), "c is left alone", rc);
	expect(word(d, &rc) == v1 && !rc, "the kernel writes the graph's value", rc);
	expect(all(e, 9, &rc), "the graph's child graph ran", rc);

	/* Bad parameters. */
	p = memset_params(a, 1);
	p.memset.elementSize = 3;
	rc = cuGraphAddNode(&extra, g, NULL, NULL, 0, &p);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a memset of 3-byte elements is refused", rc);
	p = memset_params(a, 1);
	rc = cuGraphNodeSetParams(ncopy, &p);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "memset parameters for a copy node are refused",
	       rc);
	p = memset_params(0x1000, 1);
	rc = cuGraphAddNode(&extra, g, NULL, NULL, 0, &p);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a memset of memory not the program's", rc);
	{
		CUDA_MEMCPY3D cp = copy1d(a, 0xdead0000, 4 * N);

		rc = cuGraphExecMemcpyNodeSetParams(ge, ncopy, &cp, ctx);
	}
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a copy from memory not the program's", rc);
	rc = cuGraphAddChildGraphNode(&extra, g, NULL, 0, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "a NULL child graph is refused", rc);

	/* A node destroyed. */
	rc = cuGraphAddEmptyNode(&extra, g, &nrec, 1);
	if (!rc)
		rc = cuGraphDestroyNode(extra);
	n = 0;
	if (!rc)
		rc = cuGraphGetNodes(g, NULL, &n);
	expect(!rc && n == 6, "a node added and destroyed leaves six", rc);

	/* A capture recorded into a graph the program built. */
	g2 = memset_graph(a, 1, &rc);
	n = 1;
	if (!rc)
		rc = cuGraphGetNodes(g2, list, &n);
	if (!rc)
		rc = cuStreamBeginCaptureToGraph(s, g2, list, NULL, 1,
						 CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {	/* the host backend builds graphs, captures none */
		fprintf(stderr, "graph_build_driver: this backend has no stream capture\n");
		goto no_capture;
	}
	expect(!rc, "a capture begins into a built graph", rc);
	args[0] = &d, args[1] = &v2;
	if (!rc)
		rc = cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
	if (!rc)
		rc = cuMemcpyDtoDAsync(c, a, 4 * N, s);
	if (!rc)
		rc = cuStreamEndCapture(s, &got);
	expect(!rc && got == g2, "its end gives that graph back", rc);
	n = 0;
	if (!rc)
		rc = cuGraphGetNodes(g2, NULL, &n);
	expect(!rc && n == 3, "the graph has the memset and the two captured nodes", rc);
	if (!rc)
		rc = cuGraphInstantiateWithFlags(&ge2, g2, 0);
	cuMemsetD32(d, 0, 1);
	cuMemsetD32(c, 0, N);
	if (!rc)
		rc = run(ge2);
	expect(!rc && word(d, &rc) == v2 && all(c, 1, &rc), "its instance runs all three", rc);
no_capture:

	/* Two kernels joined by a programmatic edge (XLA's edges carry data). */
	{
		CUgraphEdgeData edge = { .from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
					 .type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC };
		CUgraphExec ge3 = NULL;
		CUgraph g3 = NULL;
		CUgraphNode k1, k2;

		memset(&p, 0, sizeof(p));
		p.type = CU_GRAPH_NODE_TYPE_KERNEL;
		p.kernel.func = poke;
		p.kernel.gridDimX = p.kernel.gridDimY = p.kernel.gridDimZ = 1;
		p.kernel.blockDimX = p.kernel.blockDimY = p.kernel.blockDimZ = 1;
		p.kernel.kernelParams = args;
		args[0] = &d, args[1] = &v1;
		rc = cuGraphCreate(&g3, 0);
		if (!rc)
			rc = cuGraphAddNode(&k1, g3, NULL, NULL, 0, &p);
		args[0] = &e;
		if (!rc)
			rc = cuGraphAddNode(&k2, g3, &k1, &edge, 1, &p);
		expect(!rc, "a kernel node is added with a programmatic edge", rc);
		if (!rc)
			rc = cuGraphInstantiateWithFlags(&ge3, g3, 0);
		cuMemsetD32(d, 0, 1);
		cuMemsetD32(e, 0, N);
		if (!rc)
			rc = run(ge3);
		expect(!rc && word(d, &rc) == v1 && word(e, &rc) == v1, "both kernels ran", rc);
		if (ge3)
			cuGraphExecDestroy(ge3);
		if (g3)
			cuGraphDestroy(g3);
	}

	if (ge2)
		cuGraphExecDestroy(ge2);
	cuGraphExecDestroy(ge);
	cuGraphDestroy(g2);
	cuGraphDestroy(child2);
	cuGraphDestroy(child);
	cuGraphDestroy(g);
	return checks_done("graph_build_driver");
}
