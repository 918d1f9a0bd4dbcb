// SPDX-License-Identifier: MIT
/*
 * Checkpoint benchmark helper: a session holding GIB GiB of device memory.
 *
 *   ckpt hold GIB GOFILE   allocate and fill GIB GiB (1 GiB pieces, each
 *                          with its own value), print "ready", wait until
 *                          GOFILE exists, check every piece kept its value
 *                          (exit 1 if not). Run through vgpu; the runner
 *                          times `vgpuctl checkpoint` meanwhile.
 *   ckpt nvidia GIB        the same memory, checkpointed through NVIDIA's
 *                          process-checkpoint API (cuCheckpointProcessLock/
 *                          Checkpoint, then Restore/Unlock) from a child
 *                          process; prints BENCH nvidia_ckpt_s and
 *                          nvidia_restore_s, then checks the memory as above.
 *                          Through vgpu the same calls are answered by vgpu's
 *                          checkpoint (runtime/ckptapi/): the figures are then
 *                          named vgpu_api_ckpt_s and vgpu_api_restore_s.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define GiB (1ull << 30)
#define MAX_GIB 64

__global__ void fill(unsigned *p, unsigned v, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = v;
}

__global__ void check(const unsigned *p, unsigned v, size_t n, unsigned *bad)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (p[i] != v)
			atomicAdd(bad, 1);
}

static unsigned *piece[MAX_GIB];

static int allocate(int gib)
{
	for (int i = 0; i < gib; i++) {
		if (cudaMalloc(&piece[i], GiB) != cudaSuccess) {
			fprintf(stderr, "ckpt: cudaMalloc of piece %d failed\n", i);
			return 1;
		}
		fill<<<1024, 256>>>(piece[i], 0x1000u + i, GiB / 4);
	}
	return cudaDeviceSynchronize() != cudaSuccess;
}

static int verify(int gib)
{
	unsigned *bad, total = 0;

	if (cudaMalloc(&bad, sizeof(*bad)) != cudaSuccess)
		return 1;
	for (int i = 0; i < gib; i++) {
		unsigned n = 0;

		cudaMemset(bad, 0, sizeof(*bad));
		check<<<1024, 256>>>(piece[i], 0x1000u + i, GiB / 4, bad);
		if (cudaMemcpy(&n, bad, sizeof(n), cudaMemcpyDeviceToHost) != cudaSuccess)
			return 1;
		total += n;
	}
	printf("ckpt: %u words changed\n", total);
	return total != 0;
}

static int nvidia(int gib)
{
	int up[2], done[2];
	pid_t parent = getpid(), child;
	char c;

	if (pipe(up) || pipe(done))
		return 1;
	child = fork();	/* before any CUDA call: the child is a fresh driver user */
	if (!child) {
		/* The driver's entry points by name: this program links cudart only. */
		void *lib = dlopen("libcuda.so.1", RTLD_NOW);
		CUresult (*init)(unsigned) = lib ? (CUresult (*)(unsigned))dlsym(lib, "cuInit") : NULL;
		CUresult (*lk)(int, CUcheckpointLockArgs *) =
			lib ? (CUresult (*)(int, CUcheckpointLockArgs *))dlsym(lib, "cuCheckpointProcessLock") : NULL;
		CUresult (*cp)(int, CUcheckpointCheckpointArgs *) =
			lib ? (CUresult (*)(int, CUcheckpointCheckpointArgs *))dlsym(lib, "cuCheckpointProcessCheckpoint") : NULL;
		CUresult (*rsf)(int, CUcheckpointRestoreArgs *) =
			lib ? (CUresult (*)(int, CUcheckpointRestoreArgs *))dlsym(lib, "cuCheckpointProcessRestore") : NULL;
		CUresult (*ul)(int, CUcheckpointUnlockArgs *) =
			lib ? (CUresult (*)(int, CUcheckpointUnlockArgs *))dlsym(lib, "cuCheckpointProcessUnlock") : NULL;
		CUcheckpointLockArgs lock;
		CUcheckpointCheckpointArgs ck;
		CUcheckpointRestoreArgs rs;
		CUcheckpointUnlockArgs un;
		double t0, t1, t2;
		CUresult r1, r2, r3, r4;

		memset(&lock, 0, sizeof(lock));
		memset(&ck, 0, sizeof(ck));
		memset(&rs, 0, sizeof(rs));
		memset(&un, 0, sizeof(un));
		lock.timeoutMs = 10000;
		/* vgpu's runtime exports a call of its own. */
		const char *who = lib && dlsym(lib, "vgpuDriverExportTableInfo") ? "vgpu_api" : "nvidia";

		if (!init || !lk || !cp || !rsf || !ul) {
			fprintf(stderr, "ckpt: this driver has no cuCheckpointProcess* entry points\n");
			_exit(1);
		}
		if (read(up[0], &c, 1) != 1 || init(0))
			_exit(1);
		t0 = bench_now_us();
		r1 = lk(parent, &lock);
		r2 = r1 ? r1 : cp(parent, &ck);
		t1 = bench_now_us();
		r3 = r2 ? r2 : rsf(parent, &rs);
		r4 = r3 ? r3 : ul(parent, &un);
		t2 = bench_now_us();
		if (r4) {
			fprintf(stderr, "ckpt: NVIDIA checkpoint calls: %d %d %d %d\n", r1, r2, r3, r4);
			_exit(1);
		}
		printf("BENCH %s_ckpt_s %.3f s\nBENCH %s_restore_s %.3f s\n",
		       who, (t1 - t0) / 1e6, who, (t2 - t1) / 1e6);
		fflush(stdout);
		_exit(write(done[1], "x", 1) == 1 ? 0 : 1);
	}
	if (child < 0 || allocate(gib))
		return 1;
	if (write(up[1], "x", 1) != 1 || read(done[0], &c, 1) != 1) {
		waitpid(child, NULL, 0);
		return 1;
	}
	waitpid(child, NULL, 0);
	return verify(gib);
}

int main(int argc, char **argv)
{
	int gib = argc >= 3 ? atoi(argv[2]) : 0;

	if (gib < 1 || gib > MAX_GIB) {
		fprintf(stderr, "usage: ckpt hold GIB GOFILE | ckpt nvidia GIB\n");
		return 2;
	}
	if (!strcmp(argv[1], "nvidia") && argc == 3)
		return nvidia(gib);
	if (strcmp(argv[1], "hold") || argc != 4) {
		fprintf(stderr, "usage: ckpt hold GIB GOFILE | ckpt nvidia GIB\n");
		return 2;
	}
	if (allocate(gib))
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (access(argv[3], F_OK))
		usleep(20000);
	return verify(gib);
}
