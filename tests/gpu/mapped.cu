// SPDX-License-Identifier: MIT
/*
 * Mapped pinned memory (cudaHostAllocMapped): a kernel writes host memory
 * through the device pointer, and a live handshake: the kernel raises a
 * flag in host memory that the host sees while the kernel still runs, and
 * waits for the host's answer (both sides give up after 5 s: no hang).
 */
#include "../e2e/e2e.h"

__device__ unsigned long long now_ns(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void squares(unsigned *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = (unsigned)i * i;
}

__global__ void handshake(volatile unsigned *flag, volatile unsigned *ack)
{
	unsigned long long t0 = now_ns();

	*flag = 1;
	__threadfence_system();
	while (*ack != 1 && now_ns() - t0 < 5000000000ull)
		;
	*flag = *ack == 1 ? 2 : 3;
	__threadfence_system();
}

int main(void)
{
	const int n = 1 << 20;
	unsigned *h, *d;
	volatile unsigned *hs;
	unsigned *ds;
	int bad = 0;

	CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CHECK(cudaHostAlloc(&h, n * 4, cudaHostAllocMapped));
	CHECK(cudaHostGetDevicePointer((void **)&d, h, 0));
	memset(h, 0, n * 4);
	squares<<<n / 256, 256>>>(d, n);
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < n; i++)
		bad += h[i] != (unsigned)i * i;
	EXPECT(bad == 0, "%d wrong words written to host memory", bad);
	printf("mapped: kernel wrote %d words of host memory: %s\n", n, bad ? "wrong" : "ok");

	CHECK(cudaHostAlloc((void **)&hs, 8, cudaHostAllocMapped | cudaHostAllocPortable));
	CHECK(cudaHostGetDevicePointer((void **)&ds, (void *)hs, 0));
	hs[0] = 0;
	hs[1] = 0;
	handshake<<<1, 1>>>(ds, ds + 1);
	CHECK(cudaGetLastError());
	{
		double t0 = e2e_now_ms();

		while (hs[0] != 1 && e2e_now_ms() - t0 < 5000)
			;
		EXPECT(hs[0] == 1, "the kernel's flag never showed in host memory (%u)", hs[0]);
		hs[1] = 1;
	}
	CHECK(cudaDeviceSynchronize());
	EXPECT(hs[0] == 2, "the kernel did not see the host's answer (flag %u)", hs[0]);
	printf("mapped: live handshake: %s\n", hs[0] == 2 ? "ok" : "failed");
	CHECK(cudaFreeHost(h));
	CHECK(cudaFreeHost((void *)hs));
	return e2e_finish("mapped");
}
