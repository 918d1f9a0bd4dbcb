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
 * Every table served has the driver's own length (580.159) and no NULL
 * slot: a slot not emulated is a stub that logs "table[slot]" once and
 * fails. tests/gpu/export_tables.c checks the lengths against the driver.
 *
 * Files:
 *   dark_api.c        the lookup, the small tables, the stubs' logging
 *   dark_cls.c        CONTEXT_LOCAL_STORAGE (cudart's per-context state)
 *   dark_integrity.c  INTEGRITY_CHECK (keyed hash cudart verifies)
 *   dark_tools.c      ToolsContext (cuBLAS, cuFFT)
 *   dark_module.c     ToolsModule (cuFFT: a module's functions)
 *   dark_cluster.c    ClusterPrototype (cuBLASLt)
 *   dark_stubtables.c tables served with stubs only (ToolsMemory, ...)
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
 * ClusterPrototype[4]: the GPU's TPC-to-vGPC mapping, from the driver
 * behind the worker. Two arrays (malloc'd, the caller frees both), one byte
 * per TPC: the TPC's virtual GPC, and its index within that GPC.
 * CUDA_ERROR_NOT_SUPPORTED when no real driver is behind the daemon.
 */
extern CUresult vgpu_tpc_mapping(CUdevice dev, unsigned char **vgpc, unsigned char **mtpc);

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
	VGPU_DARK_DEVICE_EXTENDED_RT,
	VGPU_DARK_INTEGRITY_CHECK,
	VGPU_DARK_CONTEXT_CHECKS,
	VGPU_DARK_TOOLS_CONTEXT,
	VGPU_DARK_TOOLS_MODULE,
	VGPU_DARK_TOOLS_MEMORY,
	VGPU_DARK_TOOLS_TRAP_HANDLER,
	VGPU_DARK_TOOLS_PUSH_BUFFER_HAL,
	VGPU_DARK_TOOLS_RM,
	VGPU_DARK_CLUSTER_PROTOTYPE,
	VGPU_DARK_JIT,
	VGPU_DARK_NTABLES
};

/* More slots than the longest table has (ToolsModule: 99). */
#define VGPU_DARK_MAX_SLOTS 100

struct vgpu_dark_table_desc {
	const char *name;
	CUuuid uuid;              /* raw bytes, as the caller passes them */
	const void **slots;       /* what cuGetExportTable hands out */
	unsigned nslots;
	int size_header;          /* slot 0 holds nslots * sizeof(void *) */
	const void *const *stubs; /* VGPU_DARK_MAX_SLOTS logging stubs */
};

extern const struct vgpu_dark_table_desc vgpu_dark_tables[VGPU_DARK_NTABLES];

/*
 * Makes every table whole: each slot a table does not emulate gets the
 * table's stub for that slot. cuGetExportTable calls it before handing a
 * table out, so no slot is ever NULL. Idempotent and thread-safe.
 */
void vgpu_dark_tables_ready(void);

/*
 * What a slot we do not emulate does: logs "table[slot]" once per process
 * and returns CUDA_ERROR_NOT_SUPPORTED.
 */
CUresult vgpu_dark_unemulated(enum vgpu_dark_table table, unsigned slot);

/*
 * Every table gets a stub function per slot, so a call into a slot we do
 * not emulate says which table and slot it was (never a NULL slot, never a
 * silent success). Arguments, whatever they are, are ignored.
 * VGPU_DARK_DEFINE_STUBS(T) defines vgpu_dark_stubs_T[], for table
 * VGPU_DARK_T, in the file that defines the table.
 */
#define VGPU_DARK_STUB_FN(t, i)                                       \
	static CUresult vgpu_dark_stub_##t##_##i(void)                \
	{                                                             \
		return vgpu_dark_unemulated(VGPU_DARK_##t, i);        \
	}
#define VGPU_DARK_STUB_PTR(t, i) (const void *)vgpu_dark_stub_##t##_##i,
#define VGPU_DARK_REP10(M, t, d) M(t, d##0) M(t, d##1) M(t, d##2) M(t, d##3) M(t, d##4) \
	M(t, d##5) M(t, d##6) M(t, d##7) M(t, d##8) M(t, d##9)
#define VGPU_DARK_REP100(M, t) VGPU_DARK_REP10(M, t, ) VGPU_DARK_REP10(M, t, 1)         \
	VGPU_DARK_REP10(M, t, 2) VGPU_DARK_REP10(M, t, 3) VGPU_DARK_REP10(M, t, 4)      \
	VGPU_DARK_REP10(M, t, 5) VGPU_DARK_REP10(M, t, 6) VGPU_DARK_REP10(M, t, 7)      \
	VGPU_DARK_REP10(M, t, 8) VGPU_DARK_REP10(M, t, 9)
#define VGPU_DARK_DEFINE_STUBS(t)                                                       \
	VGPU_DARK_REP100(VGPU_DARK_STUB_FN, t)                                          \
	const void *const vgpu_dark_stubs_##t[VGPU_DARK_MAX_SLOTS] = {                  \
		VGPU_DARK_REP100(VGPU_DARK_STUB_PTR, t)                                 \
	};

#define VGPU_DARK_DECLARE_TABLE(t, n)                                                   \
	extern const void *vgpu_dark_table_##t[n];                                      \
	extern const void *const vgpu_dark_stubs_##t[VGPU_DARK_MAX_SLOTS];

/* Slot 0 of most tables: the table's size in bytes. */
#define VGPU_DARK_SIZE_HEADER(n) ((const void *)(uintptr_t)((n) * sizeof(void *)))

/*
 * Defines table t, VGPU_DARK_t_SLOTS long, and its stubs: slot 0 the
 * table's size, the slots given as `[i] = (const void *)fn`, and every
 * other slot its stub once vgpu_dark_tables_ready() has run.
 */
#define VGPU_DARK_TABLE(t, ...)                                                         \
	VGPU_DARK_DEFINE_STUBS(t)                                                       \
	const void *vgpu_dark_table_##t[VGPU_DARK_##t##_SLOTS] = {                      \
		[0] = VGPU_DARK_SIZE_HEADER(VGPU_DARK_##t##_SLOTS),                      \
		__VA_ARGS__                                                             \
	};

/*
 * Slot counts: the driver's own (580.159, reference/export_tables.md), but
 * context local storage, whose length the driver does not say.
 */
#define VGPU_DARK_CUDART_INTERFACE_SLOTS 13
#define VGPU_DARK_TOOLS_TLS_SLOTS 3
#define VGPU_DARK_TOOLS_RUNTIME_CALLBACK_HOOKS_SLOTS 7
#define VGPU_DARK_CONTEXT_LOCAL_STORAGE_SLOTS 4
#define VGPU_DARK_CTX_CREATE_BYPASS_SLOTS 2
#define VGPU_DARK_DEVICE_EXTENDED_RT_SLOTS 31
#define VGPU_DARK_INTEGRITY_CHECK_SLOTS 3
#define VGPU_DARK_CONTEXT_CHECKS_SLOTS 15
#define VGPU_DARK_TOOLS_CONTEXT_SLOTS 93
#define VGPU_DARK_TOOLS_MODULE_SLOTS 99
#define VGPU_DARK_TOOLS_MEMORY_SLOTS 60
#define VGPU_DARK_TOOLS_TRAP_HANDLER_SLOTS 23
#define VGPU_DARK_TOOLS_PUSH_BUFFER_HAL_SLOTS 32
#define VGPU_DARK_TOOLS_RM_SLOTS 44
#define VGPU_DARK_CLUSTER_PROTOTYPE_SLOTS 17
#define VGPU_DARK_JIT_SLOTS 7

VGPU_DARK_DECLARE_TABLE(CUDART_INTERFACE, VGPU_DARK_CUDART_INTERFACE_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_TLS, VGPU_DARK_TOOLS_TLS_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_RUNTIME_CALLBACK_HOOKS, VGPU_DARK_TOOLS_RUNTIME_CALLBACK_HOOKS_SLOTS)
VGPU_DARK_DECLARE_TABLE(CONTEXT_LOCAL_STORAGE, VGPU_DARK_CONTEXT_LOCAL_STORAGE_SLOTS)
VGPU_DARK_DECLARE_TABLE(CTX_CREATE_BYPASS, VGPU_DARK_CTX_CREATE_BYPASS_SLOTS)
VGPU_DARK_DECLARE_TABLE(DEVICE_EXTENDED_RT, VGPU_DARK_DEVICE_EXTENDED_RT_SLOTS)
VGPU_DARK_DECLARE_TABLE(INTEGRITY_CHECK, VGPU_DARK_INTEGRITY_CHECK_SLOTS)
VGPU_DARK_DECLARE_TABLE(CONTEXT_CHECKS, VGPU_DARK_CONTEXT_CHECKS_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_CONTEXT, VGPU_DARK_TOOLS_CONTEXT_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_MODULE, VGPU_DARK_TOOLS_MODULE_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_MEMORY, VGPU_DARK_TOOLS_MEMORY_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_TRAP_HANDLER, VGPU_DARK_TOOLS_TRAP_HANDLER_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_PUSH_BUFFER_HAL, VGPU_DARK_TOOLS_PUSH_BUFFER_HAL_SLOTS)
VGPU_DARK_DECLARE_TABLE(TOOLS_RM, VGPU_DARK_TOOLS_RM_SLOTS)
VGPU_DARK_DECLARE_TABLE(CLUSTER_PROTOTYPE, VGPU_DARK_CLUSTER_PROTOTYPE_SLOTS)
VGPU_DARK_DECLARE_TABLE(JIT, VGPU_DARK_JIT_SLOTS)

/* dark_cls.c: context local storage (no size header: slot 0 is put). */
typedef void (*vgpu_cls_dtor)(CUcontext ctx, void *key, void *value);

CUresult vgpu_cls_put(CUcontext ctx, void *key, void *value, vgpu_cls_dtor dtor);
CUresult vgpu_cls_delete(CUcontext ctx, void *key);
CUresult vgpu_cls_get(void **value, CUcontext ctx, void *key);

/* dark_integrity.c: the hash behind INTEGRITY_CHECK slot 1. */

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
