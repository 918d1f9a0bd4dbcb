// SPDX-License-Identifier: MIT
/*
 * Conditional graph nodes: handles made with cuGraphConditionalHandleCreate
 * (their default value applied at each launch), IF with an ELSE body, a
 * SWITCH of three cases, a WHILE whose condition is false, an IF nested in
 * an IF's body (its handle made on that body), each body filled with nodes
 * like any graph (memsets, a kernel); the instance launched twice, a clone
 * launched; the node's type and the bodies' nodes read back; bad parameters
 * refused. No kernel here sets a condition (the host backend runs none that
 * could): the defaults decide, the same natively and through vgpu.
 *
 * One line per check on stdout, nothing that depends on addresses or the
 * backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

static CUcontext ctx;

/* A conditional node of @type with @size bodies, copied to @bodies. */
static CUresult add_cond(CUgraphNode *out, CUgraph g, CUgraphConditionalHandle h,
			 CUgraphConditionalNodeType type, unsigned int size, CUgraph *bodies)
{
	CUgraphNodeParams p;
	CUresult rc;

	memset(&p, 0, sizeof(p));
	p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	p.conditional.handle = h;
	p.conditional.type = type;
	p.conditional.size = size;
	p.conditional.ctx = ctx;
	rc = cuGraphAddNode(out, g, NULL, NULL, 0, &p);
	/* The driver points phGraph_out at the node's own array of bodies. */
	if (!rc && !p.conditional.phGraph_out)
		rc = CUDA_ERROR_UNKNOWN;
	for (unsigned int i = 0; !rc && i < size; i++)
		bodies[i] = p.conditional.phGraph_out[i];
	return rc;
}

/* A 1D memset of @n words of @d to @v into graph @g. */
static CUresult add_set(CUgraph g, CUdeviceptr d, unsigned int v, size_t n)
{
	CUDA_MEMSET_NODE_PARAMS mp = { 0 };
	CUgraphNode node;

	mp.dst = d, mp.value = v, mp.elementSize = 4, mp.width = n, mp.height = 1;
	return cuGraphAddMemsetNode(&node, g, NULL, 0, &mp, ctx);
}

/* With a file name (tests/e2e/run's checkpoint refusal): says "holding" and
 * waits for the file, so that a checkpoint meets the graph. */
static void hold(int argc, char **argv)
{
	if (argc < 2)
		return;
	printf("holding\n");
	for (int i = 0; i < 600 && access(argv[1], F_OK); i++)
		usleep(100000);
}

static uint32_t word(CUdeviceptr d)
{
	uint32_t v = 0xdeadbeef;

	if (cuMemcpyDtoH(&v, d, sizeof(v)))
		return 0xdeadbeef;
	return v;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUfunction poke;
	CUstream s;
	CUdeviceptr d;
	CUgraph g, clone, ifb[2], swb[3], whb[1], inner[1], bad[2];
	CUgraphNode nif, nsw, nwh, nin, n;
	CUgraphNodeType type;
	CUgraphConditionalHandle hif, hsw, hwh, hin;
	CUgraphExec ge, gc;
	CUDA_KERNEL_NODE_PARAMS kp = { 0 };
	CUdeviceptr at;
	uint32_t val = 0x77;
	void *args[] = { &at, &val };
	size_t count = 0;
	CUresult rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuCtxCreate(&ctx, NULL, 0, dev));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	MUST(cuModuleLoadData(&mod, POKE_U32_PTX));
	MUST(cuModuleGetFunction(&poke, mod, "vgpu_poke_u32"));
	MUST(cuMemAlloc(&d, 4 * 8));
	MUST(cuMemsetD32(d, 0, 8));
	MUST(cuGraphCreate(&g, 0));

	/* IF (default 0, so the ELSE body runs) writing word 0. */
	rc = cuGraphConditionalHandleCreate(&hif, g, ctx, 0, CU_GRAPH_COND_ASSIGN_DEFAULT);
	expect(!rc, "a conditional handle is made", rc);
	rc = add_cond(&nif, g, hif, CU_GRAPH_COND_TYPE_IF, 2, ifb);
	expect(!rc, "an IF node with an ELSE body is added", rc);
	EXPECT_OK(add_set(ifb[0], d, 1, 1), "its THEN body takes a memset");
	EXPECT_OK(add_set(ifb[1], d, 2, 1), "its ELSE body takes a memset");
	rc = cuGraphNodeGetType(nif, &type);
	expect(!rc && type == CU_GRAPH_NODE_TYPE_CONDITIONAL, "the node is a conditional one", rc);
	rc = cuGraphGetNodes(ifb[1], NULL, &count);
	expect(!rc && count == 1, "a body lists the node it was given", rc);

	/* SWITCH (default 2) writing word 1: case 2 runs. */
	MUST(cuGraphConditionalHandleCreate(&hsw, g, ctx, 2, CU_GRAPH_COND_ASSIGN_DEFAULT));
	rc = add_cond(&nsw, g, hsw, CU_GRAPH_COND_TYPE_SWITCH, 3, swb);
	expect(!rc, "a SWITCH node of 3 cases is added", rc);
	for (unsigned int i = 0; i < 3; i++)
		EXPECT_OK(add_set(swb[i], d + 4, 10 + i, 1), "case %u takes a memset", i);

	/* WHILE (default 0): its body (a kernel writing word 2) never runs. */
	MUST(cuGraphConditionalHandleCreate(&hwh, g, ctx, 0, CU_GRAPH_COND_ASSIGN_DEFAULT));
	rc = add_cond(&nwh, g, hwh, CU_GRAPH_COND_TYPE_WHILE, 1, whb);
	expect(!rc, "a WHILE node is added", rc);
	at = d + 8;
	kp.func = poke, kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1, kp.kernelParams = args;
	rc = cuGraphAddKernelNode(&n, whb[0], NULL, 0, &kp);
	expect(!rc, "its body takes a kernel node", rc);

	/* An IF (default 1) in the SWITCH's case 2, its handle made on that
	 * body: a kernel writing word 3. */
	rc = cuGraphConditionalHandleCreate(&hin, swb[2], ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
	expect(!rc, "a handle is made on a body graph", rc);
	rc = add_cond(&nin, swb[2], hin, CU_GRAPH_COND_TYPE_IF, 1, inner);
	expect(!rc, "an IF node is added inside a body", rc);
	at = d + 12;
	rc = cuGraphAddKernelNode(&n, inner[0], NULL, 0, &kp);
	expect(!rc, "the nested body takes a kernel node", rc);

	/* Refusals. */
	EXPECT_RC(add_cond(&n, g, hif, CU_GRAPH_COND_TYPE_WHILE, 2, bad), CUDA_ERROR_INVALID_VALUE,
		  "a WHILE node of 2 bodies is refused");
	EXPECT_RC(add_cond(&n, g, hif, CU_GRAPH_COND_TYPE_IF, 0, bad), CUDA_ERROR_INVALID_VALUE,
		  "a conditional node of no body is refused");

	MUST(cuGraphInstantiateWithFlags(&ge, g, 0));
	rc = cuGraphLaunch(ge, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc, "the graph is launched", rc);
	expect(word(d) == 2, "IF false: the ELSE body ran", CUDA_SUCCESS);
	expect(word(d + 4) == 12, "SWITCH 2: case 2 ran", CUDA_SUCCESS);
	expect(word(d + 8) == 0, "WHILE false: its body did not run", CUDA_SUCCESS);
	expect(word(d + 12) == 0x77, "the nested IF's body ran", CUDA_SUCCESS);
	hold(argc, argv);

	MUST(cuMemsetD32(d, 0, 8));
	rc = cuGraphLaunch(ge, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc && word(d) == 2 && word(d + 4) == 12 && word(d + 12) == 0x77,
	       "a second launch does the same", rc);

	MUST(cuMemsetD32(d, 0, 8));
	rc = cuGraphClone(&clone, g);
	if (!rc)
		rc = cuGraphInstantiateWithFlags(&gc, clone, 0);
	if (!rc)
		rc = cuGraphLaunch(gc, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc && word(d) == 2 && word(d + 4) == 12 && word(d + 12) == 0x77,
	       "a clone's instance does the same", rc);

	MUST(cuGraphExecDestroy(gc));
	MUST(cuGraphDestroy(clone));
	MUST(cuGraphExecDestroy(ge));
	EXPECT_OK(cuGraphDestroyNode(nwh), "a conditional node is destroyed with its body");
	EXPECT_OK(cuGraphDestroy(g), "the graph is destroyed with its bodies");
	MUST(cuMemFree(d));
	return checks_done("graph_cond_driver");
}
