/* SPDX-License-Identifier: MIT */
/*
 * What the worker keeps of each graph instance for checkpoints (the data of
 * its w->graph_execs entry): a copy of the graph it was made from, its
 * parameters following the instance's setters and updates, and the enabled
 * state of each node once it can no longer be asked (its graph's node gone).
 */
#ifndef VGPU_GRAPH_SNAP_H
#define VGPU_GRAPH_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "worker.h"

#define SNAP_OFF	1u	/* the node is disabled in the instance */
#define SNAP_KNOWN	2u	/* ... and that is final: its graph's node is gone */

struct graph_snap {
	uint32_t graph;		/* the graph it was made from; 0: destroyed since */
	uint64_t flags;		/* as instantiated */
	CUgraph copy;		/* NULL: none could be kept (why says) */
	const char *why;	/* non-NULL: a checkpoint cannot carry the instance */
	size_t n;		/* the copy's nodes, as cuGraphGetNodes lists them: */
	uint32_t *ids;		/* the graph's node each copies (client id, 0: none) */
	CUgraphNode *nodes;
	uint8_t *state;		/* SNAP_* */
};

/* A snapshot of @n nodes, its arrays in the same allocation (freed with the
 * entry); NULL: out of memory. */
struct graph_snap *graph_snap_new(size_t n);

#endif
