// SPDX-License-Identifier: MIT
/*
 * An explicit CUDA graph built node by node through the runtime API: a
 * memset, a kernel, a host node, a copy, a child graph and an event record
 * node, launched five times; the instance then given a new kernel argument
 * and a node disabled; a captured graph holding a cudaLaunchHostFunc,
 * launched three times (its host node runs at each launch); the graph
 * printed with cudaGraphDebugDotPrint. Results printed, nothing that
 * depends on addresses: native and vgpu print the same.
 *
 * Not here yet: conditional and memory allocation nodes (vgpu does not
 * carry them yet; see include/vgpu/unsupported.def).
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../e2e/e2e.h"

__global__ void axpb(float *p, float a, float b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = a * p[i] + b;
}

static int host_calls, captured_calls;

static void CUDART_CB count(void *arg)
{
	(*(int *)arg)++;
}

static double sum(const float *d, int n)
{
	static float h[1 << 12];
	double s = 0;

	CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		s += h[i];
	return s;
}

int main(void)
{
	const int n = 1 << 12;
	cudaStream_t s;
	cudaEvent_t ev;
	cudaGraph_t g, child, cap;
	cudaGraphExec_t ge, gc;
	cudaGraphNode_t nset, nkern, nhost, ncopy, nchild, nrec, cset;
	cudaMemsetParams mp = {};
	cudaKernelNodeParams kp = {};
	cudaHostNodeParams hp = {};
	float *x, *y, *z;
	float a = 2.0f, b = 1.0f;
	int nn = n;
	void *args[] = { &x, &a, &b, &nn };
	size_t nodes = 0;
	char path[] = "/tmp/graph_explicit.XXXXXX";
	struct stat st;
	int fd;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CHECK(cudaMalloc(&x, n * sizeof(float)));
	CHECK(cudaMalloc(&y, n * sizeof(float)));
	CHECK(cudaMalloc(&z, n * sizeof(float)));

	/* memset x = 0 -> x = 2x + 1 -> host -> copy x to y -> child (z = 0) -> record */
	CHECK(cudaGraphCreate(&g, 0));
	mp.dst = x;
	mp.value = 0;
	mp.elementSize = 4;
	mp.width = n;
	mp.height = 1;
	CHECK(cudaGraphAddMemsetNode(&nset, g, NULL, 0, &mp));
	kp.func = (void *)axpb;
	kp.gridDim = dim3((n + 255) / 256);
	kp.blockDim = dim3(256);
	kp.kernelParams = args;
	CHECK(cudaGraphAddKernelNode(&nkern, g, &nset, 1, &kp));
	hp.fn = count;
	hp.userData = &host_calls;
	CHECK(cudaGraphAddHostNode(&nhost, g, &nkern, 1, &hp));
	CHECK(cudaGraphAddMemcpyNode1D(&ncopy, g, &nhost, 1, y, x, n * sizeof(float),
				       cudaMemcpyDeviceToDevice));
	CHECK(cudaGraphCreate(&child, 0));
	mp.dst = z;
	CHECK(cudaGraphAddMemsetNode(&cset, child, NULL, 0, &mp));
	CHECK(cudaGraphAddChildGraphNode(&nchild, g, &ncopy, 1, child));
	CHECK(cudaGraphAddEventRecordNode(&nrec, g, &nchild, 1, ev));
	CHECK(cudaGraphGetNodes(g, NULL, &nodes));
	printf("explicit graph: %zu nodes\n", nodes);

	CHECK(cudaGraphInstantiate(&ge, g, 0));
	for (int i = 0; i < 5; i++)
		CHECK(cudaGraphLaunch(ge, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaEventSynchronize(ev));
	printf("5 launches: sum x %.1f, sum y %.1f, sum z %.1f, host node ran %d times\n",
	       sum(x, n), sum(y, n), sum(z, n), host_calls);

	/* The instance: a new b, the copy off. */
	b = 3.0f;
	CHECK(cudaGraphExecKernelNodeSetParams(ge, nkern, &kp));
	CHECK(cudaMemset(y, 0, n * sizeof(float)));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaGraphNodeSetEnabled(ge, ncopy, 0));
	CHECK(cudaGraphLaunch(ge, s));
	CHECK(cudaStreamSynchronize(s));
	printf("set and disabled: sum x %.1f, sum y %.1f, host node ran %d times\n", sum(x, n),
	       sum(y, n), host_calls);

	/* A capture with a host function in it. */
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	axpb<<<(n + 255) / 256, 256, 0, s>>>(y, 1.0f, 1.0f, n);
	CHECK(cudaLaunchHostFunc(s, count, &captured_calls));
	CHECK(cudaStreamEndCapture(s, &cap));
	CHECK(cudaGraphInstantiate(&gc, cap, 0));
	for (int i = 0; i < 3; i++)
		CHECK(cudaGraphLaunch(gc, s));
	CHECK(cudaStreamSynchronize(s));
	printf("captured: sum y %.1f, its host function ran %d times\n", sum(y, n), captured_calls);

	fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
	CHECK(cudaGraphDebugDotPrint(g, path, cudaGraphDebugDotFlagsVerbose));
	printf("dot print: %s\n", !stat(path, &st) && st.st_size > 0 ? "written" : "empty");
	unlink(path);

	CHECK(cudaGraphExecDestroy(gc));
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaGraphDestroy(cap));
	CHECK(cudaGraphDestroy(child));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaFree(x));
	CHECK(cudaFree(y));
	CHECK(cudaFree(z));
	printf("graph_explicit: done\n");
	return 0;
}
