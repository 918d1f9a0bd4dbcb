/* SPDX-License-Identifier: MIT */
/*
 * Mapped registration of the program's pageable memory without /dev/vgpu
 * (hostreg_map.c), for cuMemHostRegister(CU_MEMHOSTREGISTER_DEVICEMAP).
 */
#ifndef VGPU_HOSTREG_MAP_H
#define VGPU_HOSTREG_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "handles.h"

/* [a, a + bytes) of the program's memory made reachable by the device at
 * the same address; the pages covering it are the worker's too. */
VGPU_HIDDEN CUresult vgpu_hostreg_map(struct vgpu_ctx *ctx, uint64_t a, uint64_t bytes,
				      unsigned int flags);
/* The registration at @a ends: ordinary memory with the same bytes again.
 * False: @a is no mapped registration. */
VGPU_HIDDEN bool vgpu_hostreg_unmap(uint64_t a, CUresult *rc);

#endif
