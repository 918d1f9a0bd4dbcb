// SPDX-License-Identifier: MIT
/*
 * Graph host nodes: the program's function runs in the program at every
 * launch, in order after the nodes it depends on. A memset then a host node
 * (cuGraphAddHostNode) then a copy, launched three times; a second host
 * node added with cuGraphAddNode; the parameters read back
 * (cuGraphHostNodeGetParams), changed in the graph and in the instance
 * (cuGraphHostNodeSetParams, cuGraphExecHostNodeSetParams, and
 * cuGraphExecNodeSetParams), a clone launched; a NULL function refused.
 * The graph printed (cuGraphDebugDotPrint) to a file the program names,
 * which this process writes; a path in no directory refused.
 *
 * One line per check on stdout, nothing that depends on addresses or the
 * backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

#define N 64

struct counter {
	int calls;
	int order;	/* the order of the last call among all calls */
};

static int calls_so_far;

static void CUDA_CB count(void *arg)
{
	struct counter *c = arg;

	c->calls++;
	c->order = ++calls_so_far;
}

static CUstream s;

static CUresult run(CUgraphExec ge)
{
	CUresult rc = cuGraphLaunch(ge, s);

	return rc ? rc : cuStreamSynchronize(s);
}

int main(void)
{
	struct counter a = { 0 }, b = { 0 }, c = { 0 };
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d, e;
	CUgraph g, clone;
	CUgraphNode nset, nhost, ncopy, nhost2;
	CUgraphExec ge, gc;
	CUDA_HOST_NODE_PARAMS hp = { count, &a }, got = { 0 };
	CUDA_MEMSET_NODE_PARAMS mp = { 0 };
	CUDA_MEMCPY3D cp = { 0 };
	CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_HOST };
	uint32_t h[N];
	CUresult rc;
	bool ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuCtxCreate(&ctx, NULL, 0, dev));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	MUST(cuMemAlloc(&d, 4 * N));
	MUST(cuMemAlloc(&e, 4 * N));
	MUST(cuMemsetD32(e, 0, N));

	rc = cuGraphCreate(&g, 0);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "graph_host_driver: this backend has no graphs\n");
		return checks_done("graph_host_driver");
	}
	expect(!rc, "a graph is created", rc);
	mp.dst = d, mp.value = 0x5a, mp.elementSize = 4, mp.width = N, mp.height = 1;
	MUST(cuGraphAddMemsetNode(&nset, g, NULL, 0, &mp, ctx));
	hp.fn = NULL;
	rc = cuGraphAddHostNode(&nhost, g, &nset, 1, &hp);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a host node without a function is refused", rc);
	hp.fn = count;
	rc = cuGraphAddHostNode(&nhost, g, &nset, 1, &hp);
	expect(!rc, "a host node is added after the memset", rc);
	cp.srcMemoryType = cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = d, cp.dstDevice = e, cp.WidthInBytes = 4 * N, cp.Height = 1, cp.Depth = 1;
	MUST(cuGraphAddMemcpyNode(&ncopy, g, &nhost, 1, &cp, ctx));
	np.host.fn = count;
	np.host.userData = &b;
	rc = cuGraphAddNode(&nhost2, g, &ncopy, NULL, 1, &np);
	expect(!rc, "a host node is added with cuGraphAddNode", rc);
	rc = cuGraphHostNodeGetParams(nhost, &got);
	expect(!rc && got.fn == count && got.userData == &a,
	       "its function and data are read back", rc);

	MUST(cuGraphInstantiateWithFlags(&ge, g, 0));
	for (int i = 0; i < 3 && !rc; i++)
		rc = run(ge);
	expect(!rc && a.calls == 3 && b.calls == 3, "each host node ran at each of 3 launches", rc);
	expect(a.order < b.order, "in dependency order", CUDA_SUCCESS);
	ok = !cuMemcpyDtoH(h, e, sizeof(h));
	for (int i = 0; ok && i < N; i++)
		ok = h[i] == 0x5a;
	expect(ok, "the nodes around them ran", CUDA_SUCCESS);

	hp.userData = &c;
	rc = cuGraphExecHostNodeSetParams(ge, nhost, &hp);
	if (!rc)
		rc = run(ge);
	expect(!rc && c.calls == 1 && a.calls == 3, "the instance's host node is given new data",
	       rc);
	np.host.userData = &a;
	rc = cuGraphExecNodeSetParams(ge, nhost2, &np);
	if (!rc)
		rc = run(ge);
	expect(!rc && c.calls == 2 && a.calls == 4 && b.calls == 4,
	       "and the other through cuGraphExecNodeSetParams", rc);
	hp.userData = &b;
	rc = cuGraphHostNodeSetParams(nhost, &hp);
	if (!rc)
		rc = cuGraphHostNodeGetParams(nhost, &got);
	expect(!rc && got.userData == &b, "the graph's host node is given new data", rc);
	if (!rc)
		rc = run(ge);
	expect(!rc && c.calls == 3 && b.calls == 4, "which its instance does not see", rc);
	{
		char path[] = "/tmp/graph_host_driver.XXXXXX", text[64] = { 0 };
		int fd = mkstemp(path);
		ssize_t got = -1;

		if (fd >= 0)
			close(fd);
		rc = cuGraphDebugDotPrint(g, path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE);
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			got = read(fd, text, sizeof(text) - 1);
			close(fd);
		}
		unlink(path);
		expect(!rc && got > 0 && strstr(text, "digraph"), "the graph is printed to a file",
		       rc);
		rc = cuGraphDebugDotPrint(g, "/nonexistent-vgpu-dir/graph.dot", 0);
		expect(rc != CUDA_SUCCESS, "a path in no directory is refused", rc);
	}
	rc = cuGraphClone(&clone, g);
	if (!rc)
		rc = cuGraphInstantiateWithFlags(&gc, clone, 0);
	if (!rc)
		rc = run(gc);
	expect(!rc && b.calls == 6, "a clone runs both host nodes with the graph's data", rc);
	cuGraphExecDestroy(gc);
	cuGraphDestroy(clone);
	cuGraphExecDestroy(ge);
	cuGraphDestroy(g);
	cuMemFree(d);
	cuMemFree(e);
	return checks_done("graph_host_driver");
}
