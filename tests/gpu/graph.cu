// SPDX-License-Identifier: MIT
/*
 * A CUDA graph captured from a stream (kernels, a memset, copies and a
 * cross-stream fork/join through events), instantiated once and launched
 * ten times; its results and node count are printed.
 */
#include "../e2e/e2e.h"

__global__ void axpb(float *p, float a, float b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = a * p[i] + b;
}

__global__ void add(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] += x[i];
}

int main(void)
{
	const int n = 1 << 16;
	cudaStream_t s, side;
	cudaEvent_t fork, join;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	float *x, *y, *h, *hin;
	size_t nodes = 0;
	int bad = 0;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
	CHECK(cudaMalloc(&x, n * 4));
	CHECK(cudaMalloc(&y, n * 4));
	CHECK(cudaMallocHost(&h, n * 4));
	CHECK(cudaMallocHost(&hin, n * 4));
	for (int i = 0; i < n; i++)
		hin[i] = (float)(i % 100);
	CHECK(cudaMemset(y, 0, n * 4));

	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMemcpyAsync(x, hin, n * 4, cudaMemcpyHostToDevice, s));
	CHECK(cudaEventRecord(fork, s));
	CHECK(cudaStreamWaitEvent(side, fork, 0));
	axpb<<<n / 256, 256, 0, side>>>(x, 2.0f, 1.0f, n);	/* x = 2x + 1 */
	CHECK(cudaEventRecord(join, side));
	CHECK(cudaStreamWaitEvent(s, join, 0));
	add<<<n / 256, 256, 0, s>>>(x, y, n);			/* y += x */
	CHECK(cudaMemcpyAsync(h, y, n * 4, cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphGetNodes(g, NULL, &nodes));
	printf("graph: %zu nodes captured\n", nodes);
	CHECK(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 10; r++)
		CHECK(cudaGraphLaunch(ge, s));
	CHECK(cudaStreamSynchronize(s));
	for (int i = 0; i < n; i++)
		bad += h[i] != 10.0f * (2.0f * (i % 100) + 1.0f);
	EXPECT(bad == 0, "%d wrong after 10 launches", bad);
	printf("graph: 10 launches: %s, h[7] = %.1f\n", bad ? "wrong" : "ok", h[7]);
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaFree(x));
	CHECK(cudaFree(y));
	CHECK(cudaFreeHost(h));
	CHECK(cudaFreeHost(hin));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaStreamDestroy(side));
	return e2e_finish("graph");
}
