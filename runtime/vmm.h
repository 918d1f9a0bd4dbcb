/* SPDX-License-Identifier: MIT */
/* The virtual memory API (vmm.c): what the rest of the runtime asks of it. */
#ifndef VGPU_RUNTIME_VMM_H
#define VGPU_RUNTIME_VMM_H

#include <stdint.h>

#include "client.h"

/* The mapping holding p (the worker answers): CUDA_ERROR_NOT_FOUND when
 * p is not mapped with cuMemMap. */
VGPU_HIDDEN CUresult vgpu_vmm_lookup(uint64_t p, struct vgpu_vmm_info *in);

#endif
