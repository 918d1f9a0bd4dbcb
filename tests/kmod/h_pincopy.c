// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Pageable copies over /dev/vgpu through pinned registrations, as a program
 * that calls libcuda sees them (the runtime in the guest, vgpud on the host
 * backend; run by e2e.sh with VGPU_LOG=debug so it can count the runtime's
 * pinreg lines):
 *
 *   h_pincopy          sizes and alignments both ways, a registration
 *                      reused, the buffer freed and mapped again at the
 *                      same address (munmap + mmap MAP_FIXED, free +
 *                      malloc) with new contents, both ways
 *   h_pincopy limit    without CAP_IPC_LOCK and with a tiny RLIMIT_MEMLOCK:
 *                      the module refuses to pin, the copies are staged and
 *                      still right
 *
 * Every check is on bytes and on the pinned page count of this process
 * (VmPin), never on timing. Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define DEV_BYTES (16 * MiB)

#define CK(cond)								\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "h_pincopy:%d: %s failed\n", __LINE__, #cond); \
			exit(1);						\
		}								\
	} while (0)
#define CU(call)								\
	do {									\
		CUresult rc_ = (call);						\
		if (rc_) {							\
			fprintf(stderr, "h_pincopy:%d: %s = %d\n", __LINE__, #call, rc_); \
			exit(1);						\
		}								\
	} while (0)

static CUdeviceptr dev;
static long pg;

/* This process's pinned memory (mm->pinned_vm), KiB. */
static long vmpin(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;

	CK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static uint8_t pat(uint64_t i, unsigned int seed)
{
	return (uint8_t)(i * 131 + (i >> 11) * 7 + seed);
}

static void fill(uint8_t *p, uint64_t n, unsigned int seed)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = pat(i, seed);
}

static int same(const uint8_t *p, uint64_t n, unsigned int seed)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != pat(i, seed))
			return 0;
	return 1;
}

static uint8_t *anon(void *at, size_t len)
{
	uint8_t *p = mmap(at, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	CK(p != MAP_FAILED);
	return p;
}

/* Up through @src, down into @dst (other memory), compared. */
static void round_trip(uint8_t *src, uint8_t *dst, uint64_t n, unsigned int seed)
{
	fill(src, n, seed);
	memset(dst, 0, n);
	CU(cuMemcpyHtoD(dev, src, n));
	CU(cuMemcpyDtoH(dst, dev, n));
	CK(same(dst, n, seed));
}

static void sizes(void)
{
	static const uint64_t len[] = {
		256 * KiB, 256 * KiB + 1, MiB + 123, 3 * MiB - 7, 8 * MiB,
	};
	static const uint64_t off[] = { 0, 1, 7, 4095, 4097 };
	uint8_t *a = anon(NULL, 10 * MiB), *b = anon(NULL, 10 * MiB);
	unsigned int seed = 1;
	CUstream st;

	for (size_t i = 0; i < sizeof(len) / sizeof(len[0]); i++)
		for (size_t j = 0; j < sizeof(off) / sizeof(off[0]); j++)
			round_trip(a + off[j], b + off[(j + 1) % 5], len[i], seed++);
	CK(vmpin() > 0);
	/* The asynchronous and unified entry points take the same path. */
	CU(cuStreamCreate(&st, 0));
	fill(a + 3, 2 * MiB, 99);
	CU(cuMemcpyHtoDAsync(dev + 64, a + 3, 2 * MiB, st));
	CU(cuMemcpyDtoHAsync(b + 5, dev + 64, 2 * MiB, st));
	CU(cuStreamSynchronize(st));
	CK(same(b + 5, 2 * MiB, 99));
	CU(cuMemcpy((CUdeviceptr)(uintptr_t)(b + 1), dev + 64, 2 * MiB));
	CK(same(b + 1, 2 * MiB, 99));
	CU(cuStreamDestroy(st));
	/* A copy from read-only memory. */
	fill(a, MiB, 5);
	CK(!mprotect(a, MiB, PROT_READ));
	CU(cuMemcpyHtoD(dev, a + 9, MiB - 9));
	CU(cuMemcpyDtoH(b, dev, MiB - 9));
	for (uint64_t i = 0; i < MiB - 9; i++)
		CK(b[i] == pat(i + 9, 5));
	CK(!munmap(a, 10 * MiB) && !munmap(b, 10 * MiB));
	printf("h_pincopy: sizes and alignments ok\n");
}

static void reuse(void)
{
	uint8_t *a = anon(NULL, 4 * MiB), *b = anon(NULL, 4 * MiB);
	long before;

	round_trip(a + 100, b + 200, 3 * MiB, 7);
	before = vmpin();
	for (unsigned int k = 0; k < 5; k++)
		round_trip(a + 100 + k, b + 200 - k, 3 * MiB, 8 + k);
	CK(vmpin() == before);
	CK(!munmap(a, 4 * MiB) && !munmap(b, 4 * MiB));
	printf("h_pincopy: registrations reused (VmPin %ld KiB)\n", before);
}

/* The buffer goes and comes back at the same address with new contents. */
static void stale(void)
{
	uint64_t n = 2 * MiB + 3;
	uint8_t *a = anon(NULL, 4 * MiB), *b = anon(NULL, 4 * MiB), *p;
	long before;

	/* Upload: the new contents arrive, not the pinned old pages. */
	round_trip(a + 1, b, n, 20);
	before = vmpin();
	CK(!munmap(a, 4 * MiB));
	CK(anon(a, 4 * MiB) == a);
	round_trip(a + 1, b, n, 21);
	/* MAP_FIXED straight over it, no munmap. */
	CK(anon(a, 4 * MiB) == a);
	round_trip(a + 1, b, n, 22);
	/* Download: the bytes land in the new pages the program reads. */
	fill(a, n, 23);
	CU(cuMemcpyHtoD(dev, a, n));
	memset(b, 0, n);
	CU(cuMemcpyDtoH(b + 9, dev, n));
	CK(same(b + 9, n, 23));
	CK(anon(b, 4 * MiB) == b);
	CU(cuMemcpyDtoH(b + 9, dev, n));
	CK(same(b + 9, n, 23));
	/* MADV_DONTNEED: the pages are zero again; a download still lands. */
	CK(!madvise(b, 4 * MiB, MADV_DONTNEED));
	CU(cuMemcpyDtoH(b + 9, dev, n));
	CK(same(b + 9, n, 23));
	/* Stale registrations were replaced, not kept. */
	CK(vmpin() == before);
	CK(!munmap(a, 4 * MiB) && !munmap(b, 4 * MiB));

	/* free + malloc of a large block, usually at the same address. */
	p = malloc(5 * MiB);
	CK(p);
	round_trip(p, p + 4 * MiB - 1, 512 * KiB, 30);
	free(p);
	p = malloc(5 * MiB);
	CK(p);
	round_trip(p, p + 4 * MiB - 1, 512 * KiB, 31);
	free(p);
	printf("h_pincopy: freed and mapped again: new contents both ways\n");
}

static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	struct rlimit rl = { 128 * KiB, 128 * KiB };

	CK(!syscall(SYS_capget, &h, d));
	d[0].effective &= ~(1u << CAP_IPC_LOCK);
	d[0].permitted &= ~(1u << CAP_IPC_LOCK);
	d[0].inheritable &= ~(1u << CAP_IPC_LOCK);
	CK(!syscall(SYS_capset, &h, d));
	CK(!setrlimit(RLIMIT_MEMLOCK, &rl));
}

static void limited(void)
{
	uint8_t *a = anon(NULL, 4 * MiB), *b = anon(NULL, 4 * MiB);

	for (unsigned int k = 0; k < 4; k++)
		round_trip(a + k, b + 3 * k, 3 * MiB + k, 40 + k);
	CK(vmpin() == 0);
	printf("h_pincopy: RLIMIT_MEMLOCK 128 KiB: staged copies ok\n");
}

int main(int argc, char **argv)
{
	int limit = argc > 1 && !strcmp(argv[1], "limit");
	CUcontext ctx;
	CUdevice d;

	pg = sysconf(_SC_PAGESIZE);
	if (limit)
		drop_ipc_lock();
	CU(cuInit(0));
	CU(cuDeviceGet(&d, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, d));
	CU(cuCtxSetCurrent(ctx));
	CU(cuMemAlloc(&dev, DEV_BYTES));
	if (limit) {
		limited();
	} else {
		sizes();
		reuse();
		stale();
	}
	CU(cuMemFree(dev));
	CU(cuDevicePrimaryCtxRelease(d));
	printf("h_pincopy: ok\n");
	return 0;
}
