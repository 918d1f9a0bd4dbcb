// SPDX-License-Identifier: MIT
/*
 * cudaHostRegister(cudaHostRegisterMapped) of pageable memory (malloc'ed,
 * starting and ending inside pages): a kernel doubles every word through
 * the device pointer, the host reads the results; where the device says
 * registered host pointers are usable in kernels, a kernel uses the host
 * pointer itself; after cudaHostUnregister the memory keeps its bytes.
 * The same lines natively and through vgpu (which shares the covering
 * pages with its worker when there is no /dev/vgpu).
 */
#include "../e2e/e2e.h"

__global__ void twice(unsigned *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] *= 2;
}

__global__ void add_one(unsigned *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] += 1;
}

int main(void)
{
	const int n = 300000;
	unsigned char *raw = (unsigned char *)malloc(n * 4 + 200);
	unsigned *h = (unsigned *)(raw + 100), *d = NULL;
	int bad = 0, direct = 0;

	if (!raw)
		return 2;
	for (int i = 0; i < n; i++)
		h[i] = (unsigned)i;
	CHECK(cudaHostRegister(h, n * sizeof(unsigned), cudaHostRegisterMapped));
	CHECK(cudaHostGetDevicePointer((void **)&d, h, 0));
	twice<<<(n + 255) / 256, 256>>>(d, n);
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < n; i++)
		bad += h[i] != 2u * i;
	EXPECT(bad == 0, "%d wrong words after the kernel", bad);
	printf("hostreg_mapped: a kernel doubled %d words through the device pointer: %s\n", n,
	       bad ? "wrong" : "ok");

	CHECK(cudaDeviceGetAttribute(&direct, cudaDevAttrCanUseHostPointerForRegisteredMem, 0));
	if (direct) {
		add_one<<<(n + 255) / 256, 256>>>(h, n);
		CHECK(cudaDeviceSynchronize());
		bad = 0;
		for (int i = 0; i < n; i++)
			bad += h[i] != 2u * i + 1;
		EXPECT(bad == 0, "%d wrong words after the kernel on the host pointer", bad);
		printf("hostreg_mapped: a kernel used the host pointer itself: %s\n",
		       bad ? "wrong" : "ok");
	}
	CHECK(cudaHostUnregister(h));
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += h[i] != 2u * i + (direct ? 1 : 0);
	EXPECT(bad == 0, "%d words changed by the unregistration", bad);
	printf("hostreg_mapped: unregistered, the bytes kept: %s\n", bad ? "no" : "yes");
	free(raw);
	return e2e_finish("hostreg_mapped");
}
