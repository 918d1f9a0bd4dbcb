// SPDX-License-Identifier: MIT
/*
 * ToolsModule {6e163fbe-b958-444d-835c-e182aff1991e} (raw bytes), 0x318
 * bytes: a size word and 98 functions for tools about modules and their
 * functions. cuFFT asks for it to find the kernel of a module it JIT-
 * compiled. The driver leaves slot 93 NULL; here it is a stub like every
 * slot not emulated.
 *
 *   [7]  iterate(ctx, module, callback, user) -> the number of functions
 *        Seen (tools/dark-trace, H100, driver 580.159, CuPy's cuFFT): called
 *        with the current context, a one-function module, a callback in
 *        libcufft and a pointer to a stack slot; the driver returned 1 and
 *        the callback had stored the function handle through the user
 *        pointer. tests/e2e/tables_driver on the same driver: a module of
 *        three kernels, the driver calls callback(user, function, ...) once
 *        for each, with the handles cuModuleGetFunction gives, and returns 3.
 *        The callback's third argument is not known (another project passes
 *        a word of the driver's function object, probably its module): the
 *        module here.
 *   [33] parameter count (function, size_t *count), from the public
 *        cuFuncGetParamInfo (TensorRT-Preempt / XSched name it; the 580
 *        driver answers 3 for a kernel of 3, tests/e2e/tables_driver).
 *   [34] parameter info (function, index, info *): the info layout is not
 *        known; a stub.
 *   [20], [21], [22] debugger parameters of a function: stubs.
 */
#include "dark_api.h"
#include "log.h"

#include <stdlib.h>

/* Far more than a kernel can take (4 KiB of parameters, at least 1 byte each
 * but for the empty ones, which the driver does not list). */
#define MAX_PARAMS 32768

typedef void (*function_visitor)(void *user, CUfunction f, CUmodule mod);

/* [7] */
static CUresult module_iterate(CUcontext ctx, CUmodule mod, function_visitor visit, void *user)
{
	CUfunction *fs;
	unsigned int n = 0;
	CUresult rc;

	(void)ctx;	/* the module knows its context */
	if (!visit)
		return CUDA_ERROR_INVALID_VALUE;
	rc = cuModuleGetFunctionCount(&n, mod);
	if (rc || !n)
		return rc;
	fs = calloc(n, sizeof(*fs));
	if (!fs)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = cuModuleEnumerateFunctions(fs, n, mod);
	if (!rc)
		for (unsigned int i = 0; i < n; i++)
			visit(user, fs[i], mod);
	free(fs);
	vlog_debug("dark API: ToolsModule[7] module %p: %u functions (%d)", (void *)mod, n, rc);
	return rc ? rc : (CUresult)n;
}

/* [33] */
static CUresult module_param_count(CUfunction f, size_t *count)
{
	size_t n = 0, off;
	CUresult rc;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	while ((rc = cuFuncGetParamInfo(f, n, &off, NULL)) == CUDA_SUCCESS && n < MAX_PARAMS)
		n++;
	/* INVALID_VALUE: past the last parameter; anything else: a bad handle. */
	if (rc != CUDA_ERROR_INVALID_VALUE && rc != CUDA_SUCCESS)
		return rc;
	*count = n;
	return CUDA_SUCCESS;
}

VGPU_DARK_TABLE(TOOLS_MODULE,
	[7] = (const void *)module_iterate,
	[33] = (const void *)module_param_count)
