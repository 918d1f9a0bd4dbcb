// SPDX-License-Identifier: MIT
/*
 * cuGetExportTable and the small dark-API tables.
 *
 * Every table is an array of pointer-sized slots. Most begin with their own
 * size in bytes (slot 0); CONTEXT_LOCAL_STORAGE does not. Slots whose
 * meaning is known are emulated here or in dark_cls.c / dark_integrity.c;
 * every other slot points at a stub that logs "table[slot]" (once) and
 * returns CUDA_ERROR_NOT_SUPPORTED. An unknown table id is logged and answered with
 * CUDA_ERROR_INVALID_VALUE and a NULL table, as the real driver does.
 *
 * Slot meanings come from the ZLUDA project's reverse engineering and were
 * checked against the CUDA 13.0 static runtime with a scratch driver that
 * logs every call (see the discovery notes in the commit message).
 */
#include "dark_api.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define UUID(...) { .bytes = { __VA_ARGS__ } }

/* Which stubs have said so already: a library may call one in a loop. */
static unsigned char stub_logged[VGPU_DARK_NTABLES][VGPU_DARK_MAX_SLOTS];

CUresult vgpu_dark_unemulated(enum vgpu_dark_table table, unsigned slot)
{
	if ((unsigned)table >= VGPU_DARK_NTABLES || slot >= VGPU_DARK_MAX_SLOTS)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (!__atomic_exchange_n(&stub_logged[table][slot], 1, __ATOMIC_RELAXED))
		vlog_warn("dark API: call into unemulated slot %s[%u]; returning "
			  "CUDA_ERROR_NOT_SUPPORTED (said once)", vgpu_dark_tables[table].name, slot);
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- CUDART_INTERFACE {6bd5fb6c-5bf4-e74a-8987-d93912fd9df9} ----------- */

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

/* [6] and [8]: as [1], with three extra arguments that must be empty. */
static CUresult module_from_cubin_ext(unsigned slot, CUmodule *module, const void *image,
				      void *arg3, void *arg4, unsigned arg5)
{
	vlog_debug("dark API: CUDART_INTERFACE[%u] module from %p", slot, image);
	if (arg3 || arg4 || arg5) {
		vlog_warn("dark API: CUDART_INTERFACE[%u] with extra arguments %p %p %u", slot,
			  arg3, arg4, arg5);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return load_module_image(module, image);
}

static CUresult cudart_module_from_cubin_ext1(CUmodule *module, const void *wrapper,
					      void *arg3, void *arg4, unsigned arg5)
{
	return module_from_cubin_ext(6, module, wrapper, arg3, arg4, arg5);
}

/* [8]: image first; it may be a wrapper or a bare fatbin. */
static CUresult cudart_module_from_cubin_ext2(const void *image, CUmodule *module,
					      void *arg3, void *arg4, unsigned arg5)
{
	return module_from_cubin_ext(8, module, image, arg3, arg4, arg5);
}

/* [12] "load compilers" (PTX JIT, nvvm, tileir): the daemon has its own. */
static CUresult cudart_load_compilers(void)
{
	vlog_debug("dark API: CUDART_INTERFACE[12] load compilers");
	return CUDA_SUCCESS;
}

VGPU_DARK_TABLE(CUDART_INTERFACE,
	[1] = (const void *)cudart_module_from_cubin,
	[2] = (const void *)cudart_primary_ctx,
	[6] = (const void *)cudart_module_from_cubin_ext1,
	[8] = (const void *)cudart_module_from_cubin_ext2,
	[12] = (const void *)cudart_load_compilers)

/* ---- TOOLS_TLS {42d85a81-23f6-cb47-8298-f6e78a3aecdc} ------------------ */

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

VGPU_DARK_TABLE(TOOLS_TLS,
	[1] = (const void *)tools_tls_nothing,
	[2] = (const void *)tools_tls_current_ctx)

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS {a094798c-2e74-2e74-93f2-0800200c0a66} */

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

VGPU_DARK_TABLE(TOOLS_RUNTIME_CALLBACK_HOOKS,
	[2] = (const void *)hooks_get_buffer2,
	[6] = (const void *)hooks_get_buffer6)

/* ---- CTX_CREATE_BYPASS {0ca50b8c-1004-929a-89a7-d0df10e77286} ---------- */

/* [1] ctx_create_v2_bypass(pctx, flags, dev): no CUDA 13.0 library asks. */
VGPU_DARK_TABLE(CTX_CREATE_BYPASS)

/*
 * HEAP_ACCESS {195bcbf4-d67d-024a-acc5-1d29cea631ae} is not served: the
 * 580 driver answers CUDA_ERROR_INVALID_VALUE for it, so every library
 * copes without it, and serving it would only change their path.
 */

/* ---- DEVICE_EXTENDED_RT (ToolsDevice) {b10541e1-f7c7-c74a-9f64-f223be99f1e2} */

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

VGPU_DARK_TABLE(DEVICE_EXTENDED_RT,
	[13] = (const void *)devext_get_byte13)

/* ---- CONTEXT_CHECKS {263e8860-7cd2-6143-92f6-bbd5006dfa7e} -------------- */

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

VGPU_DARK_TABLE(CONTEXT_CHECKS,
	[2] = (const void *)checks_context,
	[3] = (const void *)checks_global)

/* ---- Lookup ------------------------------------------------------------ */

#define TABLE(t, header, ...)                                              \
	[VGPU_DARK_##t] = { #t, UUID(__VA_ARGS__), vgpu_dark_table_##t,      \
			    VGPU_DARK_##t##_SLOTS, header, vgpu_dark_stubs_##t }

const struct vgpu_dark_table_desc vgpu_dark_tables[VGPU_DARK_NTABLES] = {
	TABLE(CUDART_INTERFACE, 1, 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
	      0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9),
	TABLE(TOOLS_TLS, 1, 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
	      0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc),
	TABLE(TOOLS_RUNTIME_CALLBACK_HOOKS, 1, 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
	      0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66),
	TABLE(CONTEXT_LOCAL_STORAGE, 0, 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
	      0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93),
	TABLE(CTX_CREATE_BYPASS, 1, 0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a,
	      0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72, 0x86),
	/* ToolsDevice */
	TABLE(DEVICE_EXTENDED_RT, 1, 0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a,
	      0x9f, 0x64, 0xf2, 0x23, 0xbe, 0x99, 0xf1, 0xe2),
	TABLE(INTEGRITY_CHECK, 1, 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
	      0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2),
	TABLE(CONTEXT_CHECKS, 1, 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
	      0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e),
	TABLE(TOOLS_CONTEXT, 1, 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
	      0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2),
	TABLE(TOOLS_MODULE, 1, 0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d,
	      0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e),
	TABLE(TOOLS_MEMORY, 1, 0xbf, 0xdb, 0x43, 0x2d, 0xbf, 0x3c, 0x5a, 0x4a,
	      0x94, 0x5e, 0xb3, 0x40, 0x29, 0xe8, 0x1e, 0x75),
	TABLE(TOOLS_TRAP_HANDLER, 1, 0xcc, 0x52, 0x9e, 0x94, 0x5c, 0x4e, 0x9d, 0x46,
	      0x83, 0x7c, 0x96, 0x25, 0x86, 0x83, 0x34, 0xe4),
	TABLE(TOOLS_PUSH_BUFFER_HAL, 1, 0xa6, 0xb1, 0xff, 0x99, 0xec, 0xc4, 0xc9, 0x4f,
	      0x92, 0xf9, 0x19, 0x28, 0x66, 0x3d, 0x55, 0x85),
	TABLE(TOOLS_RM, 1, 0x14, 0x06, 0x18, 0x0d, 0x72, 0xd6, 0xcb, 0x47,
	      0xab, 0x6e, 0xb9, 0x63, 0xe5, 0x1b, 0xf4, 0xc6),
	TABLE(CLUSTER_PROTOTYPE, 1, 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
	      0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca),
	/* libnvrtc's and libnvJitLink's */
	TABLE(JIT, 1, 0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41,
	      0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33, 0xe3, 0x28),
};

static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
	for (unsigned t = 0; t < VGPU_DARK_NTABLES; t++) {
		const struct vgpu_dark_table_desc *d = &vgpu_dark_tables[t];

		for (unsigned i = d->size_header ? 1 : 0; i < d->nslots; i++)
			if (!d->slots[i])
				d->slots[i] = d->stubs[i];
	}
}

void vgpu_dark_tables_ready(void)
{
	pthread_once(&tables_once, fill_tables);
}

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
	vgpu_dark_tables_ready();
	for (unsigned i = 0; i < VGPU_DARK_NTABLES; i++) {
		if (!memcmp(vgpu_dark_tables[i].uuid.bytes, pExportTableId->bytes, 16)) {
			*ppExportTable = vgpu_dark_tables[i].slots;
			vlog_debug("dark API: export table %s", vgpu_dark_tables[i].name);
			return CUDA_SUCCESS;
		}
	}
	*ppExportTable = NULL;
	format_uuid(text, pExportTableId);
	/*
	 * Two tables the 580 driver serves are refused on purpose, and said
	 * quietly: cudart asks for f8cff951-2146-8b4e-b9e2-fb469e7c0dd9 at every
	 * start (the driver's has 3 slots; served, cudart would take an init path
	 * whose slots nobody knows) and copes without it; NVML asks for
	 * 69a28e9f-2449-8b47-b030-c5da330ea4e9 (34 slots) at nvmlInit and copes
	 * without it, while a stub there would be wrong: its slot 21 returns a
	 * pointer (traced under PyTorch), which an error code would become.
	 */
	if (!memcmp(pExportTableId->bytes, "\xf8\xcf\xf9\x51", 4))
		vlog_info("dark API: export table %s not served (cudart does without it)", text);
	else if (!memcmp(pExportTableId->bytes, "\x69\xa2\x8e\x9f", 4))
		vlog_info("dark API: export table %s not served (NVML does without it)", text);
	else if (!memcmp(pExportTableId->bytes, "\x19\x5b\xcb\xf4", 4))
		vlog_info("dark API: export table %s (HEAP_ACCESS) not served, as by the driver",
			  text);
	else
		vlog_warn("dark API: unknown export table %s (raw bytes); returning CUDA_ERROR_INVALID_VALUE",
			  text);
	return CUDA_ERROR_INVALID_VALUE;
}
