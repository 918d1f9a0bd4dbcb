/* SPDX-License-Identifier: MIT */
/* The unit tests' check: counts, and says where a check failed and why. */
#ifndef VGPU_TEST_CHECK_H
#define VGPU_TEST_CHECK_H

#include <stdio.h>

static int failures, checks;

/* CHECK(cond) or CHECK(cond, "format", ...): the check and what it means
 * (with no words of its own a check prints an empty format). */
#pragma GCC diagnostic ignored "-Wformat-zero-length"
#define CHECK(cond, ...) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		printf("" __VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

#endif
