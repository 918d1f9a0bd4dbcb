// SPDX-License-Identifier: MIT
/*
 * cuBLAS SGEMM (column-major C = alpha*A*B + beta*C), compared with a
 * double-precision product on the host within a tolerance; the checksum is
 * printed rounded, so native and vgpu runs print the same text.
 *
 *   sgemm            one product
 *   sgemm loop N     then N steps of C = A*B/k + C/2 (one every 50 ms, each
 *                    printing "step I"), the runner checkpointing and moving
 *                    the session meanwhile; C is checked against the same
 *                    recurrence on the host every 10 steps and at the end.
 */
#include <unistd.h>

#include <cublas_v2.h>
#include <math.h>

#include "../e2e/e2e.h"

#define CB(call)                                                                 \
	do {                                                                     \
		cublasStatus_t st_ = (call);                                     \
		if (st_ != CUBLAS_STATUS_SUCCESS) {                              \
			printf("FATAL %s:%d %s -> cuBLAS status %d\n", __FILE__, __LINE__, \
			       #call, (int)st_);                                 \
			return 1;                                                \
		}                                                                \
	} while (0)

/* C = a*A*B + b*C on the host, in double precision. */
static void host_gemm(int m, int n, int k, double a, const float *A, const float *B, double b,
		      double *C)
{
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double ref = 0;

			for (int l = 0; l < k; l++)
				ref += (double)A[i + l * m] * B[l + j * k];
			C[i + j * m] = a * ref + b * C[i + j * m];
		}
}

static int loop(cublasHandle_t h, int m, int n, int k, const float *A, const float *B,
		const float *dA, const float *dB, float *dC, int steps)
{
	const float a = 1.0f / k, b = 0.5f;
	double *ref = (double *)calloc((size_t)m * n, sizeof(double)), maxerr = 0, sum = 0;
	float *C = (float *)malloc((size_t)m * n * 4);

	CHECK(cudaMemset(dC, 0, (size_t)m * n * 4));
	for (int s = 1; s <= steps; s++) {
		CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &a, dA, m, dB, k, &b, dC, m));
		host_gemm(m, n, k, a, A, B, b, ref);
		if (s % 10 == 0 || s == steps) {
			CB(cublasGetMatrix(m, n, 4, dC, m, C, m));
			for (int i = 0; i < m * n; i++)
				maxerr = fmax(maxerr, fabs(ref[i] - C[i]));
		}
		CHECK(cudaDeviceSynchronize());
		printf("step %d\n", s);
		fflush(stdout);
		usleep(50000);
	}
	for (int i = 0; i < m * n; i++)
		sum += ref[i];
	EXPECT(maxerr < 1e-4, "loop: max error %g", maxerr);
	printf("loop of %d steps: reference checksum %.3f, within 1e-4: %s\n", steps, sum,
	       maxerr < 1e-4 ? "yes" : "no");
	free(ref);
	free(C);
	return 0;
}

int main(int argc, char **argv)
{
	const int m = 384, n = 256, k = 320;
	const float alpha = 1.25f, beta = -0.5f;
	float *A = (float *)malloc(m * k * 4), *B = (float *)malloc(k * n * 4);
	float *C = (float *)malloc(m * n * 4), *C0 = (float *)malloc(m * n * 4);
	float *dA, *dB, *dC;
	double maxerr = 0, sum = 0;
	cublasHandle_t h;

	for (int i = 0; i < m * k; i++)
		A[i] = (float)((i * 13) % 97) / 97.0f - 0.5f;
	for (int i = 0; i < k * n; i++)
		B[i] = (float)((i * 7) % 89) / 89.0f - 0.5f;
	for (int i = 0; i < m * n; i++)
		C0[i] = (float)(i % 11) * 0.1f;
	CHECK(cudaMalloc(&dA, m * k * 4));
	CHECK(cudaMalloc(&dB, k * n * 4));
	CHECK(cudaMalloc(&dC, m * n * 4));
	CB(cublasCreate(&h));
	CB(cublasSetMatrix(m, k, 4, A, m, dA, m));
	CB(cublasSetMatrix(k, n, 4, B, k, dB, k));
	CB(cublasSetMatrix(m, n, 4, C0, m, dC, m));
	CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA, m, dB, k, &beta, dC, m));
	CB(cublasGetMatrix(m, n, 4, dC, m, C, m));
	CHECK(cudaDeviceSynchronize());
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double ref = 0;

			for (int l = 0; l < k; l++)
				ref += (double)A[i + l * m] * B[l + j * k];
			ref = alpha * ref + beta * C0[i + j * m];
			maxerr = fmax(maxerr, fabs(ref - C[i + j * m]));
			sum += ref;
		}
	EXPECT(maxerr < 1e-3, "max error %g", maxerr);
	/* The host's sum of the reference, rounded: the same text anywhere. */
	printf("sgemm %dx%dx%d: reference checksum %.1f, within 1e-3: %s\n", m, n, k, sum,
	       maxerr < 1e-3 ? "yes" : "no");
	if (argc == 3 && !strcmp(argv[1], "loop") && loop(h, m, n, k, A, B, dA, dB, dC, atoi(argv[2])))
		return 1;
	CB(cublasDestroy(h));
	CHECK(cudaFree(dA));
	CHECK(cudaFree(dB));
	CHECK(cudaFree(dC));
	return e2e_finish("sgemm");
}
