/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * CUDA arrays, mipmapped arrays, texture and surface objects on the wire
 * (opcodes VGPU_OP_ARRAY_* in proto.h, runtime/array/, daemon/worker/array/).
 *
 * Arrays, mipmapped arrays, their levels and planes are named by ids the
 * runtime issues (one id space). Texture and surface objects are values a
 * kernel receives as a parameter, so the program must hold the driver's own
 * value: their creation is synchronous and answers it (val0), and the
 * worker keys them by that value.
 *
 * A copy with an array at either end is one VGPU_OP_ARRAY_COPY entry: each
 * end an array (id, x in bytes, y, z) or an address the device reaches
 * (device memory or the pinned pool, with pitch and height). The runtime
 * stages pageable host memory through a pinned block.
 */
#ifndef VGPU_PROTO_ARRAY_H
#define VGPU_PROTO_ARRAY_H

#include <stdint.h>

/* CUDA_ARRAY3D_DESCRIPTOR, fixed width; levels > 0 for a mipmapped array. */
struct vgpu_array_desc {
	uint64_t width, height, depth;
	uint32_t format;		/* CUarray_format */
	uint32_t channels;
	uint32_t flags;			/* CUDA_ARRAY3D_* */
	uint32_t levels;		/* mipmapped: number of levels; else 0 */
};

#define VGPU_COPY_END_ADDR	0	/* device or pool address */
#define VGPU_COPY_END_ARRAY	1	/* an array id */

struct vgpu_copy_end {
	uint32_t kind;			/* VGPU_COPY_END_* */
	uint32_t reserved;
	uint64_t ref;			/* address or array id */
	uint64_t x, y, z;		/* x in bytes */
	uint64_t pitch, height;		/* address ends only */
};

/* VGPU_OP_ARRAY_COPY arg0: one end is the client's staging block, reused
 * at once (pageable memory): refused while the stream captures a graph. */
#define VGPU_ARRAY_COPY_STAGED	(1u << 0)

struct vgpu_array_copy {
	struct vgpu_copy_end src, dst;
	uint64_t width, height, depth;	/* width in bytes */
};

/* CUDA_RESOURCE_DESC with arrays as ids. */
struct vgpu_res_desc {
	uint32_t type;			/* CUresourcetype */
	uint32_t flags;			/* must be 0 */
	uint64_t ref;			/* array / mipmapped array id, or devPtr */
	uint32_t format;		/* linear, pitch2D */
	uint32_t channels;
	uint64_t size;			/* linear: bytes */
	uint64_t width, height, pitch;	/* pitch2D */
};

/* CUDA_TEXTURE_DESC, fixed width (floats as IEEE single). */
struct vgpu_tex_desc {
	uint32_t address_mode[3];
	uint32_t filter_mode;
	uint32_t flags;
	uint32_t max_anisotropy;
	uint32_t mipmap_filter_mode;
	float mipmap_level_bias;
	float min_mipmap_level_clamp;
	float max_mipmap_level_clamp;
	float border_color[4];
};

/* CUDA_RESOURCE_VIEW_DESC, fixed width. */
struct vgpu_view_desc {
	uint32_t format;		/* CUresourceViewFormat */
	uint32_t reserved;
	uint64_t width, height, depth;
	uint32_t first_level, last_level;
	uint32_t first_layer, last_layer;
};

/* VGPU_OP_TEXOBJ_CREATE / VGPU_OP_SURFOBJ_CREATE (surfaces: res only). */
struct vgpu_texobj_req {
	struct vgpu_res_desc res;
	struct vgpu_tex_desc tex;
	struct vgpu_view_desc view;
	uint32_t has_view;
	uint32_t reserved;
};

#define VGPU_TEXOBJ_GET_RES	0
#define VGPU_TEXOBJ_GET_TEX	1
#define VGPU_TEXOBJ_GET_VIEW	2

_Static_assert(sizeof(struct vgpu_array_desc) == 40, "array desc layout");
_Static_assert(sizeof(struct vgpu_copy_end) == 56, "copy end layout");
_Static_assert(sizeof(struct vgpu_array_copy) == 136, "array copy layout");
_Static_assert(sizeof(struct vgpu_res_desc) == 56, "res desc layout");
_Static_assert(sizeof(struct vgpu_tex_desc) == 56, "tex desc layout");
_Static_assert(sizeof(struct vgpu_view_desc) == 48, "view desc layout");
_Static_assert(sizeof(struct vgpu_texobj_req) == 168, "texobj request layout");

#endif
