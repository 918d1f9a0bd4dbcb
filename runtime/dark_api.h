/* SPDX-License-Identifier: MIT */
/*
 * The driver's hidden export tables ("dark API", cuGetExportTable).
 *
 * The CUDA runtime (static libcudart, linked into every default nvcc build
 * and into cuBLAS, cuDNN, NCCL, ...) asks the driver for a handful of
 * undocumented function tables by 16-byte UUID. vgpu serves all of them in the
 * client: nothing here talks to the daemon directly; the slots call the
 * public driver entry points the rest of the runtime exports.
 *
 * Files:
 *   dark_api.c        the lookup, the small tables, unknown-slot stubs
 *   dark_cls.c        CONTEXT_LOCAL_STORAGE (cudart's per-context state)
 *   dark_integrity.c  INTEGRITY_CHECK (keyed hash cudart verifies)
 *
 * reference/interception.md §3 and §8 has the background.
 */
#ifndef VGPU_RUNTIME_DARK_API_H
#define VGPU_RUNTIME_DARK_API_H

#include "driver.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Provided by the rest of the runtime (the lead) ------------------- */

/*
 * The device's primary context handle, without retaining or activating it
 * (CUDART_INTERFACE slot 2). Returns CUDA_SUCCESS and a stable handle even
 * when the primary context is not active yet.
 */
extern CUresult vgpu_primary_ctx_peek(CUdevice dev, CUcontext *pctx);

/*
 * The public driver functions the slots call (cuCtxGetCurrent,
 * cuDeviceGetCount, cuDeviceGetUuid_v2, cuDeviceGetAttribute,
 * cuDriverGetVersion, cuModuleLoadData, cuModuleLoadFatBinary) are the
 * runtime's own exports, declared by <cuda.h>.
 */

/* ---- Provided here ----------------------------------------------------- */

VGPU_EXPORT CUresult cuGetExportTable(const void **ppExportTable,
				      const CUuuid *pExportTableId);

/*
 * Runs every context-local-storage destructor registered for ctx and drops
 * its entries. The runtime calls it when a context is destroyed
 * (cuCtxDestroy) and when a primary context is reset or released to zero
 * references. Thread-safe; destructors run without any lock held, on the
 * calling thread, in registration order.
 */
void vgpu_cls_context_destroyed(CUcontext ctx);

/* ---- Internal to the dark_*.c files and their unit test ---------------- */

/* One id per table we serve, in the order of vgpu_dark_tables[]. */
enum vgpu_dark_table {
	VGPU_DARK_CUDART_INTERFACE,
	VGPU_DARK_TOOLS_TLS,
	VGPU_DARK_TOOLS_RUNTIME_CALLBACK_HOOKS,
	VGPU_DARK_CONTEXT_LOCAL_STORAGE,
	VGPU_DARK_CTX_CREATE_BYPASS,
	VGPU_DARK_HEAP_ACCESS,
	VGPU_DARK_DEVICE_EXTENDED_RT,
	VGPU_DARK_INTEGRITY_CHECK,
	VGPU_DARK_CONTEXT_CHECKS,
	VGPU_DARK_TOOLS_CONTEXT,
	VGPU_DARK_NTABLES
};

struct vgpu_dark_table_desc {
	const char *name;
	CUuuid uuid;              /* raw bytes, as the caller passes them */
	const void *const *slots; /* what cuGetExportTable hands out */
	unsigned nslots;
	int size_header;          /* slot 0 holds nslots * sizeof(void *) */
};

extern const struct vgpu_dark_table_desc vgpu_dark_tables[VGPU_DARK_NTABLES];

/* Logs (table, slot) and returns CUDA_ERROR_NOT_SUPPORTED. */
CUresult vgpu_dark_unemulated(enum vgpu_dark_table table, unsigned slot);

/*
 * A slot we do not emulate still gets its own function, so a call into it
 * says which table and slot it was (never a NULL slot, never a silent
 * success). Arguments, whatever they are, are ignored.
 */
#define VGPU_DARK_STUB_NAME(t, i) vgpu_dark_stub_##t##_##i
#define VGPU_DARK_STUB(t, i)                                          \
	static CUresult VGPU_DARK_STUB_NAME(t, i)(void)               \
	{                                                             \
		return vgpu_dark_unemulated(VGPU_DARK_##t, i);        \
	}
#define VGPU_DARK_SLOT_STUB(t, i) [i] = (const void *)VGPU_DARK_STUB_NAME(t, i)

/* Slot 0 of most tables: the table's size in bytes. */
/* dark_tools.c: ToolsContext, which cuBLAS and cuFFT ask for. */
#define VGPU_DARK_TOOLS_CONTEXT_SLOTS 93	/* the driver's: 0x2e8 bytes */
extern const void *const vgpu_dark_tools_context_table[VGPU_DARK_TOOLS_CONTEXT_SLOTS];

#define VGPU_DARK_SIZE_HEADER(n) ((const void *)(uintptr_t)((n) * sizeof(void *)))

/* Slot counts (CUDA 13.0 drivers). */
#define VGPU_DARK_CLS_SLOTS 4
#define VGPU_DARK_INTEGRITY_SLOTS 3

/* dark_cls.c: the table (no size header: slot 0 is put). */
extern const void *const vgpu_dark_cls_table[VGPU_DARK_CLS_SLOTS];

typedef void (*vgpu_cls_dtor)(CUcontext ctx, void *key, void *value);

CUresult vgpu_cls_put(CUcontext ctx, void *key, void *value, vgpu_cls_dtor dtor);
CUresult vgpu_cls_delete(CUcontext ctx, void *key);
CUresult vgpu_cls_get(void **value, CUcontext ctx, void *key);

/* dark_integrity.c: the table and the hash behind slot 1. */
extern const void *const vgpu_dark_integrity_table[VGPU_DARK_INTEGRITY_SLOTS];

/* What the hash mixes in for each device (packed as the driver does). */
struct vgpu_dark_device_id {
	CUuuid uuid;
	int32_t pci_domain;
	int32_t pci_bus;
	int32_t pci_device;
};

/* All inputs of the integrity hash, so the unit test can fix them. */
struct vgpu_dark_integrity_input {
	uint32_t runtime_version;   /* the `version` argument */
	uint64_t unix_seconds;      /* the caller's time argument */
	uint32_t driver_version;    /* what cuDriverGetVersion reports */
	uint32_t pid;
	uint32_t tid;               /* low 32 bits of pthread_self() */
	const void *cudart_table;   /* CUDART_INTERFACE as handed out */
	const void *integrity_table;
	const void *check_fn;       /* INTEGRITY_CHECK slot 1 */
	unsigned ndevices;
	const struct vgpu_dark_device_id *devices;
};

void vgpu_dark_integrity_hash(const struct vgpu_dark_integrity_input *in,
			      uint64_t out[2]);

/* MD2 (RFC 1319), exposed for the unit test's known-answer vectors. */
void vgpu_dark_md2(const void *data, size_t len, uint8_t digest[16]);

#endif
