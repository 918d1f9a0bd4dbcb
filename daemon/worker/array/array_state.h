/* SPDX-License-Identifier: MIT */
/*
 * The session's CUDA arrays, mipmapped arrays, texture and surface
 * objects, as the worker keeps them (exec_array.c, exec_texobj.c,
 * array_ckpt.c): what the driver made, and what a checkpoint needs to
 * make it again.
 */
#ifndef VGPU_ARRAY_STATE_H
#define VGPU_ARRAY_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/proto_array.h"
#include "worker.h"

enum array_kind {
	ARR_ARRAY = 1,		/* cuArray3DCreate: obj is a CUarray */
	ARR_MIPMAP,		/* cuMipmappedArrayCreate: a CUmipmappedArray */
	ARR_LEVEL,		/* a mipmapped array's level: a CUarray it owns */
	ARR_PLANE,		/* an array's plane: a CUarray it owns */
};

/* An entry's data in array_state.ids. */
struct array_rec {
	enum array_kind kind;
	uint32_t ctx;			/* the context it was made in */
	uint32_t parent;		/* LEVEL, PLANE: the owner's id */
	uint32_t index;			/* LEVEL, PLANE: which */
	struct vgpu_array_desc desc;	/* ARRAY, MIPMAP: as created */
};

/* A texture or surface object: the driver's value and what made it. */
struct texobj_rec {
	uint64_t value;
	uint32_t ctx;
	bool surface;
	struct vgpu_texobj_req req;	/* arrays by id */
};

struct array_state {
	struct obj_table ids;		/* aux: enum array_kind; data: struct array_rec */
	struct texobj_rec *tex;
	size_t ntex, cap_tex;
};

/* The session's state, made on first use (NULL: out of memory). */
struct array_state *array_state_of(struct worker *w);
/* A live array id of a kind a copy or a CUarray resource takes. */
CUarray array_handle(struct worker *w, uint64_t id);
/* A live mipmapped array id. */
CUmipmappedArray array_mipmap_handle(struct worker *w, uint64_t id);
/* The id the client knows a driver array by (0: none). */
uint32_t array_id_of(struct worker *w, const void *handle);
/* A copy with array ends checked into the driver's (graph copy nodes,
 * graph_hostcopy.c); an empty one is refused. */
CUresult array_copy_params(struct worker *w, const struct vgpu_array_copy *c, CUDA_MEMCPY3D *m);

/* exec_array.c, also for a restore: array (or mipmapped array) @id made
 * in the current context; a level or plane of @parent under @id. */
CUresult array_make(struct worker *w, uint32_t id, uint32_t ctx, const struct vgpu_array_desc *d);
CUresult array_part(struct worker *w, uint32_t id, uint64_t parent, enum array_kind kind,
		    uint64_t index);

/* exec_texobj.c: the driver's descriptors from a request (arrays by id,
 * addresses the client's own); CUDA_ERROR_* on what is refused. */
CUresult texobj_descs(struct worker *w, const struct vgpu_texobj_req *q, bool surface,
		      CUDA_RESOURCE_DESC *res, CUDA_TEXTURE_DESC *tex,
		      CUDA_RESOURCE_VIEW_DESC *view);
int texobj_remember(struct array_state *s, uint64_t value, uint32_t ctx, bool surface,
		    const struct vgpu_texobj_req *q);

extern const struct op_desc exec_array_ops[];
extern const struct op_desc exec_texobj_ops[];

/* array_ckpt.c: checkpoint sections 40-44 (none without arrays or
 * objects); the same state back. 0, or -errno with @why said. */
struct ckpt_sink;
struct vgpu_ckpt_reader;
int worker_array_checkpoint(struct worker *w, struct ckpt_sink *sink, char *why, size_t len);
int worker_array_restore(struct worker *w, struct vgpu_ckpt_reader *r, char *why, size_t len);
/* Everything the program left, destroyed (between sessions of a process). */
void worker_array_destroy(struct worker *w);

#endif
