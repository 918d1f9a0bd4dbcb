/* SPDX-License-Identifier: MIT */
/*
 * CUDA arrays and mipmapped arrays in the runtime (array.c), copies with
 * an array at either end (array_copy.c), texture and surface objects over
 * them (texobj.c). A CUarray or CUmipmappedArray is a pointer to a struct
 * vgpu_array; the id inside is what the ring carries.
 */
#ifndef VGPU_RUNTIME_ARRAY_H
#define VGPU_RUNTIME_ARRAY_H

#include <stdbool.h>
#include <stdint.h>

#include "handles.h"
#include "vgpu/proto_array.h"

#define VGPU_ARRAY_MAGIC	0x76617272u	/* "varr" */
#define VGPU_ARRAY_MAX_PARTS	32		/* levels of a mipmapped array */

enum vgpu_array_kind {
	VGPU_ARR_ARRAY,		/* cuArrayCreate, cuArray3DCreate */
	VGPU_ARR_MIPMAP,	/* cuMipmappedArrayCreate */
	VGPU_ARR_LEVEL,		/* a mipmapped array's level, owned by it */
	VGPU_ARR_PLANE,		/* an array's plane, owned by it */
};

struct vgpu_array {
	uint32_t magic;
	uint32_t id;
	enum vgpu_array_kind kind;
	struct vgpu_ctx *ctx;
	CUDA_ARRAY3D_DESCRIPTOR desc;	/* the driver's (a mipmapped array's level 0) */
	unsigned int levels;		/* mipmapped arrays */
	/* Levels or planes asked for so far, made once each (array.c's lock). */
	struct vgpu_array *part[VGPU_ARRAY_MAX_PARTS];
};

/* A live CUarray (an array, a level or a plane); CUDA_ERROR_INVALID_HANDLE. */
VGPU_HIDDEN CUresult vgpu_array_resolve(CUarray h, struct vgpu_array **out);
/* A live CUmipmappedArray. */
VGPU_HIDDEN CUresult vgpu_mipmap_resolve(CUmipmappedArray h, struct vgpu_array **out);
/* The live array or mipmapped array the worker names @id; NULL: none. */
VGPU_HIDDEN struct vgpu_array *vgpu_array_by_id(uint64_t id);

/* array_copy.c: copies with an array at one end or both (copy.c hands
 * them over); 2D copies are 3D copies one slice deep. */
VGPU_HIDDEN CUresult vgpu_array_memcpy3d(const CUDA_MEMCPY3D *p, CUstream h, bool ptds,
					 bool async);
VGPU_HIDDEN CUresult vgpu_array_memcpy2d(const CUDA_MEMCPY2D *p, CUstream h, bool ptds,
					 bool async);

#endif
