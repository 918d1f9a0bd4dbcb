/* SPDX-License-Identifier: MIT */
/*
 * TEMPORARY (issue 10): the checkpoint reader on open files, as the
 * checkpoint-reader branch adds it to common/ckpt.h with exactly these
 * signatures. Delete this header, ckpt_fd_shim.c and their #include lines
 * when that branch is merged.
 */
#ifndef VGPU_CKPT_FD_SHIM_H
#define VGPU_CKPT_FD_SHIM_H

#include "ckpt.h"

int vgpu_ckpt_reader_open_fd(struct vgpu_ckpt_reader **out, int fd, const char *name,
			     const struct vgpu_ckpt_expect *ex, unsigned flags, char *err);
int vgpu_ckpt_open_chain_fds(struct vgpu_ckpt_reader **out, const int *fds, unsigned nfds,
			     const char *name, const struct vgpu_ckpt_expect *ex, unsigned flags,
			     char *err);

#endif
