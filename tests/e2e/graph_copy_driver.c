// SPDX-License-Identifier: MIT
/*
 * Graph copy nodes with a host end. A graph of copies from the program's
 * host memory to the device, a device-to-device copy, and copies back to
 * host memory, once with pinned (cuMemAllocHost) and once with pageable
 * (malloc, and the stack) buffers, launched three times with the host
 * buffers changed between launches: each launch reads the host source as it
 * is then and writes the host destination. The copy nodes read back as
 * copy nodes naming the program's memory (cuGraphNodeGetType,
 * cuGraphMemcpyNodeGetParams, cuGraphGetNodes counts the program's nodes);
 * a clone runs the same; the instance's copy given a new destination
 * (cuGraphExecMemcpyNodeSetParams), the graph's a new source
 * (cuGraphMemcpyNodeSetParams). Then a capture of pageable async copies
 * (up and down around a device copy), launched three times likewise, where
 * the backend captures (the host backend does not: tests/gpu/graph_copy.cu
 * captures on the GPU). Then copy nodes with an array end (array_graph).
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
#include <unistd.h>

#include "driver_check.h"

#define N 64

static CUstream s;
static CUcontext ctx;

static CUresult run(CUgraphExec ge)
{
	CUresult rc = cuGraphLaunch(ge, s);

	return rc ? rc : cuStreamSynchronize(s);
}

static CUDA_MEMCPY3D copy_up(const void *host, CUdeviceptr dev, size_t bytes)
{
	CUDA_MEMCPY3D c = { 0 };

	c.srcMemoryType = CU_MEMORYTYPE_HOST, c.srcHost = host;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = dev;
	c.WidthInBytes = bytes, c.Height = 1, c.Depth = 1;
	return c;
}

static CUDA_MEMCPY3D copy_down(CUdeviceptr dev, void *host, size_t bytes)
{
	CUDA_MEMCPY3D c = { 0 };

	c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = dev;
	c.dstMemoryType = CU_MEMORYTYPE_HOST, c.dstHost = host;
	c.WidthInBytes = bytes, c.Height = 1, c.Depth = 1;
	return c;
}

static bool all_are(const uint32_t *p, uint32_t v)
{
	for (int i = 0; i < N; i++)
		if (p[i] != v + (uint32_t)i)
			return false;
	return true;
}

static void fill(uint32_t *p, uint32_t v)
{
	for (int i = 0; i < N; i++)
		p[i] = v + (uint32_t)i;
}

/*
 * in -> d (H2D), d -> e (D2D), e -> out (D2H), and a 2D D2H of the first
 * 4 words of each of 4 rows of e into @rows (pitch 32 bytes, 16 used),
 * launched 3 times with @in changed between launches.
 */
static void explicit_graph(const char *kind, uint32_t *in, uint32_t *out, uint32_t *out2,
			   uint32_t *rows, CUdeviceptr d, CUdeviceptr e)
{
	CUgraph g, clone;
	CUgraphExec ge, gc;
	CUgraphNode up, mid, down, part, nodes[8];
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	CUDA_MEMCPY3D c = copy_up(in, d, 4 * N), got;
	CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_MEMCPY };
	size_t n = 8;
	char what[128];
	CUresult rc;
	bool ok = true;

	MUST(cuGraphCreate(&g, 0));
	rc = cuGraphAddMemcpyNode(&up, g, NULL, 0, &c, ctx);
	snprintf(what, sizeof(what), "%s: a copy node from host memory is added", kind);
	expect(!rc, what, rc);
	if (rc)
		return;
	c = (CUDA_MEMCPY3D){ 0 };
	c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d, c.dstDevice = e, c.WidthInBytes = 4 * N, c.Height = 1, c.Depth = 1;
	MUST(cuGraphAddMemcpyNode(&mid, g, &up, 1, &c, ctx));
	np.memcpy.copyParams = copy_down(e, out, 4 * N);
	rc = cuGraphAddNode(&down, g, &mid, NULL, 1, &np);
	snprintf(what, sizeof(what), "%s: a copy node to host memory is added (cuGraphAddNode)",
		 kind);
	expect(!rc, what, rc);
	c = (CUDA_MEMCPY3D){ 0 };
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = e, c.srcPitch = 64;
	c.dstMemoryType = CU_MEMORYTYPE_HOST, c.dstHost = rows, c.dstPitch = 32;
	c.WidthInBytes = 16, c.Height = 4, c.Depth = 1;
	rc = cuGraphAddMemcpyNode(&part, g, &mid, 1, &c, ctx);
	snprintf(what, sizeof(what), "%s: a pitched copy node to host memory is added", kind);
	expect(!rc, what, rc);

	rc = cuGraphNodeGetType(down, &t);
	if (!rc)
		rc = cuGraphGetNodes(g, nodes, &n);
	snprintf(what, sizeof(what), "%s: the graph has 4 nodes, the last a copy node", kind);
	expect(!rc && n == 4 && t == CU_GRAPH_NODE_TYPE_MEMCPY, what, rc);
	for (size_t i = 0; !rc && i < n; i++) {
		rc = cuGraphNodeGetType(nodes[i], &t);
		ok = ok && t == CU_GRAPH_NODE_TYPE_MEMCPY;
	}
	snprintf(what, sizeof(what), "%s: cuGraphGetNodes gives 4 copy nodes", kind);
	expect(!rc && ok, what, rc);
	memset(&got, 0, sizeof(got));
	rc = cuGraphMemcpyNodeGetParams(up, &got);
	snprintf(what, sizeof(what), "%s: the copy from host memory reads back as given", kind);
	expect(!rc && got.srcMemoryType == CU_MEMORYTYPE_HOST && got.srcHost == in &&
	       got.dstDevice == d && got.WidthInBytes == 4 * N, what, rc);
	memset(&got, 0, sizeof(got));
	rc = cuGraphMemcpyNodeGetParams(part, &got);
	snprintf(what, sizeof(what), "%s: the pitched copy to host memory reads back as given",
		 kind);
	expect(!rc && got.dstMemoryType == CU_MEMORYTYPE_HOST && got.dstHost == rows &&
	       got.dstPitch == 32 && got.Height == 4, what, rc);

	MUST(cuGraphInstantiateWithFlags(&ge, g, 0));
	ok = true;
	for (uint32_t i = 0; i < 3 && ok; i++) {
		fill(in, 1000 * (i + 1));
		memset(out, 0, 4 * N);
		memset(rows, 0xff, 4 * 8 * 4);
		rc = run(ge);
		ok = !rc && all_are(out, 1000 * (i + 1));
		for (int r = 0; ok && r < 4; r++)
			for (int k = 0; ok && k < 8; k++)	/* 4 copied, 4 left */
				ok = rows[r * 8 + k] == (k < 4 ? 1000 * (i + 1) + 16 * r + k
							     : 0xffffffffu);
	}
	snprintf(what, sizeof(what), "%s: 3 launches each copy the host buffer as it is then",
		 kind);
	expect(ok, what, rc);

	rc = cuGraphClone(&clone, g);
	if (!rc)
		rc = cuGraphInstantiateWithFlags(&gc, clone, 0);
	fill(in, 7000);
	memset(out, 0, 4 * N);
	if (!rc)
		rc = run(gc);
	snprintf(what, sizeof(what), "%s: a clone copies the same buffers", kind);
	expect(!rc && all_are(out, 7000), what, rc);
	if (!rc) {
		cuGraphExecDestroy(gc);
		cuGraphDestroy(clone);
	}

	c = copy_down(e, out2, 4 * N);
	rc = cuGraphExecMemcpyNodeSetParams(ge, down, &c, ctx);
	fill(in, 9000);
	memset(out, 0, 4 * N);
	memset(out2, 0, 4 * N);
	if (!rc)
		rc = run(ge);
	snprintf(what, sizeof(what), "%s: the instance's copy is given a new host destination",
		 kind);
	expect(!rc && all_are(out2, 9000) && out[0] == 0, what, rc);
	cuGraphExecDestroy(ge);

	/* The graph's first copy reads @out now (its last copy writes it). */
	c = copy_up(out, d, 4 * N);
	rc = cuGraphMemcpyNodeSetParams(up, &c);
	fill(in, 1);
	fill(out, 4000);
	if (!rc)
		rc = cuGraphInstantiateWithFlags(&ge, g, 0);
	if (!rc) {
		rc = run(ge);
		cuGraphExecDestroy(ge);
	}
	memset(&got, 0, sizeof(got));
	if (!rc)
		rc = cuGraphMemcpyNodeGetParams(up, &got);
	snprintf(what, sizeof(what), "%s: the graph's copy is given a new host source", kind);
	expect(!rc && got.srcHost == out && all_are(out, 4000) && all_are(out2, 9000), what, rc);
	cuGraphDestroy(g);
}

/* Async copies to and from pageable memory captured, launched 3 times. */
static void captured(CUdeviceptr d, CUdeviceptr e)
{
	uint32_t *in = malloc(4 * N), out[N];
	CUgraph g;
	CUgraphExec ge;
	size_t n = 0;
	CUresult rc;
	bool ok = true;

	if (!in)
		exit(1);
	fill(in, 0);
	rc = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {	/* the host backend: tests/gpu/graph_copy.cu */
		fprintf(stderr, "graph_copy_driver: this backend does not capture streams\n");
		free(in);
		return;
	}
	MUST(rc);
	rc = cuMemcpyHtoDAsync(d, in, 4 * N, s);
	if (!rc)
		rc = cuMemcpyDtoDAsync(e, d, 4 * N, s);
	if (!rc)
		rc = cuMemcpyAsync((CUdeviceptr)(uintptr_t)out, e, 4 * N, s);
	expect(!rc, "captured: async copies of pageable memory are captured", rc);
	MUST(cuStreamEndCapture(s, &g));
	rc = cuGraphGetNodes(g, NULL, &n);
	expect(!rc && n == 3, "captured: the graph holds 3 nodes", rc);
	MUST(cuGraphInstantiateWithFlags(&ge, g, 0));
	for (uint32_t i = 0; i < 3 && ok; i++) {
		fill(in, 500 * (i + 1));
		memset(out, 0, sizeof(out));
		rc = run(ge);
		ok = !rc && all_are(out, 500 * (i + 1));
	}
	expect(ok, "captured: 3 launches each copy the pageable buffer as it is then", rc);
	cuGraphExecDestroy(ge);
	cuGraphDestroy(g);
	free(in);
}

/*
 * Copy nodes with an array end: device memory (16 words x 4 rows, pitch 64)
 * into a 16x4 array, the array back into device memory, and a 4x2 window of
 * it into pinned memory; launched 3 times with the device source changed
 * between launches. A copy between an array and pageable memory is refused
 * (under vgpu only).
 */
static void array_graph(CUdeviceptr d, CUdeviceptr e)
{
	CUDA_ARRAY_DESCRIPTOR ad = { .Width = 16, .Height = 4,
				     .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 1 };
	uint32_t h[N], back[N], *pin, pg[8];
	CUDA_MEMCPY3D c = { 0 };
	CUgraphNode in, out, part, bad;
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_MEMCPY };
	CUgraph g;
	CUgraphExec ge;
	CUarray a;
	CUresult rc;
	bool ok = true;

	rc = cuArrayCreate(&a, &ad);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "graph_copy_driver: this backend has no arrays\n");
		return;
	}
	MUST(rc);
	MUST(cuMemAllocHost((void **)&pin, 4 * 16));
	MUST(cuGraphCreate(&g, 0));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = d, c.srcPitch = 64;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY, c.dstArray = a;
	c.WidthInBytes = 64, c.Height = 4, c.Depth = 1;
	rc = cuGraphAddMemcpyNode(&in, g, NULL, 0, &c, ctx);
	expect(!rc, "array: a copy node into an array is added", rc);
	if (rc)
		return;
	c = (CUDA_MEMCPY3D){ 0 };
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY, c.srcArray = a;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = e, c.dstPitch = 64;
	c.WidthInBytes = 64, c.Height = 4, c.Depth = 1;
	np.memcpy.copyParams = c;
	rc = cuGraphAddNode(&out, g, &in, NULL, 1, &np);
	expect(!rc, "array: a copy node out of it is added (cuGraphAddNode)", rc);
	c = (CUDA_MEMCPY3D){ 0 };
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY, c.srcArray = a, c.srcXInBytes = 16, c.srcY = 1;
	c.dstMemoryType = CU_MEMORYTYPE_HOST, c.dstHost = pin, c.dstPitch = 32;
	c.WidthInBytes = 16, c.Height = 2, c.Depth = 1;
	rc = cuGraphAddMemcpyNode(&part, g, &in, 1, &c, ctx);
	expect(!rc, "array: a copy node of a window of it into pinned memory is added", rc);
	c.dstHost = pg;
	rc = cuGraphAddMemcpyNode(&bad, g, &in, 1, &c, ctx);
	/* The driver makes it; vgpu cannot stage it (yet) and says so. */
	expect_vgpu(rc == CUDA_ERROR_NOT_SUPPORTED, "array: one into pageable memory is refused",
		    rc);
	rc = cuGraphNodeGetType(part, &t);
	expect(!rc && t == CU_GRAPH_NODE_TYPE_MEMCPY, "array: it is a copy node", rc);
	memset(&c, 0, sizeof(c));
	rc = cuGraphMemcpyNodeGetParams(part, &c);
	expect(!rc && c.srcMemoryType == CU_MEMORYTYPE_ARRAY && c.srcArray == a &&
	       c.srcXInBytes == 16 && c.srcY == 1 && c.dstHost == pin && c.Height == 2,
	       "array: its parameters read back", rc);
	MUST(cuGraphInstantiateWithFlags(&ge, g, 0));
	for (uint32_t i = 0; i < 3 && ok; i++) {
		fill(h, 100 * (i + 1));
		MUST(cuMemcpyHtoD(d, h, sizeof(h)));
		memset(pin, 0, 4 * 16);
		rc = run(ge);
		ok = !rc && !cuMemcpyDtoH(back, e, sizeof(back)) && all_are(back, 100 * (i + 1));
		for (int r = 0; ok && r < 2; r++)
			for (int k = 0; ok && k < 8; k++)
				ok = pin[r * 8 + k] == (k < 4 ? 100 * (i + 1) + (1 + r) * 16 + 4 + k : 0);
	}
	expect(ok, "array: 3 launches copy the device memory as it is then, through the array", rc);
	cuGraphExecDestroy(ge);
	cuGraphDestroy(g);
	cuArrayDestroy(a);
	cuMemFreeHost(pin);
}

/*
 * With a path GO (the e2e test graph_copy_ckpt): a graph copying pinned
 * memory up and back down is made and launched, and a graph with a copy of
 * pageable memory; "refusable" printed, GO.1 waited for (a checkpoint must
 * be refused then, with the reason); the pageable graph destroyed, "ready"
 * printed, GO waited for (the session is checkpointed, moved, stopped and
 * restored meanwhile); then the pinned graph must still copy the buffers as
 * they are: "graph copies: kept".
 */
static int hold(const char *go)
{
	char go1[4096];
	uint32_t *in, *out, *pg = malloc(4 * N);
	CUdeviceptr d;
	CUgraph g, gp;
	CUgraphExec ge, gpe;
	CUgraphNode up, down, pn;
	CUDA_MEMCPY3D c, got = { 0 };
	bool ok;

	snprintf(go1, sizeof(go1), "%s.1", go);
	MUST(cuMemAlloc(&d, 4 * N));
	MUST(cuMemAllocHost((void **)&in, 4 * N));
	MUST(cuMemAllocHost((void **)&out, 4 * N));
	MUST(cuGraphCreate(&g, 0));
	c = copy_up(in, d, 4 * N);
	MUST(cuGraphAddMemcpyNode(&up, g, NULL, 0, &c, ctx));
	c = copy_down(d, out, 4 * N);
	MUST(cuGraphAddMemcpyNode(&down, g, &up, 1, &c, ctx));
	MUST(cuGraphInstantiateWithFlags(&ge, g, 0));
	MUST(cuGraphCreate(&gp, 0));
	c = copy_down(d, pg, 4 * N);
	MUST(cuGraphAddMemcpyNode(&pn, gp, NULL, 0, &c, ctx));
	MUST(cuGraphInstantiateWithFlags(&gpe, gp, 0));
	printf("refusable\n");
	for (int i = 0; i < 30000 && access(go1, F_OK); i++)
		usleep(10000);
	MUST(cuGraphExecDestroy(gpe));
	MUST(cuGraphDestroy(gp));
	fill(in, 10);
	MUST(run(ge));
	if (!all_are(out, 10))
		return 1;
	printf("ready\n");
	for (int i = 0; i < 30000 && access(go, F_OK); i++)
		usleep(10000);
	fill(in, 20);
	memset(out, 0, 4 * N);
	ok = !run(ge) && all_are(out, 20) && !cuGraphMemcpyNodeGetParams(up, &got) &&
	     got.srcHost == in && got.srcMemoryType == CU_MEMORYTYPE_HOST;
	printf("graph copies: %s\n", ok ? "kept" : "LOST");
	free(pg);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUdeviceptr d, e;
	CUgraph probe;
	uint32_t *pin_in, *pin_out, *pin_out2, *pin_rows;
	uint32_t *pg_in, *pg_out2, pg_out[N], pg_rows[32];
	CUresult rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuCtxCreate(&ctx, NULL, 0, dev));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	MUST(cuMemAlloc(&d, 4 * N));
	MUST(cuMemAlloc(&e, 4 * N));
	rc = cuGraphCreate(&probe, 0);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "graph_copy_driver: this backend has no graphs\n");
		return checks_done("graph_copy_driver");
	}
	MUST(rc);
	cuGraphDestroy(probe);
	if (argc > 1)
		return hold(argv[1]);
	MUST(cuMemAllocHost((void **)&pin_in, 4 * N));
	MUST(cuMemAllocHost((void **)&pin_out, 4 * N));
	MUST(cuMemAllocHost((void **)&pin_out2, 4 * N));
	MUST(cuMemAllocHost((void **)&pin_rows, 4 * 32));
	explicit_graph("pinned", pin_in, pin_out, pin_out2, pin_rows, d, e);
	pg_in = malloc(4 * N);
	pg_out2 = malloc(4 * N);
	if (!pg_in || !pg_out2)
		return 1;
	explicit_graph("pageable", pg_in, pg_out, pg_out2, pg_rows, d, e);
	captured(d, e);
	array_graph(d, e);
	free(pg_in);
	free(pg_out2);
	cuMemFreeHost(pin_in);
	cuMemFreeHost(pin_out);
	cuMemFreeHost(pin_out2);
	cuMemFreeHost(pin_rows);
	cuMemFree(d);
	cuMemFree(e);
	return checks_done("graph_copy_driver");
}
