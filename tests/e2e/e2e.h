/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the end-to-end test programs (tests/e2e/NAME.cu). Each program is
 * self-checking: exit 0 pass, 1 fail, 77 skip. Deterministic results go to
 * stdout (the GPU suite compares stdout of a native run with a run through
 * vgpu, so nothing printed there may depend on timing, addresses or the
 * amount of free memory); diagnostics go to stderr.
 */
#ifndef VGPU_E2E_H
#define VGPU_E2E_H

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define E2E_SKIP 77

static int e2e_checks, e2e_failures;

static inline const char *e2e_err(cudaError_t e)
{
	return cudaGetErrorName(e);
}

/* A call that must succeed for the rest to make sense: fail the program. */
#define CHECK(call)                                                              \
	do {                                                                     \
		cudaError_t e_ = (call);                                         \
		if (e_ != cudaSuccess) {                                         \
			fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__,  \
				#call, e2e_err(e_), cudaGetErrorString(e_));     \
			printf("FATAL %s:%d %s -> %s\n", __FILE__, __LINE__, #call, \
			       e2e_err(e_));                                     \
			fflush(stdout);                                          \
			exit(1);                                                 \
		}                                                                \
	} while (0)

/* A condition: count a failure and go on. */
#define EXPECT(cond, ...)                                                        \
	do {                                                                     \
		e2e_checks++;                                                    \
		if (!(cond)) {                                                   \
			e2e_failures++;                                          \
			fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, \
				#cond);                                          \
			fprintf(stderr, __VA_ARGS__);                            \
			fprintf(stderr, "\n");                                   \
			printf("FAILED %s:%d\n", __FILE__, __LINE__);            \
		}                                                                \
	} while (0)

/* A call that must return exactly `want`. */
#define EXPECT_ERR(call, want)                                                   \
	do {                                                                     \
		cudaError_t e_ = (call);                                         \
		e2e_checks++;                                                    \
		if (e_ != (want)) {                                              \
			e2e_failures++;                                          \
			fprintf(stderr, "%s:%d: %s returned %s, expected %s\n",  \
				__FILE__, __LINE__, #call, e2e_err(e_),          \
				e2e_err(want));                                  \
			printf("FAILED %s:%d %s -> %s (want %s)\n", __FILE__,    \
			       __LINE__, #call, e2e_err(e_), e2e_err(want));     \
		}                                                                \
	} while (0)

#define EXPECT_OK(call) EXPECT_ERR(call, cudaSuccess)

/* The end of a section: a deterministic line on stdout. */
static inline void e2e_section(const char *name)
{
	static int failures_before;

	printf("%s: %s\n", name, e2e_failures == failures_before ? "ok" : "FAILED");
	fflush(stdout);
	failures_before = e2e_failures;
}

static inline int e2e_finish(const char *prog)
{
	if (e2e_failures) {
		printf("%s: FAIL (%d of %d checks failed)\n", prog, e2e_failures, e2e_checks);
		return 1;
	}
	printf("%s: PASS\n", prog);
	return 0;
}

static inline double e2e_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A reproducible byte pattern: byte i of the stream `seed`. */
static inline uint64_t e2e_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline void e2e_pattern(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = (unsigned char *)p;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t v = e2e_mix(seed ^ (i >> 3));

		memcpy(b + i, &v, 8);
	}
	if (i < n) {
		uint64_t v = e2e_mix(seed ^ (i >> 3));

		memcpy(b + i, &v, n - i);
	}
}

/* Offset of the first byte of p that differs from the pattern, or -1. */
static inline long long e2e_pattern_check(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = (const unsigned char *)p;
	size_t i = 0;

	for (; i < n; i += 8) {
		uint64_t v = e2e_mix(seed ^ (i >> 3));
		size_t k = n - i < 8 ? n - i : 8;

		if (memcmp(b + i, &v, k)) {
			for (size_t j = 0; j < k; j++)
				if (b[i + j] != ((unsigned char *)&v)[j])
					return (long long)(i + j);
		}
	}
	return -1;
}

/* vgpud's host backend executes work as it is submitted (see daemon/). */
static inline bool on_host_backend(void)
{
	cudaDeviceProp p;

	return cudaGetDeviceProperties(&p, 0) == cudaSuccess &&
	       !strcmp(p.name, "vgpu host device");
}

#endif
