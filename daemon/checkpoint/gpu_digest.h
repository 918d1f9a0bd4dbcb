/* SPDX-License-Identifier: MIT */
/*
 * Content digests of device memory (include/vgpu/ckpt.h, VGPU_CKPT_DIGEST),
 * computed on the GPU by the daemon's own kernel (gpu_digest.cu, built
 * to PTX and loaded into the session's context on first use): what an
 * incremental checkpoint compares to find the allocations that changed,
 * reading device memory at the GPU's own bandwidth and copying 16 bytes
 * per MiB back.
 */
#ifndef VGPU_GPU_DIGEST_H
#define VGPU_GPU_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "content_digest.h"

struct digest_range {
	uint64_t addr;		/* device address, 16-byte aligned */
	uint64_t len;
};

/*
 * out[i] = the digest of r[i], for n ranges of device memory that ctx can
 * read, on the context's default stream (the caller has drained its
 * work). From any thread (one at a time inside). 0, or -errno and why.
 */
int gpu_digest(const struct vgpu_backend *B, CUcontext ctx, const struct digest_range *r,
	       size_t n, struct content_digest *out, char *why, size_t why_len);

/* The kernel loaded into ctx ahead of time, so a checkpoint's pause does
 * not wait for the driver to compile it. */
int gpu_digest_prepare(const struct vgpu_backend *B, CUcontext ctx, char *why, size_t why_len);

#endif
