// SPDX-License-Identifier: MIT
/*
 * Graphs and graph instances across checkpoints and moves: usage
 * graph_ckpt GO. Builds a graph of memset, copy, kernel, child graph, empty,
 * event record and host nodes and instantiates it; sets parameters in the
 * instance and disables a node there; instantiates a second graph, disables
 * one of its nodes and destroys the graph; updates a third instance from
 * another graph (cuGraphExecUpdate). Launches them all and checks the
 * results. Meanwhile an instance whose graph gained a node after it was
 * made: "refusable" printed, the file GO.1 waited for (the test's checkpoint
 * must be refused with the reason), then it goes. Prints "ready", waits for
 * the file GO to exist (the test
 * checkpoints, moves, stops and restores the session meanwhile), then
 * launches them again and checks the same results; sets parameters through
 * the node handles it had, enables the node again, reads the graph's nodes
 * and its child graph (the same handle), instantiates the graph anew, and
 * prints "graph state: kept". One line per check; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

#define N 256	/* u32 elements a buffer */

static const char ptx[] = POKE_U32_PTX;

static CUfunction poke;
static int host_calls;

static void CUDA_CB count(void *arg)
{
	(*(int *)arg)++;
}
static CUstream s;

static bool all(CUdeviceptr d, uint32_t v)
{
	static uint32_t h[N];

	if (cuMemcpyDtoH(h, d, sizeof(h)))
		return false;
	for (int i = 0; i < N; i++)
		if (h[i] != v)
			return false;
	return true;
}

static uint32_t word(CUdeviceptr d)
{
	uint32_t v = 0xdeadbeef;

	cuMemcpyDtoH(&v, d, 4);
	return v;
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

static CUgraphNodeParams copy_params(CUdeviceptr dst, CUdeviceptr src)
{
	CUgraphNodeParams p = { .type = CU_GRAPH_NODE_TYPE_MEMCPY };

	p.memcpy.copyParams.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	p.memcpy.copyParams.srcDevice = src;
	p.memcpy.copyParams.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.memcpy.copyParams.dstDevice = dst;
	p.memcpy.copyParams.WidthInBytes = 4 * N;
	p.memcpy.copyParams.Height = 1;
	p.memcpy.copyParams.Depth = 1;
	return p;
}

static CUDA_KERNEL_NODE_PARAMS poke_params(CUdeviceptr *d, uint32_t *v, void **args)
{
	CUDA_KERNEL_NODE_PARAMS k = { .func = poke, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
				      .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 };

	args[0] = d;
	args[1] = v;
	k.kernelParams = args;
	return k;
}

static CUresult run(CUgraphExec ge)
{
	CUresult rc = cuCtxSynchronize();

	if (!rc)
		rc = cuGraphLaunch(ge, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	return rc;
}

static void clear(const CUdeviceptr *bufs, int n)
{
	for (int i = 0; i < n; i++)
		MUST(cuMemsetD32(bufs[i], 0, N));
	MUST(cuCtxSynchronize());
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUevent ev;
	CUdeviceptr a, b, c, d, c2, d2, e, buf[7];
	CUgraph g1, g2, g3, g4, child, kid = NULL, kid2 = NULL;
	CUgraphNode nset, ncopy, nkern, nchild, nempty, nrec, nhost, m1, m2, m3, list[8];
	CUDA_HOST_NODE_PARAMS hp;
	CUkernelNodeAttrValue attr;
	CUgraphExec e1, e2, e3, e4;
	CUgraphNodeParams p;
	CUDA_KERNEL_NODE_PARAMS kp;
	CUgraphExecUpdateResultInfo info;
	CUgraphEdgeData plain = { 0 };
	cuuint64_t flags = 0;
	void *args[2];
	uint32_t v;
	size_t n;
	CUresult rc;

	if (argc != 2) {
		fprintf(stderr, "usage: graph_ckpt GO\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuCtxCreate(&ctx, NULL, 0, dev));
	MUST(cuModuleLoadData(&mod, ptx));
	MUST(cuModuleGetFunction(&poke, mod, "vgpu_poke_u32"));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	MUST(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	for (int i = 0; i < 7; i++)
		MUST(cuMemAlloc(&buf[i], 4 * N));
	a = buf[0], b = buf[1], c = buf[2], d = buf[3], c2 = buf[4], d2 = buf[5], e = buf[6];

	/* g1: memset a = 7 -> copy a to b -> poke d -> child (c = 9) -> empty -> record */
	MUST(cuGraphCreate(&g1, 0));
	MUST(cuGraphCreate(&child, 0));
	p = memset_params(c, 9);
	MUST(cuGraphAddNode(&m3, child, NULL, NULL, 0, &p));
	p = memset_params(a, 7);
	MUST(cuGraphAddNode(&nset, g1, NULL, NULL, 0, &p));
	p = copy_params(b, a);
	MUST(cuGraphAddNode(&ncopy, g1, &nset, NULL, 1, &p));
	v = 0x11;
	kp = poke_params(&d, &v, args);
	MUST(cuGraphAddKernelNode(&nkern, g1, &ncopy, 1, &kp));
	memset(&attr, 0, sizeof(attr));
	attr.priority = 3;	/* a launch attribute travels with its node */
	MUST(cuGraphKernelNodeSetAttribute(nkern, CU_LAUNCH_ATTRIBUTE_PRIORITY, &attr));
	MUST(cuGraphAddChildGraphNode(&nchild, g1, &nkern, 1, child));
	MUST(cuGraphAddEmptyNode(&nempty, g1, NULL, 0));
	MUST(cuGraphAddDependencies_v2(g1, &nchild, &nempty, &plain, 1));
	MUST(cuGraphAddEventRecordNode(&nrec, g1, &nempty, 1, ev));
	hp.fn = count;
	hp.userData = &host_calls;
	MUST(cuGraphAddHostNode(&nhost, g1, &nrec, 1, &hp));
	MUST(cuGraphDestroy(child));
	MUST(cuGraphChildGraphNodeGetGraph(nchild, &kid));
	MUST(cuGraphInstantiateWithFlags(&e1, g1, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY));

	/* In e1: a = 5, d = 0x22, the copy off. */
	p = memset_params(a, 5);
	MUST(cuGraphExecNodeSetParams(e1, nset, &p));
	v = 0x22;
	kp = poke_params(&d, &v, args);
	MUST(cuGraphExecKernelNodeSetParams(e1, nkern, &kp));
	MUST(cuGraphNodeSetEnabled(e1, ncopy, 0));

	/* g2: c2 = 3, d2 = 4 (off in e2); g2 destroyed. */
	MUST(cuGraphCreate(&g2, 0));
	p = memset_params(c2, 3);
	MUST(cuGraphAddNode(&m1, g2, NULL, NULL, 0, &p));
	p = memset_params(d2, 4);
	MUST(cuGraphAddNode(&m2, g2, &m1, NULL, 1, &p));
	MUST(cuGraphInstantiateWithFlags(&e2, g2, 0));
	MUST(cuGraphNodeSetEnabled(e2, m2, 0));
	MUST(cuGraphDestroy(g2));

	/* g3 (e = 1) instantiated, then updated from g4 (e = 2). */
	MUST(cuGraphCreate(&g3, 0));
	MUST(cuGraphCreate(&g4, 0));
	p = memset_params(e, 1);
	MUST(cuGraphAddNode(&m1, g3, NULL, NULL, 0, &p));
	p = memset_params(e, 2);
	MUST(cuGraphAddNode(&m1, g4, NULL, NULL, 0, &p));
	MUST(cuGraphInstantiateWithFlags(&e3, g3, 0));
	MUST(cuGraphExecUpdate(e3, g4, &info));
	MUST(cuGraphDestroy(g4));

	/* An instance whose graph then gained a node: a checkpoint refuses it
	 * (the test checks the reason) until it is gone. */
	{
		CUgraph g5;
		CUgraphExec e5;
		CUgraphNode m5;
		char go1[4096];

		MUST(cuGraphCreate(&g5, 0));
		p = memset_params(e, 1);
		MUST(cuGraphAddNode(&m5, g5, NULL, NULL, 0, &p));
		MUST(cuGraphInstantiateWithFlags(&e5, g5, 0));
		MUST(cuGraphAddEmptyNode(&m5, g5, NULL, 0));
		snprintf(go1, sizeof(go1), "%s.1", argv[1]);
		printf("refusable\n");
		wait_for_file(go1, 300);
		MUST(cuGraphExecDestroy(e5));
		MUST(cuGraphDestroy(g5));
	}
	for (int round = 0; round < 2; round++) {
		clear(buf, 7);
		host_calls = 0;
		rc = run(e1);
		expect(!rc && all(a, 5) && all(b, 0) && word(d) == 0x22 && all(c, 9) && host_calls == 1,
		       round ? "the instance runs as it was set, after the moves"
			     : "the instance runs as it was set", rc);
		rc = cuEventQuery(ev);
		expect(!rc, round ? "its event node recorded, after the moves"
				  : "its event node recorded", rc);
		rc = run(e2);
		expect(!rc && all(c2, 3) && all(d2, 0),
		       round ? "the instance of a destroyed graph runs, its node still off"
			     : "the instance of a destroyed graph runs, its node off", rc);
		rc = run(e3);
		expect(!rc && all(e, 2), round ? "the updated instance runs updated, after the moves"
					       : "the updated instance runs updated", rc);
		rc = cuGraphExecGetFlags(e1, &flags);
		expect(!rc && flags == CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY,
		       round ? "the instance's flags are kept" : "the instance's flags read", rc);
		if (!round) {
			printf("ready\n");
			wait_for_file(argv[1], 300);
		}
	}

	/* The handles the program had name the same nodes. */
	v = 0x33;
	kp = poke_params(&d, &v, args);
	rc = cuGraphExecKernelNodeSetParams(e1, nkern, &kp);
	if (!rc)
		rc = cuGraphNodeSetEnabled(e1, ncopy, 1);
	clear(buf, 7);
	if (!rc)
		rc = run(e1);
	expect(!rc && all(a, 5) && all(b, 5) && word(d) == 0x33,
	       "the instance's nodes are set and enabled through the old handles", rc);
	n = 8;
	rc = cuGraphGetNodes(g1, list, &n);
	expect(!rc && n == 7, "the graph has its seven nodes", rc);
	memset(&hp, 0, sizeof(hp));
	rc = cuGraphHostNodeGetParams(nhost, &hp);
	expect(!rc && hp.fn == count && hp.userData == &host_calls,
	       "its host node names the program's function", rc);
	memset(&attr, 0, sizeof(attr));
	rc = cuGraphKernelNodeGetAttribute(nkern, CU_LAUNCH_ATTRIBUTE_PRIORITY, &attr);
	expect(!rc && attr.priority == 3, "its kernel node keeps its launch attribute", rc);
	rc = cuGraphChildGraphNodeGetGraph(nchild, &kid2);
	expect(!rc && kid2 == kid, "its child graph is the same handle", rc);
	n = 0;
	if (!rc)
		rc = cuGraphGetNodes(kid2, NULL, &n);
	expect(!rc && n == 1, "and has its node", rc);
	n = 4;
	rc = cuGraphNodeGetDependencies(nempty, list, NULL, &n);
	expect(!rc && n == 1 && list[0] == nchild, "the edges are kept", rc);
	rc = cuGraphInstantiateWithFlags(&e4, g1, 0);
	clear(buf, 7);
	if (!rc)
		rc = run(e4);
	expect(!rc && all(a, 7) && all(b, 7) && word(d) == 0x11 && all(c, 9),
	       "the graph is instantiated anew with its own parameters", rc);
	p = memset_params(a, 6);
	rc = cuGraphNodeSetParams(nset, &p);
	if (!rc)
		rc = cuGraphExecUpdate(e4, g1, &info);
	clear(buf, 7);
	if (!rc)
		rc = run(e4);
	expect(!rc && all(a, 6), "the graph is set and its instance updated", rc);
	if (!failures)
		printf("graph state: kept\n");
	cuGraphExecDestroy(e1);
	cuGraphExecDestroy(e2);
	cuGraphExecDestroy(e3);
	cuGraphExecDestroy(e4);
	cuGraphDestroy(g1);
	cuGraphDestroy(g3);
	return checks_done("graph_ckpt");
}
