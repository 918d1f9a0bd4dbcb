/* SPDX-License-Identifier: MIT */
/*
 * Device memory of one session, allocated with the CUDA virtual memory API
 * inside a window reserved for the session's life, so every allocation
 * has an address a restore can ask for again. Large allocations map their
 * own physical memory; small ones are carved from 2 MiB chunks by size
 * class, which also makes cuMemAlloc/cuMemFree cheap.
 */
#ifndef VGPU_VMEM_H
#define VGPU_VMEM_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define VMEM_SMALL_MAX	(1u << 20)	/* larger requests map their own memory */
#define VMEM_MIN_ALIGN	256u		/* what cuMemAlloc promises */

struct vmem_range;
struct vmem_hole;

struct vmem {
	const struct vgpu_backend *B;
	CUdeviceptr base;
	size_t size;
	size_t gran;			/* physical granularity (2 MiB) */
	size_t in_use;			/* bytes handed to the client */
	size_t mapped;			/* bytes of physical memory mapped */
	struct vmem_range *r;		/* mapped ranges, sorted by address */
	size_t nr, cap;
	struct vmem_hole *holes;	/* free VA, sorted by address */
	size_t nholes, hcap;
	size_t created;			/* bytes of cuMemCreate'd memory the client holds */
	uint64_t fd_known, fd_ok;	/* per device: POSIX descriptors asked of, answered */
	/* Called with the base of every allocation vmem_free ends (ipc_mem.c:
	 * its exports end with it). */
	void (*on_free)(void *arg, CUdeviceptr p);
	void *on_free_arg;
};

/* Reserves [hint, hint + size) (hint 0: anywhere). */
CUresult vmem_init(struct vmem *m, const struct vgpu_backend *B, size_t size,
		   CUdeviceptr hint);
void vmem_destroy(struct vmem *m);
CUresult vmem_alloc(struct vmem *m, CUdevice dev, size_t bytes, CUdeviceptr *out);
/* An allocation of @bytes exactly at @p, as vmem_alloc once gave it (a
 * restore): CUDA_ERROR_ALREADY_MAPPED when that place is taken. */
CUresult vmem_alloc_at(struct vmem *m, CUdevice dev, CUdeviceptr p, size_t bytes);
CUresult vmem_free(struct vmem *m, CUdeviceptr p);
/* The allocation holding p: base and size as cuMemGetAddressRange says. */
CUresult vmem_range_of(struct vmem *m, CUdeviceptr p, CUdeviceptr *base, size_t *size);
/* True when [p, p + len) lies inside one live allocation. */
int vmem_contains(struct vmem *m, CUdeviceptr p, size_t len);
/* Calls fn for every live allocation, in address order, with the bytes
 * the client asked for; stops at the first non-zero return and returns it. */
int vmem_for_each(const struct vmem *m, int (*fn)(void *arg, CUdeviceptr p, size_t bytes),
		  void *arg);

/*
 * The client's own virtual memory API. Address space it reserves is carved
 * out of the window's free space, so a restore finds it at the same place:
 * aligned to @align (0, or a power of two; never less than the granularity),
 * at @want when that is free and aligned (the driver's hint), else anywhere.
 * @size must be whole granules. CUDA_ERROR_OUT_OF_MEMORY when nothing fits.
 */
CUresult vmem_reserve(struct vmem *m, size_t size, size_t align, CUdeviceptr want,
		      CUdeviceptr *out);
/* Exactly [p, p + size) (a restore), or CUDA_ERROR_ALREADY_MAPPED. */
CUresult vmem_reserve_at(struct vmem *m, CUdeviceptr p, size_t size);
/* Gives a reservation's address space back (the caller checked it was one). */
void vmem_unreserve(struct vmem *m, CUdeviceptr p, size_t size);
/*
 * Physical memory the client creates counts against the session's memory
 * like cuMemAlloc'ed memory does: mapped and created bytes together never
 * exceed the window. CUDA_ERROR_OUT_OF_MEMORY when @bytes does not fit.
 */
CUresult vmem_charge(struct vmem *m, size_t bytes);
void vmem_uncharge(struct vmem *m, size_t bytes);

/*
 * Memory pools shared with other processes (pool_ipc.c). A block of its own
 * physical memory, exportable as a POSIX descriptor (@bytes whole granules);
 * the descriptor of such a block (or of any large allocation) and its
 * mapped size; and memory another process exported, mapped at a free place
 * of the window as an allocation of its own (vmem_free unmaps it and
 * releases @h; on failure @h stays the caller's).
 */
CUresult vmem_alloc_shareable(struct vmem *m, CUdevice dev, size_t bytes, CUdeviceptr *out);
CUresult vmem_export_fd(struct vmem *m, CUdeviceptr p, int *fd, size_t *size);
CUresult vmem_map_imported(struct vmem *m, CUdevice dev, CUmemGenericAllocationHandle h,
			   size_t size, CUdeviceptr *out);

/*
 * CUDA IPC (daemon/worker/ipc/). Every physical allocation of cuMemAlloc is
 * made exportable as a descriptor where the device can (a small allocation
 * shares its 2 MiB chunk with other small ones of the session). The
 * allocation holding @p: the descriptor of the physical memory under it,
 * that memory's size, and the allocation's offset in it and bytes.
 */
CUresult vmem_export_alloc(struct vmem *m, CUdeviceptr p, int *fd, size_t *size, size_t *off,
			   size_t *bytes);
/*
 * Another process's physical memory (@size bytes, handle @h) mapped at a
 * free place: the allocation is its [@off, @off + @bytes), at *out. Only
 * vmem_unmap_ipc (cuIpcCloseMemHandle) ends it; vmem_free refuses it.
 * On failure @h stays the caller's.
 */
CUresult vmem_map_ipc(struct vmem *m, CUdevice dev, CUmemGenericAllocationHandle h, size_t size,
		      size_t off, size_t bytes, CUdeviceptr *out);
CUresult vmem_unmap_ipc(struct vmem *m, CUdeviceptr p);

#endif
