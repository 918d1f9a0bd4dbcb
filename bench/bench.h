/* SPDX-License-Identifier: MIT */
/* Helpers of the benchmarks: a clock, medians, the BENCH line. */
#ifndef VGPU_BENCH_H
#define VGPU_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One result: "BENCH name value unit", machine-readable. */
static inline void bench_report(const char *name, double value, const char *unit)
{
	printf("BENCH %s %.3f %s\n", name, value, unit);
	fflush(stdout);
}

#endif
