/* SPDX-License-Identifier: MIT */
/*
 * The checks of the unit tests that drive a backend's table directly
 * (test_backend_host.c, test_host_streamops.c): one line per check on
 * stdout, "ok   - WHAT" or "FAIL - WHAT", errors by name.
 */
#ifndef VGPU_TEST_BACKEND_CHECK_H
#define VGPU_TEST_BACKEND_CHECK_H

#include <stdio.h>

#include "backend.h"

static struct vgpu_backend b;	/* the backend under test */
static int failures, checks;

static const char *ename(CUresult r)
{
	const char *s = NULL;

	if (b.cuGetErrorName && b.cuGetErrorName(r, &s) == CUDA_SUCCESS)
		return s;
	return "?";
}

#define CHECK(cond, ...) do {						\
	checks++;							\
	if (cond) {							\
		printf("ok   - ");					\
	} else {							\
		printf("FAIL - ");					\
		failures++;						\
	}								\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)

/* Expects call to return want. */
#define EXPECT(want, call, what) do {					\
	CUresult r_ = (call);						\
	CHECK(r_ == (want), "%s: %s (want %s)", what, ename(r_), ename(want)); \
} while (0)

#endif
