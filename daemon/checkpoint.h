/* SPDX-License-Identifier: MIT */
/*
 * checkpoint.c: a worker writes its session's GPU state to a checkpoint
 * file (include/vgpu/ckpt.h) while the client's calls wait: GPU work is
 * drained first, then allocations with their contents, module images,
 * functions, globals, streams, events and context settings are written.
 *
 * The supervisor asks (struct ckpt_order over the worker's control socket)
 * and the worker answers (struct ckpt_answer) once the file is complete
 * and synced, or says why there is none.
 */
#ifndef VGPU_CHECKPOINT_H
#define VGPU_CHECKPOINT_H

#include <stdint.h>

#include "vgpu/ctl.h"

struct worker;

#define WORDER_CHECKPOINT	1

/* Supervisor -> worker. */
struct ckpt_order {
	uint32_t type;			/* WORDER_CHECKPOINT */
	uint32_t flags;			/* VGPU_CTL_F_* */
	char path[VGPU_CTL_MAX_ARG];
};

/* Worker -> supervisor: starts like struct worker_msg (type first). */
struct ckpt_answer {
	uint8_t type;			/* WMSG_CHECKPOINTED */
	uint8_t pad[3];
	int32_t status;			/* 0 or -errno */
	struct vgpu_ctl_checkpoint result;
	char message[112];		/* why, when status is not 0 */
};

void worker_checkpoint(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a);

#endif
