/* SPDX-License-Identifier: MIT */
/*
 * NVIDIA's process-checkpoint API, the worker's part (the supervisor's is
 * daemon/supervisor/process_ckpt.c, the caller's runtime/ckptapi/): a lock
 * holds the session, its entries left in the ring and its GPU work
 * drained, until an unlock. A checkpoint of a locked session is a move
 * (migrate.h) whose state the supervisor keeps instead of handing it on at
 * once; the restore hands it to a fresh worker that starts held
 * (HANDOFF_F_LOCKED).
 *
 * Orders (struct ckpt_order of that type, no descriptor after it); each is
 * answered with a struct ckpt_answer (WMSG_CHECKPOINTED): 0, -EBADFD in the
 * wrong state, -ETIMEDOUT when the session cannot pause (the reason in
 * the message).
 */
#ifndef VGPU_CKPT_PROCESS_H
#define VGPU_CKPT_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

struct worker;

#define WORDER_LOCK	0x1F0
#define WORDER_UNLOCK	0x1F1

/* Carries out a lock or unlock order. @stalled: why the session cannot
 * pause now (a lock is then refused), or NULL. */
void worker_process_order(struct worker *w, uint32_t type, const char *stalled);
/* A locked session's wait for its next order, @ms at most: false once its
 * client is gone. */
bool worker_hold(struct worker *w, int ms);

#endif
