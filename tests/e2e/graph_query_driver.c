// SPDX-License-Identifier: MIT
/*
 * Graph queries and edits through the driver API: a node's dependencies
 * and dependents, a graph's edges (with edge data), edges removed, the
 * event of event nodes, the graph of a child graph node (the same handle
 * each time), a clone and its nodes (run), kernel node attributes set,
 * read and copied, copy node parameters read back, and a capture into a
 * graph whose dependencies are replaced. Argument checks hold on any
 * backend; the rest runs where the backend has graphs (the GPU, and the
 * host backend, which captures nothing: the capture is left out there).
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

static CUfunction poke;
static CUstream s;

/* Whether @n is among the @count nodes at @list. */
static bool has(const CUgraphNode *list, size_t count, CUgraphNode n)
{
	for (size_t i = 0; i < count; i++)
		if (list[i] == n)
			return true;
	return false;
}

static CUresult add_poke(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			 CUdeviceptr *d, uint32_t *v)
{
	void *args[] = { d, v };
	CUDA_KERNEL_NODE_PARAMS kp = { .func = poke, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				       .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
				       .kernelParams = args };

	return cuGraphAddKernelNode(out, g, deps, ndeps, &kp);
}

/* Instantiate @g, run it once on s, read *d. */
static uint32_t run(CUgraph g, CUdeviceptr d, CUresult *rc)
{
	CUgraphExec ge = NULL;
	uint32_t got = 0;

	*rc = cuMemsetD32(d, 0, 1);
	if (!*rc)
		*rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	if (!*rc)
		*rc = cuGraphLaunch(ge, s);
	if (!*rc)
		*rc = cuStreamSynchronize(s);
	if (!*rc)
		*rc = cuMemcpyDtoH(&got, d, 4);
	if (ge)
		cuGraphExecDestroy(ge);
	return got;
}

/* A -> K, B -> K, K -> C; K pokes @d. */
static void edges(CUgraph g, CUdeviceptr d, CUgraphNode *k_out)
{
	CUgraphNode a, b, c, k, deps[2], list[4] = { 0 }, from[4] = { 0 }, to[4] = { 0 };
	CUgraphEdgeData data[4];
	uint32_t v = 0x61;
	size_t n;
	CUresult rc;

	rc = cuGraphAddEmptyNode(&a, g, NULL, 0);
	if (!rc)
		rc = cuGraphAddEmptyNode(&b, g, NULL, 0);
	deps[0] = a, deps[1] = b;
	if (!rc)
		rc = add_poke(&k, g, deps, 2, &d, &v);
	if (!rc)
		rc = cuGraphAddEmptyNode(&c, g, &k, 1);
	expect(!rc, "a graph of four nodes and three edges is built", rc);
	if (rc)
		exit(checks_done("graph_query_driver"));
	*k_out = k;

	n = 0;
	rc = cuGraphNodeGetDependencies(k, NULL, NULL, &n);
	expect(!rc && n == 2, "the kernel node has two dependencies", rc);
	n = 4;
	rc = cuGraphNodeGetDependencies(k, list, NULL, &n);
	expect(!rc && n == 2 && has(list, 2, a) && has(list, 2, b) && !list[2],
	       "they are the two empty nodes, the rest of the array NULL", rc);
	n = 1;
	list[0] = list[1] = NULL;
	rc = cuGraphNodeGetDependencies(k, list, NULL, &n);
	expect(!rc && (list[0] == a || list[0] == b) && !list[1], "room for one gives one", rc);
	n = 4;
	rc = cuGraphNodeGetDependentNodes(k, list, NULL, &n);
	expect(!rc && n == 1 && list[0] == c, "its dependent is the last node", rc);
	n = 4;
	rc = cuGraphNodeGetDependentNodes(c, list, NULL, &n);
	expect(!rc && n == 0, "the last node has no dependents", rc);
	n = 4;
	rc = cuGraphNodeGetDependencies(a, list, NULL, &n);
	expect(!rc && n == 0, "a root has no dependencies", rc);

	n = 0;
	rc = cuGraphGetEdges(g, NULL, NULL, NULL, &n);
	expect(!rc && n == 3, "the graph has three edges", rc);
	n = 4;
	memset(data, 0xff, sizeof(data));
	rc = cuGraphGetEdges(g, from, to, data, &n);
	{
		bool ok = !rc && n == 3 && !from[3] && !to[3];

		for (size_t i = 0; ok && i < 3; i++)
			ok = ((from[i] == a || from[i] == b) && to[i] == k) ||
			     (from[i] == k && to[i] == c);
		for (size_t i = 0; ok && i < 3; i++)
			ok = data[i].type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT &&
			     data[i].from_port == 0 && data[i].to_port == 0;
		expect(ok, "its edges read back, ordinary ones", rc);
	}
	n = 4;
	rc = cuGraphNodeGetDependencies(k, list, data, &n);
	expect(!rc && n == 2 && data[0].type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT,
	       "dependencies read back with their edge data", rc);

	rc = cuGraphRemoveDependencies(g, &b, &k, NULL, 1);
	expect(!rc, "an edge is removed", rc);
	n = 4;
	rc = cuGraphNodeGetDependencies(k, list, NULL, &n);
	expect(!rc && n == 1 && list[0] == a, "the kernel node depends on one node now", rc);
	rc = cuGraphRemoveDependencies(g, &b, &k, NULL, 1);
	expect(rc != CUDA_SUCCESS, "removing it again is refused", rc);
	n = 0;
	rc = cuGraphGetEdges(g, NULL, NULL, NULL, &n);
	expect(!rc && n == 2, "the graph has two edges", rc);
	rc = cuGraphAddDependencies(g, &b, &k, NULL, 1);
	expect(!rc, "and it is added back", rc);
}

static void events(CUgraph g)
{
	CUgraphNode rec, wait, empty;
	CUevent ev, got = NULL;
	CUresult rc;

	MUST(cuEventCreate(&ev, 0));
	rc = cuGraphAddEventRecordNode(&rec, g, NULL, 0, ev);
	if (!rc)
		rc = cuGraphAddEventWaitNode(&wait, g, &rec, 1, ev);
	expect(!rc, "event record and wait nodes are added", rc);
	rc = cuGraphEventRecordNodeGetEvent(rec, &got);
	expect(!rc && got == ev, "the record node gives its event", rc);
	got = NULL;
	rc = cuGraphEventWaitNodeGetEvent(wait, &got);
	expect(!rc && got == ev, "the wait node gives its event", rc);
	rc = cuGraphEventRecordNodeGetEvent(rec, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "reading into NULL is refused", rc);
	rc = cuGraphAddEmptyNode(&empty, g, NULL, 0);
	if (!rc)
		rc = cuGraphEventRecordNodeGetEvent(empty, &got);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "an empty node has no event", rc);
	rc = cuGraphDestroyNode(empty);
	expect(!rc, "that node is destroyed", rc);
}

/* A child graph node: its graph is a copy, the same handle each time. */
static void child(CUgraph g, CUdeviceptr d)
{
	CUgraphNode cn, inner, list[2];
	CUgraph cg = NULL, got = NULL, again = NULL;
	CUdeviceptr d4 = d + 4;	/* apart from what the graph's kernel writes */
	uint32_t v = 0x62;
	size_t n = 2;
	CUresult rc;

	rc = cuGraphCreate(&cg, 0);
	if (!rc)
		rc = add_poke(&inner, cg, NULL, 0, &d4, &v);
	if (!rc)
		rc = cuGraphAddChildGraphNode(&cn, g, NULL, 0, cg);
	expect(!rc, "a child graph node is added", rc);
	rc = cuGraphChildGraphNodeGetGraph(cn, &got);
	expect(!rc && got && got != cg, "it holds a copy of the graph", rc);
	rc = cuGraphChildGraphNodeGetGraph(cn, &again);
	expect(!rc && again == got, "the same handle the next time", rc);
	rc = cuGraphGetNodes(got, list, &n);
	expect(!rc && n == 1 && list[0] != inner, "the copy has its own kernel node", rc);
	/* What running a child node's graph does is the driver's to say: the
	 * same natively and through vgpu (the GPU suite compares the lines). */
	printf("the copy runs: %s\n", run(got, d4, &rc) == v ? "its kernel wrote" : "nothing written");
	printf("the copy's run: %s\n", errname(rc));
	rc = cuGraphChildGraphNodeGetGraph(inner, &got);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "a kernel node has no graph", rc);
	cuGraphDestroy(cg);
}

/* Kernel node attributes: set, read back, copied to another node. */
static void attributes(CUgraph g, CUgraphNode k, CUdeviceptr d)
{
	CUkernelNodeAttrValue v, got;
	CUgraphNode k2;
	uint32_t val = 0x63;
	int least = 0, greatest = 0;
	CUresult rc;

	MUST(cuCtxGetStreamPriorityRange(&least, &greatest));
	memset(&v, 0, sizeof(v));
	v.priority = greatest;
	rc = cuGraphKernelNodeSetAttribute(k, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v);
	expect(!rc, "a kernel node's priority is set", rc);
	memset(&got, 0, sizeof(got));
	rc = cuGraphKernelNodeGetAttribute(k, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &got);
	expect(!rc && got.priority == greatest, "and read back", rc);
	rc = add_poke(&k2, g, NULL, 0, &d, &val);
	if (!rc)
		rc = cuGraphKernelNodeCopyAttributes(k2, k);
	expect(!rc, "the attributes are copied to another kernel node", rc);
	memset(&got, 0, sizeof(got));
	rc = cuGraphKernelNodeGetAttribute(k2, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &got);
	expect(!rc && got.priority == greatest, "it has the priority too", rc);
	/* The driver crashes on a NULL value; vgpu refuses it. */
	if (under_vgpu()) {
		rc = cuGraphKernelNodeGetAttribute(k, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, NULL);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "reading an attribute into NULL is refused", rc);
	}
	rc = cuGraphDestroyNode(k2);
	expect(!rc, "the other node is destroyed", rc);
}

static void copies(CUgraph g, CUdeviceptr d)
{
	CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d + 16,
			    .WidthInBytes = 8, .Height = 1, .Depth = 1 }, got;
	CUcontext ctx;
	CUgraphNode cp;
	CUresult rc;

	MUST(cuCtxGetCurrent(&ctx));
	rc = cuGraphAddMemcpyNode(&cp, g, NULL, 0, &c, ctx);
	expect(!rc, "a copy node is added", rc);
	memset(&got, 0, sizeof(got));
	rc = cuGraphMemcpyNodeGetParams(cp, &got);
	expect(!rc && got.srcMemoryType == CU_MEMORYTYPE_DEVICE && got.srcDevice == d &&
	       got.dstMemoryType == CU_MEMORYTYPE_DEVICE && got.dstDevice == d + 16 &&
	       got.WidthInBytes == 8 && got.Height == 1 && got.Depth == 1,
	       "its parameters read back", rc);
	rc = cuGraphDestroyNode(cp);
	expect(!rc, "the copy node is destroyed", rc);
}

/* A clone: its nodes found from the original's, its edges its own. */
static void clone(CUgraph g, CUgraphNode k, CUdeviceptr d)
{
	CUgraphNode kc = NULL, list[4];
	CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
	CUgraph cl = NULL;
	size_t n = 0, m = 0;
	CUresult rc;

	rc = cuGraphClone(&cl, g);
	expect(!rc && cl && cl != g, "the graph is cloned", rc);
	if (!rc)
		rc = cuGraphGetNodes(g, NULL, &n);
	if (!rc)
		rc = cuGraphGetNodes(cl, NULL, &m);
	expect(!rc && n == m && n > 0, "the clone has as many nodes", rc);
	rc = cuGraphNodeFindInClone(&kc, k, cl);
	expect(!rc && kc && kc != k, "the kernel node is found in the clone", rc);
	rc = cuGraphNodeGetType(kc, &type);
	expect(!rc && type == CU_GRAPH_NODE_TYPE_KERNEL, "it is a kernel node", rc);
	n = 4;
	rc = cuGraphNodeGetDependencies(kc, list, NULL, &n);
	expect(!rc && n == 2 && list[0] != k, "with two dependencies of its own", rc);
	rc = cuGraphNodeFindInClone(&kc, k, g);
	expect(rc != CUDA_SUCCESS, "the original is no clone of itself", rc);
	expect(run(cl, d, &rc) == 0x61 && !rc, "the clone runs its kernel", rc);
	rc = cuGraphDestroy(cl);
	expect(!rc, "the clone is destroyed", rc);
}

/* A capture into a graph, its dependencies replaced before the launch. */
static void capture(CUdeviceptr d)
{
	CUgraphNode p, q, list[4];
	CUgraph g = NULL, out = NULL;
	uint32_t v = 0x64;
	size_t n;
	CUresult rc;

	MUST(cuGraphCreate(&g, 0));
	rc = cuGraphAddEmptyNode(&p, g, NULL, 0);
	if (!rc)
		rc = cuGraphAddEmptyNode(&q, g, NULL, 0);
	if (!rc)
		rc = cuStreamBeginCaptureToGraph(s, g, &p, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {	/* the host backend builds graphs, captures none */
		fprintf(stderr, "graph_query_driver: this backend has no stream capture\n");
		cuGraphDestroy(g);
		return;
	}
	expect(!rc, "a capture into a graph begins after one node", rc);
	rc = cuStreamUpdateCaptureDependencies(s, &q, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
	expect(!rc, "its dependencies are replaced by the other node", rc);
	{
		void *args[] = { &d, &v };

		if (!rc)
			rc = cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
	}
	if (!rc)
		rc = cuStreamEndCapture(s, &out);
	expect(!rc && out == g, "a kernel is captured into it", rc);
	n = 4;
	rc = cuGraphNodeGetDependentNodes(q, list, NULL, &n);
	expect(!rc && n == 1, "the kernel follows the other node", rc);
	n = 4;
	rc = cuGraphNodeGetDependentNodes(p, list, NULL, &n);
	expect(!rc && n == 0, "and not the first", rc);
	expect(run(g, d, &rc) == v && !rc, "the graph runs the kernel", rc);
	rc = cuStreamUpdateCaptureDependencies(s, &q, NULL, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
	expect(rc != CUDA_SUCCESS, "no capture, no dependencies to update", rc);
	cuGraphDestroy(g);
}

int main(void)
{
	CUgraphNode k = NULL, list[2];
	CUcontext ctx;
	CUdevice dev;
	CUmodule mod;
	CUdeviceptr d;
	CUgraph g = NULL, got = NULL;
	CUevent ev = NULL;
	size_t n = 2;
	CUresult rc;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
	    cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&poke, mod, "vgpu_poke_u32") ||
	    cuMemAlloc(&d, 64)) {
		printf("FATAL setup\n");
		return 1;
	}
	rc = cuGraphNodeGetDependencies(NULL, list, NULL, &n);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "the dependencies of a NULL node are refused", rc);
	rc = cuGraphChildGraphNodeGetGraph(NULL, &got);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "the graph of a NULL node is refused", rc);
	rc = cuGraphEventWaitNodeGetEvent(NULL, &ev);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "the event of a NULL node is refused", rc);
	rc = cuGraphClone(NULL, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE,
	       "a clone of a NULL graph is refused", rc);

	rc = cuGraphCreate(&g, 0);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "graph_query_driver: this backend has no graphs\n");
		return checks_done("graph_query_driver");
	}
	expect(!rc && g, "a graph is created", rc);
	edges(g, d, &k);
	events(g);
	child(g, d);
	attributes(g, k, d);
	copies(g, d);
	clone(g, k, d);
	cuGraphDestroy(g);
	capture(d);
	cuMemFree(d);
	return checks_done("graph_query_driver");
}
