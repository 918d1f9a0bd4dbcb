// SPDX-License-Identifier: MIT
/*
 * The host backend, driven through struct vgpu_backend as the worker drives
 * it. One line per check; exit 0 when all pass, 1 otherwise. Images built
 * by nvcc from tests/e2e/kernels.cuh are checked too when nvcc is found
 * ($NVCC, else /usr/local/cuda/bin/nvcc); without it those checks say skip.
 * kernels.cuh is found next to this source ($VGPU_KERNELS_CUH overrides).
 *
 * Build: gcc -std=gnu11 -O2 -D_GNU_SOURCE -I include -I common -I daemon
 *        -I /usr/local/cuda/include tests/unit/test_backend_host.c
 *        daemon/backend/host/backend_host.c daemon/host_*.c common/log.c -lpthread -lm
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "backend_check.h"
#include "vgpu/proto.h"

#define MiB (1ull << 20)
#define GRAN (2 * MiB)

static const CUmemAllocationProp prop = {
	.type = CU_MEM_ALLOCATION_TYPE_PINNED,
	.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
};

/* Reserves, creates and maps size bytes read-write; returns the address. */
static CUdeviceptr dev_alloc(size_t size, CUmemGenericAllocationHandle *h)
{
	CUmemAccessDesc acc = { .location = prop.location,
				.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUdeviceptr p = 0;

	if (b.cuMemAddressReserve(&p, size, 0, 0, 0) || b.cuMemCreate(h, size, &prop, 0) ||
	    b.cuMemMap(p, size, 0, *h, 0) || b.cuMemSetAccess(p, size, &acc, 1))
		return 0;
	return p;
}

static void dev_free(CUdeviceptr p, size_t size, CUmemGenericAllocationHandle h)
{
	b.cuMemUnmap(p, size);
	b.cuMemRelease(h);
	b.cuMemAddressFree(p, size);
}

/* --- device, init -------------------------------------------------------- */

static void test_init_device(void)
{
	unsigned char u1[16], u2[16];
	CUuuid uuid;
	char name[64], small[5];
	int v, n;
	size_t total;
	const char *s;
	CUdevice d;

	EXPECT(CUDA_ERROR_NOT_INITIALIZED, b.cuDeviceGetCount(&n), "count before cuInit");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuInit(1), "cuInit(1)");
	EXPECT(CUDA_SUCCESS, b.cuInit(0), "cuInit(0)");
	EXPECT(CUDA_SUCCESS, b.cuDriverGetVersion(&v), "driver version");
	CHECK(v == 13000, "driver version is 13000 (%d)", v);
	CHECK(b.cuDeviceGetCount(&n) == 0 && n == 1, "one device");
	EXPECT(CUDA_ERROR_INVALID_DEVICE, b.cuDeviceGet(&d, 1), "device 1");
	CHECK(b.cuDeviceGet(&d, 0) == 0 && d == 0, "device 0");
	CHECK(b.cuDeviceGetName(name, sizeof(name), 0) == 0 &&
	      !strcmp(name, "vgpu host device"), "name \"%s\"", name);
	CHECK(b.cuDeviceGetName(small, sizeof(small), 0) == 0 && !strcmp(small, "vgpu"),
	      "name truncated to the buffer");
	b.cuDeviceGetUuid_v2(&uuid, 0);
	memcpy(u1, uuid.bytes, 16);
	b.cuDeviceGetUuid_v2(&uuid, 0);
	memcpy(u2, uuid.bytes, 16);
	CHECK(!memcmp(u1, u2, 16) && (u1[6] >> 4) == 5 && (u1[8] & 0xc0) == 0x80,
	      "uuid fixed, version 5 layout");
	CHECK(b.cuDeviceTotalMem_v2(&total, 0) == 0 && total == 256 * MiB,
	      "total memory from VGPU_HOST_DEVICE_MEM (%zu)", total);
	CHECK(b.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) == 0 &&
	      v == 132, "132 SMs");
	CHECK(b.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == 0 &&
	      v == 9, "cc major 9");
	CHECK(b.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
				     0) == 0 && v == 1, "VMM supported");
	CHECK(b.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0) == 0 && v == 0,
	      "no managed memory");
	EXPECT(CUDA_ERROR_INVALID_VALUE,
	       b.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), "attribute MAX");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0),
	       "attribute 0");
	EXPECT(CUDA_ERROR_INVALID_DEVICE,
	       b.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3), "attribute dev 3");
	CHECK(b.cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s) == 0 &&
	      !strcmp(s, "CUDA_ERROR_ILLEGAL_ADDRESS"), "error name");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuGetErrorName((CUresult)12345, &s),
	       "unknown error name");
}

/* --- contexts ------------------------------------------------------------ */

static CUcontext primary;

static void test_contexts(void)
{
	CUctxCreateParams zero = { 0 }, bad = { .numExecAffinityParams = 1 };
	size_t fr, tot, lim;
	CUcontext c;

	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuMemGetInfo_v2(&fr, &tot), "mem info without a context");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuDevicePrimaryCtxRelease_v2(0),
	       "release of an unretained primary");
	EXPECT(CUDA_SUCCESS, b.cuDevicePrimaryCtxSetFlags_v2(0, CU_CTX_SCHED_BLOCKING_SYNC),
	       "primary set flags");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuDevicePrimaryCtxSetFlags_v2(0, 0x100), "bad flags");
	EXPECT(CUDA_SUCCESS, b.cuDevicePrimaryCtxRetain(&primary, 0), "primary retain");
	EXPECT(CUDA_SUCCESS, b.cuCtxSetCurrent(primary), "set current");
	CHECK(b.cuMemGetInfo_v2(&fr, &tot) == 0 && fr == 256 * MiB && tot == 256 * MiB,
	      "mem info %zu/%zu", fr, tot);
	EXPECT(CUDA_SUCCESS, b.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096), "set limit");
	CHECK(b.cuCtxGetLimit(&lim, CU_LIMIT_STACK_SIZE) == 0 && lim == 4096, "get limit");
	EXPECT(CUDA_ERROR_UNSUPPORTED_LIMIT, b.cuCtxSetLimit((CUlimit)0x55, 1), "bad limit");
	EXPECT(CUDA_SUCCESS, b.cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1), "cache config");

	EXPECT(CUDA_ERROR_NOT_SUPPORTED, b.cuCtxCreate_v4(&c, &bad, 0, 0), "create with affinity");
	EXPECT(CUDA_ERROR_INVALID_DEVICE, b.cuCtxCreate_v4(&c, NULL, 0, 1), "create on device 1");
	EXPECT(CUDA_SUCCESS, b.cuCtxCreate_v4(&c, &zero, 0, 0), "create with zeroed params");
	EXPECT(CUDA_SUCCESS, b.cuCtxSynchronize(), "created context is current");
	EXPECT(CUDA_SUCCESS, b.cuCtxDestroy_v2(c), "destroy created context");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuCtxSynchronize(), "no context after destroy");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuCtxSetCurrent(c), "set a destroyed context");
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuCtxDestroy_v2(primary), "cuCtxDestroy(primary)");
	EXPECT(CUDA_SUCCESS, b.cuCtxSetCurrent(primary), "primary current again");
}

/* --- memory -------------------------------------------------------------- */

static void test_vmm(void)
{
	CUmemAccessDesc rw = { .location = prop.location,
			       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemAccessDesc ro = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READ };
	CUmemGenericAllocationHandle h1, h2, big;
	CUdeviceptr base, fixed, again;
	size_t g, fr, tot;
	unsigned char buf[256], out[256];

	CHECK(b.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == 0 &&
	      g == GRAN, "granularity 2 MiB");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemAddressReserve(&base, GRAN + 1, 0, 0, 0),
	       "reserve unaligned size");
	EXPECT(CUDA_SUCCESS, b.cuMemAddressReserve(&base, 64 * MiB, 0, 0, 0), "reserve 64 MiB");
	CHECK(base % GRAN == 0, "reservation aligned");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemCreate(&h1, MiB, &prop, 0), "create 1 MiB");
	EXPECT(CUDA_SUCCESS, b.cuMemCreate(&h1, 4 * MiB, &prop, 0), "create 4 MiB");
	EXPECT(CUDA_SUCCESS, b.cuMemCreate(&h2, 4 * MiB, &prop, 0), "create 4 MiB more");
	EXPECT(CUDA_ERROR_OUT_OF_MEMORY, b.cuMemCreate(&big, 256 * MiB, &prop, 0),
	       "create beyond the budget");
	CHECK(b.cuMemGetInfo_v2(&fr, &tot) == 0 && fr == 248 * MiB, "free is 248 MiB (%zu)", fr);
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemMap(base + MiB, 4 * MiB, 0, h1, 0),
	       "map unaligned address");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemMap(base + 62 * MiB, 4 * MiB, 0, h1, 0),
	       "map past the reservation");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemMap(base, 4 * MiB, 2 * MiB, h1, 0),
	       "map past the allocation");
	EXPECT(CUDA_SUCCESS, b.cuMemMap(base, 4 * MiB, 0, h1, 0), "map");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemMap(base + 2 * MiB, 2 * MiB, 0, h2, 0),
	       "map over a mapping");
	EXPECT(CUDA_SUCCESS, b.cuMemMap(base + 4 * MiB, 4 * MiB, 0, h2, 0), "map adjacent");
	memset(buf, 0x5a, sizeof(buf));
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpyHtoDAsync_v2(base, buf, 256, NULL),
	       "copy before cuMemSetAccess");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemSetAccess(base, 10 * MiB, &rw, 1),
	       "access over unmapped range");
	EXPECT(CUDA_SUCCESS, b.cuMemSetAccess(base, 8 * MiB, &rw, 1), "set access read-write");
	EXPECT(CUDA_SUCCESS, b.cuMemcpyHtoDAsync_v2(base + 4 * MiB - 128, buf, 256, NULL),
	       "copy across two mappings");
	memset(out, 0, sizeof(out));
	EXPECT(CUDA_SUCCESS, b.cuMemcpyDtoHAsync_v2(out, base + 4 * MiB - 128, 256, NULL),
	       "copy back");
	CHECK(!memcmp(buf, out, 256), "round trip equal");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpyHtoDAsync_v2(base + 8 * MiB - 8, buf, 16, NULL),
	       "copy past the mapped end");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpyDtoDAsync_v2(base, 0x1000, 16, NULL),
	       "copy from a wild address");
	EXPECT(CUDA_SUCCESS, b.cuMemSetAccess(base + 4 * MiB, 4 * MiB, &ro, 1), "set read-only");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpyHtoDAsync_v2(base + 4 * MiB, buf, 16, NULL),
	       "copy into read-only");
	EXPECT(CUDA_SUCCESS, b.cuMemcpyDtoHAsync_v2(out, base + 4 * MiB, 16, NULL),
	       "copy out of read-only");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemUnmap(base, 2 * MiB), "unmap part of a mapping");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemAddressFree(base, 64 * MiB),
	       "free a reservation still mapped");
	EXPECT(CUDA_SUCCESS, b.cuMemRelease(h1), "release while mapped");
	CHECK(b.cuMemGetInfo_v2(&fr, &tot) == 0 && fr == 248 * MiB,
	      "released but mapped: still charged");
	EXPECT(CUDA_SUCCESS, b.cuMemUnmap(base, 8 * MiB), "unmap both mappings");
	CHECK(b.cuMemGetInfo_v2(&fr, &tot) == 0 && fr == 252 * MiB,
	      "last unmap frees the released one (%zu)", fr);
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpyDtoHAsync_v2(out, base, 16, NULL),
	       "copy after unmap");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemRelease(h1), "release twice");
	EXPECT(CUDA_SUCCESS, b.cuMemRelease(h2), "release");
	EXPECT(CUDA_SUCCESS, b.cuMemAddressFree(base, 64 * MiB), "free the reservation");

	/* A fixed address: taken as a demand, and refused when taken. */
	fixed = base;
	EXPECT(CUDA_SUCCESS, b.cuMemAddressReserve(&again, 8 * MiB, 0, fixed, 0),
	       "reserve at a free fixed address");
	CHECK(again == fixed, "got the fixed address");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemAddressReserve(&base, 4 * MiB, 0, fixed, 0),
	       "reserve at a taken address");
	EXPECT(CUDA_SUCCESS, b.cuMemAddressFree(again, 8 * MiB), "free it");
	CHECK(b.cuMemGetInfo_v2(&fr, &tot) == 0 && fr == 256 * MiB, "all memory back");
}

static void test_copies_memsets(void)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr d = dev_alloc(16 * MiB, &h);
	uint32_t host32[64], out32[64];
	uint16_t out16[8];
	unsigned char *reg, *big_in, *big_out;
	CUDA_MEMCPY2D c = { 0 };
	int ok;

	CHECK(d != 0, "allocated 16 MiB");
	EXPECT(CUDA_SUCCESS, b.cuMemsetD32Async(d, 0xdeadbeef, 64, NULL), "memset D32");
	b.cuMemcpyDtoHAsync_v2(out32, d, sizeof(out32), NULL);
	ok = 1;
	for (int i = 0; i < 64; i++)
		ok &= out32[i] == 0xdeadbeef;
	CHECK(ok, "D32 values");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemsetD32Async(d + 2, 1, 4, NULL), "misaligned D32");
	EXPECT(CUDA_SUCCESS, b.cuMemsetD16Async(d, 0x1234, 8, NULL), "memset D16");
	b.cuMemcpyDtoHAsync_v2(out16, d, sizeof(out16), NULL);
	CHECK(out16[0] == 0x1234 && out16[7] == 0x1234, "D16 values");
	EXPECT(CUDA_SUCCESS, b.cuMemsetD8Async(d, 0x7, 3, NULL), "memset D8");
	b.cuMemcpyDtoHAsync_v2(out16, d, sizeof(out16), NULL);
	CHECK(out16[0] == 0x0707 && out16[1] == 0x1207, "D8 values");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemsetD8Async(d + 16 * MiB - 2, 0, 4, NULL),
	       "memset past the end");

	/* 2D: 4 rows of 16 bytes, device pitch 64. */
	EXPECT(CUDA_SUCCESS, b.cuMemsetD2D32Async(d, 64, 0xabababab, 4, 4, NULL), "memset 2D");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemsetD2D32Async(d, 8, 1, 4, 4, NULL),
	       "memset 2D pitch < width");
	for (int i = 0; i < 64; i++)
		host32[i] = (uint32_t)i;
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = host32;
	c.srcPitch = 16;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d + 4096;
	c.dstPitch = 64;
	c.WidthInBytes = 16;
	c.Height = 4;
	EXPECT(CUDA_SUCCESS, b.cuMemcpy2DAsync_v2(&c, NULL), "2D host to device");
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	c.srcDevice = d + 4096;
	c.srcPitch = 64;
	c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	c.dstDevice = (CUdeviceptr)(uintptr_t)out32;
	c.dstPitch = 16;
	c.WidthInBytes = 16;
	c.Height = 4;
	memset(out32, 0, sizeof(out32));
	EXPECT(CUDA_SUCCESS, b.cuMemcpy2DAsync_v2(&c, NULL), "2D unified device to host");
	CHECK(out32[0] == 0 && out32[5] == 5 && out32[15] == 15, "2D values");
	c.srcDevice = d + 16 * MiB - 64;
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpy2DAsync_v2(&c, NULL), "2D past the end");
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpy2DAsync_v2(&c, NULL), "2D from an array");

	/* Registered host memory is device-accessible at its own address. */
	reg = aligned_alloc(4096, 8192);
	memset(reg, 0x11, 8192);
	EXPECT(CUDA_SUCCESS, b.cuMemHostRegister_v2(reg, 8192, CU_MEMHOSTREGISTER_DEVICEMAP),
	       "host register");
	EXPECT(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
	       b.cuMemHostRegister_v2(reg + 4096, 4096, 0), "register overlapping");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemHostRegister_v2((void *)(uintptr_t)d, 4096, 0),
	       "register device memory");
	EXPECT(CUDA_SUCCESS, b.cuMemcpyDtoDAsync_v2(d, (uintptr_t)reg, 8192, NULL),
	       "device copy from registered memory");
	EXPECT(CUDA_SUCCESS, b.cuMemsetD8Async((uintptr_t)reg, 0x22, 16, NULL),
	       "memset registered memory");
	CHECK(reg[0] == 0x22 && reg[16] == 0x11, "memset reached host memory");
	EXPECT(CUDA_SUCCESS, b.cuMemHostUnregister(reg), "unregister");
	EXPECT(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, b.cuMemHostUnregister(reg),
	       "unregister twice");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemsetD8Async((uintptr_t)reg, 0, 16, NULL),
	       "memset unregistered host memory");
	EXPECT(CUDA_SUCCESS, b.cuMemHostRegister_v2(reg, 8192, CU_MEMHOSTREGISTER_READ_ONLY),
	       "register read-only");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuMemcpyDtoDAsync_v2((uintptr_t)reg, d, 16, NULL),
	       "copy into read-only registered memory");
	b.cuMemHostUnregister(reg);
	free(reg);

	/* A large copy, no chunking limits. */
	big_in = malloc(16 * MiB);
	big_out = malloc(16 * MiB);
	for (size_t i = 0; i < 16 * MiB; i++)
		big_in[i] = (unsigned char)(i * 7);
	EXPECT(CUDA_SUCCESS, b.cuMemcpyHtoDAsync_v2(d, big_in, 16 * MiB, NULL), "16 MiB in");
	EXPECT(CUDA_SUCCESS, b.cuMemcpyDtoHAsync_v2(big_out, d, 16 * MiB, NULL), "16 MiB out");
	CHECK(!memcmp(big_in, big_out, 16 * MiB), "16 MiB equal");
	free(big_in);
	free(big_out);
	dev_free(d, 16 * MiB, h);
}

/* --- modules and launches ------------------------------------------------ */

static const char ptx[] =
	"//\n// handwritten; /* comment */ .entry not_me(\n//\n"
	".version 8.0\n.target sm_80\n.address_size 64\n\n"
	".global .align 4 .b8 g_tab[8] = {1, 0, 0, 0, 2};\n"
	".global .align 8 .u64 g_zero;\n"
	".const .align 4 .f32 c_one = 0f3F800000;\n"
	".global .align 4 .u32 g_arr[2][3] = {{1, 2, 3}, {4, 5, 6}};\n"
	".visible .entry vgpu_fill_u32(\n"
	"\t.param .u64 .ptr .global .align 4 vgpu_fill_u32_param_0,\n"
	"\t.param .u32 vgpu_fill_u32_param_1,\n\t.param .u64 vgpu_fill_u32_param_2\n)\n"
	"{\n\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [vgpu_fill_u32_param_0];\n\tret;\n}\n"
	".visible .entry vgpu_poke_u32(.param .u64 a, .param .u32 b) { ret; }\n"
	".visible .entry vgpu_spin(.param .u64 ns) { ret; }\n"
	".visible .entry vgpu_checksum_u32(.param .u64 p, .param .u64 n, .param .u64 o) { ret; }\n"
	".visible .entry vgpu_big_param(.param .align 4 .b8 s[4096], .param .u64 out) { ret; }\n"
	".visible .func helper() { ret; }\n"
	".visible .entry no_impl() { ret; }\n";

static CUmodule mod;
static CUfunction f_fill, f_poke, f_spin, f_sum, f_big, f_none;

static CUresult launch(CUfunction f, unsigned grid, unsigned block, unsigned smem, CUstream s,
		       void **params)
{
	CUlaunchConfig c = { .gridDimX = grid, .gridDimY = 1, .gridDimZ = 1, .blockDimX = block,
			     .blockDimY = 1, .blockDimZ = 1, .sharedMemBytes = smem,
			     .hStream = s };

	return b.cuLaunchKernelEx(&c, f, params, NULL);
}

static void test_module(void)
{
	CUdeviceptr g;
	size_t size, off;
	uint32_t tab[2], arr[6];
	float one;
	int v;
	CUmodule m2;

	EXPECT(CUDA_ERROR_INVALID_IMAGE, b.cuModuleLoadData(&m2, "\x01\x02garbage"),
	       "load garbage");
	EXPECT(CUDA_ERROR_INVALID_PTX,
	       b.cuModuleLoadData(&m2, ".version 8.0\n.target sm_100\n.entry k() { ret; }\n"),
	       "load PTX for sm_100");
	EXPECT(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
	       b.cuModuleLoadData(&m2, ".version 9.9\n.target sm_80\n.entry k() { ret; }\n"),
	       "load PTX ISA 9.9");
	EXPECT(CUDA_SUCCESS, b.cuModuleLoadData(&mod, ptx), "load PTX");
	EXPECT(CUDA_SUCCESS, b.cuModuleGetFunction(&f_fill, mod, "vgpu_fill_u32"), "get fill");
	EXPECT(CUDA_SUCCESS, b.cuModuleGetFunction(&f_poke, mod, "vgpu_poke_u32"), "get poke");
	EXPECT(CUDA_SUCCESS, b.cuModuleGetFunction(&f_spin, mod, "vgpu_spin"), "get spin");
	EXPECT(CUDA_SUCCESS, b.cuModuleGetFunction(&f_sum, mod, "vgpu_checksum_u32"), "get sum");
	EXPECT(CUDA_SUCCESS, b.cuModuleGetFunction(&f_big, mod, "vgpu_big_param"), "get big");
	EXPECT(CUDA_SUCCESS, b.cuModuleGetFunction(&f_none, mod, "no_impl"), "get no_impl");
	EXPECT(CUDA_ERROR_NOT_FOUND, b.cuModuleGetFunction(&f_none, mod, "helper"),
	       ".func is not a kernel");
	EXPECT(CUDA_ERROR_NOT_FOUND, b.cuModuleGetFunction(&f_none, mod, "not_me"),
	       "commented .entry is not a kernel");
	b.cuModuleGetFunction(&f_none, mod, "no_impl");
	CHECK(b.cuFuncGetParamInfo(f_fill, 2, &off, &size) == 0 && off == 16 && size == 8,
	      "fill param 2 at 16, 8 bytes");
	CHECK(b.cuFuncGetParamInfo(f_big, 1, &off, &size) == 0 && off == 4096 && size == 8,
	      "big param 1 at 4096");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuFuncGetParamInfo(f_fill, 3, &off, &size),
	       "param past the end");
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, b.cuFuncGetParamInfo(f_none, 0, &off, &size),
	       "param info without host implementation");
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, launch(f_none, 1, 1, 0, NULL, NULL),
	       "launch without host implementation");

	CHECK(b.cuModuleGetGlobal_v2(&g, &size, mod, "g_tab") == 0 && size == 8, "g_tab 8 bytes");
	b.cuMemcpyDtoHAsync_v2(tab, g, 8, NULL);
	CHECK(tab[0] == 1 && tab[1] == 2, "g_tab initialized (%u %u)", tab[0], tab[1]);
	CHECK(b.cuModuleGetGlobal_v2(&g, &size, mod, "g_zero") == 0 && size == 8 && g % 8 == 0,
	      "g_zero 8 bytes, aligned");
	CHECK(b.cuModuleGetGlobal_v2(&g, &size, mod, "c_one") == 0 && size == 4, "c_one");
	b.cuMemcpyDtoHAsync_v2(&one, g, 4, NULL);
	CHECK(one == 1.0f, "c_one is 1.0f");
	CHECK(b.cuModuleGetGlobal_v2(&g, &size, mod, "g_arr") == 0 && size == 24, "g_arr[2][3]");
	b.cuMemcpyDtoHAsync_v2(arr, g, 24, NULL);
	CHECK(arr[0] == 1 && arr[5] == 6, "g_arr initialized");
	EXPECT(CUDA_ERROR_NOT_FOUND, b.cuModuleGetGlobal_v2(&g, &size, mod, "nope"),
	       "unknown global");
	CHECK(b.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f_fill) == 0 &&
	      v == 1024, "max threads 1024");
	CHECK(b.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION, f_fill) == 0 && v == 80,
	      "ptx version 80");
	EXPECT(CUDA_ERROR_INVALID_VALUE,
	       b.cuFuncSetAttribute(f_fill, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
				    300 << 10), "dynamic smem over the opt-in max");
	EXPECT(CUDA_SUCCESS, b.cuFuncSetCacheConfig(f_fill, CU_FUNC_CACHE_PREFER_SHARED),
	       "func cache config");
	CHECK(b.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&v, f_fill, 256, 0, 0) == 0 &&
	      v == 8, "occupancy 256 threads: 8");
	CHECK(b.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&v, f_fill, 32, 0, 0) == 0 &&
	      v == 32, "occupancy 32 threads: 32");
	b.cuFuncSetAttribute(f_fill, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 << 10);
	CHECK(b.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&v, f_fill, 128, 100 << 10,
								      0) == 0 && v == 2,
	      "occupancy with 100 KiB dynamic smem: 2 (%d)", v);
	CHECK(b.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f_fill) ==
	      0 && v == 200 << 10, "dynamic smem attribute stored");
}

/* What the client's hidden tables need (host_tables.c). */
static void test_tables(void)
{
	CUfunction fs[8] = { 0 };
	CUlaunchConfig c = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
			     .blockDimY = 1, .blockDimZ = 1 };
	const void *t = (const void *)1;
	const char *name = NULL;
	unsigned int n = 0;
	CUuuid id = { { 0x17, 0x34 } };
	int v = -1;

	CHECK(b.cuModuleGetFunctionCount(&n, mod) == 0 && n == 6, "6 kernels (%u)", n);
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuModuleGetFunctionCount(NULL, mod), "no count");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuModuleGetFunctionCount(&n, (CUmodule)&n),
	       "count of no module");
	EXPECT(CUDA_SUCCESS, b.cuModuleEnumerateFunctions(fs, 8, mod), "enumerate");
	CHECK(fs[0] == f_fill && fs[1] == f_poke && fs[5] == f_none && !fs[6],
	      "enumerated in image order, as cuModuleGetFunction hands them out");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuModuleEnumerateFunctions(fs, 0, mod), "room for none");
	CHECK(b.cuFuncGetName(&name, f_spin) == 0 && name && !strcmp(name, "vgpu_spin"),
	      "name of vgpu_spin");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuFuncGetName(&name, (CUfunction)&n), "name of nothing");
	CHECK(b.cuOccupancyMaxPotentialClusterSize(&v, f_spin, &c) == 0 && v == 8,
	      "largest portable cluster: 8 (%d)", v);
	b.cuFuncSetAttribute(f_spin, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
	CHECK(b.cuOccupancyMaxPotentialClusterSize(&v, f_spin, &c) == 0 && v == 16,
	      "largest non-portable cluster: 16 (%d)", v);
	b.cuFuncSetAttribute(f_spin, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0);
	c.blockDimX = 4096;
	EXPECT(CUDA_SUCCESS, b.cuOccupancyMaxPotentialClusterSize(&v, f_spin, &c), "huge block");
	CHECK(v == 0, "a block that fits no SM: 0 (%d)", v);
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuOccupancyMaxPotentialClusterSize(&v, f_spin, NULL),
	       "no config");
	EXPECT(CUDA_ERROR_NOT_FOUND, b.cuGetExportTable(&t, &id), "no hidden tables here");
	CHECK(t == NULL, "and no table");
}

static void test_launches(void)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr d = dev_alloc(4 * MiB, &h);
	unsigned long long n = 1000, sum = 0;
	unsigned v = 7, out[1024];
	static struct { unsigned v[1024]; } big;
	void *params[3] = { &d, &v, &n };
	CUlaunchConfig c = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1025,
			     .blockDimY = 1, .blockDimZ = 1 };
	unsigned char pbuf[24];
	size_t psize = sizeof(pbuf);
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, pbuf, CU_LAUNCH_PARAM_BUFFER_SIZE,
			  &psize, CU_LAUNCH_PARAM_END };
	CUdeviceptr outp;
	int ok;

	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuLaunchKernelEx(&c, f_fill, params, NULL),
	       "block of 1025 threads");
	c.blockDimX = 32;
	c.blockDimZ = 65;
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuLaunchKernelEx(&c, f_fill, params, NULL),
	       "block z 65");
	c.blockDimZ = 1;
	c.gridDimY = 0;
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuLaunchKernelEx(&c, f_fill, params, NULL), "grid y 0");
	EXPECT(CUDA_ERROR_INVALID_VALUE, launch(f_spin, 1, 1, 49153, NULL, NULL),
	       "dynamic smem over the function's max");
	EXPECT(CUDA_ERROR_INVALID_VALUE, launch(f_fill, 1, 1, 0, NULL, NULL), "no parameters");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, launch((CUfunction)&c, 1, 1, 0, NULL, params),
	       "bad function handle");

	EXPECT(CUDA_SUCCESS, launch(f_fill, 4, 128, 0, NULL, params), "fill 1000 with 7");
	b.cuMemcpyDtoHAsync_v2(out, d, sizeof(out), NULL);
	CHECK(out[0] == 7 && out[999] == 7 && out[1000] == 0, "fill values");

	memcpy(pbuf, &d, 8);
	v = 9;
	memcpy(pbuf + 8, &v, 4);
	memset(pbuf + 12, 0, 4);
	n = 10;
	memcpy(pbuf + 16, &n, 8);
	EXPECT(CUDA_SUCCESS, b.cuLaunchKernelEx(&(CUlaunchConfig){ .gridDimX = 1, .gridDimY = 1,
		.gridDimZ = 1, .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 },
		f_fill, NULL, extra), "launch with extra");
	b.cuMemcpyDtoHAsync_v2(out, d, 64, NULL);
	CHECK(out[9] == 9 && out[10] == 7, "extra values");
	psize = 8;
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuLaunchKernelEx(&(CUlaunchConfig){ .gridDimX = 1,
		.gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 },
		f_fill, NULL, extra), "extra buffer too small");

	/* checksum: 10 nines + 990 sevens */
	outp = d + 2 * MiB;
	n = 1000;
	b.cuMemsetD8Async(outp, 0, 8, NULL);
	{
		void *p[3] = { &d, &n, &outp };

		EXPECT(CUDA_SUCCESS, launch(f_sum, 2, 64, 0, NULL, p), "checksum");
	}
	b.cuMemcpyDtoHAsync_v2(&sum, outp, 8, NULL);
	CHECK(sum == 10 * 9 + 990 * 7, "checksum %llu", sum);

	for (int i = 0; i < 1024; i++)
		big.v[i] = (unsigned)i * 3u;
	{
		void *p[2] = { &big, &d };

		EXPECT(CUDA_SUCCESS, launch(f_big, 1, 256, 0, NULL, p), "4 KiB by-value parameter");
	}
	b.cuMemcpyDtoHAsync_v2(out, d, sizeof(out), NULL);
	ok = 1;
	for (int i = 0; i < 1024; i++)
		ok &= out[i] == (unsigned)i * 3u;
	CHECK(ok, "big parameter copied");
	dev_free(d, 4 * MiB, h);
}

static int host_fn_calls;

static void host_fn(void *data)
{
	host_fn_calls += *(int *)data;
}

static void test_streams_events(void)
{
	CUstream s, s2;
	CUevent e1, e2, nt, never;
	unsigned long long ns = 20000000ull;	/* 20 ms */
	void *p[1] = { &ns };
	float ms = 0;
	int one = 1;

	EXPECT(CUDA_SUCCESS, b.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -100),
	       "stream, priority clamped");
	EXPECT(CUDA_SUCCESS, b.cuStreamCreateWithPriority(&s2, 0, 0), "stream 2");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuStreamCreateWithPriority(&s2, 8, 0), "stream flags 8");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuStreamSynchronize((CUstream)&ms), "unknown stream");
	EXPECT(CUDA_SUCCESS, b.cuStreamQuery(s), "query");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&e1, 0), "event");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&e2, CU_EVENT_BLOCKING_SYNC), "event 2");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING), "event, no timing");
	EXPECT(CUDA_SUCCESS, b.cuEventCreate(&never, 0), "event never recorded");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuEventCreate(&never, CU_EVENT_INTERPROCESS),
	       "interprocess needs disable-timing");
	EXPECT(CUDA_SUCCESS, b.cuEventRecordWithFlags(e1, s, 0), "record");
	EXPECT(CUDA_SUCCESS, launch(f_spin, 2, 32, 0, s, p), "spin 20 ms");
	EXPECT(CUDA_SUCCESS, b.cuEventRecordWithFlags(e2, s, 0), "record 2");
	EXPECT(CUDA_SUCCESS, b.cuEventRecordWithFlags(nt, s2, 0), "record on stream 2");
	EXPECT(CUDA_SUCCESS, b.cuStreamWaitEvent(s2, e2, 0), "stream waits event");
	EXPECT(CUDA_SUCCESS, b.cuEventSynchronize(e2), "event sync");
	EXPECT(CUDA_SUCCESS, b.cuEventQuery(e2), "event query");
	EXPECT(CUDA_SUCCESS, b.cuEventQuery(never), "query of a never-recorded event");
	EXPECT(CUDA_SUCCESS, b.cuEventElapsedTime_v2(&ms, e1, e2), "elapsed");
	CHECK(ms >= 19.0f && ms < 500.0f, "elapsed about 20 ms (%.3f)", ms);
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuEventElapsedTime_v2(&ms, e1, nt),
	       "elapsed with a no-timing event");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuEventElapsedTime_v2(&ms, e1, never),
	       "elapsed with a never-recorded event");
	EXPECT(CUDA_SUCCESS, b.cuLaunchHostFunc(s, host_fn, &one), "host func");
	CHECK(host_fn_calls == 1, "host func ran at once");
	EXPECT(CUDA_ERROR_INVALID_VALUE, b.cuLaunchHostFunc(s, NULL, NULL), "host func NULL");
	EXPECT(CUDA_SUCCESS, b.cuStreamDestroy_v2(s2), "destroy stream");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuStreamQuery(s2), "destroyed stream");
	EXPECT(CUDA_SUCCESS, b.cuStreamSynchronize(CU_STREAM_LEGACY), "legacy stream");
	EXPECT(CUDA_SUCCESS, b.cuEventDestroy_v2(nt), "destroy event");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuEventQuery(nt), "destroyed event");
	b.cuEventDestroy_v2(e1);
	b.cuEventDestroy_v2(e2);
	b.cuEventDestroy_v2(never);
	b.cuStreamDestroy_v2(s);
}

static void test_sticky(void)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr d = dev_alloc(2 * MiB, &h), bad = d + 2 * MiB, mis = d + 2;
	unsigned v = 1, x;
	void *p[2] = { &bad, &v };
	void *pm[2] = { &mis, &v };
	CUstream s;
	CUcontext c;

	b.cuStreamCreateWithPriority(&s, 0, 0);
	EXPECT(CUDA_ERROR_MISALIGNED_ADDRESS, launch(f_poke, 1, 1, 0, NULL, pm), "misaligned poke");
	EXPECT(CUDA_ERROR_MISALIGNED_ADDRESS, b.cuCtxSynchronize(), "sticky misaligned");
	b.cuDevicePrimaryCtxReset_v2(0);
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, b.cuCtxSynchronize(), "reset primary is inactive");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuStreamQuery(s), "reset destroyed the stream");
	EXPECT(CUDA_SUCCESS, b.cuDevicePrimaryCtxRetain(&c, 0), "retain after reset");
	CHECK(c == primary, "same primary handle");
	EXPECT(CUDA_SUCCESS, b.cuModuleLoadData(&mod, ptx), "reload module");
	b.cuModuleGetFunction(&f_poke, mod, "vgpu_poke_u32");
	b.cuStreamCreateWithPriority(&s, 0, 0);

	EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, launch(f_poke, 1, 1, 0, s, p), "poke past the mapping");
	EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, b.cuCtxSynchronize(), "sticky: ctx sync");
	EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, b.cuStreamSynchronize(s), "sticky: stream sync");
	EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, b.cuMemcpyDtoHAsync_v2(&x, d, 4, NULL), "sticky: copy");
	EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, b.cuModuleLoadData(&mod, ptx), "sticky: module load");
	EXPECT(CUDA_SUCCESS, b.cuDevicePrimaryCtxRelease_v2(0), "release");
	EXPECT(CUDA_SUCCESS, b.cuDevicePrimaryCtxRetain(&c, 0), "retain: a fresh primary");
	EXPECT(CUDA_SUCCESS, b.cuCtxSynchronize(), "no longer poisoned");
	EXPECT(CUDA_SUCCESS, b.cuMemcpyDtoHAsync_v2(&x, d, 4, NULL),
	       "device memory outlives the context");
	EXPECT(CUDA_SUCCESS, b.cuModuleLoadData(&mod, ptx), "reload module");
	b.cuModuleGetFunction(&f_poke, mod, "vgpu_poke_u32");
	dev_free(d, 2 * MiB, h);
}

/* --- threads -------------------------------------------------------------- */

static void *worker(void *arg)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr d;
	CUevent e;
	unsigned in[256], out[256];
	long id = (long)arg;
	int ok = 1;

	b.cuCtxSetCurrent(primary);
	for (int it = 0; it < 50 && ok; it++) {
		d = dev_alloc(2 * MiB, &h);
		for (int i = 0; i < 256; i++)
			in[i] = (unsigned)(id * 1000 + it + i);
		ok &= d && !b.cuMemcpyHtoDAsync_v2(d, in, sizeof(in), NULL) &&
		      !b.cuMemcpyDtoHAsync_v2(out, d, sizeof(out), NULL) &&
		      !memcmp(in, out, sizeof(in));
		ok &= !b.cuEventCreate(&e, 0) && !b.cuEventRecordWithFlags(e, NULL, 0) &&
		      !b.cuEventSynchronize(e) && !b.cuEventDestroy_v2(e);
		dev_free(d, 2 * MiB, h);
	}
	return (void *)(long)ok;
}

static void test_threads(void)
{
	pthread_t t[3];
	void *ret;
	int ok = 1;
	size_t fr, tot;

	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], &ret);
		ok &= (long)ret == 1;
	}
	CHECK(ok, "3 threads allocating, copying, recording");
	b.cuMemGetInfo_v2(&fr, &tot);
	CHECK(fr + 4096 * 16 >= tot, "nothing leaked by the threads (%zu of %zu free)", fr, tot);
}

/* --- nvcc-built images ---------------------------------------------------- */

static char tmpdir[] = "/tmp/vgpu-host-test-XXXXXX";

static void *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	char *buf;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static int build(const char *nvcc, const char *flags, const char *out)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "%s %s %s/k.cu -o %s/%s 2>&1", nvcc, flags, tmpdir, tmpdir, out);
	return system(cmd);
}

/* Loads one nvcc output and runs every kernel of kernels.cuh in it. */
static void run_image(const char *file, const char *what)
{
	char path[512];
	void *img;
	CUmodule m;
	CUfunction fv, fs, fi, fk;
	CUdeviceptr g, d;
	CUmemGenericAllocationHandle h;
	size_t size;
	int vals[4] = { 0 };
	const int n = 4096;
	float *a, *bb, *cc;
	CUresult r;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
	img = read_file(path);
	if (!img) {
		CHECK(0, "%s: read %s", what, path);
		return;
	}
	r = b.cuModuleLoadData(&m, img);
	CHECK(r == CUDA_SUCCESS, "%s: load (%s)", what, ename(r));
	free(img);
	if (r)
		return;
	CHECK(!b.cuModuleGetFunction(&fv, m, "vgpu_vecadd_f32") &&
	      !b.cuModuleGetFunction(&fs, m, "vgpu_saxpy_f32") &&
	      !b.cuModuleGetFunction(&fi, m, "vgpu_iota_u32") &&
	      !b.cuModuleGetFunction(&fk, m, "_Z7mangledPi"), "%s: kernels found", what);
	CHECK(b.cuModuleGetGlobal_v2(&g, &size, m, "g_init") == 0 && size == 16,
	      "%s: global g_init", what);
	b.cuMemcpyDtoHAsync_v2(vals, g, 16, NULL);
	CHECK(vals[0] == 1 && vals[3] == 4, "%s: g_init initialized", what);
	CHECK(b.cuModuleGetGlobal_v2(&g, &size, m, "g_const") == 0 && size == 8,
	      "%s: __constant__ g_const", what);

	d = dev_alloc(4 * MiB, &h);
	a = malloc(n * 4);
	bb = malloc(n * 4);
	cc = malloc(n * 4);
	for (int i = 0; i < n; i++) {
		a[i] = (float)i * 0.1f;
		bb[i] = 1.0f / (float)(i + 1);
	}
	b.cuMemcpyHtoDAsync_v2(d, a, n * 4, NULL);
	b.cuMemcpyHtoDAsync_v2(d + MiB, bb, n * 4, NULL);
	{
		CUdeviceptr pa = d, pb = d + MiB, pc = d + 2 * MiB;
		int nn = n;
		float alpha = 3.25f;
		void *pv[4] = { &pa, &pb, &pc, &nn };
		void *ps[4] = { &alpha, &pa, &pb, &nn };
		int ok = 1;

		r = launch(fv, 8, 256, 0, NULL, pv);
		CHECK(r == CUDA_SUCCESS, "%s: vecadd (%s)", what, ename(r));
		b.cuMemcpyDtoHAsync_v2(cc, pc, n * 4, NULL);
		for (int i = 0; i < n; i++)
			ok &= cc[i] == a[i] + bb[i];
		CHECK(ok, "%s: vecadd values", what);
		r = launch(fs, 8, 256, 0, NULL, ps);
		CHECK(r == CUDA_SUCCESS, "%s: saxpy (%s)", what, ename(r));
		b.cuMemcpyDtoHAsync_v2(cc, pb, n * 4, NULL);
		ok = 1;
		for (int i = 0; i < n; i++)
			ok &= cc[i] == fmaf(alpha, a[i], bb[i]);
		CHECK(ok, "%s: saxpy values", what);
	}
	{
		CUdeviceptr p = d;
		unsigned base = 0xfffffff0u;
		unsigned long long cnt = 64;
		unsigned out[64];
		void *pi[3] = { &p, &base, &cnt };

		r = launch(fi, 1, 32, 0, NULL, pi);
		b.cuMemcpyDtoHAsync_v2(out, d, sizeof(out), NULL);
		CHECK(r == CUDA_SUCCESS && out[0] == 0xfffffff0u && out[16] == 0 && out[63] == 47,
		      "%s: iota wraps (%s)", what, ename(r));
	}
	{
		/* The rest of kernels.cuh: the image's layouts must match ours. */
		CUfunction ff, fc, fp, fsp, fb;
		CUdeviceptr p = d, o = d + 3 * MiB;
		unsigned v = 5, got[1024];
		unsigned long long cnt = 100, ns = 0, sum = 0;
		static unsigned big[1024];
		void *pf[3] = { &p, &v, &cnt }, *pc[3] = { &p, &cnt, &o }, *pp[2] = { &o, &v };
		void *ps[1] = { &ns }, *pb[2] = { big, &p };

		for (int i = 0; i < 1024; i++)
			big[i] = (unsigned)i ^ 0x5555u;
		CHECK(!b.cuModuleGetFunction(&ff, m, "vgpu_fill_u32") &&
		      !b.cuModuleGetFunction(&fc, m, "vgpu_checksum_u32") &&
		      !b.cuModuleGetFunction(&fp, m, "vgpu_poke_u32") &&
		      !b.cuModuleGetFunction(&fsp, m, "vgpu_spin") &&
		      !b.cuModuleGetFunction(&fb, m, "vgpu_big_param"), "%s: all kernels", what);
		b.cuMemsetD8Async(o, 0, 8, NULL);
		CHECK(!launch(ff, 1, 32, 0, NULL, pf) && !launch(fc, 1, 32, 0, NULL, pc) &&
		      !b.cuMemcpyDtoHAsync_v2(&sum, o, 8, NULL) && sum == 500,
		      "%s: fill then checksum (%llu)", what, sum);
		CHECK(!launch(fp, 1, 1, 0, NULL, pp) && !b.cuMemcpyDtoHAsync_v2(got, o, 4, NULL) &&
		      got[0] == 5, "%s: poke", what);
		CHECK(!launch(fsp, 1, 1, 0, NULL, ps), "%s: spin", what);
		CHECK(!launch(fb, 1, 1, 0, NULL, pb) &&
		      !b.cuMemcpyDtoHAsync_v2(got, p, sizeof(got), NULL) &&
		      !memcmp(got, big, sizeof(big)), "%s: big parameter", what);
	}
	r = launch(fk, 1, 1, 0, NULL, NULL);
	CHECK(r == CUDA_ERROR_NOT_SUPPORTED, "%s: mangled kernel has no host implementation (%s)",
	      what, ename(r));
	free(a);
	free(bb);
	free(cc);
	dev_free(d, 4 * MiB, h);
	EXPECT(CUDA_SUCCESS, b.cuModuleUnload(m), "unload");
	EXPECT(CUDA_ERROR_INVALID_HANDLE, b.cuModuleUnload(m), "unload twice");
}

static int have_zstd(void)
{
	void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	if (h)
		dlclose(h);
	return h != NULL;
}

static void expect_load_fails(const char *file, CUresult want, const char *what)
{
	char path[512];
	CUmodule m;
	void *img;
	CUresult r;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
	img = read_file(path);
	r = img ? b.cuModuleLoadData(&m, img) : CUDA_ERROR_FILE_NOT_FOUND;
	CHECK(r == want, "%s: %s", what, ename(r));
	free(img);
}

static void test_nvcc(const char *self)
{
	const char *nvcc = getenv("NVCC") ? getenv("NVCC") : "/usr/local/cuda/bin/nvcc";
	char cuh[1024], src[1280], *dir;
	FILE *f;
	CUmodule m;
	void *img;
	char path[512];
	CUresult r;

	if (access(nvcc, X_OK)) {
		printf("skip - nvcc-built images: no %s\n", nvcc);
		return;
	}
	dir = strdup(self);
	snprintf(cuh, sizeof(cuh), "%s/../e2e/kernels.cuh", dirname(dir));
	free(dir);
	if (getenv("VGPU_KERNELS_CUH"))
		snprintf(cuh, sizeof(cuh), "%s", getenv("VGPU_KERNELS_CUH"));
	if (access(cuh, R_OK) || !realpath(cuh, src) || !mkdtemp(tmpdir)) {
		printf("skip - nvcc-built images: no %s\n", cuh);
		return;
	}
	snprintf(path, sizeof(path), "%s/k.cu", tmpdir);
	f = fopen(path, "w");
	fprintf(f, "#include \"%s\"\n"
		"__device__ int g_init[4] = {1, 2, 3, 4};\n"
		"__constant__ double g_const = 2.5;\n"
		"__global__ void mangled(int *p) { *p = g_init[0] + (int)g_const; }\n", src);
	fclose(f);
	CHECK(build(nvcc, "-c", "default.o") == 0, "nvcc -c kernels.cuh (default flags)");
	CHECK(build(nvcc, "-fatbin -arch=sm_90", "sm90.fatbin") == 0 &&
	      build(nvcc, "-fatbin", "default.fatbin") == 0 &&
	      build(nvcc, "-fatbin -arch=sm_90 -Xfatbin=-compress-all "
			  "-Xfatbin=-compress-mode=speed", "lz4.fatbin") == 0 &&
	      build(nvcc, "-fatbin -arch=sm_90 -Xfatbin=-compress-all", "zstd.fatbin") == 0 &&
	      build(nvcc, "-fatbin -gencode arch=compute_90,code=compute_90", "ptx.fatbin") == 0 &&
	      build(nvcc, "-cubin -arch=sm_90", "k.cubin") == 0 &&
	      build(nvcc, "-ptx -arch=sm_90", "k.ptx") == 0 &&
	      build(nvcc, "-cubin -arch=sm_80", "sm80.cubin") == 0 &&
	      build(nvcc, "-fatbin -arch=sm_100", "sm100.fatbin") == 0, "nvcc builds");
	run_image("sm90.fatbin", "fatbin sm_90 (PTX zstd)");
	run_image("default.fatbin", "fatbin default arch");
	run_image("lz4.fatbin", "fatbin all LZ4");
	if (have_zstd()) {
		run_image("zstd.fatbin", "fatbin all zstd");
		run_image("ptx.fatbin", "fatbin PTX only (zstd)");
	} else {
		expect_load_fails("zstd.fatbin", CUDA_ERROR_INVALID_IMAGE, "all zstd, no libzstd");
		printf("skip - zstd entries: no libzstd.so.1\n");
	}
	run_image("k.cubin", "cubin");
	run_image("k.ptx", "PTX text");

	expect_load_fails("sm80.cubin", CUDA_ERROR_NO_BINARY_FOR_GPU, "cubin for sm_80");
	expect_load_fails("sm100.fatbin", CUDA_ERROR_NO_BINARY_FOR_GPU, "fatbin for sm_100");
	{
		/* A fatbinC wrapper around the sm_90 fatbin: its pointer came over
		 * the wire, never followed (the client sends the fatbin itself). */
		struct { uint32_t magic, version; const void *data, *unused; } w;

		snprintf(path, sizeof(path), "%s/sm90.fatbin", tmpdir);
		img = read_file(path);
		w.magic = 0x466243b1;
		w.version = 1;
		w.data = img;
		w.unused = NULL;
		r = img ? b.cuModuleLoadData(&m, &w) : CUDA_ERROR_FILE_NOT_FOUND;
		CHECK(r == CUDA_ERROR_INVALID_IMAGE, "fatbinC wrapper refused: %s", ename(r));
		if (!r)
			b.cuModuleUnload(m);
		free(img);
	}
	snprintf(path, sizeof(path), "rm -rf %s", tmpdir);
	if (system(path))
		printf("warn: could not remove %s\n", tmpdir);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("VGPU_HOST_DEVICE_MEM", "256M", 1);
	if (vgpu_backend_host_open(&b)) {
		printf("FAIL - open the host backend\n");
		return 1;
	}
	CHECK(!strcmp(b.name, "host") && b.kind == VGPU_BACKEND_HOST, "backend is host");
#define FILLED(fn) CHECK(b.fn != NULL, "slot " #fn " filled");
	VGPU_BACKEND_FUNCS(FILLED)
#undef FILLED
	test_init_device();
	test_contexts();
	test_vmm();
	test_copies_memsets();
	test_module();
	test_tables();
	test_launches();
	test_streams_events();
	test_sticky();
	test_threads();
	test_nvcc(__FILE__);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
