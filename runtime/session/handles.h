/* SPDX-License-Identifier: MIT */
/*
 * The objects behind the handles the program holds. The runtime issues
 * every handle itself (no round trip): a handle is a pointer to one of
 * these, and the id inside is what the ring carries to the worker, which
 * maps it to the real object. The magic catches handles of the wrong kind.
 */
#ifndef VGPU_RUNTIME_HANDLES_H
#define VGPU_RUNTIME_HANDLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

enum vgpu_kind {
	VGPU_K_CTX,
	VGPU_K_STREAM,
	VGPU_K_EVENT,
	VGPU_K_MODULE,
	VGPU_K_FUNC,
	VGPU_K_GRAPH,
	VGPU_K_GRAPH_EXEC,
	VGPU_K_POOL,		/* default pools of device d are d + 1 */
	VGPU_K_GEN,		/* generated kinds (forward.h), one id space */
	VGPU_K_GREEN,
	VGPU_K_ARRAY,		/* arrays, mipmapped arrays, levels, planes (runtime/array/) */
	VGPU_K_COUNT
};

/* ids.c: small ids, never 0, reused after free. Thread-safe. */
VGPU_HIDDEN uint32_t vgpu_id_alloc(enum vgpu_kind k);
VGPU_HIDDEN void vgpu_id_free(enum vgpu_kind k, uint32_t id);

/* A zeroed object of @size (free() it) whose uint32_t at @id_off holds a
 * fresh id of kind @k; NULL when out of memory or of ids. */
static inline void *vgpu_obj_new(size_t size, size_t id_off, enum vgpu_kind k)
{
	uint8_t *o = calloc(1, size);
	uint32_t id;

	if (!o)
		return NULL;
	id = vgpu_id_alloc(k);
	if (!id) {
		free(o);
		return NULL;
	}
	memcpy(o + id_off, &id, sizeof(id));
	return o;
}

#define VGPU_CTX_MAGIC		0x76637478u	/* "vctx" */
#define VGPU_STREAM_MAGIC	0x76737472u	/* "vstr" */
#define VGPU_EVENT_MAGIC	0x76657674u	/* "vevt" */
#define VGPU_MODULE_MAGIC	0x766d6f64u	/* "vmod" */
#define VGPU_FUNC_MAGIC		0x7666756eu	/* "vfun" */
#define VGPU_GRAPH_MAGIC	0x76677270u	/* "vgrp" */
#define VGPU_GRAPH_EXEC_MAGIC	0x76677865u	/* "vgxe" */
#define VGPU_POOL_MAGIC		0x76706f6cu	/* "vpol" */
#define VGPU_GREEN_MAGIC	0x76677263u	/* "vgrc" */

/* context.c */
struct vgpu_ctx {
	uint32_t magic;
	uint32_t id;		/* primary contexts: device + 1 */
	CUdevice dev;
	bool primary;
	unsigned int flags;
	int refs;		/* primary: retain count; created: 1 */
	bool active;		/* primary: retained at least once since reset */
	int null_priority;	/* the legacy NULL stream's, as the driver kept it */
	struct vgpu_green *green;	/* the green context it converts; NULL: none */
};

/* The calling thread's current context; CUDA_ERROR_INVALID_CONTEXT if none,
 * as the driver answers (it never picks one on the program's behalf). */
VGPU_HIDDEN CUresult vgpu_ctx_current(struct vgpu_ctx **out);
/* A CUcontext handle checked; NULL means the current one. */
VGPU_HIDDEN CUresult vgpu_ctx_resolve(CUcontext h, struct vgpu_ctx **out);
/* primary_ctx.c: device @dev's primary context handle, retained or not. */
VGPU_HIDDEN CUcontext vgpu_primary_handle(CUdevice dev);

/* stream.c */
struct vgpu_stream {
	uint32_t magic;
	uint32_t id;
	struct vgpu_ctx *ctx;
	unsigned int flags;
	int priority;
};

/*
 * What a CUstream argument means for the ring: its context and its stream
 * id. NULL is the legacy default stream (id 0) unless @ptds (the _ptsz/_ptds
 * entry points), CU_STREAM_LEGACY is id 0, CU_STREAM_PER_THREAD (and NULL
 * with @ptds) is the calling thread's own stream in the current context,
 * created on first use. Anything else must be a live vgpu_stream.
 */
VGPU_HIDDEN CUresult vgpu_stream_resolve(CUstream h, bool ptds, struct vgpu_ctx **ctx,
					 uint32_t *stream_id);

/* event.c */
struct vgpu_event {
	uint32_t magic;
	uint32_t id;
	struct vgpu_ctx *ctx;
	unsigned int flags;
};

/* A CUevent handle checked: CUDA_ERROR_INVALID_HANDLE unless live. */
VGPU_HIDDEN CUresult vgpu_event_resolve(CUevent h, struct vgpu_event **out);
/* The live event the worker names by @id; NULL: none. */
VGPU_HIDDEN CUevent vgpu_event_by_id(uint32_t id);
/* A new event's handle and id in @ctx (the worker not told yet), and the
 * handle of one the worker never made (or was told is gone) freed. */
VGPU_HIDDEN CUresult vgpu_event_new(struct vgpu_ctx *ctx, unsigned int flags,
				    struct vgpu_event **out);
VGPU_HIDDEN void vgpu_event_drop(struct vgpu_event *ev);

/* module.c: CUmodule and CUlibrary are both this. */
struct vgpu_module {
	uint32_t magic;
	uint32_t id;
	struct vgpu_ctx *ctx;
	bool is_library;
};

/* function.c: CUfunction and CUkernel are both this (cudart passes a
 * CUkernel where a CUfunction is expected). */
struct vgpu_func {
	uint32_t magic;
	uint32_t id;
	struct vgpu_module *mod;
	struct vgpu_func_info *info;	/* layout and attributes, cached */
	char name[];
};

VGPU_HIDDEN CUresult vgpu_func_resolve(CUfunction h, struct vgpu_func **out);

/* stream.c, for stream_attr.c: as vgpu_stream_resolve, also giving the
 * stream object (NULL for the legacy stream) whose cached priority a
 * priority attribute changes. */
VGPU_HIDDEN CUresult vgpu_stream_lookup(CUstream h, bool ptds, struct vgpu_stream **st,
					struct vgpu_ctx **ctx);

/* green.c: CUgreenCtx. Objects are recycled, never freed (as contexts). */
struct vgpu_green {
	uint32_t magic;
	uint32_t id;
	struct vgpu_ctx *ctx;	/* what cuCtxFromGreenCtx gives: a context of its own */
};

/* stream.c, for green.c: a stream of green context @g (in its context). */
VGPU_HIDDEN CUresult vgpu_stream_create_green(struct vgpu_green *g, unsigned int flags,
					      int priority, CUstream *out);

/* pool.c: CUmemoryPool */
struct vgpu_pool {
	uint32_t magic;
	uint32_t id;
	CUdevice dev;
	unsigned int handle_types;	/* CUmemPoolProps.handleTypes */
	bool is_default;
	bool imported;			/* another process's: no allocations */
};

/* The pool a device pointer was allocated from (NULL: none), and that the
 * memory at p was freed outside pool.c (cuMemFree). */
VGPU_HIDDEN CUmemoryPool vgpu_pool_of(uint64_t p);
VGPU_HIDDEN void vgpu_pool_forget(uint64_t p);

#endif
