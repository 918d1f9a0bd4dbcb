/* SPDX-License-Identifier: MIT */
/* Monotonic time for spin budgets. */
#ifndef VGPU_CLOCK_H
#define VGPU_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t vgpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#endif
