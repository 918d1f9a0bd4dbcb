// SPDX-License-Identifier: MIT
/*
 * ToolsContext {21318c60-9714-3248-8ca6-41ff7324c8f2}: per-context queries
 * meant for profilers, which cuBLAS also asks for before a GEMM (seen with
 * cuBLAS 13 on an H200: without the table every GEMM fails). What is known
 * of its slots (reference/interception.md §2, public probes of the real
 * table): [3] the context's device, [4] a context number, [39] a query
 * whose answer is 0 without a profiler, [51] an opaque per-context object. The table is as long as the driver's; every other
 * slot logs which one was called and fails.
 */
#include "dark_api.h"

#include <stdint.h>

#include "log.h"

#define SLOTS VGPU_DARK_TOOLS_CONTEXT_SLOTS

#define STUBS10(d)							\
	VGPU_DARK_STUB(TOOLS_CONTEXT, d##0) VGPU_DARK_STUB(TOOLS_CONTEXT, d##1)	\
	VGPU_DARK_STUB(TOOLS_CONTEXT, d##2) VGPU_DARK_STUB(TOOLS_CONTEXT, d##3)	\
	VGPU_DARK_STUB(TOOLS_CONTEXT, d##4) VGPU_DARK_STUB(TOOLS_CONTEXT, d##5)	\
	VGPU_DARK_STUB(TOOLS_CONTEXT, d##6) VGPU_DARK_STUB(TOOLS_CONTEXT, d##7)	\
	VGPU_DARK_STUB(TOOLS_CONTEXT, d##8) VGPU_DARK_STUB(TOOLS_CONTEXT, d##9)
#define SLOTS10(d)							\
	VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##0), VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##1), \
	VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##2), VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##3), \
	VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##4), VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##5), \
	VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##6), VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##7), \
	VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##8), VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, d##9)

#define STUB(i) VGPU_DARK_STUB(TOOLS_CONTEXT, i)
#define SLOT(i) VGPU_DARK_SLOT_STUB(TOOLS_CONTEXT, i)

STUB(1) STUB(2) STUB(5) STUB(6) STUB(7) STUB(8) STUB(9)
STUBS10(1) STUBS10(2) STUBS10(4)
STUB(30) STUB(31) STUB(32) STUB(33) STUB(34) STUB(35) STUB(36) STUB(37) STUB(38) STUBS10(6) STUBS10(7) STUBS10(8)
STUB(50) STUB(52) STUB(53) STUB(54) STUB(55) STUB(56) STUB(57) STUB(58) STUB(59)
STUB(90) STUB(91) STUB(92) STUB(93) STUB(94)

/* [3] the device of a context (NULL: the current one). */
static CUresult tools_ctx_device(CUcontext ctx, CUdevice *dev)
{
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	return cuCtxGetDevice_v2(dev, ctx);
}

/* [4] a number naming the context; the driver answers 0 for none. */
static CUresult tools_ctx_number(CUcontext ctx, uint64_t *out)
{
	unsigned long long id = 0;

	if (!out)
		return CUDA_ERROR_UNKNOWN;
	if (ctx && cuCtxGetId(ctx, &id) != CUDA_SUCCESS)
		id = 1;
	*out = ctx ? id : 0;
	return CUDA_SUCCESS;
}

/* [39] answered 0: nothing of a profiler's is attached to the context. */
static CUresult tools_ctx_query39(uint64_t a0, uint64_t a1, uint64_t *out)
{
	(void)a0;
	if (!a1 || !out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = 0;
	return CUDA_SUCCESS;
}

/* [51] an object the caller only passes back: zeroed, never read by us. */
static uint64_t tools_ctx_object[160];

static CUresult tools_ctx_get_object(uint64_t a0, uint64_t handle, uint64_t *out)
{
	(void)a0;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (handle == UINT64_MAX)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (uint64_t)(uintptr_t)tools_ctx_object;
	return CUDA_SUCCESS;
}

const void *const vgpu_dark_tools_context_table[SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(SLOTS),
	SLOT(1), SLOT(2),
	[3] = (const void *)tools_ctx_device,
	[4] = (const void *)tools_ctx_number,
	SLOT(5), SLOT(6), SLOT(7), SLOT(8), SLOT(9),
	SLOTS10(1), SLOTS10(2),
	SLOT(30), SLOT(31), SLOT(32), SLOT(33), SLOT(34), SLOT(35), SLOT(36), SLOT(37), SLOT(38),
	[39] = (const void *)tools_ctx_query39,
	SLOTS10(4),
	SLOT(50),
	[51] = (const void *)tools_ctx_get_object,
	SLOT(52), SLOT(53), SLOT(54), SLOT(55), SLOT(56), SLOT(57), SLOT(58), SLOT(59),
	SLOTS10(6), SLOTS10(7), SLOTS10(8),
	SLOT(90), SLOT(91), SLOT(92), SLOT(93), SLOT(94),
};
