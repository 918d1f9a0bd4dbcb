/* SPDX-License-Identifier: MIT */
/*
 * CUDA IPC between vgpu sessions of one user (ipc_mem.c). The worker side
 * of cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle.
 */
#ifndef VGPU_WORKER_IPC_H
#define VGPU_WORKER_IPC_H

#include "worker.h"

extern const struct op_desc exec_ipc_ops[];

/* Why a checkpoint of the session cannot be taken, or NULL. */
const char *ipc_ckpt_refusal(struct worker *w);

#endif
