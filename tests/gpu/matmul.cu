// SPDX-License-Identifier: MIT
/*
 * Tiled matrix multiply with shared memory (16x16 tiles), sizes that are not
 * multiples of the tile; compared with a double-precision product on the
 * host within a tolerance; prints a checksum.
 */
#include <math.h>

#include "../e2e/e2e.h"

#define TILE 16

__global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
	__shared__ float as[TILE][TILE], bs[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0;

	for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
		int ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;

		as[threadIdx.y][threadIdx.x] = row < M && ka < K ? A[row * K + ka] : 0.0f;
		bs[threadIdx.y][threadIdx.x] = kb < K && col < N ? B[kb * N + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
		__syncthreads();
	}
	if (row < M && col < N)
		C[row * N + col] = acc;
}

int main(void)
{
	const int M = 500, N = 300, K = 417;
	float *A = (float *)malloc(M * K * 4), *B = (float *)malloc(K * N * 4);
	float *C = (float *)malloc(M * N * 4), *dA, *dB, *dC;
	double sum = 0, maxerr = 0;

	for (int i = 0; i < M * K; i++)
		A[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
	for (int i = 0; i < K * N; i++)
		B[i] = (float)((i * 53) % 89) / 89.0f - 0.5f;
	CHECK(cudaMalloc(&dA, M * K * 4));
	CHECK(cudaMalloc(&dB, K * N * 4));
	CHECK(cudaMalloc(&dC, M * N * 4));
	CHECK(cudaMemcpy(dA, A, M * K * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dB, B, K * N * 4, cudaMemcpyHostToDevice));
	matmul<<<dim3((N + TILE - 1) / TILE, (M + TILE - 1) / TILE), dim3(TILE, TILE)>>>(dA, dB, dC, M, N, K);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(C, dC, M * N * 4, cudaMemcpyDeviceToHost));
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double ref = 0;

			for (int k = 0; k < K; k++)
				ref += (double)A[i * K + k] * B[k * N + j];
			maxerr = fmax(maxerr, fabs(ref - C[i * N + j]));
			sum += C[i * N + j];
		}
	EXPECT(maxerr < 1e-3, "max error %g", maxerr);
	printf("matmul %dx%dx%d: checksum %.4f, within tolerance: %s\n", M, N, K, sum,
	       maxerr < 1e-3 ? "yes" : "no");
	CHECK(cudaFree(dA));
	CHECK(cudaFree(dB));
	CHECK(cudaFree(dC));
	return e2e_finish("matmul");
}
