// SPDX-License-Identifier: MIT
/*
 * Device printf follows the program's current fd 1, as natively: a kernel
 * prints (to the stdout the program started with); the program points fd 1
 * at a file with dup2, a kernel prints, a synchronization flushes it into
 * the file; fd 1 comes back and a last kernel prints to it. The file holds
 * exactly the middle line. The kernel, vgpu_print_u32 (tests/e2e/kernels.cuh),
 * is emulated by the host backend.
 *
 *   printf_driver                 the test
 *   printf_driver hold GO         the same, with "ready" said and GO waited
 *                                 for while fd 1 is the file (tests/e2e/run
 *                                 printf_migrate moves the session then)
 *
 * One line per check on stdout, the same natively and through vgpu; exit 0
 * pass, 1 fail.
 */
#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

/* nvcc -ptx of vgpu_print_u32 in tests/e2e/kernels.cuh */
static const char print_ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".extern .func (.param .b32 func_retval0) vprintf\n"
	"(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n);\n"
	".global .align 1 .b8 $str[20] = {118, 103, 112, 117, 95, 112, 114, 105, 110, 116, "
	"95, 117, 51, 50, 58, 32, 37, 117, 10};\n"
	".visible .entry vgpu_print_u32(\n\t.param .u32 vgpu_print_u32_param_0\n)\n{\n"
	"\t.local .align 8 .b8 __local_depot0[8];\n\t.reg .b64 %SP;\n\t.reg .b64 %SPL;\n"
	"\t.reg .pred %p<2>;\n\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<5>;\n"
	"\tmov.u64 %SPL, __local_depot0;\n\tcvta.local.u64 %SP, %SPL;\n"
	"\tld.param.u32 %r1, [vgpu_print_u32_param_0];\n\tmov.u32 %r2, %tid.x;\n"
	"\tmov.u32 %r3, %ctaid.x;\n\tor.b32 %r4, %r3, %r2;\n\tsetp.ne.s32 %p1, %r4, 0;\n"
	"\t@%p1 bra $L__BB0_2;\n\tadd.u64 %rd1, %SP, 0;\n\tadd.u64 %rd2, %SPL, 0;\n"
	"\tst.local.u32 [%rd2], %r1;\n\tmov.u64 %rd3, $str;\n\tcvta.global.u64 %rd4, %rd3;\n"
	"\t{\n\t.reg .b32 temp_param_reg;\n\t.param .b64 param0;\n"
	"\tst.param.b64 [param0+0], %rd4;\n\t.param .b64 param1;\n"
	"\tst.param.b64 [param1+0], %rd1;\n\t.param .b32 retval0;\n"
	"\tcall.uni (retval0), vprintf, (param0, param1);\n"
	"\tld.param.b32 %r5, [retval0+0];\n\t}\n$L__BB0_2:\n\tret;\n}\n";

static CUfunction fn;

static CUresult print_u32(unsigned v)
{
	void *args[] = { &v };
	CUresult rc = cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);

	return rc ? rc : cuCtxSynchronize();
}

int main(int argc, char **argv)
{
	const char *go = argc == 3 && !strcmp(argv[1], "hold") ? argv[2] : NULL;
	char path[] = "/tmp/vgpu-printf.XXXXXX", buf[256];
	CUmodule mod;
	CUcontext ctx;
	CUdevice dev;
	CUresult rc;
	ssize_t n;
	int file, saved;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuModuleLoadData(&mod, print_ptx));
	MUST(cuModuleGetFunction(&fn, mod, "vgpu_print_u32"));

	rc = print_u32(1);
	expect(!rc, "a kernel prints to the first stdout", rc);

	file = mkstemp(path);
	saved = dup(STDOUT_FILENO);
	if (file < 0 || saved < 0)
		return 2;
	fflush(stdout);
	dup2(file, STDOUT_FILENO);
	rc = print_u32(2);
	if (go) {
		fprintf(stderr, "ready\n");
		for (int i = 0; i < 1200 && access(go, F_OK); i++)
			usleep(100000);
		if (!rc)
			rc = print_u32(4);
	}
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	expect(!rc, "a kernel prints while fd 1 is a file", rc);

	rc = print_u32(3);
	expect(!rc, "a kernel prints after fd 1 came back", rc);

	n = pread(file, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	close(file);
	unlink(path);
	expect(!strcmp(buf, go ? "vgpu_print_u32: 2\nvgpu_print_u32: 4\n" : "vgpu_print_u32: 2\n"),
	       "the file holds what was printed while it was fd 1, and only that", CUDA_SUCCESS);
	if (strcmp(buf, go ? "vgpu_print_u32: 2\nvgpu_print_u32: 4\n" : "vgpu_print_u32: 2\n"))
		fprintf(stderr, "printf_driver: the file holds \"%s\"\n", buf);
	MUST(cuModuleUnload(mod));
	return checks_done("printf_driver");
}
