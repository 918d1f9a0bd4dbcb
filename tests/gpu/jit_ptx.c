// SPDX-License-Identifier: MIT
/*
 * Driver API, JIT from PTX text: cuModuleLoadDataEx on a PTX string (with
 * log buffers), cuModuleGetFunction/GetGlobal, cuLaunchKernel with
 * kernelParams and with the `extra` buffer form, a second load of the same
 * text, and bad PTX (CUDA_ERROR_INVALID_PTX). Built with gcc, linked
 * against the driver (the toolkit's stub at build time).
 */
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ptx[] =
	".version 8.0\n"
	".target sm_75\n"
	".address_size 64\n"
	".global .align 4 .u32 jit_calls;\n"
	".visible .entry scale_add(\n"
	"	.param .u64 scale_add_param_0,\n"
	"	.param .f32 scale_add_param_1,\n"
	"	.param .f32 scale_add_param_2,\n"
	"	.param .u32 scale_add_param_3\n"
	")\n"
	"{\n"
	"	.reg .pred %p<2>;\n"
	"	.reg .f32 %f<5>;\n"
	"	.reg .b32 %r<7>;\n"
	"	.reg .b64 %rd<6>;\n"
	"	ld.param.u64 %rd1, [scale_add_param_0];\n"
	"	ld.param.f32 %f1, [scale_add_param_1];\n"
	"	ld.param.f32 %f2, [scale_add_param_2];\n"
	"	ld.param.u32 %r2, [scale_add_param_3];\n"
	"	mov.u32 %r3, %ctaid.x;\n"
	"	mov.u32 %r4, %ntid.x;\n"
	"	mov.u32 %r5, %tid.x;\n"
	"	mad.lo.s32 %r1, %r3, %r4, %r5;\n"
	"	setp.ge.u32 %p1, %r1, %r2;\n"
	"	@%p1 bra $L__BB0_2;\n"
	"	cvta.to.global.u64 %rd2, %rd1;\n"
	"	mul.wide.u32 %rd3, %r1, 4;\n"
	"	add.s64 %rd4, %rd2, %rd3;\n"
	"	ld.global.f32 %f3, [%rd4];\n"
	"	fma.rn.f32 %f4, %f3, %f1, %f2;\n"
	"	st.global.f32 [%rd4], %f4;\n"
	"	mov.u64 %rd5, jit_calls;\n"
	"	atom.global.add.u32 %r6, [%rd5], 1;\n"
	"$L__BB0_2:\n"
	"	ret;\n"
	"}\n";

static int failures;

static const char *name(CUresult r)
{
	const char *s = NULL;

	cuGetErrorName(r, &s);
	return s ? s : "?";
}

#define CK(call)                                                                 \
	do {                                                                     \
		CUresult r_ = (call);                                            \
		if (r_ != CUDA_SUCCESS) {                                        \
			printf("FATAL %s:%d %s -> %s\n", __FILE__, __LINE__, #call,  \
			       name(r_));                                        \
			return 1;                                                \
		}                                                                \
	} while (0)

#define EXPECT(cond, ...)                                                        \
	do {                                                                     \
		if (!(cond)) {                                                   \
			failures++;                                              \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);          \
			fprintf(stderr, __VA_ARGS__);                            \
			fprintf(stderr, "\n");                                   \
			printf("FAILED %s:%d\n", __FILE__, __LINE__);            \
		}                                                                \
	} while (0)

int main(void)
{
	enum { N = 10000 };
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod, mod2, bad_mod;
	CUfunction f, f2;
	CUdeviceptr d, calls;
	size_t calls_size = 0;
	static float h[N];
	char info[4096] = "", err[4096] = "";
	CUjit_option opts[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
				CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { info, (void *)(size_t)sizeof(info), err, (void *)(size_t)sizeof(err) };
	unsigned n = N, got_calls = 0;
	float a = 2.0f, b = 0.5f;
	int regs = -1, bad = 0;
	CUresult r;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadDataEx(&mod, ptx, 4, opts, vals));
	CK(cuModuleGetFunction(&f, mod, "scale_add"));
	CK(cuModuleGetGlobal(&calls, &calls_size, mod, "jit_calls"));
	EXPECT(calls_size == 4, "jit_calls: %zu bytes", calls_size);
	CK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
	EXPECT(regs > 0, "%d registers", regs);
	EXPECT(cuModuleGetFunction(&f2, mod, "no_such_kernel") == CUDA_ERROR_NOT_FOUND,
	       "a missing kernel was found");
	printf("jit: module loaded, kernel and global found\n");

	for (int i = 0; i < N; i++)
		h[i] = (float)i;
	CK(cuMemAlloc(&d, sizeof(h)));
	CK(cuMemcpyHtoD(d, h, sizeof(h)));
	CK(cuMemsetD32(calls, 0, 1));
	{
		void *params[] = { &d, &a, &b, &n };

		CK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	}
	{
		/* The same launch through `extra`: one packed buffer. */
		struct {
			CUdeviceptr p;
			float a, b;
			unsigned n;
		} buf = { d, 1.0f, 1.0f, N };
		/* The parameters end at n: no tail padding (the driver refuses
		 * a buffer larger than the kernel's parameter block). */
		size_t size = offsetof(__typeof__(buf), n) + sizeof(buf.n);
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
				  &size, CU_LAUNCH_PARAM_END };

		CK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
	}
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(h, d, sizeof(h)));
	CK(cuMemcpyDtoH(&got_calls, calls, 4));
	for (int i = 0; i < N; i++)
		bad += h[i] != (float)i * 2.0f + 0.5f + 1.0f;
	EXPECT(bad == 0, "%d wrong", bad);
	EXPECT(got_calls == 2 * N, "jit_calls %u", got_calls);
	printf("jit: two launches: %s, calls %u\n", bad ? "wrong" : "ok", got_calls);

	/* Bad launch configurations: print the driver's own answer (the
	 * native run shows what the real driver returns; vgpu must match). */
	{
		void *params[] = { &d, &a, &b, &n };

		r = cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL);
		printf("jit: launch with 2048 threads per block: %s\n", name(r));
		EXPECT(r != CUDA_SUCCESS, "a launch of 2048 threads per block succeeded");
		r = cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
		printf("jit: launch of an empty grid: %s\n", name(r));
		EXPECT(r != CUDA_SUCCESS, "a launch of an empty grid succeeded");
		r = cuLaunchKernel(f, 1, 1, 65536, 32, 1, 1, 0, NULL, params, NULL);
		printf("jit: launch with gridDim.z 65536: %s\n", name(r));
		EXPECT(r != CUDA_SUCCESS, "a launch with gridDim.z 65536 succeeded");
		r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 300 << 10, NULL, params, NULL);
		printf("jit: launch with 300 KiB of shared memory: %s\n", name(r));
		EXPECT(r != CUDA_SUCCESS, "a launch with 300 KiB of shared memory succeeded");
		r = cuCtxSynchronize();
		printf("jit: sync after them: %s\n", name(r));
		EXPECT(r == CUDA_SUCCESS, "bad launches left an error: %s", name(r));
	}

	/* The same text again: a second, separate module. */
	CK(cuModuleLoadData(&mod2, ptx));
	CK(cuModuleGetFunction(&f2, mod2, "scale_add"));
	{
		void *params[] = { &d, &a, &b, &n };

		CK(cuLaunchKernel(f2, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	}
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(&got_calls, calls, 4));
	EXPECT(got_calls == 2 * N, "the second module wrote the first one's global: %u", got_calls);
	CK(cuModuleUnload(mod2));

	/* Bad PTX. */
	err[0] = 0;
	r = cuModuleLoadDataEx(&bad_mod, ".version 8.0\n.target sm_75\n.address_size 64\n"
			       ".visible .entry broken( { bogus; }\n", 4, opts, vals);
	printf("jit: bad PTX: %s\n", name(r));
	EXPECT(r == CUDA_ERROR_INVALID_PTX, "bad PTX: %s", name(r));
	fprintf(stderr, "jit error log: %s\n", err);

	CK(cuMemFree(d));
	CK(cuModuleUnload(mod));
	CK(cuDevicePrimaryCtxRelease(dev));
	printf("jit: %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
