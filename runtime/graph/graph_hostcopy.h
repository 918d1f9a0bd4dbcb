/* SPDX-License-Identifier: MIT */
/* Graph copy nodes with a host end (graph_hostcopy.c). */
#ifndef VGPU_RUNTIME_GRAPH_HOSTCOPY_H
#define VGPU_RUNTIME_GRAPH_HOSTCOPY_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"
#include "vgpu/proto.h"

/* A 3D copy as the worker's description: device and pinned pool ends by
 * address, a pageable end staged (a pool block and a callback that stay). */
VGPU_HIDDEN CUresult vgpu_graph_copy_desc(const CUDA_MEMCPY3D *c, struct vgpu_node_params *v);
/* A copy node's parameters from the worker: staging blocks named as the
 * program's memory they stand for, array ids as the program's handles
 * (CUDA_ERROR_INVALID_VALUE: an id the runtime does not know). */
VGPU_HIDDEN CUresult vgpu_graph_copy_answer(CUDA_MEMCPY3D *c);
/* A 1D copy between device memory and the program's pageable memory on
 * stream @h: recorded as one staged copy node when @h captures (*done
 * true, the result that of recording it); else *done false, nothing done. */
VGPU_HIDDEN CUresult vgpu_graph_capture_staged(CUstream h, bool ptds, uint64_t dst, uint64_t src,
					       uint64_t n, bool *done);

/* Whether a copy has an array end; such a copy node added to @g. */
VGPU_HIDDEN bool vgpu_graph_copy_has_array(const CUDA_MEMCPY3D *c);
VGPU_HIDDEN CUresult vgpu_graph_add_array_copy(CUgraphNode *out, CUgraph g,
					       const CUgraphNode *deps,
					       const CUgraphEdgeData *edges, size_t ndeps,
					       const CUDA_MEMCPY3D *c);

#endif
