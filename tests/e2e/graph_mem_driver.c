// SPDX-License-Identifier: MIT
/*
 * Graph memory nodes: an allocation node (its address fixed when it is
 * made), a memset and a kernel on that memory, a copy out of it to ordinary
 * memory, a free node; launched twice. The same with the cuGraphAddNode
 * forms. An allocation no node frees: read after the launch, freed with
 * cuMemFreeAsync and, after another launch, with cuMemFree. The parameters read back; a free node naming memory no allocation
 * node gave, and an allocation of no bytes, refused. Under vgpu, the memory
 * is no longer the program's once its graph is gone.
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

#define N 256

static CUcontext ctx;
static CUfunction poke;

/* alloc -> memset 5 -> poke [0] = 0x77 -> copy to @out -> free, by the typed
 * calls or (@generic) cuGraphAddNode; the allocation's address in *at. */
static CUresult build(CUgraph g, CUdeviceptr out, bool generic, CUdeviceptr *at,
		      CUgraphNode *alloc, CUgraphNode *freed)
{
	CUDA_MEM_ALLOC_NODE_PARAMS ap;
	CUDA_MEMSET_NODE_PARAMS mp = { 0 };
	CUDA_KERNEL_NODE_PARAMS kp = { 0 };
	CUDA_MEMCPY3D cp = { 0 };
	CUgraphNodeParams np;
	CUgraphNode nset, nkern, ncopy;
	uint32_t val = 0x77;
	void *args[] = { at, &val };
	CUresult rc;

	memset(&ap, 0, sizeof(ap));
	ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	ap.poolProps.location.id = 0;
	ap.bytesize = 4 * N;
	if (generic) {
		memset(&np, 0, sizeof(np));
		np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
		memcpy(&np.alloc, &ap, sizeof(ap));
		rc = cuGraphAddNode(alloc, g, NULL, NULL, 0, &np);
		*at = np.alloc.dptr;
	} else {
		rc = cuGraphAddMemAllocNode(alloc, g, NULL, 0, &ap);
		*at = ap.dptr;
	}
	if (rc)
		return rc;
	mp.dst = *at, mp.value = 5, mp.elementSize = 4, mp.width = N, mp.height = 1;
	if ((rc = cuGraphAddMemsetNode(&nset, g, alloc, 1, &mp, ctx)))
		return rc;
	kp.func = poke, kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1, kp.kernelParams = args;
	if ((rc = cuGraphAddKernelNode(&nkern, g, &nset, 1, &kp)))
		return rc;
	cp.srcMemoryType = cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = *at, cp.dstDevice = out, cp.WidthInBytes = 4 * N, cp.Height = 1;
	cp.Depth = 1;
	if ((rc = cuGraphAddMemcpyNode(&ncopy, g, &nkern, 1, &cp, ctx)))
		return rc;
	if (!generic)
		return cuGraphAddMemFreeNode(freed, g, &ncopy, 1, *at);
	memset(&np, 0, sizeof(np));
	np.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
	np.free.dptr = *at;
	return cuGraphAddNode(freed, g, &ncopy, NULL, 1, &np);
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

static bool copied(CUdeviceptr out)
{
	uint32_t h[N];

	if (cuMemcpyDtoH(h, out, sizeof(h)))
		return false;
	for (int i = 1; i < N; i++)
		if (h[i] != 5)
			return false;
	return h[0] == 0x77;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUmodule mod;
	CUstream s;
	CUdeviceptr out, at, at2, freed_at = 0;
	CUgraph g, g2;
	CUgraphNode na, nf, na2, nf2, n;
	CUgraphExec ge, ge2;
	CUDA_MEM_ALLOC_NODE_PARAMS got;
	CUresult rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuCtxCreate(&ctx, NULL, 0, dev));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	MUST(cuModuleLoadData(&mod, POKE_U32_PTX));
	MUST(cuModuleGetFunction(&poke, mod, "vgpu_poke_u32"));
	MUST(cuMemAlloc(&out, 4 * N));
	MUST(cuMemsetD32(out, 0, N));

	MUST(cuGraphCreate(&g, 0));
	rc = build(g, out, false, &at, &na, &nf);
	expect(!rc && at, "alloc, memset, kernel, copy and free nodes are added", rc);
	rc = cuGraphMemAllocNodeGetParams(na, &got);
	expect(!rc && got.bytesize == 4 * N && got.dptr == at &&
	       got.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE,
	       "the allocation node's parameters are read back", rc);
	rc = cuGraphMemFreeNodeGetParams(nf, &freed_at);
	expect(!rc && freed_at == at, "the free node names the allocation", rc);
	rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	expect(!rc, "the graph is instantiated", rc);
	for (int i = 0; i < 2 && !rc; i++) {
		rc = cuGraphLaunch(ge, s);
		if (!rc)
			rc = cuStreamSynchronize(s);
		expect(!rc && copied(out), i ? "a second launch: the same" :
		       "launched: the memory was set, poked and copied out", rc);
		MUST(cuMemsetD32(out, 0, N));
	}

	MUST(cuGraphCreate(&g2, 0));
	rc = build(g2, out, true, &at2, &na2, &nf2);
	expect(!rc && at2 && at2 != at, "the same with cuGraphAddNode, at another address", rc);
	rc = cuGraphInstantiateWithFlags(&ge2, g2, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
	if (!rc)
		rc = cuGraphLaunch(ge2, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc && copied(out), "launched (auto free on launch): the same result", rc);
	hold(argc, argv);

	EXPECT_RC(cuGraphAddMemFreeNode(&n, g2, NULL, 0, out), CUDA_ERROR_INVALID_VALUE,
		  "a free node of memory no allocation node gave is refused");
	{
		CUDA_MEM_ALLOC_NODE_PARAMS ap;

		memset(&ap, 0, sizeof(ap));
		ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		EXPECT_RC(cuGraphAddMemAllocNode(&n, g2, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE,
			  "an allocation of no bytes is refused");
	}

	{
		CUDA_MEM_ALLOC_NODE_PARAMS ap;
		CUDA_MEMSET_NODE_PARAMS mp = { 0 };
		CUgraph g3;
		CUgraphExec ge3;
		CUgraphNode n3;
		uint32_t h[N];
		bool ok;

		memset(&ap, 0, sizeof(ap));
		ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		ap.bytesize = 4 * N;
		MUST(cuGraphCreate(&g3, 0));
		MUST(cuGraphAddMemAllocNode(&na, g3, NULL, 0, &ap));
		mp.dst = ap.dptr, mp.value = 9, mp.elementSize = 4, mp.width = N, mp.height = 1;
		MUST(cuGraphAddMemsetNode(&n3, g3, &na, 1, &mp, ctx));
		MUST(cuGraphInstantiateWithFlags(&ge3, g3, 0));
		rc = cuGraphLaunch(ge3, s);
		if (!rc)
			rc = cuStreamSynchronize(s);
		if (!rc)
			rc = cuMemcpyDtoH(h, ap.dptr, sizeof(h));
		ok = !rc;
		for (int i = 0; ok && i < N; i++)
			ok = h[i] == 9;
		expect(ok, "an allocation no node frees is read after the launch", rc);
		EXPECT_RC(cuMemFree(ap.dptr + 4), CUDA_ERROR_INVALID_VALUE,
			  "freeing inside it is refused");
		rc = cuMemFreeAsync(ap.dptr, s);
		if (!rc)
			rc = cuStreamSynchronize(s);
		expect(!rc, "it is freed with cuMemFreeAsync", rc);
		rc = cuGraphLaunch(ge3, s);
		if (!rc)
			rc = cuStreamSynchronize(s);
		expect(!rc, "the graph is launched again", rc);
		EXPECT_OK(cuMemFree(ap.dptr), "it is freed with cuMemFree");
		MUST(cuGraphExecDestroy(ge3));
		MUST(cuGraphDestroy(g3));
	}

	MUST(cuGraphExecDestroy(ge2));
	MUST(cuGraphExecDestroy(ge));
	EXPECT_OK(cuGraphDestroy(g2), "a graph of memory nodes is destroyed");
	MUST(cuGraphDestroy(g));
	rc = cuMemsetD32(at, 0, N);
	expect_vgpu(rc != CUDA_SUCCESS, "its memory is no longer the program's", rc);
	MUST(cuMemFree(out));
	return checks_done("graph_mem_driver");
}
