// SPDX-License-Identifier: MIT
/* Vector add of 16M floats, checked element by element; prints a checksum. */
#include "../e2e/e2e.h"

__global__ void add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

int main(void)
{
	const int n = 1 << 24;
	float *a = (float *)malloc(n * 4), *b = (float *)malloc(n * 4), *c = (float *)malloc(n * 4);
	float *da, *db, *dc;
	double sum = 0;
	int bad = 0;

	for (int i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.001f;
		b[i] = (float)(i % 777) * 0.5f;
	}
	CHECK(cudaMalloc(&da, n * 4));
	CHECK(cudaMalloc(&db, n * 4));
	CHECK(cudaMalloc(&dc, n * 4));
	CHECK(cudaMemcpy(da, a, n * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, b, n * 4, cudaMemcpyHostToDevice));
	add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		bad += c[i] != a[i] + b[i];
		sum += c[i];
	}
	EXPECT(bad == 0, "%d wrong elements", bad);
	printf("vecadd: n=%d sum=%.6e\n", n, sum);
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	return e2e_finish("vecadd");
}
