// SPDX-License-Identifier: MIT
/*
 * Managed memory on the GPU: a Jacobi solver of a Poisson problem on a
 * 512x512 grid in cudaMallocManaged memory. Between kernels the host reads
 * the solution and writes the source term; __managed__ variables carry an
 * iteration number from the host to the kernels and the residual back.
 * Prints the residuals and a checksum: the same natively and through vgpu.
 */
#include <cuda_runtime.h>
#include <stdio.h>

#define CK(call)                                                                 \
	do {                                                                     \
		cudaError_t e_ = (call);                                         \
		if (e_ != cudaSuccess) {                                         \
			printf("FAIL %s -> %s\n", #call, cudaGetErrorName(e_));  \
			return 1;                                                \
		}                                                                \
	} while (0)

#define N 512
#define ITERS 200

__managed__ int g_iter;			/* host -> kernels */
__managed__ int g_seen;			/* what the kernels saw of it */
__managed__ float g_resid;		/* kernels -> host */

__global__ void jacobi(const float *u, float *v, const float *f)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	int i = y * N + x;

	if (x >= N || y >= N)
		return;
	if (x == 0 || y == 0 || x == N - 1 || y == N - 1)
		v[i] = u[i];
	else
		v[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - N] + u[i + N] - f[i]);
	if (i == 0)
		g_seen = g_iter;
}

/* One block, a fixed order of additions: the same sum on every run. */
__global__ void residual(const float *u, const float *v)
{
	__shared__ float s[256];
	float acc = 0;

	for (int i = threadIdx.x; i < N * N; i += 256)
		acc += fabsf(v[i] - u[i]);
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int w = 128; w; w >>= 1) {
		if (threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (!threadIdx.x)
		g_resid = s[0];
}

int main(void)
{
	float *u, *v, *f;
	cudaPointerAttributes pa;
	dim3 block(16, 16), grid(N / 16, N / 16);
	cudaMemLocation gpu = { .type = cudaMemLocationTypeDevice, .id = 0 };
	int mismatch = 0;
	double sum = 0;

	CK(cudaMallocManaged(&u, N * N * sizeof(float)));
	CK(cudaMallocManaged(&v, N * N * sizeof(float)));
	CK(cudaMallocManaged(&f, N * N * sizeof(float)));
	CK(cudaPointerGetAttributes(&pa, u));
	printf("u is managed: %d\n", pa.type == cudaMemoryTypeManaged);
	for (int y = 0; y < N; y++)
		for (int x = 0; x < N; x++) {
			u[y * N + x] = y == 0 ? 1.0f : 0.0f;
			v[y * N + x] = 0.0f;
			f[y * N + x] = (float)((x * 7 + y * 13) % 17) / 17000.0f;
		}
	CK(cudaMemAdvise(f, N * N * sizeof(float), cudaMemAdviseSetReadMostly, gpu));
	CK(cudaMemPrefetchAsync(u, N * N * sizeof(float), gpu, 0, 0));
	for (int it = 0; it < ITERS; it++) {
		g_iter = it;
		jacobi<<<grid, block>>>(u, v, f);
		jacobi<<<grid, block>>>(v, u, f);
		if (it % 20 != 19)
			continue;
		residual<<<1, 256>>>(u, v);
		CK(cudaDeviceSynchronize());
		mismatch += g_seen != it;
		printf("iter %3d residual %.6e centre %.6e\n", it, g_resid, u[N / 2 * N + N / 2]);
		/* The host changes the problem: a point source that moves. */
		f[(N / 4 + it) * N + N / 3] -= 0.5f;
		u[(N / 2) * N + it] = 0.25f;
	}
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < N * N; i++)
		sum += u[i] * (double)(i % 97 + 1);
	printf("kernels saw the host's iteration numbers: %s\n", mismatch ? "no" : "yes");
	printf("checksum %.6f\n", sum);
	CK(cudaFree(u));
	CK(cudaFree(v));
	CK(cudaFree(f));
	return mismatch ? 1 : 0;
}
