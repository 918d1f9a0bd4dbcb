/* SPDX-License-Identifier: MIT */
/* Shared (not process-private) futexes: the words live in shared memory. */
#ifndef VGPU_FUTEX_H
#define VGPU_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps while *word == val, at most timeout_ms. 0 woken/changed, -ETIMEDOUT. */
static inline int vgpu_futex_wait(uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long)(timeout_ms % 1000) * 1000000L,
	};

	if (syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0) < 0 &&
	    errno == ETIMEDOUT)
		return -ETIMEDOUT;
	return 0;
}

static inline void vgpu_futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

#endif
