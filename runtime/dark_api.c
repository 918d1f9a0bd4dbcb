// SPDX-License-Identifier: MIT
/*
 * cuGetExportTable and the small dark-API tables.
 *
 * Every table is an array of pointer-sized slots. Most begin with their own
 * size in bytes (slot 0); CONTEXT_LOCAL_STORAGE does not. Slots whose
 * meaning is known are emulated here or in dark_cls.c / dark_integrity.c;
 * every other slot points at a stub that logs "table[slot]" and returns
 * CUDA_ERROR_NOT_SUPPORTED. An unknown table id is logged and answered with
 * CUDA_ERROR_INVALID_VALUE and a NULL table, as the real driver does.
 *
 * Slot meanings come from the ZLUDA project's reverse engineering and were
 * checked against the CUDA 13.0 static runtime with a scratch driver that
 * logs every call (see the discovery notes in the commit message).
 */
#include "dark_api.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define UUID(...) { .bytes = { __VA_ARGS__ } }

CUresult vgpu_dark_unemulated(enum vgpu_dark_table table, unsigned slot)
{
	const char *name = (unsigned)table < VGPU_DARK_NTABLES ?
				   vgpu_dark_tables[table].name : "?";

	vlog_warn("dark API: call into unemulated slot %s[%u]; returning CUDA_ERROR_NOT_SUPPORTED",
		  name, slot);
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- CUDART_INTERFACE {6bd5fb6c-5bf4-e74a-8987-d93912fd9df9} ----------- */

#define CUDART_SLOTS 13

#define FATBINC_MAGIC 0x466243b1u /* __fatBinC_Wrapper_t */
#define FATBIN_MAGIC 0xba55ed50u  /* fatbin container header */

struct fatbinc_wrapper {
	uint32_t magic;
	uint32_t version;
	const void *data;
	const void *filename_or_fatbins;
};

/* Loads the image behind a fatbinC wrapper (or a bare fatbin/cubin/PTX). */
static CUresult load_module_image(CUmodule *module, const void *image)
{
	uint32_t magic;

	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&magic, image, sizeof(magic));
	if (magic == FATBINC_MAGIC) {
		const struct fatbinc_wrapper *w = image;

		image = w->data;
		if (!image)
			return CUDA_ERROR_INVALID_IMAGE;
		memcpy(&magic, image, sizeof(magic));
	}
	if (magic == FATBIN_MAGIC)
		return cuModuleLoadFatBinary(module, image);
	return cuModuleLoadData(module, image);
}

/* [1] module from a fatbinC wrapper (old runtimes, eager loading). */
static CUresult cudart_module_from_cubin(CUmodule *module, const void *wrapper)
{
	vlog_debug("dark API: CUDART_INTERFACE[1] module from %p", wrapper);
	return load_module_image(module, wrapper);
}

/* [2] the device's primary context, neither retained nor activated. */
static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev)
{
	vlog_debug("dark API: CUDART_INTERFACE[2] primary context of device %d", (int)dev);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	return vgpu_primary_ctx_peek(dev, pctx);
}

/* [6] as [1], with three extra arguments that must be empty. */
static CUresult cudart_module_from_cubin_ext1(CUmodule *module, const void *wrapper,
					      void *arg3, void *arg4, unsigned arg5)
{
	vlog_debug("dark API: CUDART_INTERFACE[6] module from %p", wrapper);
	if (arg3 || arg4 || arg5) {
		vlog_warn("dark API: CUDART_INTERFACE[6] with extra arguments %p %p %u",
			  arg3, arg4, arg5);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return load_module_image(module, wrapper);
}

/* [8] as [1], image first; it may be a wrapper or a bare fatbin. */
static CUresult cudart_module_from_cubin_ext2(const void *image, CUmodule *module,
					      void *arg3, void *arg4, unsigned arg5)
{
	vlog_debug("dark API: CUDART_INTERFACE[8] module from %p", image);
	if (arg3 || arg4 || arg5) {
		vlog_warn("dark API: CUDART_INTERFACE[8] with extra arguments %p %p %u",
			  arg3, arg4, arg5);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return load_module_image(module, image);
}

/* [12] "load compilers" (PTX JIT, nvvm, tileir): the daemon has its own. */
static CUresult cudart_load_compilers(void)
{
	vlog_debug("dark API: CUDART_INTERFACE[12] load compilers");
	return CUDA_SUCCESS;
}

VGPU_DARK_STUB(CUDART_INTERFACE, 3)
VGPU_DARK_STUB(CUDART_INTERFACE, 4)
VGPU_DARK_STUB(CUDART_INTERFACE, 5)
VGPU_DARK_STUB(CUDART_INTERFACE, 7)
VGPU_DARK_STUB(CUDART_INTERFACE, 9)
VGPU_DARK_STUB(CUDART_INTERFACE, 10)
VGPU_DARK_STUB(CUDART_INTERFACE, 11)

static const void *const cudart_interface[CUDART_SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(CUDART_SLOTS),
	[1] = (const void *)cudart_module_from_cubin,
	[2] = (const void *)cudart_primary_ctx,
	VGPU_DARK_SLOT_STUB(CUDART_INTERFACE, 3),
	VGPU_DARK_SLOT_STUB(CUDART_INTERFACE, 4),
	VGPU_DARK_SLOT_STUB(CUDART_INTERFACE, 5),
	[6] = (const void *)cudart_module_from_cubin_ext1,
	VGPU_DARK_SLOT_STUB(CUDART_INTERFACE, 7),
	[8] = (const void *)cudart_module_from_cubin_ext2,
	VGPU_DARK_SLOT_STUB(CUDART_INTERFACE, 9),
	VGPU_DARK_SLOT_STUB(CUDART_INTERFACE, 10),
	VGPU_DARK_SLOT_STUB(CUDART_INTERFACE, 11),
	[12] = (const void *)cudart_load_compilers,
};

/* ---- TOOLS_TLS {42d85a81-23f6-cb47-8298-f6e78a3aecdc} ------------------ */

#define TOOLS_TLS_SLOTS 3	/* the real table's length (0x18) */

/*
 * Per-thread state of profiling tools. A trace of the real table under
 * cuBLAS 13 (tools/dark-trace, H100, driver 580) shows slot 2 called as
 * (CUcontext *out, kind, ...) around every GEMM: it stores the calling
 * thread's current context in *out, whatever the kind, and returns 0.
 * cuBLAS then hands that context to ToolsContext, so an unset *out fails
 * the GEMM. Slot 1 was never seen called: it succeeds and does nothing.
 */
static CUresult tools_tls_nothing(void)
{
	return CUDA_SUCCESS;
}

static CUresult tools_tls_current_ctx(CUcontext *out)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (cuCtxGetCurrent(out) != CUDA_SUCCESS)
		*out = NULL;
	return CUDA_SUCCESS;
}

static const void *const tools_tls[TOOLS_TLS_SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(TOOLS_TLS_SLOTS),
	[1] = (const void *)tools_tls_nothing,
	[2] = (const void *)tools_tls_current_ctx,
};

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS {a094798c-2e74-2e74-93f2-0800200c0a66} */

#define HOOKS_SLOTS 7

/*
 * [2] and [6] hand the runtime a writable buffer and its size; the runtime
 * stores its callback state there. Zeroed means "no tool attached".
 */
static uint64_t hooks_buffer2[1024] __attribute__((aligned(64)));
static uint64_t hooks_buffer6[16] __attribute__((aligned(64)));

static void hooks_get_buffer2(void **ptr, size_t *size)
{
	vlog_debug("dark API: TOOLS_RUNTIME_CALLBACK_HOOKS[2]");
	if (ptr)
		*ptr = hooks_buffer2;
	if (size)
		*size = 1024;
}

static void hooks_get_buffer6(void **ptr, size_t *size)
{
	vlog_debug("dark API: TOOLS_RUNTIME_CALLBACK_HOOKS[6]");
	if (ptr)
		*ptr = hooks_buffer6;
	if (size)
		*size = 14;
}

VGPU_DARK_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 1)
VGPU_DARK_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 3)
VGPU_DARK_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 4)
VGPU_DARK_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 5)

static const void *const tools_runtime_callback_hooks[HOOKS_SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(HOOKS_SLOTS),
	VGPU_DARK_SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 1),
	[2] = (const void *)hooks_get_buffer2,
	VGPU_DARK_SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 3),
	VGPU_DARK_SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 4),
	VGPU_DARK_SLOT_STUB(TOOLS_RUNTIME_CALLBACK_HOOKS, 5),
	[6] = (const void *)hooks_get_buffer6,
};

/* ---- CTX_CREATE_BYPASS {0ca50b8c-1004-929a-89a7-d0df10e77286} ---------- */

#define BYPASS_SLOTS 2

/* [1] ctx_create_v2_bypass(pctx, flags, dev): no CUDA 13.0 library asks. */
VGPU_DARK_STUB(CTX_CREATE_BYPASS, 1)

static const void *const ctx_create_bypass[BYPASS_SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(BYPASS_SLOTS),
	VGPU_DARK_SLOT_STUB(CTX_CREATE_BYPASS, 1),
};

/* ---- HEAP_ACCESS {195bcbf4-d67d-024a-acc5-1d29cea631ae} ----------------- */

#define HEAP_SLOTS 3

/* [1] heap_alloc, [2] heap_free: no CUDA 13.0 library asks. */
VGPU_DARK_STUB(HEAP_ACCESS, 1)
VGPU_DARK_STUB(HEAP_ACCESS, 2)

static const void *const heap_access[HEAP_SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(HEAP_SLOTS),
	VGPU_DARK_SLOT_STUB(HEAP_ACCESS, 1),
	VGPU_DARK_SLOT_STUB(HEAP_ACCESS, 2),
};

/* ---- DEVICE_EXTENDED_RT (ToolsDevice) {b10541e1-f7c7-c74a-9f64-f223be99f1e2} */

#define DEVEXT_SLOTS 26

/* [13] one byte per device, 0 on every GPU observed. */
static CUresult devext_get_byte13(unsigned char *result, CUdevice dev)
{
	vlog_debug("dark API: DEVICE_EXTENDED_RT[13] device %d", (int)dev);
	if (!result)
		return CUDA_ERROR_INVALID_VALUE;
	*result = 0;
	return CUDA_SUCCESS;
}

/* [5] is an extended attribute query of unknown encoding: left a stub. */
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 1)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 2)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 3)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 4)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 5)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 6)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 7)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 8)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 9)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 10)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 11)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 12)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 14)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 15)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 16)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 17)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 18)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 19)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 20)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 21)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 22)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 23)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 24)
VGPU_DARK_STUB(DEVICE_EXTENDED_RT, 25)

static const void *const device_extended_rt[DEVEXT_SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(DEVEXT_SLOTS),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 1),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 2),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 3),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 4),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 5),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 6),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 7),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 8),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 9),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 10),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 11),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 12),
	[13] = (const void *)devext_get_byte13,
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 14),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 15),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 16),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 17),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 18),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 19),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 20),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 21),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 22),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 23),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 24),
	VGPU_DARK_SLOT_STUB(DEVICE_EXTENDED_RT, 25),
};

/* ---- CONTEXT_CHECKS {263e8860-7cd2-6143-92f6-bbd5006dfa7e} -------------- */

#define CHECKS_SLOTS 4

/*
 * [2] context_check(ctx, &flags, &detail): is ctx a wrapped/special context?
 * Never for us: flags 0.
 */
static CUresult checks_context(CUcontext ctx, uint32_t *flags, const void **detail)
{
	vlog_debug("dark API: CONTEXT_CHECKS[2] ctx %p", (void *)ctx);
	if (flags)
		*flags = 0;
	if (detail)
		*detail = NULL;
	return CUDA_SUCCESS;
}

/* [3] a global check bit, 0 on every driver observed. */
static uint32_t checks_global(void)
{
	vlog_debug("dark API: CONTEXT_CHECKS[3]");
	return 0;
}

VGPU_DARK_STUB(CONTEXT_CHECKS, 1)

static const void *const context_checks[CHECKS_SLOTS] = {
	[0] = VGPU_DARK_SIZE_HEADER(CHECKS_SLOTS),
	VGPU_DARK_SLOT_STUB(CONTEXT_CHECKS, 1),
	[2] = (const void *)checks_context,
	[3] = (const void *)checks_global,
};

/* ---- Lookup ------------------------------------------------------------ */

const struct vgpu_dark_table_desc vgpu_dark_tables[VGPU_DARK_NTABLES] = {
	[VGPU_DARK_CUDART_INTERFACE] = {
		"CUDART_INTERFACE",
		UUID(0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
		     0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9),
		cudart_interface, CUDART_SLOTS, 1 },
	[VGPU_DARK_TOOLS_TLS] = {
		"TOOLS_TLS",
		UUID(0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
		     0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc),
		tools_tls, TOOLS_TLS_SLOTS, 1 },
	[VGPU_DARK_TOOLS_RUNTIME_CALLBACK_HOOKS] = {
		"TOOLS_RUNTIME_CALLBACK_HOOKS",
		UUID(0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
		     0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66),
		tools_runtime_callback_hooks, HOOKS_SLOTS, 1 },
	[VGPU_DARK_CONTEXT_LOCAL_STORAGE] = {
		"CONTEXT_LOCAL_STORAGE",
		UUID(0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
		     0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93),
		vgpu_dark_cls_table, VGPU_DARK_CLS_SLOTS, 0 },
	[VGPU_DARK_CTX_CREATE_BYPASS] = {
		"CTX_CREATE_BYPASS",
		UUID(0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a,
		     0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72, 0x86),
		ctx_create_bypass, BYPASS_SLOTS, 1 },
	[VGPU_DARK_HEAP_ACCESS] = {
		"HEAP_ACCESS",
		UUID(0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a,
		     0xac, 0xc5, 0x1d, 0x29, 0xce, 0xa6, 0x31, 0xae),
		heap_access, HEAP_SLOTS, 1 },
	[VGPU_DARK_DEVICE_EXTENDED_RT] = {
		"DEVICE_EXTENDED_RT",
		UUID(0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a,
		     0x9f, 0x64, 0xf2, 0x23, 0xbe, 0x99, 0xf1, 0xe2),
		device_extended_rt, DEVEXT_SLOTS, 1 },
	[VGPU_DARK_INTEGRITY_CHECK] = {
		"INTEGRITY_CHECK",
		UUID(0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
		     0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2),
		vgpu_dark_integrity_table, VGPU_DARK_INTEGRITY_SLOTS, 1 },
	[VGPU_DARK_CONTEXT_CHECKS] = {
		"CONTEXT_CHECKS",
		UUID(0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
		     0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e),
		context_checks, CHECKS_SLOTS, 1 },
	[VGPU_DARK_TOOLS_CONTEXT] = {
		"TOOLS_CONTEXT",
		UUID(0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
		     0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2),
		vgpu_dark_tools_context_table, VGPU_DARK_TOOLS_CONTEXT_SLOTS, 1 },
};

static void format_uuid(char out[37], const CUuuid *id)
{
	const unsigned char *b = (const unsigned char *)id->bytes;

	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
}

VGPU_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	char text[37];

	if (!ppExportTable || !pExportTableId) {
		if (ppExportTable)
			*ppExportTable = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (unsigned i = 0; i < VGPU_DARK_NTABLES; i++) {
		if (!memcmp(vgpu_dark_tables[i].uuid.bytes, pExportTableId->bytes, 16)) {
			*ppExportTable = vgpu_dark_tables[i].slots;
			vlog_debug("dark API: export table %s", vgpu_dark_tables[i].name);
			return CUDA_SUCCESS;
		}
	}
	*ppExportTable = NULL;
	format_uuid(text, pExportTableId);
	/* cudart asks for f8cff951-... at every start and copes without it;
	 * only tables nobody has seen yet deserve the user's attention. */
	if (!memcmp(pExportTableId->bytes, "\xf8\xcf\xf9\x51", 4))
		vlog_info("dark API: export table %s not served (cudart does without it)", text);
	else
		vlog_warn("dark API: unknown export table %s (raw bytes); returning CUDA_ERROR_INVALID_VALUE",
			  text);
	return CUDA_ERROR_INVALID_VALUE;
}
