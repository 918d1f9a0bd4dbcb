/* SPDX-License-Identifier: MIT */
/*
 * The object behind a CUcontext, shared by context.c (handles, created
 * contexts, each thread's context stack), primary_ctx.c (primary contexts,
 * context ids, flags) and ctx_config.c (queries and settings).
 *
 * A CUcontext is a pointer to a struct vgpu_ctx (handles.h), the first
 * member of a struct ctx_obj.
 */
#ifndef VGPU_RUNTIME_CONTEXT_H
#define VGPU_RUNTIME_CONTEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "handles.h"
#include "recycle.h"

struct ctx_obj {
	struct vgpu_ctx c;	/* first: a CUcontext points here */
	uint64_t uid;		/* cuCtxGetId; a primary gets a new one per activation */
	uint64_t gen;		/* created: bumped at each destroy */
	int cache;		/* CUfunc_cache, cuCtxGetCacheConfig */
	bool destroying;
	struct vgpu_recycle_link link;	/* created: recycled, never freed */
};

static inline struct ctx_obj *obj_of(struct vgpu_ctx *c)
{
	return (struct ctx_obj *)c;
}

static inline CUcontext handle_of(struct ctx_obj *o)
{
	return (CUcontext)(void *)o;
}

/* context.c: the current context, an inactive primary included: for the
 * queries answered locally, which cudart makes between making the peeked
 * primary current and retaining it. */
VGPU_HIDDEN CUresult vgpu_ctx_current_any(struct vgpu_ctx **out);
/* context.c: as vgpu_ctx_resolve, an inactive primary included. */
VGPU_HIDDEN CUresult vgpu_ctx_resolve_any(CUcontext h, struct vgpu_ctx **out);

/* context.c, for green.c: the context a green context converts to, with
 * context id @id, live from now on (not made current); and its end. */
VGPU_HIDDEN CUresult vgpu_ctx_green_new(uint32_t id, CUdevice dev, unsigned int flags,
					struct vgpu_green *g, struct vgpu_ctx **out);
VGPU_HIDDEN void vgpu_ctx_green_drop(struct vgpu_ctx *c);
/* primary_ctx.c: whether @h is one of the primary contexts' handles. */
VGPU_HIDDEN bool vgpu_ctx_is_primary_handle(const void *h);
/* primary_ctx.c: a new context instance id (vgpu_ctx_uid), never 0. */
VGPU_HIDDEN uint64_t vgpu_ctx_new_uid(void);
/* primary_ctx.c: whether @flags are valid CU_CTX_* flags. */
VGPU_HIDDEN bool vgpu_ctx_flags_valid(unsigned int flags);
/* primary_ctx.c: a context's flags; a primary's read under its lock. */
VGPU_HIDDEN unsigned int vgpu_ctx_flags(struct vgpu_ctx *c);
/* primary_ctx.c: sets primary context @c's flags on the worker's too. */
VGPU_HIDDEN CUresult vgpu_primary_ctx_set_flags(struct vgpu_ctx *c, unsigned int flags);

#endif
