// SPDX-License-Identifier: MIT
/*
 * A kernel launch as the program's very first CUDA call. cudart loads its
 * libraries and looks up the kernel before any context exists (so does
 * cuBLAS, from its static initialisers): the library and the kernel must be
 * usable before there is a context, and be bound to the context the launch
 * then runs in. Then the same kernels again, and a fill checked on the host.
 */
#include "e2e.h"
#include "kernels.cuh"

int main(void)
{
	const unsigned long long n = 1 << 16;
	unsigned *d, *h;
	int bad = 0;

	vgpu_spin<<<1, 1>>>(1000);	/* nothing before this */
	EXPECT(cudaGetLastError() == cudaSuccess, "first launch refused");
	CHECK(cudaDeviceSynchronize());

	CHECK(cudaMalloc(&d, n * sizeof(*d)));
	h = (unsigned *)malloc(n * sizeof(*h));
	vgpu_fill_u32<<<64, 256>>>(d, 0xc0ffee, n);
	EXPECT(cudaGetLastError() == cudaSuccess, "fill launch refused");
	CHECK(cudaMemcpy(h, d, n * sizeof(*h), cudaMemcpyDeviceToHost));
	for (unsigned long long i = 0; i < n; i++)
		bad += h[i] != 0xc0ffee;
	EXPECT(bad == 0, "%d words not filled", bad);
	vgpu_spin<<<1, 1>>>(1000);
	EXPECT(cudaGetLastError() == cudaSuccess, "second spin refused");
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(d));
	free(h);
	printf("launch before any other CUDA call: ok\n");
	return e2e_finish("launch_first");
}
