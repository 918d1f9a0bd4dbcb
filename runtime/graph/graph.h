/* SPDX-License-Identifier: MIT */
/* Graphs and their nodes: what graph.c and graph_node.c share. */
#ifndef VGPU_RUNTIME_GRAPH_H
#define VGPU_RUNTIME_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"
#include "handles.h"

/* graph.c: a graph's (or an instance's) context and id, the handle checked. */
VGPU_HIDDEN CUresult vgpu_graph_lookup(CUgraph h, struct vgpu_ctx **ctx, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_graph_exec_lookup(CUgraphExec h, struct vgpu_ctx **ctx, uint32_t *id);
/* The instance @h a node setter names, if any (*id 0 when NULL): it must
 * be of the node's context @ctx. */
VGPU_HIDDEN CUresult vgpu_graph_exec_in(CUgraphExec h, const struct vgpu_ctx *ctx, uint32_t *id);

/* graph.c: whether a stream capture is in progress anywhere in the session
 * (cuLaunchHostFunc then gives a cookie that stays: a capture may record it
 * as a host node, which runs at every launch). */
VGPU_HIDDEN bool vgpu_graph_capturing(void);

/* graph.c: a graph handle with a fresh id the worker does not know yet;
 * one freed with its node handles (a graph the worker forgot). */
VGPU_HIDDEN CUresult vgpu_graph_handle_new(struct vgpu_ctx *ctx, CUgraph *out, uint32_t *id);
VGPU_HIDDEN void vgpu_graph_handle_free(CUgraph h);

/* graph_query.c: the graphs child graph nodes own go with their node (NULL:
 * any node) or their parent graph; a graph destroyed is no longer one. */
VGPU_HIDDEN void vgpu_graph_embedded_drop(CUgraph parent, CUgraphNode node);
VGPU_HIDDEN void vgpu_graph_embedded_forget(CUgraph g);
/* graph_query.c: graph @graph (id @id) is owned by @node of @parent from now
 * on (a conditional node's body), @owned (may be NULL) freed with it; 0, or
 * -1: out of memory. */
VGPU_HIDDEN int vgpu_graph_embedded_add(CUgraph graph, uint32_t id, CUgraph parent,
					CUgraphNode node, void *owned);
/* graph_cond.c: a conditional node added (its bodies made graphs of the
 * program's; p->phGraph_out set to an array of them the node owns). */
/* graph_memnode.c: memory nodes added (the allocation's address in p->dptr);
 * those of graph @g (node NULL: all) forgotten with it. */
VGPU_HIDDEN CUresult vgpu_graph_add_mem_alloc(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
					      const CUgraphEdgeData *edges, size_t ndeps,
					      CUDA_MEM_ALLOC_NODE_PARAMS *p);
VGPU_HIDDEN CUresult vgpu_graph_add_mem_free(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
					     const CUgraphEdgeData *edges, size_t ndeps,
					     CUdeviceptr dptr);
VGPU_HIDDEN void vgpu_graph_mem_drop(CUgraph g, CUgraphNode node);
VGPU_HIDDEN CUresult vgpu_graph_add_cond(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
					 const CUgraphEdgeData *edges, size_t ndeps,
					 CUDA_CONDITIONAL_NODE_PARAMS *p);

/* graph_node.c: node handles of a graph that is going away are freed. */
VGPU_HIDDEN void vgpu_graph_nodes_release(CUgraph h);
/* graph_node.c: a function the worker may name by id (launches tell). */
VGPU_HIDDEN void vgpu_func_remember(struct vgpu_func *f);

/* graph_node.c, for graph_build.c: a node handle checked (its graph, the
 * worker's id, its type, its graph's context); the handle of a node the
 * worker just made; a destroyed node's handle freed; handles as ids; edge
 * data that is all ordinary edges (none sent then); kernel nodes added and
 * set (v2: the struct has kern and ctx). */
VGPU_HIDDEN CUresult vgpu_graph_node_lookup(CUgraphNode h, CUgraph *graph, uint32_t *id,
					    CUgraphNodeType *type, struct vgpu_ctx **ctx);
VGPU_HIDDEN CUresult vgpu_graph_node_made(CUgraph g, uint32_t id, CUgraphNodeType type,
					  CUgraphNode *out);
VGPU_HIDDEN void vgpu_graph_node_forget(CUgraphNode h);
VGPU_HIDDEN CUresult vgpu_graph_node_ids(CUgraph g, const CUgraphNode *h, size_t n,
					 uint32_t *ids);
VGPU_HIDDEN bool vgpu_graph_edges_plain(const CUgraphEdgeData *edges, size_t n);
/* Sends @r with payload @buf: @len bytes, then the data of the @n edges
 * when @edges (not all plain) is given, for which @buf has room after @len;
 * arg[2] says which. CUDA_ERROR_NOT_SUPPORTED beyond one entry's payload. */
VGPU_HIDDEN CUresult vgpu_graph_edges_call(struct vgpu_req *r, uint8_t *buf, uint32_t len,
					   const CUgraphEdgeData *edges, size_t n);
VGPU_HIDDEN CUresult vgpu_graph_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
					   const CUgraphEdgeData *edges, size_t ndeps,
					   const CUDA_KERNEL_NODE_PARAMS *p, bool v2);
VGPU_HIDDEN CUresult vgpu_graph_kernel_set(CUgraphExec exec, CUgraphNode h,
					   const CUDA_KERNEL_NODE_PARAMS *p, bool v2);

#endif
