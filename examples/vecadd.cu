// Adds two vectors on whatever GPU CUDA gives this program and says where
// it ran. Built with plain nvcc; `vgpu run -- ./vecadd` runs it through vgpu.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "../tests/e2e/kernels.cuh"

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main()
{
	const int n = 1 << 20;
	float *a, *b, *c, *da, *db, *dc;
	cudaDeviceProp prop;

	CHECK(cudaGetDeviceProperties(&prop, 0));
	a = (float *)malloc(n * sizeof(float));
	b = (float *)malloc(n * sizeof(float));
	c = (float *)malloc(n * sizeof(float));
	for (int i = 0; i < n; i++) {
		a[i] = i;
		b[i] = 2.0f * i;
	}
	CHECK(cudaMalloc(&da, n * sizeof(float)));
	CHECK(cudaMalloc(&db, n * sizeof(float)));
	CHECK(cudaMalloc(&dc, n * sizeof(float)));
	CHECK(cudaMemcpy(da, a, n * sizeof(float), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, b, n * sizeof(float), cudaMemcpyHostToDevice));
	vgpu_vecadd_f32<<<(n + 255) / 256, 256>>>(da, db, dc, n);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(c, dc, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		if (c[i] != 3.0f * i) {
			fprintf(stderr, "wrong result at %d: %f\n", i, c[i]);
			return 1;
		}
	printf("vecadd: %d elements correct, computed on \"%s\" (compute %d.%d, %zu MiB)\n",
	       n, prop.name, prop.major, prop.minor, prop.totalGlobalMem >> 20);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	return 0;
}
