/* SPDX-License-Identifier: MIT */
/*
 * The registration cache: pageable buffers pinned by vgpu.ko for copies
 * without staging (see "Pinned copies" in vgpu/proto.h). A registration
 * covers whole pages and is reused by any later copy inside them, after a
 * REGION_CHECK that the program's mapping of those pages has not changed
 * (freed and mapped again, MADV_DONTNEED, ...): a stale one is dropped and
 * the range registered again. Least recently used registrations go beyond
 * a budget (VGPU_PIN_CACHE_MB, default a quarter of RLIMIT_MEMLOCK, or
 * 1 GiB without a limit); VGPU_PINNED=0 turns it all off. Thread-safe.
 */
#ifndef VGPU_RUNTIME_PINREG_H
#define VGPU_RUNTIME_PINREG_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"

/* Pageable copies this large and larger try the pinned path. */
#define VGPU_PINREG_MIN (256u << 10)

struct pinreg_entry;

/* A registration held for one copy. */
struct vgpu_pin_use {
	uint64_t handle;		/* the region */
	uint64_t offset;		/* of the copy's first byte in the region */
	struct pinreg_entry *e;
};

/*
 * A live registration covering [p, p + n), writable if @writable (the
 * device writes the buffer), held until vgpu_pinreg_put(). Returns 0, or
 * -errno when the copy must be staged instead: not over /dev/vgpu, the
 * module or the worker cannot do it, over the budget, the module refused
 * the pin (-ENOMEM, -ENOSPC: logged once), the range is not all mapped.
 */
VGPU_HIDDEN int vgpu_pinreg_get(struct vgpu_session *s, uint64_t p, uint64_t n, bool writable,
				struct vgpu_pin_use *u);
VGPU_HIDDEN void vgpu_pinreg_put(struct vgpu_pin_use *u);

#endif
