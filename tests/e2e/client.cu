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
 *   client state FILE      device buffers of several sizes (1 KiB to 64 MiB),
 *                          each filled by a kernel with its own value, and 1
 *                          MiB of pinned host memory; prints "ready" and one
 *                          "buffer ADDR SIZE VALUE" line each, waits until
 *                          FILE exists (the runner checkpoints meanwhile),
 *                          then checks every buffer kept its value and that
 *                          the session still computes: exit 0.
 *   client phases DIR      the buffers of state; "phase 1" and their lines,
 *                          then waits for DIR/go1; changes one word of the
 *                          3 MiB buffer, prints "phase 2", waits for DIR/go2;
 *                          then checks every buffer holds what it should
 *                          ("phases: kept", exit 0). The incremental
 *                          checkpoint test.
 */
#include <stdint.h>
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

static const size_t sizes[] = { 1024, 100 * 1024, 3 * MiB + 4, 64 * MiB };
#define NB ((int)(sizeof(sizes) / sizeof(sizes[0])))

/* The buffers of state and phases: each filled by a kernel with its own
 * value, and 1 MiB of pinned host memory of 0x77. */
static int make_buffers(unsigned *d[NB], unsigned **pin)
{
	CHECK(cudaMallocHost(pin, MiB));
	memset(*pin, 0x77, MiB);
	for (int i = 0; i < NB; i++) {
		size_t n = sizes[i] / 4;

		CHECK(cudaMalloc(&d[i], sizes[i]));
		vgpu_fill_u32<<<(unsigned)((n + 255) / 256), 256>>>(d[i], 0x11111111u * (i + 1), n);
	}
	CHECK(cudaDeviceSynchronize());
	return 0;
}

static void print_buffers(unsigned *const d[NB])
{
	for (int i = 0; i < NB; i++)
		printf("buffer %#llx %zu %#x\n", (unsigned long long)(uintptr_t)d[i], sizes[i] / 4 * 4,
		       0x11111111u * (i + 1));
	fflush(stdout);
}

/* Wrong words found (each buffer's first one printed); word @poked of
 * buffer 2 must be @v instead. Copies through back (64 MiB). */
static int check_buffers(unsigned *const d[NB], const unsigned *pin, unsigned *back,
			 size_t poked, unsigned v)
{
	int bad = 0;

	for (int i = 0; i < NB; i++) {
		size_t n = sizes[i] / 4;

		CHECK(cudaMemcpy(back, d[i], n * 4, cudaMemcpyDeviceToHost));
		for (size_t k = 0; k < n; k++)
			if (back[k] != (i == 2 && k == poked ? v : 0x11111111u * (i + 1))) {
				printf("buffer %d wrong at word %zu: %#x\n", i, k, back[k]);
				bad++;
				break;
			}
	}
	for (size_t k = 0; k < MiB / 4; k++)
		if (pin[k] != 0x77777777u) {
			printf("pinned buffer changed at word %zu\n", k);
			bad++;
			break;
		}
	return bad;
}

static int state(const char *go)
{
	unsigned *d[NB], *pin, *back;
	int bad;

	if (make_buffers(d, &pin))
		return 1;
	printf("ready\n");
	printf("buffer %#llx %zu %#x\n", (unsigned long long)(uintptr_t)pin, (size_t)MiB, 0x77777777u);
	print_buffers(d);
	while (access(go, F_OK))
		usleep(20000);
	back = (unsigned *)malloc(64 * MiB);
	if (!back)
		return 1;
	bad = check_buffers(d, pin, back, SIZE_MAX, 0);
	/* The session goes on computing after its checkpoint. */
	vgpu_fill_u32<<<1, 256>>>(d[0], 42, 256);
	CHECK(cudaMemcpy(back, d[0], 1024, cudaMemcpyDeviceToHost));
	for (int k = 0; k < 256; k++)
		bad += back[k] != 42;
	free(back);
	printf("state: %s\n", bad ? "FAILED" : "kept");
	return bad ? 1 : 0;
}

static void wait_for(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (access(path, F_OK))
		usleep(20000);
}

static int phases(const char *dir)
{
	const size_t poked = 123457;	/* a word of buffer 2 */
	unsigned *d[NB], *pin, *back, v = 0xabcdef01u;
	int bad;

	if (make_buffers(d, &pin))
		return 1;
	printf("phase 1\n");
	print_buffers(d);
	wait_for(dir, "go1");
	CHECK(cudaMemcpy(d[2] + poked, &v, 4, cudaMemcpyHostToDevice));
	printf("phase 2\n");
	fflush(stdout);
	wait_for(dir, "go2");
	back = (unsigned *)malloc(64 * MiB);
	if (!back)
		return 1;
	bad = check_buffers(d, pin, back, poked, v);
	free(back);
	printf("phases: %s\n", bad ? "FAILED" : "kept");
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "state"))
		return state(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "loop"))
		return loop(argc >= 3 ? atof(argv[2]) : 60);
	if (argc >= 2 && !strcmp(argv[1], "probe"))
		return probe();
	if (argc >= 2 && !strcmp(argv[1], "poke"))
		return poke();
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return hold(atof(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "phases"))
		return phases(argv[2]);
	fprintf(stderr, "usage: %s loop [SECONDS] | probe | hold SECONDS | poke | state FILE | "
		"phases DIR\n", argv[0]);
	return 2;
}
