/* SPDX-License-Identifier: MIT */
/* CUDA IPC on the client side (ipc_mem.c). */
#ifndef VGPU_RUNTIME_IPC_H
#define VGPU_RUNTIME_IPC_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"

/* Whether @p is memory cuIpcOpenMemHandle mapped (cuMemFree refuses it). */
VGPU_HIDDEN bool vgpu_ipc_is_open(uint64_t p);

#endif
