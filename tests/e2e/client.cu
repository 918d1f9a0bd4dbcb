// SPDX-License-Identifier: MIT
/*
 * Helper program of the runners (tests/e2e/run, tests/gpu/run):
 *
 *   client loop [SECONDS]  copy 64 MiB each way in a loop (pageable and
 *                          pinned, with kernels in between) until killed or
 *                          SECONDS (default 60) pass; prints "copying" once
 *                          the first round is done. The client-death test
 *                          kills it with SIGKILL in the middle of a copy.
 *   client probe           cudaGetDeviceCount: prints "probe: <error name>"
 *                          and the count; exit 0 when a device was found, 3
 *                          when the call failed (no daemon: the runner wants
 *                          an error, quickly, not a hang).
 *   client hold SECONDS    allocate 256 MiB, then wait SECONDS: a session
 *                          that is alive and idle.
 *   client poke            a kernel writes through a bad pointer: exit 0
 *                          when the next sync, and a copy after it, return
 *                          cudaErrorIllegalAddress.
 */
#include <unistd.h>

#include "e2e.h"
#include "kernels.cuh"

#define MiB (1ull << 20)

static int loop(double seconds)
{
	const size_t size = 64 * MiB;
	unsigned char *pg = (unsigned char *)malloc(size), *pin;
	unsigned *d;
	double end = e2e_now_ms() + seconds * 1e3;
	unsigned long rounds = 0;

	CHECK(cudaMallocHost(&pin, size));
	CHECK(cudaMalloc(&d, size));
	memset(pg, 0x3c, size);
	memset(pin, 0xc3, size);
	while (e2e_now_ms() < end) {
		CHECK(cudaMemcpy(d, pg, size, cudaMemcpyHostToDevice));
		vgpu_fill_u32<<<64, 256>>>(d, (unsigned)rounds, 1024);
		CHECK(cudaMemcpy(pg, d, size, cudaMemcpyDeviceToHost));
		CHECK(cudaMemcpyAsync(d, pin, size, cudaMemcpyHostToDevice, 0));
		vgpu_fill_u32<<<64, 256>>>(d, (unsigned)rounds, 1024);
		CHECK(cudaMemcpyAsync(pin, d, size, cudaMemcpyDeviceToHost, 0));
		CHECK(cudaStreamSynchronize(0));
		if (pg[0] != (unsigned char)rounds || pin[0] != (unsigned char)rounds) {
			fprintf(stderr, "round %lu: wrong data\n", rounds);
			return 1;
		}
		if (rounds++ == 0) {
			printf("copying\n");
			fflush(stdout);
		}
	}
	printf("done after %lu rounds\n", rounds);
	return 0;
}

static int probe(void)
{
	int n = -1;
	cudaError_t e = cudaGetDeviceCount(&n);

	printf("probe: %s\n", cudaGetErrorName(e));
	if (e != cudaSuccess)
		return 3;
	printf("devices: %d\n", n);
	return n > 0 ? 0 : 3;
}

static int hold(double seconds)
{
	void *d;

	CHECK(cudaMalloc(&d, 256 * MiB));
	CHECK(cudaMemset(d, 1, 256 * MiB));
	CHECK(cudaDeviceSynchronize());
	printf("holding\n");
	fflush(stdout);
	usleep((useconds_t)(seconds * 1e6));
	CHECK(cudaFree(d));
	return 0;
}

static int poke(void)
{
	unsigned *d, h;
	cudaError_t e1, e2;

	CHECK(cudaMalloc(&d, 4096));
	CHECK(cudaDeviceSynchronize());
	vgpu_poke_u32<<<1, 1>>>((unsigned *)(uintptr_t)0x100, 1);
	e1 = cudaDeviceSynchronize();
	e2 = cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost);
	printf("poke: sync %s, copy %s\n", cudaGetErrorName(e1), cudaGetErrorName(e2));
	return e1 == cudaErrorIllegalAddress && e2 == cudaErrorIllegalAddress ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "loop"))
		return loop(argc >= 3 ? atof(argv[2]) : 60);
	if (argc >= 2 && !strcmp(argv[1], "probe"))
		return probe();
	if (argc >= 2 && !strcmp(argv[1], "poke"))
		return poke();
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return hold(atof(argv[2]));
	fprintf(stderr, "usage: %s loop [SECONDS] | probe | hold SECONDS | poke\n", argv[0]);
	return 2;
}
