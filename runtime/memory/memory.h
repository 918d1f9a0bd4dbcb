/* SPDX-License-Identifier: MIT */
/*
 * What the runtime knows about the program's memory without asking the
 * worker: device allocations it made (cuMemAlloc, cuMemAllocPitch), blocks
 * of the shared pinned pool (cuMemHostAlloc) and registered ranges of the
 * program's own memory (cuMemHostRegister). memory.c keeps the tables;
 * copy.c asks them which path a copy takes. Thread-safe.
 */
#ifndef VGPU_RUNTIME_MEMORY_H
#define VGPU_RUNTIME_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "handles.h"

enum vgpu_mem_kind {
	VGPU_MEM_PAGEABLE,	/* nothing CUDA knows: the program's own memory */
	VGPU_MEM_DEVICE,	/* inside the device window */
	VGPU_MEM_POOL,		/* a live block of the pinned pool */
	VGPU_MEM_REGISTERED,	/* cuMemHostRegister'ed program memory */
};

struct vgpu_mem_range {
	enum vgpu_mem_kind kind;
	uint64_t base, size;	/* size 0: unknown (device memory not ours) */
	uint64_t id;		/* CU_POINTER_ATTRIBUTE_BUFFER_ID */
	unsigned int flags;	/* CU_MEMHOSTALLOC_* / CU_MEMHOSTREGISTER_* */
	struct vgpu_ctx *ctx;	/* where it was allocated or registered */
	/* Mapped with cuMemMap (base, size: that mapping; ctx NULL). */
	bool vmm;
	uint32_t vmm_dev, vmm_access, vmm_rdma;	/* ordinal, CU_MEM_ACCESS_FLAGS_* */
	uint64_t vmm_types;			/* requestedHandleTypes */
	bool managed;			/* cuMemAllocManaged (runtime/managed/) */
};

/*
 * Which kind of memory [p, p + len) is, from the local tables only (device
 * memory that another part of the runtime allocated has size 0 here).
 * A pool address outside every live block is pageable: the worker would
 * refuse it, and the program may still read and write it.
 */
VGPU_HIDDEN enum vgpu_mem_kind vgpu_mem_classify(const struct vgpu_session *s, uint64_t p,
						 uint64_t len, struct vgpu_mem_range *out);

/* Device memory allocated elsewhere in the runtime (pools, managed,
 * globals) may be noted here so that frees and pointer queries are local. */
VGPU_HIDDEN void vgpu_mem_note_device(uint64_t base, uint64_t size, struct vgpu_ctx *ctx);
VGPU_HIDDEN void vgpu_mem_forget_device(uint64_t base);
/* Managed memory: device memory the host reaches at the same address. */
VGPU_HIDDEN void vgpu_mem_note_managed(uint64_t base, uint64_t size, struct vgpu_ctx *ctx);
/* A context handle is about to be freed (cuCtxDestroy): allocations keep
 * living on the worker (its memory is per session, not per context), but
 * pointer queries must stop answering with the dead handle. */
VGPU_HIDDEN void vgpu_mem_forget_ctx(struct vgpu_ctx *ctx);
/* prefetch.c: the location the CUDA 8 forms of prefetch and advice name
 * with a device ordinal, or CU_DEVICE_CPU for the host. */
VGPU_HIDDEN CUmemLocation vgpu_location_of(CUdevice dev);
/* memory.c: pinned-pool memory for the runtime's own staging, which may be
 * made while a stream captures (freed with cuMemFreeHost). */
VGPU_HIDDEN CUresult vgpu_host_alloc_staging(void **pp, size_t bytesize);

#endif
