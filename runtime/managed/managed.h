/* SPDX-License-Identifier: MIT */
/*
 * Managed memory (cuMemAllocManaged): one address that the program's host
 * code and its kernels both use. See managed.c for the design.
 */
#ifndef VGPU_RUNTIME_MANAGED_H
#define VGPU_RUNTIME_MANAGED_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "driver.h"

/*
 * The ring's hooks (client.c). Before an entry goes to the worker, pages
 * the host wrote are copied to the device; after a synchronous call has
 * its answer, pages the device may have written are stale here. Both cost
 * one load while the program has no managed memory, and nothing for the
 * entries managed memory itself sends.
 */
VGPU_HIDDEN void vgpu_managed_before_entry(void);
VGPU_HIDDEN void vgpu_managed_after_sync(void);

/* True on a thread moving managed pages (its ring calls are managed
 * memory's own, maybe from a fault handler). */
VGPU_HIDDEN bool vgpu_managed_busy(void);

/* The managed allocation holding [p, p + len): its base and size, the
 * bytes asked for. False when there is none. */
VGPU_HIDDEN bool vgpu_managed_find(uint64_t p, uint64_t len, uint64_t *base, uint64_t *bytes);

/* cuLibraryGetManaged: the __managed__ variable at [addr, addr + bytes),
 * which the driver placed, gets its host view (at the same address). */
VGPU_HIDDEN CUresult vgpu_managed_adopt(uint64_t addr, uint64_t bytes, uint32_t ctx);

/* cuMemFree of a managed allocation's base: the host view goes (the
 * address stays reserved for the device window). The caller frees the
 * device memory. */
VGPU_HIDDEN void vgpu_managed_release(uint64_t base);

/*
 * managed_advise.c, for prefetch.c: a prefetch of managed memory: to a
 * device, host writes in the range go to the device now; to the host, the
 * range comes back once the stream has finished (at the next synchronizing
 * call). False when [p, p + n) is not managed memory (the caller answers).
 */
VGPU_HIDDEN bool vgpu_managed_prefetch(uint64_t p, uint64_t n, CUmemLocation loc,
				       unsigned int flags, CUresult *rc);

/* managed.c, for managed_advise.c. */
struct mg_advice;
/* Runs fn over the page advice of [p, p + n) under the managed lock, if
 * that range lies in one managed allocation; else CUDA_ERROR_INVALID_VALUE. */
VGPU_HIDDEN CUresult vgpu_managed_advice(uint64_t p, uint64_t n,
					 void (*fn)(struct mg_advice *a, uint64_t pages, void *arg),
					 void *arg);
/* Host writes in [p, p + n) go to the device now; with @fetch, pages the
 * host does not have come back now too. */
VGPU_HIDDEN CUresult vgpu_managed_sync_range(uint64_t p, uint64_t n, bool fetch);

/* Per page advice: locations as CUdevice ordinals, CU_DEVICE_CPU for the
 * host, CU_DEVICE_INVALID for none. */
#define MG_CPU_BIT (1u << 31)	/* accessed_by: the host */
struct mg_advice {
	int8_t preferred;
	int8_t last_prefetch;
	uint8_t read_mostly;
	uint8_t pad;
	uint32_t accessed_by;	/* bit d: device d; MG_CPU_BIT: the host */
};

#endif
