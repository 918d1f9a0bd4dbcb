/* SPDX-License-Identifier: MIT */
/*
 * The host backend's CUDA arrays (host_array.c), for its texture and
 * surface objects (host_array_tex.c). Under host.lock.
 */
#ifndef VGPU_HOST_ARRAY_H
#define VGPU_HOST_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct host_ctx;
struct host_mipmap;

struct host_array {
	uint32_t magic;
	struct host_ctx *ctx;
	struct host_mipmap *mm;		/* a level of it; NULL: an array of its own */
	CUDA_ARRAY3D_DESCRIPTOR d;
	size_t elem;			/* bytes per element */
	size_t row, rows;		/* bytes per row; rows per slice */
	size_t slice, slices;		/* bytes per slice; slices (or layers, faces) */
	size_t bytes;
	uint8_t *data;
};

/* A live array, or NULL. */
struct host_array *host_array_get(CUarray h);
/* Whether h is a live mipmapped array, with its levels and flags. */
int host_mipmap_live(CUmipmappedArray h, unsigned int *levels, unsigned int *flags);
/* Arrays and mipmapped arrays ctx made are freed; texture and surface
 * objects too (host_array_tex.c). */
void host_array_release_ctx(struct host_ctx *ctx);
void host_texobj_release_ctx(struct host_ctx *ctx);

#endif
