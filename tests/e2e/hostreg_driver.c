// SPDX-License-Identifier: MIT
/*
 * cuMemHostRegister of pageable memory with CU_MEMHOSTREGISTER_DEVICEMAP
 * (cudaHostRegisterMapped), with or without /dev/vgpu: a range that starts
 * and ends inside pages of an anonymous mapping is registered; its bytes
 * and those of the rest of its pages stay as they were; the device pointer
 * is the host pointer; a kernel sums what the host wrote and another writes
 * words the host then reads; cuMemHostUnregister keeps the bytes and ends
 * the device pointer. Bad input: a range with a hole; under vgpu, shared
 * pages.
 *
 *   hostreg_driver               the test
 *   hostreg_driver hold GO       registers, says "ready", waits for GO
 *                                (tests/e2e/run hostreg_ckpt checkpoints it
 *                                then), checks and unregisters
 *
 * One line per check on stdout, the same natively and through vgpu; exit 0
 * pass, 1 fail.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "driver_check.h"

/* nvcc -ptx of vgpu_checksum_u32 in tests/e2e/kernels.cuh */
static const char checksum_ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry vgpu_checksum_u32(\n"
	".param .u64 vgpu_checksum_u32_param_0,\n"
	".param .u64 vgpu_checksum_u32_param_1,\n"
	".param .u64 vgpu_checksum_u32_param_2\n"
	")\n"
	"{\n"
	".reg .pred  %p<4>;\n"
	".reg .b32  %r<5>;\n"
	".reg .b64  %rd<26>;\n"
	"ld.param.u64  %rd10, [vgpu_checksum_u32_param_0];\n"
	"ld.param.u64  %rd11, [vgpu_checksum_u32_param_1];\n"
	"ld.param.u64  %rd12, [vgpu_checksum_u32_param_2];\n"
	"mov.u32  %r1, %ntid.x;\n"
	"cvt.u64.u32  %rd1, %r1;\n"
	"mov.u32  %r2, %ctaid.x;\n"
	"mul.wide.u32  %rd14, %r2, %r1;\n"
	"mov.u32  %r3, %tid.x;\n"
	"cvt.u64.u32  %rd15, %r3;\n"
	"add.s64  %rd23, %rd14, %rd15;\n"
	"setp.ge.u64  %p1, %rd23, %rd11;\n"
	"mov.u64  %rd25, 0;\n"
	"@%p1 bra  $L__BB0_3;\n"
	"mov.u32  %r4, %nctaid.x;\n"
	"cvt.u64.u32  %rd17, %r4;\n"
	"mul.lo.s64  %rd3, %rd17, %rd1;\n"
	"cvta.to.global.u64  %rd4, %rd10;\n"
	"mov.u64  %rd25, 0;\n"
	"$L__BB0_2:\n"
	"shl.b64  %rd18, %rd23, 2;\n"
	"add.s64  %rd19, %rd4, %rd18;\n"
	"ld.global.u32  %rd20, [%rd19];\n"
	"add.s64  %rd25, %rd25, %rd20;\n"
	"add.s64  %rd23, %rd23, %rd3;\n"
	"setp.lt.u64  %p2, %rd23, %rd11;\n"
	"@%p2 bra  $L__BB0_2;\n"
	"$L__BB0_3:\n"
	"setp.eq.s64  %p3, %rd25, 0;\n"
	"@%p3 bra  $L__BB0_5;\n"
	"cvta.to.global.u64  %rd21, %rd12;\n"
	"atom.global.add.u64  %rd22, [%rd21], %rd25;\n"
	"$L__BB0_5:\n"
	"ret;\n"
	"}\n";

static CUfunction poke, checksum;

static CUresult poke_at(CUdeviceptr p, unsigned v)
{
	void *args[] = { &p, &v };

	return cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
}

/* The device's sum of the n words at p. */
static CUresult sum_of(CUdeviceptr p, unsigned long long n, unsigned long long *sum)
{
	CUdeviceptr out;
	void *args[] = { &p, &n, &out };
	CUresult rc = cuMemAlloc(&out, 8);

	if (rc)
		return rc;
	rc = cuMemsetD32(out, 0, 2);
	if (!rc)
		rc = cuLaunchKernel(checksum, 4, 1, 1, 128, 1, 1, 0, NULL, args, NULL);
	if (!rc)
		rc = cuMemcpyDtoH(sum, out, 8);
	cuMemFree(out);
	return rc;
}

int main(int argc, char **argv)
{
	const char *go = argc == 3 && !strcmp(argv[1], "hold") ? argv[2] : NULL;
	long page = sysconf(_SC_PAGESIZE);
	size_t maplen = 4 * (size_t)page, len = 3 * (size_t)page - 200, nw = len / 4;
	unsigned long long sum = 0, want = 0;
	unsigned char *map, *copy;
	unsigned *words;
	CUmodule m1, m2;
	CUdeviceptr d = 0;
	CUcontext ctx;
	CUdevice dev;
	CUresult rc;
	bool same;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuModuleLoadData(&m1, POKE_U32_PTX));
	MUST(cuModuleGetFunction(&poke, m1, "vgpu_poke_u32"));
	MUST(cuModuleLoadData(&m2, checksum_ptx));
	MUST(cuModuleGetFunction(&checksum, m2, "vgpu_checksum_u32"));

	map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	copy = malloc(maplen);
	if (map == MAP_FAILED || !copy)
		return 2;
	for (size_t i = 0; i < maplen; i++)
		map[i] = (unsigned char)(i * 7 + 3);
	memcpy(copy, map, maplen);
	words = (unsigned *)(map + 100);	/* inside the first page, to inside the last */
	for (size_t i = 0; i < nw; i++)
		want += words[i];

	rc = cuMemHostRegister(words, len, CU_MEMHOSTREGISTER_DEVICEMAP);
	expect(!rc, "pageable memory is registered mapped", rc);
	if (rc)
		return checks_done("hostreg_driver");
	expect(!memcmp(map, copy, maplen), "its bytes, and its pages', are as they were",
	       CUDA_SUCCESS);
	rc = cuMemHostGetDevicePointer(&d, words, 0);
	expect(!rc && d == (CUdeviceptr)(uintptr_t)words, "the device pointer is the host pointer",
	       rc);
	{
		CUdeviceptr pd = 0;
		int mapped = 0;

		rc = cuPointerGetAttribute(&pd, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
					   (CUdeviceptr)(uintptr_t)(words + 3));
		expect(!rc && pd == (CUdeviceptr)(uintptr_t)(words + 3),
		       "its device pointer attribute is its address", rc);
		rc = cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED,
					   (CUdeviceptr)(uintptr_t)words);
		expect_vgpu(!rc && mapped, "it is mapped", rc);
	}
	rc = sum_of(d, nw, &sum);
	expect(!rc && sum == want, "a kernel reads what the host wrote", rc);
	words[0] = 0;
	words[nw / 2] = 0;
	rc = sum_of(d, nw, &sum);
	expect(!rc && sum == want - ((const unsigned *)(copy + 100))[0] -
				   ((const unsigned *)(copy + 100))[nw / 2],
	       "and what it writes later", rc);
	rc = poke_at(d, 0x11111111u);
	if (!rc)
		rc = poke_at(d + (nw - 1) * 4, 0x22222222u);
	if (!rc)
		rc = poke_at(d + (nw / 2) * 4, 0x33333333u);
	if (!rc)
		rc = cuCtxSynchronize();
	expect(!rc && words[0] == 0x11111111u && words[nw - 1] == 0x22222222u &&
	       words[nw / 2] == 0x33333333u, "the host reads what kernels wrote", rc);
	if (go) {
		fprintf(stderr, "ready\n");
		for (int i = 0; i < 1200 && access(go, F_OK); i++)
			usleep(100000);
		rc = poke_at(d + 4, 0x44444444u);
		if (!rc)
			rc = cuCtxSynchronize();
		expect(!rc && words[1] == 0x44444444u, "kernels still write it after the checkpoint",
		       rc);
	}
	memcpy(copy, map, maplen);

	rc = cuMemHostUnregister(words);
	expect(!rc, "it is unregistered", rc);
	expect(!memcmp(map, copy, maplen), "with its bytes kept", CUDA_SUCCESS);
	rc = cuMemHostGetDevicePointer(&d, words, 0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "it has no device pointer any more", rc);
	map[0] ^= 1;
	map[maplen - 1] ^= 1;
	same = map[0] == (unsigned char)(copy[0] ^ 1);
	expect(same, "it is the program's memory as before", CUDA_SUCCESS);

	/* A hole in the range. */
	munmap(map + page, (size_t)page);
	rc = cuMemHostRegister(map, maplen, CU_MEMHOSTREGISTER_DEVICEMAP);
	expect(rc != CUDA_SUCCESS, "a range with a hole is refused", rc);
	if (!rc)
		cuMemHostUnregister(map);
	rc = cuMemHostRegister(map + 2 * page, (size_t)page, CU_MEMHOSTREGISTER_DEVICEMAP);
	expect(!rc, "a whole page after the hole is registered", rc);
	if (!rc) {
		rc = cuMemHostUnregister(map + 2 * page);
		expect(!rc, "and unregistered", rc);
	}
	munmap(map, maplen);
	free(copy);

	/* Shared pages would stop being shared once copied: vgpu refuses them. */
	if (under_vgpu()) {
		void *sh = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				-1, 0);

		if (sh == MAP_FAILED)
			return 2;
		rc = cuMemHostRegister(sh, (size_t)page, CU_MEMHOSTREGISTER_DEVICEMAP);
		expect_vgpu(rc == CUDA_ERROR_NOT_SUPPORTED, "shared memory is not registered mapped",
			    rc);
		if (!rc)
			cuMemHostUnregister(sh);
		munmap(sh, (size_t)page);
	}
	MUST(cuModuleUnload(m1));
	MUST(cuModuleUnload(m2));
	return checks_done("hostreg_driver");
}
