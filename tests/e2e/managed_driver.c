// SPDX-License-Identifier: MIT
/*
 * Managed memory through the driver API: what the host writes, copies,
 * memsets and kernels see; what they write, the host reads after a
 * synchronizing call; pointer and range attributes, advice, prefetches,
 * stream attachment; bad arguments refused.
 *
 *   managed_driver           the checks
 *   managed_driver hold GO   a session for a checkpoint or a move: host
 *                            writes not yet sent, device writes not yet
 *                            read; prints "ready", waits for the file GO,
 *                            then checks both came through ("managed
 *                            state: kept")
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

#define N	(1u << 16)		/* words: 64 pages */
#define BIG	(8u << 20)		/* bytes: staged copies both ways */

static uint32_t host[N];

static bool words(const volatile uint32_t *p, uint32_t n, uint32_t v, uint32_t step)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != v + i * step)
			return false;
	return true;
}

/* The device's copy of [m, m + n words) through a copy to pageable memory. */
static bool device_holds(CUdeviceptr m, uint32_t n, uint32_t v, uint32_t step)
{
	memset(host, 0x5a, sizeof(host));
	return !cuMemcpyDtoH(host, m, n * 4) && words(host, n, v, step);
}

static CUfunction poke_kernel(void)
{
	CUmodule mod;
	CUfunction f;

	MUST(cuModuleLoadData(&mod, POKE_U32_PTX));
	MUST(cuModuleGetFunction(&f, mod, "vgpu_poke_u32"));
	return f;
}

static CUresult poke(CUfunction f, CUdeviceptr p, uint32_t v, CUstream s)
{
	void *args[] = { &p, &v };

	return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static void visibility(CUfunction f, CUstream s)
{
	CUdeviceptr m, d;
	uint32_t *p;

	MUST(cuMemAllocManaged(&m, N * 4, CU_MEM_ATTACH_GLOBAL));
	MUST(cuMemAlloc(&d, N * 4));
	p = (uint32_t *)(uintptr_t)m;
	expect(words(p, N, 0, 0), "a new allocation reads zero on the host", 0);
	expect(device_holds(m, N, 0, 0), "and on the device", 0);
	for (uint32_t i = 0; i < N; i++)
		p[i] = 7 + 3 * i;
	expect(device_holds(m, N, 7, 3), "host writes are seen by a copy from managed memory", 0);
	EXPECT_OK(cuMemcpyDtoD(d, m, N * 4), "device-to-device copy out of managed memory");
	expect(device_holds(d, N, 7, 3), "the copy holds the host's writes", 0);
	EXPECT_OK(cuMemsetD32(m + 4096, 0xabcd0000, 1024), "memset of managed memory");
	expect(p[1023] == 7 + 3 * 1023 && words(p + 1024, 1024, 0xabcd0000, 0) &&
	       p[2048] == 7 + 3 * 2048, "the host reads the memset after it, and nothing more", 0);
	p[1024] = 1;	/* a page that came back, written again */
	p[N - 1] = 2;
	expect(device_holds(m + 4096, 1, 1, 0) && device_holds(m + (N - 1) * 4, 1, 2, 0),
	       "host writes after device writes are seen", 0);
	EXPECT_OK(cuMemsetD32Async(m, 0x11110000, N, s), "asynchronous memset");
	EXPECT_OK(cuStreamSynchronize(s), "stream synchronize");
	expect(words(p, N, 0x11110000, 0), "the host reads it after the synchronization", 0);
	for (uint32_t i = 0; i < N; i++)
		host[i] = 0x2000 + i;
	EXPECT_OK(cuMemcpyHtoD(m, host, N * 4), "copy into managed memory");
	expect(words(p, N, 0x2000, 1), "the host reads the copy", 0);
	EXPECT_OK(poke(f, m + 8, 0xfeed, s), "a kernel writes managed memory");
	EXPECT_OK(cuCtxSynchronize(), "context synchronize");
	expect(p[2] == 0xfeed && p[1] == 0x2001 && p[3] == 0x2003,
	       "the host reads the kernel's write after it", 0);
	EXPECT_OK(cuMemcpyDtoD(m, d, N * 4), "device-to-device copy into managed memory");
	expect(words(p, N, 7, 3), "the host reads it", 0);
	EXPECT_OK(cuMemFree(d), "free device memory");
	EXPECT_OK(cuMemFree(m), "free managed memory");
}

/* Threads write their quarter of an allocation round after round while
 * the main thread's calls send the host's writes and mark pages stale:
 * every page ends on the device as its thread last wrote it. */
#define ROUNDS 1000
struct writer {
	volatile uint32_t *p;
	CUcontext ctx;
};

static void *write_rounds(void *arg)
{
	struct writer *w = arg;

	for (uint32_t r = 1; r <= ROUNDS; r++)
		for (uint32_t i = 0; i < N / 4; i++)
			w->p[i] = r * N + i;
	return NULL;
}

static void threads(void)
{
	struct writer w[4];
	pthread_t t[4];
	CUdeviceptr m;
	CUcontext ctx;
	uint32_t probe;
	bool ok = true;

	MUST(cuCtxGetCurrent(&ctx));
	MUST(cuMemAllocManaged(&m, N * 4, CU_MEM_ATTACH_GLOBAL));
	for (int k = 0; k < 4; k++) {
		w[k] = (struct writer){ (volatile uint32_t *)(uintptr_t)m + k * (N / 4), ctx };
		pthread_create(&t[k], NULL, write_rounds, &w[k]);
	}
	for (int i = 0; i < 200; i++)
		ok &= !cuMemcpyDtoH(&probe, m + (i % 64) * 4096, 4);
	for (int k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	expect(ok, "copies while four threads write", 0);
	memset(host, 0, sizeof(host));
	ok = !cuMemcpyDtoH(host, m, N * 4);
	for (uint32_t i = 0; i < N && ok; i++)
		ok = host[i] == ROUNDS * N + i % (N / 4);
	expect(ok, "the device has every thread's last writes", 0);
	EXPECT_OK(cuMemFree(m), "free");
}

/* Larger than a reply slot or a payload: staged both ways. */
static void big(void)
{
	CUdeviceptr m;
	uint32_t *p, n = BIG / 4;
	bool ok = true;

	MUST(cuMemAllocManaged(&m, BIG, CU_MEM_ATTACH_GLOBAL));
	p = (uint32_t *)(uintptr_t)m;
	for (uint32_t i = 0; i < n; i++)
		p[i] = i * 5;
	EXPECT_OK(cuMemsetD32(m + BIG / 2, 0x77, n / 4), "memset of the middle of 8 MiB");
	for (uint32_t i = 0; i < n && ok; i++)
		ok = p[i] == (i >= n / 2 && i < 3 * n / 4 ? 0x77u : i * 5);
	expect(ok, "8 MiB written by the host and the device read back on the host", 0);
	EXPECT_OK(cuMemFree(m), "free 8 MiB of managed memory");
}

static void attributes(CUstream s)
{
	CUdeviceptr m, d, base = 0;
	int managed = 0, v = -9, ids[3], dev0 = 0;
	unsigned int type = 0;
	void *hp = NULL;
	size_t size = 0;
	CUmemLocation gpu = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	CUmemLocation cpu = { .type = CU_MEM_LOCATION_TYPE_HOST, .id = 0 };
	CUmemLocationType lt = 0;

	MUST(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
	expect(v == 1, "the device has managed memory", 0);
	MUST(cuMemAllocManaged(&m, 3 * 4096 + 100, CU_MEM_ATTACH_HOST));
	MUST(cuMemAlloc(&d, 4096));
	EXPECT_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m + 5),
		  "IS_MANAGED");
	expect(managed == 1, "managed memory is managed", 0);
	EXPECT_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d),
		  "IS_MANAGED of device memory");
	expect(managed == 0, "device memory is not", 0);
	EXPECT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m), "MEMORY_TYPE");
	expect(type == CU_MEMORYTYPE_DEVICE, "managed memory's type is device", 0);
	EXPECT_OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, m + 8),
		  "HOST_POINTER of managed memory");
	expect(hp == (void *)(uintptr_t)(m + 8), "is the same address", 0);
	EXPECT_OK(cuMemGetAddressRange(&base, &size, m + 4097), "address range");
	expect(base == m && size == 3 * 4096 + 100, "is the allocation", 0);

	EXPECT_OK(cuMemAdvise_v2(m, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu), "advise read-mostly");
	EXPECT_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4096),
		  "read-mostly of the advised page");
	expect(v == 1, "is set", 0);
	EXPECT_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 8192),
		  "read-mostly of two pages");
	expect(v == 0, "is not set on both", 0);
	EXPECT_OK(cuMemAdvise_v2(m, 3 * 4096 + 100, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, cpu),
		  "advise the host as preferred location");
	EXPECT_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m + 4096, 10),
		  "preferred location");
	expect(v == CU_DEVICE_CPU, "is the host", 0);
	EXPECT_OK(cuMemRangeGetAttribute(&lt, sizeof(lt),
					 CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, 4096),
		  "preferred location type");
	expect(lt == CU_MEM_LOCATION_TYPE_HOST, "is host", 0);
	EXPECT_OK(cuMemAdvise_v2(m, 4096, CU_MEM_ADVISE_SET_ACCESSED_BY, gpu), "advise accessed-by");
	EXPECT_OK(cuMemRangeGetAttribute(ids, sizeof(ids), CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, 4096),
		  "accessed-by");
	expect(ids[0] == 0 && ids[1] == CU_DEVICE_INVALID && ids[2] == CU_DEVICE_INVALID,
	       "lists device 0", 0);
	EXPECT_OK(cuMemAdvise_v2(m, 4096, CU_MEM_ADVISE_UNSET_ACCESSED_BY, gpu), "unset accessed-by");
	EXPECT_OK(cuMemRangeGetAttribute(ids, 4, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, 4096),
		  "accessed-by again");
	expect(ids[0] == CU_DEVICE_INVALID, "lists none", 0);

	((volatile uint32_t *)(uintptr_t)m)[0] = 99;
	EXPECT_OK(cuMemPrefetchAsync_v2(m, 4096, gpu, 0, s), "prefetch to the device");
	expect(device_holds(m, 1, 99, 0), "the device has the host's write", 0);
	EXPECT_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4096),
		  "last prefetch location");
	expect(v == 0, "is device 0", 0);
	EXPECT_OK(cuMemPrefetchAsync_v2(m, 4096, cpu, 0, s), "prefetch to the host");
	EXPECT_OK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 8192),
		  "last prefetch location of two pages");
	expect(v == CU_DEVICE_INVALID, "is none (one was never prefetched)", 0);
	EXPECT_OK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), "attach to a stream");
	EXPECT_OK(cuStreamAttachMemAsync(s, m, 3 * 4096 + 100, CU_MEM_ATTACH_GLOBAL),
		  "attach globally, whole length");

	/* Bad arguments. */
	EXPECT_RC(cuMemAllocManaged(NULL, 16, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE,
		  "allocate with no output");
	EXPECT_RC(cuMemAllocManaged(&base, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE,
		  "allocate 0 bytes");
	EXPECT_RC(cuMemAllocManaged(&base, 16, 0), CUDA_ERROR_INVALID_VALUE, "allocate, flags 0");
	EXPECT_RC(cuMemAllocManaged(&base, 16, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE,
		  "allocate attached to a single stream");
	EXPECT_RC(cuMemAdvise_v2(d, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu),
		  CUDA_ERROR_INVALID_VALUE, "advise device memory");
	EXPECT_RC(cuMemAdvise_v2(m, 5 * 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu),
		  CUDA_ERROR_INVALID_VALUE, "advise past the allocation");
	EXPECT_RC(cuMemAdvise_v2(m, 4096, (CUmem_advise)9, gpu), CUDA_ERROR_INVALID_VALUE,
		  "advise of no kind");
	gpu.id = 99;
	EXPECT_RC(cuMemAdvise_v2(m, 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu),
		  CUDA_ERROR_INVALID_VALUE, "advise a device that does not exist");
	gpu.id = 0;
	EXPECT_RC(cuMemRangeGetAttribute(&v, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4096),
		  CUDA_ERROR_INVALID_VALUE, "range attribute of the wrong size");
	EXPECT_RC(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, d, 4096),
		  CUDA_ERROR_INVALID_VALUE, "range attribute of device memory");
	EXPECT_RC(cuMemRangeGetAttribute(&v, 4, (CUmem_range_attribute)99, m, 4096),
		  CUDA_ERROR_INVALID_VALUE, "range attribute of no kind");
	EXPECT_RC(cuMemPrefetchAsync_v2(d, 4096, gpu, 0, s), CUDA_ERROR_INVALID_VALUE,
		  "prefetch device memory");
	EXPECT_RC(cuMemPrefetchAsync_v2(m, 4096, gpu, 1, s), CUDA_ERROR_INVALID_VALUE,
		  "prefetch with flags");
	EXPECT_RC(cuStreamAttachMemAsync(s, m + 4096, 0, CU_MEM_ATTACH_GLOBAL),
		  CUDA_ERROR_INVALID_VALUE, "attach from inside an allocation");
	EXPECT_RC(cuStreamAttachMemAsync(s, m, 4096, CU_MEM_ATTACH_GLOBAL),
		  CUDA_ERROR_INVALID_VALUE, "attach part of an allocation");
	EXPECT_RC(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE),
		  CUDA_ERROR_INVALID_VALUE, "attach singly to the legacy stream");
	EXPECT_RC(cuStreamAttachMemAsync(s, m, 0, 8), CUDA_ERROR_INVALID_VALUE,
		  "attach with unknown flags");
	EXPECT_RC(cuStreamAttachMemAsync(s, d, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE,
		  "attach device memory");
	MUST(cuStreamSynchronize(s));
	(void)dev0;
	EXPECT_OK(cuMemFree(m), "free");
	EXPECT_OK(cuMemFree(d), "free device memory");
}

/*
 * A library's variables as cudart reaches __managed__ ones, through
 * cuLibraryGetManaged: two of them share a page. The host backend's PTX has
 * no managed globals, so plain ones stand in, and the real driver refuses
 * those: vgpu only (stderr), skipped where the worker's address is taken
 * in this process.
 */
static void variables(void)
{
	static const char ptx[] =
		".version 8.0\n.target sm_90\n.address_size 64\n"
		".visible .global .align 4 .u32 gv_a = 5;\n"
		".visible .global .align 4 .u32 gv_b[4] = {1, 2, 3, 4};\n";
	CUdeviceptr a, b;
	CUlibrary lib;
	CUcontext cur;
	volatile uint32_t *pa, *pb;
	size_t na = 0, nb = 0;
	CUresult rc;

	if (!under_vgpu())
		return;
	/* As the static runtime registers them: no context current yet. */
	MUST(cuCtxGetCurrent(&cur));
	MUST(cuCtxSetCurrent(NULL));
	MUST(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	rc = cuLibraryGetManaged(&a, &na, lib, "gv_a");
	MUST(cuCtxSetCurrent(cur));
	if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
		fprintf(stderr, "skip variables: the worker's address is taken here\n");
		return;
	}
	expect_vgpu(!rc && na == 4, "cuLibraryGetManaged", rc);
	rc = cuLibraryGetManaged(&b, &nb, lib, "gv_b");
	expect_vgpu(!rc && nb == 16, "a second variable", rc);
	if (rc || !a || !b)
		return;
	pa = (volatile uint32_t *)(uintptr_t)a;
	pb = (volatile uint32_t *)(uintptr_t)b;
	expect_vgpu(*pa == 5 && pb[0] == 1 && pb[3] == 4, "the host reads their initial values", 0);
	*pa = 9;
	pb[2] = 33;
	expect_vgpu(device_holds(a, 1, 9, 0) && device_holds(b + 8, 1, 33, 0) &&
		    device_holds(b, 2, 1, 1), "the device sees the host's writes", 0);
	rc = cuMemsetD32(b, 0x42, 4);
	expect_vgpu(!rc && pb[0] == 0x42 && pb[3] == 0x42 && *pa == 9,
		    "the host sees the device's, and its own", rc);
	rc = cuPointerGetAttribute(&na, CU_POINTER_ATTRIBUTE_IS_MANAGED, b);
	expect_vgpu(!rc && (int)na == 1, "a managed variable is managed", rc);
}

/* Host writes not yet sent, device writes not yet read, then the test
 * checkpoints and moves the session; both must come through. */
static int hold(CUfunction f, CUstream s, const char *go)
{
	CUdeviceptr a, b;
	uint32_t *pa, *pb;

	MUST(cuMemAllocManaged(&a, N * 4, CU_MEM_ATTACH_GLOBAL));
	MUST(cuMemAllocManaged(&b, BIG, CU_MEM_ATTACH_GLOBAL));
	pa = (uint32_t *)(uintptr_t)a;
	pb = (uint32_t *)(uintptr_t)b;
	for (uint32_t i = 0; i < BIG / 4; i++)
		pb[i] = i ^ 0x5555;
	MUST(cuMemsetD32(a, 0x3000, N));		/* b goes to the device first */
	MUST(poke(f, a + 40, 0xbeef, s));
	MUST(cuStreamSynchronize(s));
	for (uint32_t i = 0; i < N / 2; i++)	/* a's first half comes back */
		pa[i] = pa[i] + 1;		/* and is written again */
	printf("ready\n");
	fflush(stdout);
	wait_for_file(go, 300);

	expect(words(pa, 10, 0x3001, 0) && words(pa + 11, N / 2 - 11, 0x3001, 0) && pa[10] == 0xbeef + 1 &&
	       words(pa + N / 2, N / 2, 0x3000, 0), "the host view after the moves", 0);
	expect(device_holds(a + 44, N / 2 - 11, 0x3001, 0), "host writes reach the new worker", 0);
	expect(device_holds(a + N * 2, N / 2, 0x3000, 0), "device writes kept", 0);
	pb[7] = 7;
	memset(host, 0, sizeof(host));
	expect(!cuMemcpyDtoH(host, b, 32) && host[7] == 7 && host[6] == (6 ^ 0x5555),
	       "big allocation kept and written", 0);
	MUST(cuMemFree(a));
	MUST(cuMemFree(b));
	if (!failures)
		printf("managed state: kept\n");
	return checks_done("managed_driver hold");
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUdevice dev;
	CUfunction f;
	CUstream s;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	f = poke_kernel();
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(f, s, argv[2]);
	visibility(f, s);
	threads();
	big();
	attributes(s);
	variables();
	return checks_done("managed_driver");
}
