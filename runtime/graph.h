/* SPDX-License-Identifier: MIT */
/* Graphs and their nodes: what graph.c and graph_node.c share. */
#ifndef VGPU_RUNTIME_GRAPH_H
#define VGPU_RUNTIME_GRAPH_H

#include <stdint.h>

#include "driver.h"
#include "handles.h"

/* graph.c: a graph's (or an instance's) context and id, the handle checked. */
VGPU_HIDDEN CUresult vgpu_graph_lookup(CUgraph h, struct vgpu_ctx **ctx, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_graph_exec_lookup(CUgraphExec h, struct vgpu_ctx **ctx, uint32_t *id);

/* graph_node.c: node handles of a graph that is going away are freed. */
VGPU_HIDDEN void vgpu_graph_nodes_release(CUgraph h);
/* graph_node.c: a function the worker may name by id (launches tell). */
VGPU_HIDDEN void vgpu_func_remember(struct vgpu_func *f);

#endif
