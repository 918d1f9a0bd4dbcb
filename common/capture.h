/* SPDX-License-Identifier: MIT */
/*
 * The outputs of cuStreamGetCaptureInfo that vgpu gives, for the runtime and
 * the host backend alike: the status and capture id, and never the capturing
 * graph or its dependency nodes (NULL and 0), which live in the driver.
 * Include after cuda.h.
 */
#ifndef VGPU_CAPTURE_H
#define VGPU_CAPTURE_H

#include <stddef.h>

static inline void vgpu_capture_info_fill(CUstreamCaptureStatus st, cuuint64_t cid,
					  CUstreamCaptureStatus *status, cuuint64_t *id,
					  CUgraph *graph, const CUgraphNode **deps,
					  const CUgraphEdgeData **edges, size_t *ndeps)
{
	*status = st;
	if (id)
		*id = cid;
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
}

#endif
