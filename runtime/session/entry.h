/* SPDX-License-Identifier: MIT */
/*
 * How a hand-written entry point opens: cuInit checked, then the handle it
 * acts on resolved, in the driver's order (CUDA_ERROR_NOT_INITIALIZED
 * before any complaint about the handle). One call each, so an entry point
 * reads as what it does after that; inline, so it costs no more than the
 * two calls it replaces.
 */
#ifndef VGPU_RUNTIME_ENTRY_H
#define VGPU_RUNTIME_ENTRY_H

#include <string.h>

#include "graph.h"
#include "handles.h"
#include "init.h"

/* An entry point whose first check is that @p (an output, or a handle that
 * cannot be NULL) is not NULL. */
static inline CUresult vgpu_enter_nonnull(const void *p)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A lookup's result @rc, then the output @out, which the driver checks
 * after the handle: CUDA_ERROR_INVALID_VALUE when it is NULL. */
static inline CUresult vgpu_need_out(CUresult rc, const void *out)
{
	return rc ? rc : out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A CUstream: its context and stream id (vgpu_stream_resolve). */
static inline CUresult vgpu_enter_stream(CUstream h, bool ptds, struct vgpu_ctx **ctx,
					 uint32_t *sid)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : vgpu_stream_resolve(h, ptds, ctx, sid);
}

/* The calling thread's current context. */
static inline CUresult vgpu_enter_ctx(struct vgpu_ctx **ctx)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : vgpu_ctx_current(ctx);
}

/* A CUgraph: its context and id (vgpu_graph_lookup). */
static inline CUresult vgpu_enter_graph(CUgraph h, struct vgpu_ctx **ctx, uint32_t *id)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : vgpu_graph_lookup(h, ctx, id);
}

/* A CUgraphNode: its graph, id, type and context (vgpu_graph_node_lookup). */
static inline CUresult vgpu_enter_node(CUgraphNode h, CUgraph *g, uint32_t *id,
				       CUgraphNodeType *type, struct vgpu_ctx **ctx)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : vgpu_graph_node_lookup(h, g, id, type, ctx);
}

/* A getter's answer stored in the program's integer or enum output of
 * @size bytes (4, or 8 for the 64-bit ids); a negative @v keeps its sign. */
static inline void vgpu_put_uint(void *out, size_t size, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;

	if (size == sizeof(v))
		memcpy(out, &v, sizeof(v));
	else
		memcpy(out, &v32, sizeof(v32));
}

#endif
