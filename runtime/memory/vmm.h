/* SPDX-License-Identifier: MIT */
/* The virtual memory API (vmm.c): what the rest of the runtime asks of it. */
#ifndef VGPU_RUNTIME_VMM_H
#define VGPU_RUNTIME_VMM_H

#include <stdint.h>

#include "client.h"

/* The mapping holding p (the worker answers): CUDA_ERROR_NOT_FOUND when
 * p is not mapped with cuMemMap. */
VGPU_HIDDEN CUresult vgpu_vmm_lookup(uint64_t p, struct vgpu_vmm_info *in);

/* The session's socket carries descriptors both ways (struct vgpu_fd_msg):
 * one exchange at a time, under the lock. A fresh token; the descriptor the
 * worker sent for @token. */
VGPU_HIDDEN void vgpu_fd_lock(void);
VGPU_HIDDEN void vgpu_fd_unlock(void);
/* false: another call holds it (maybe this thread's own, around its entry). */
VGPU_HIDDEN bool vgpu_fd_trylock(void);
VGPU_HIDDEN uint64_t vgpu_fd_token(void);
VGPU_HIDDEN CUresult vgpu_fd_take(struct vgpu_session *s, uint64_t token, int *fd);

#endif
