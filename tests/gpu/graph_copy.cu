// SPDX-License-Identifier: MIT
/*
 * Graph copy nodes with host ends, as NVIDIA's cuda-samples use them
 * (simpleCudaGraphs, jacobiCudaGraphs, conjugateGradientCudaGraphs,
 * graphMemoryNodes):
 *  - an explicit graph: copy from pinned memory, a kernel, a copy into a
 *    pageable stack variable (cudaGraphAddMemcpyNode), and 1D copies from
 *    and to malloc'ed memory (cudaGraphAddMemcpyNode1D), launched 5 times
 *    with the host input changed between launches;
 *  - a capture of a pageable upload, a kernel and a 4-byte download into a
 *    stack variable, launched 5 times;
 *  - a capture repeated at each step and the instance updated from it
 *    (cudaGraphExecUpdate), as jacobiCudaGraphs does;
 *  - copy nodes into and out of a 2D array.
 * Each result is printed; native and vgpu runs must print the same.
 */
#include <stdlib.h>
#include <string.h>

#include "../e2e/e2e.h"

#define N 4096

__global__ void scale_sum(const float *in, float *out, float *sum, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		out[i] = a * in[i];
		atomicAdd(sum, out[i]);
	}
}

static void fill(float *p, int round)
{
	for (int i = 0; i < N; i++)
		p[i] = (float)((i % 17) + round);
}

static int explicit_graph(cudaStream_t s)
{
	float *pin, *pg_in = (float *)malloc(N * 4), *pg_out = (float *)malloc(N * 4);
	float *d_in, *d_out, *d_sum, sum_h = 0;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaGraphNode_t up, zero, kern, down, up1d, down1d;
	cudaMemcpy3DParms mp = {};
	cudaMemsetParams ms = {};
	cudaKernelNodeParams kp = {};
	float a = 2.0f;
	int n = N, bad = 0;
	void *args[5];

	if (!pg_in || !pg_out)
		return 1;
	CHECK(cudaMallocHost(&pin, N * 4));
	CHECK(cudaMalloc(&d_in, N * 4));
	CHECK(cudaMalloc(&d_out, N * 4));
	CHECK(cudaMalloc(&d_sum, 4));
	CHECK(cudaGraphCreate(&g, 0));

	mp.srcPtr = make_cudaPitchedPtr(pin, N * 4, N, 1);
	mp.dstPtr = make_cudaPitchedPtr(d_in, N * 4, N, 1);
	mp.extent = make_cudaExtent(N * 4, 1, 1);
	mp.kind = cudaMemcpyHostToDevice;
	CHECK(cudaGraphAddMemcpyNode(&up, g, NULL, 0, &mp));
	ms.dst = d_sum, ms.value = 0, ms.elementSize = 4, ms.width = 1, ms.height = 1;
	CHECK(cudaGraphAddMemsetNode(&zero, g, NULL, 0, &ms));
	args[0] = &d_in, args[1] = &d_out, args[2] = &d_sum, args[3] = &a, args[4] = &n;
	kp.func = (void *)scale_sum;
	kp.gridDim = dim3((N + 255) / 256);
	kp.blockDim = dim3(256);
	kp.kernelParams = args;
	cudaGraphNode_t deps[2] = { up, zero };
	CHECK(cudaGraphAddKernelNode(&kern, g, deps, 2, &kp));
	mp = cudaMemcpy3DParms{};
	mp.srcPtr = make_cudaPitchedPtr(d_sum, 4, 1, 1);
	mp.dstPtr = make_cudaPitchedPtr(&sum_h, 4, 1, 1);
	mp.extent = make_cudaExtent(4, 1, 1);
	mp.kind = cudaMemcpyDeviceToHost;
	CHECK(cudaGraphAddMemcpyNode(&down, g, &kern, 1, &mp));
	/* After the kernel: the pageable input into d_out and back out. */
	CHECK(cudaGraphAddMemcpyNode1D(&up1d, g, &down, 1, d_out, pg_in, N * 4,
				       cudaMemcpyHostToDevice));
	CHECK(cudaGraphAddMemcpyNode1D(&down1d, g, &up1d, 1, pg_out, d_out, N * 4,
				       cudaMemcpyDeviceToHost));
	CHECK(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 5; r++) {
		fill(pin, r);
		fill(pg_in, 100 * r);
		memset(pg_out, 0, N * 4);
		sum_h = -1;
		CHECK(cudaGraphLaunch(ge, s));
		CHECK(cudaStreamSynchronize(s));
		for (int i = 0; i < N; i++)
			bad += pg_out[i] != (float)((i % 17) + 100 * r);
		printf("explicit launch %d: sum %.1f, pageable round trip %s\n", r, sum_h,
		       bad ? "BAD" : "ok");
	}
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaFree(d_in));
	CHECK(cudaFree(d_out));
	CHECK(cudaFree(d_sum));
	CHECK(cudaFreeHost(pin));
	free(pg_in);
	free(pg_out);
	return bad;
}

static int captured(cudaStream_t s)
{
	float *pg_in = (float *)malloc(N * 4), *d_in, *d_out, *d_sum, sum_h = 0;
	cudaGraph_t g;
	cudaGraphExec_t ge = NULL;
	size_t nodes = 0;
	int bad = 0;

	if (!pg_in)
		return 1;
	CHECK(cudaMalloc(&d_in, N * 4));
	CHECK(cudaMalloc(&d_out, N * 4));
	CHECK(cudaMalloc(&d_sum, 4));
	fill(pg_in, 0);
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMemcpyAsync(d_in, pg_in, N * 4, cudaMemcpyHostToDevice, s));
	CHECK(cudaMemsetAsync(d_sum, 0, 4, s));
	scale_sum<<<(N + 255) / 256, 256, 0, s>>>(d_in, d_out, d_sum, 3.0f, N);
	CHECK(cudaMemcpyAsync(&sum_h, d_sum, 4, cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphGetNodes(g, NULL, &nodes));
	printf("captured graph: %zu nodes\n", nodes);
	CHECK(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 5; r++) {
		fill(pg_in, 10 * r);
		sum_h = -1;
		CHECK(cudaGraphLaunch(ge, s));
		CHECK(cudaStreamSynchronize(s));
		printf("captured launch %d: sum %.1f\n", r, sum_h);
	}
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaGraphDestroy(g));

	/* Captured again at each step, the instance updated (jacobiCudaGraphs). */
	ge = NULL;
	for (int k = 0; k < 20; k++) {
		cudaGraphExecUpdateResultInfo info;

		CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
		CHECK(cudaMemsetAsync(d_sum, 0, 4, s));
		scale_sum<<<(N + 255) / 256, 256, 0, s>>>(k & 1 ? d_out : d_in, k & 1 ? d_in : d_out,
							  d_sum, 0.5f, N);
		CHECK(cudaMemcpyAsync(&sum_h, d_sum, 4, cudaMemcpyDeviceToHost, s));
		CHECK(cudaStreamEndCapture(s, &g));
		if (!ge) {
			CHECK(cudaGraphInstantiate(&ge, g, 0));
		} else {
			CHECK(cudaGraphExecUpdate(ge, g, &info));
			if (info.result != cudaGraphExecUpdateSuccess) {
				printf("step %d: update result %d\n", k, (int)info.result);
				bad++;
			}
		}
		CHECK(cudaGraphLaunch(ge, s));
		CHECK(cudaStreamSynchronize(s));
		CHECK(cudaGraphDestroy(g));
		if (k % 5 == 4)
			printf("step %d: sum %.4f\n", k, sum_h);
	}
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaFree(d_in));
	CHECK(cudaFree(d_out));
	CHECK(cudaFree(d_sum));
	free(pg_in);
	return bad;
}

/* Device memory into a 2D array and back out, then into pinned memory. */
static int array_nodes(cudaStream_t s)
{
	cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
	cudaArray_t arr;
	float *d_in, *d_out, *pin;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaGraphNode_t in, out, down;
	cudaMemcpy3DParms mp = {};
	int bad = 0;

	CHECK(cudaMallocArray(&arr, &fd, 64, 4));
	CHECK(cudaMalloc(&d_in, 256 * 4));
	CHECK(cudaMalloc(&d_out, 256 * 4));
	CHECK(cudaMallocHost(&pin, 256 * 4));
	CHECK(cudaGraphCreate(&g, 0));
	mp.srcPtr = make_cudaPitchedPtr(d_in, 64 * 4, 64, 4);
	mp.dstArray = arr;
	mp.extent = make_cudaExtent(64, 4, 1);	/* elements for an array end */
	mp.kind = cudaMemcpyDeviceToDevice;
	CHECK(cudaGraphAddMemcpyNode(&in, g, NULL, 0, &mp));
	mp = cudaMemcpy3DParms{};
	mp.srcArray = arr;
	mp.dstPtr = make_cudaPitchedPtr(d_out, 64 * 4, 64, 4);
	mp.extent = make_cudaExtent(64, 4, 1);
	mp.kind = cudaMemcpyDeviceToDevice;
	CHECK(cudaGraphAddMemcpyNode(&out, g, &in, 1, &mp));
	CHECK(cudaGraphAddMemcpyNode1D(&down, g, &out, 1, pin, d_out, 256 * 4,
				       cudaMemcpyDeviceToHost));
	CHECK(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 3; r++) {
		float sum = 0;

		for (int i = 0; i < 256; i++)
			pin[i] = (float)(i + r);
		CHECK(cudaMemcpy(d_in, pin, 256 * 4, cudaMemcpyHostToDevice));
		memset(pin, 0, 256 * 4);
		CHECK(cudaGraphLaunch(ge, s));
		CHECK(cudaStreamSynchronize(s));
		for (int i = 0; i < 256; i++) {
			sum += pin[i];
			bad += pin[i] != (float)(i + r);
		}
		printf("array launch %d: sum %.1f\n", r, sum);
	}
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaFreeArray(arr));
	CHECK(cudaFree(d_in));
	CHECK(cudaFree(d_out));
	CHECK(cudaFreeHost(pin));
	return bad;
}

int main(void)
{
	cudaStream_t s;
	int bad;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	bad = explicit_graph(s);
	bad += captured(s);
	bad += array_nodes(s);
	CHECK(cudaStreamDestroy(s));
	printf("%s\n", bad ? "FAIL" : "PASS");
	return bad ? 1 : 0;
}
