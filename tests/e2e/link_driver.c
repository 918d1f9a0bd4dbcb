// SPDX-License-Identifier: MIT
/*
 * The JIT linker through the driver API: a kernel in one PTX input calls a
 * function defined in another (given as a file); the linked image loads,
 * the kernel runs and writes what it was given. Logs and wall time come
 * back into the program's buffers; bad input is refused. Runs on the host
 * backend too (it links PTX inputs into one PTX image and emulates
 * vgpu_poke_u32 by name).
 *
 * The driver's answers (580, an H100) are the rule: a state that is no
 * link state crashes the driver (it frees what it is given), so vgpu's
 * refusal of one is checked under vgpu only, on stderr.
 *
 * One line per check on stdout, nothing that depends on the backend (log
 * texts and times are not printed); exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

static const char caller[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".extern .func (.param .b32 r) vgpu_link_same(.param .b32 x);\n"
	".visible .entry vgpu_poke_u32(.param .u64 p, .param .u32 v)\n{\n"
	"\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n"
	"\tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [v];\n"
	"\t{\n\t.param .b32 a;\n\tst.param.b32 [a], %r1;\n\t.param .b32 r;\n"
	"\tcall.uni (r), vgpu_link_same, (a);\n\tld.param.b32 %r2, [r];\n\t}\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n\tst.global.u32 [%rd2], %r2;\n\tret;\n}\n";

static const char callee[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .func (.param .b32 r) vgpu_link_same(.param .b32 x)\n{\n"
	"\t.reg .b32 %r<2>;\n\tld.param.b32 %r1, [x];\n\tst.param.b32 [r], %r1;\n\tret;\n}\n";

static char info[4096], errlog[4096];

static CUresult create(CUlinkState *st, void **values)
{
	CUjit_option opts[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
				CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
				CU_JIT_WALL_TIME, CU_JIT_OPTIMIZATION_LEVEL };

	values[0] = info;
	values[1] = (void *)(uintptr_t)sizeof(info);
	values[2] = errlog;
	values[3] = (void *)(uintptr_t)sizeof(errlog);
	values[4] = NULL;
	values[5] = (void *)(uintptr_t)3;
	memset(info, 0x7f, sizeof(info));
	memset(errlog, 0x7f, sizeof(errlog));
	return cuLinkCreate(6, opts, values, st);
}

static void link_and_run(const char *callee_path)
{
	void *values[6], *cubin = NULL;
	CUlinkState st = NULL;
	CUdeviceptr d = 0;
	CUmodule mod = NULL;
	CUfunction f = NULL;
	uint32_t v = 0x5eed1234, got = 0;
	size_t size = 0;
	float wall = -1;
	CUresult rc;

	rc = create(&st, values);
	expect(!rc && st, "a link state is created with log buffers", rc);
	rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)caller, strlen(caller), "caller.ptx", 0,
			   NULL, NULL);
	expect(!rc, "PTX without its NUL is added from memory", rc);
	rc = cuLinkAddFile(st, CU_JIT_INPUT_PTX, callee_path, 0, NULL, NULL);
	expect(!rc, "PTX is added from a file", rc);
	rc = cuLinkComplete(st, &cubin, &size);
	expect(!rc && cubin && size, "the link completes with an image", rc);
	memcpy(&wall, &values[4], sizeof(wall));
	expect(!rc && wall >= 0, "the wall time is given back", rc);
	expect(!rc && memchr(info, 0, sizeof(info)) && memchr(errlog, 0, sizeof(errlog)),
	       "both logs are NUL-terminated strings", rc);
	if (!rc)
		rc = cuModuleLoadData(&mod, cubin);
	expect(!rc, "the linked image loads", rc);
	if (!rc)
		rc = cuModuleGetFunction(&f, mod, "vgpu_poke_u32");
	expect(!rc, "its kernel is found", rc);
	if (!rc)
		rc = cuMemAlloc(&d, 4);
	if (!rc) {
		void *args[] = { &d, &v };

		rc = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
	}
	if (!rc)
		rc = cuMemcpyDtoH(&got, d, 4);
	expect(!rc && got == v, "the kernel runs and writes through the linked function", rc);
	if (d)
		cuMemFree(d);
	if (mod)
		cuModuleUnload(mod);
	rc = cuLinkDestroy(st);
	expect(!rc, "the link state is destroyed", rc);
}

static void bad_input(void)
{
	static const char broken[] = ".target sm_90\n.visible .entry broken()\n{\n\tret;\n}\n";
	void *values[6], *cubin = NULL;
	CUlinkState st = NULL;
	size_t size = 0;
	uint64_t junk[4] = { 0 };
	CUresult rc;

	rc = cuLinkCreate(0, NULL, NULL, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a link state with nowhere to go is refused", rc);
	rc = create(&st, values);
	expect(!rc, "another link state", rc);
	rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, NULL, 10, "none", 0, NULL, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an input without data is refused", rc);
	rc = cuLinkAddFile(st, CU_JIT_INPUT_PTX, "/nonexistent/vgpu-link.ptx", 0, NULL, NULL);
	expect(rc == CUDA_ERROR_FILE_NOT_FOUND, "a missing file is refused", rc);
	rc = cuLinkComplete(st, NULL, &size);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "completing with nowhere to put the image", rc);
	rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)callee, 0, "empty", 0, NULL, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an input of 0 bytes is refused", rc);
	rc = cuLinkAddFile(st, CU_JIT_INPUT_PTX, NULL, 0, NULL, NULL);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an input without a path is refused", rc);
	rc = cuLinkAddData(NULL, CU_JIT_INPUT_PTX, (void *)callee, sizeof(callee), "a", 0, NULL,
			   NULL);
	expect(rc == CUDA_ERROR_INVALID_HANDLE, "an input to no link state is refused", rc);
	rc = cuLinkComplete(NULL, &cubin, &size);
	expect(rc == CUDA_ERROR_INVALID_HANDLE, "completing no link state is refused", rc);
	rc = cuLinkDestroy(NULL);
	expect(rc == CUDA_ERROR_INVALID_HANDLE, "destroying no link state is refused", rc);
	rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)broken, sizeof(broken), "broken.ptx", 0,
			   NULL, NULL);
	if (!rc)	/* vgpu compiles at cuLinkComplete; the driver at once */
		rc = cuLinkComplete(st, &cubin, &size);
	expect(rc != CUDA_SUCCESS, "PTX without a .version fails the link", rc);
	cuLinkDestroy(st);

	rc = create(&st, values);
	if (!rc)
		rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)callee, sizeof(callee), "a", 0,
				   NULL, NULL);
	if (!rc)
		rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)caller, sizeof(caller), "b", 0,
				   NULL, NULL);
	if (!rc)
		rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)caller, sizeof(caller), "c", 0,
				   NULL, NULL);
	if (!rc)
		rc = cuLinkComplete(st, &cubin, &size);
	expect(rc != CUDA_SUCCESS, "a kernel defined twice fails the link", rc);
	cuLinkDestroy(st);

	/* No size pointer: the driver links all the same. */
	rc = create(&st, values);
	if (!rc)
		rc = cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)callee, sizeof(callee), "a", 0,
				   NULL, NULL);
	cubin = NULL;
	if (!rc)
		rc = cuLinkComplete(st, &cubin, NULL);
	expect(!rc && cubin, "completing without a size pointer", rc);
	cuLinkDestroy(st);

	if (!under_vgpu())	/* the driver crashes on these */
		return;

	rc = cuLinkComplete((CUlinkState)junk, &cubin, &size);
	expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "completing a bogus link state", rc);
	rc = cuLinkDestroy((CUlinkState)junk);
	expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "destroying a bogus link state", rc);
}

int main(void)
{
	char path[] = "/tmp/vgpu-link-XXXXXX";
	CUcontext ctx;
	CUdevice dev;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* a crash shows where */
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx)) {
		printf("FATAL setup\n");
		return 1;
	}
	fd = mkstemp(path);
	if (fd < 0 || write(fd, callee, strlen(callee)) != (ssize_t)strlen(callee)) {
		printf("FATAL setup (temporary file)\n");
		return 1;
	}
	close(fd);
	link_and_run(path);
	unlink(path);
	bad_input();
	return checks_done("link_driver");
}
