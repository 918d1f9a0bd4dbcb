/* SPDX-License-Identifier: MIT */
/*
 * Runs of kernel launches as CUDA graphs (launch_graphs.c).
 *
 * A program that launches faster than the driver takes launches leaves a
 * run of them waiting in the ring. When a run of the same shape (the same
 * kernels, grids, blocks and shared memory, in the same context and
 * stream) comes back, the worker launches it as one instantiated graph, a
 * chain of kernel nodes, with the parameters that changed set in place:
 * one driver call instead of one per kernel, and the GPU runs the chain
 * with less time between kernels. The effect on the stream is the same.
 */
#ifndef VGPU_LAUNCH_GRAPHS_H
#define VGPU_LAUNCH_GRAPHS_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/proto.h"

struct worker;

/* Holds @sqe (a ring entry, its payload copied out) when it is a plain
 * asynchronous launch that can join the run in hand; false: the caller
 * runs it as usual, after launch_graphs_flush. */
bool launch_graphs_hold(struct worker *w, const struct vgpu_sqe *sqe, const void *payload,
			int len);
/* Launches the run in hand: before any other entry, and whenever the ring
 * has nothing more for now. */
void launch_graphs_flush(struct worker *w);
/* After @opcode ran: an entry that may change what a kernel launch does
 * (unloading a module, a function's attributes, a context going away)
 * drops the graphs kept. */
void launch_graphs_after(struct worker *w, uint16_t opcode, uint16_t op_flags);
/* Drops every graph kept (and the run in hand must have been flushed). */
void launch_graphs_forget(struct worker *w);
void launch_graphs_free(struct worker *w);

#endif
