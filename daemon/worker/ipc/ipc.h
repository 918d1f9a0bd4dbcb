/* SPDX-License-Identifier: MIT */
/*
 * CUDA IPC between vgpu sessions of one user: the worker side of
 * cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle (ipc_mem.c),
 * cuIpcGetEventHandle / cuIpcOpenEventHandle (ipc_event.c), the server
 * that answers other workers (ipc_server.c); and, beside them, device
 * printf following the program's fd 1 (print_follow.c) and mapped
 * registration of the program's pageable memory (hostreg_map.c).
 */
#ifndef VGPU_WORKER_IPC_H
#define VGPU_WORKER_IPC_H

#include "worker.h"

extern const struct op_desc exec_ipc_ops[];	/* ipc_mem.c */
extern const struct op_desc exec_ipc_event_ops[];	/* ipc_event.c */
extern const struct op_desc exec_print_follow_ops[];	/* print_follow.c */
extern const struct op_desc exec_hostreg_ops[];	/* hostreg_map.c */

/* Every mapped registration of program memory ends (ipc_session_end). */
void ipc_hostreg_end_all(struct worker *w);

/* The session destroys @ev: its exports end. */
void ipc_event_gone(struct worker *w, CUevent ev);

/* Everything IPC of the session ends: the server, the exports, the
 * memory opened (for a harness that reuses one worker). */
void ipc_session_end(struct worker *w);
/* Why a checkpoint of the session cannot be taken, or NULL. */
const char *ipc_ckpt_refusal(struct worker *w);
/* Why the session cannot move to another worker, or NULL: another process
 * opened memory or an event it exported, which the move would stop sharing
 * (a checkpoint that leaves the session where it is keeps sharing). */
const char *ipc_move_refusal(struct worker *w);

#endif
