/* SPDX-License-Identifier: MIT */
/*
 * What each worker tells the supervisor about its session without a
 * message: one slot per worker in memory the supervisor maps shared before
 * it forks them. The worker writes, the supervisor reads when vgpuctl
 * asks; plain relaxed loads and stores, a figure may be a moment old.
 */
#ifndef VGPU_STATS_H
#define VGPU_STATS_H

#include <stdint.h>

struct worker_stats {
	uint64_t device_bytes;		/* device memory the client holds */
	uint64_t pool_bytes;		/* pinned host memory it holds */
	char comm[16];			/* the client's command, from its hello */
	char carrier[8];		/* "memfd" or "kmod" */
	uint32_t order_pending;		/* supervisor: an order waits on the
					 * control socket; the worker clears it */
	uint16_t gpu;			/* the GPU its session's device 0 is on */
	uint16_t gpus;			/* the GPUs the worker sees */
	uint64_t state_done;		/* bytes of the session's state the
					 * checkpoint, move or take-up under
					 * way has copied ... */
	uint64_t state_total;		/* ... of these; both 0 before any */
};

_Static_assert(sizeof(struct worker_stats) == 64, "one cache line per worker");

#endif
