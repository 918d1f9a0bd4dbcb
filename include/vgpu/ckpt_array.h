/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * Checkpoint records of CUDA arrays and texture objects (sections
 * VGPU_CKPT_SEC_ARRAYS.., include/vgpu/ckpt.h; daemon/worker/array/
 * array_ckpt.c writes and reads them).
 */
#ifndef VGPU_CKPT_ARRAY_H
#define VGPU_CKPT_ARRAY_H

#include <stdint.h>

#include "vgpu/proto_array.h"

/* An array, a mipmapped array, or a level or plane the client named. */
struct vgpu_ckpt_array {
	uint32_t id;
	uint32_t kind;		/* 1 array, 2 mipmapped, 3 level, 4 plane */
	uint32_t ctx;		/* the context id it was made in */
	uint32_t parent;	/* level, plane: its owner's id */
	uint32_t index;		/* level, plane: which */
	uint32_t reserved;
	struct vgpu_array_desc desc;	/* array, mipmapped array */
};

/* A texture or surface object: the driver's value, and what made it. */
struct vgpu_ckpt_texobj {
	uint64_t value;
	uint32_t ctx;
	uint32_t surface;	/* 1: a surface object */
	struct vgpu_texobj_req req;	/* arrays by id */
};

_Static_assert(sizeof(struct vgpu_ckpt_array) == 64, "array record layout");
_Static_assert(sizeof(struct vgpu_ckpt_texobj) == 184, "texture object record layout");

#endif
