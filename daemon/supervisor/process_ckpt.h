/* SPDX-License-Identifier: MIT */
/*
 * process_ckpt.c: NVIDIA's process-checkpoint API on the control socket
 * (VGPU_CTL_PROCESS), the supervisor's part.
 */
#ifndef VGPU_PROCESS_CKPT_H
#define VGPU_PROCESS_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_request.h"
#include "vgpu/ctl.h"

/* The admin op (admin.h: process). */
int sv_order_process(const struct ctl_caller *who, int slot, uint32_t pid,
		     const struct vgpu_ctl_process_req *a, int gpu, struct vgpu_ctl_process *now,
		     char *why, size_t len);
/* Worker @i answered (WMSG_CHECKPOINTED) a process action: true when it
 * was one (handled), false when it is another order's answer. */
bool sv_process_answer(int i);
/* Worker @i wrote a move's state (WMSG_MIGRATING): true when it was a
 * process checkpoint (the session parked, or the refusal answered). */
bool sv_process_migrating(int i);
/* --checkpoint-on-exit: the parked sessions to DIR, their programs left
 * waiting for a daemon to take them up. */
void sv_parked_drain(const char *dir);
/* A parked session's socket hung up (EV_PARKED, @idx its slot and
 * generation): its program is gone, nothing will restore it. */
void sv_on_parked(uint32_t idx, int res);

#endif
