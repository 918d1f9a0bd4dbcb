/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the plain-C driver-API test programs (tests/e2e/NAME.c; e2e.h
 * serves the .cu ones). One line per check on stdout, "ok   WHAT" or
 * "FAIL WHAT", the same natively and through vgpu (the GPU suite compares
 * the two runs' stdout); why a check failed goes to stderr. What only vgpu
 * promises is checked under vgpu only, on stderr, out of the printed count.
 */
#ifndef VGPU_DRIVER_CHECK_H
#define VGPU_DRIVER_CHECK_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int checks, failures;

static inline const char *errname(CUresult rc)
{
	const char *s = NULL;

	if (cuGetErrorName(rc, &s) || !s)
		return "?";
	return s;
}

/* Whether the driver is vgpu's runtime: it exports a call of its own. */
static inline bool under_vgpu(void)
{
	return dlsym(RTLD_DEFAULT, "vgpuDriverExportTableInfo") != NULL;
}

/* A check: counted, one line on stdout. */
static inline void expect(bool ok, const char *what, CUresult rc)
{
	checks++;
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	fflush(stdout);	/* a crash shows where */
	if (!ok) {
		failures++;
		fprintf(stderr, "FAIL %s: got %s (%d)\n", what, errname(rc), rc);
	}
}

/* What only vgpu promises (the real driver crashes or answers otherwise):
 * under vgpu only, on stderr, out of the count. */
static inline void expect_vgpu(bool ok, const char *what, CUresult rc)
{
	if (!under_vgpu())
		return;
	if (!ok)
		failures++;
	fprintf(stderr, "%s %s (%s)\n", ok ? "ok  " : "FAIL", what, errname(rc));
}

/* A call that must return @want; the rest is the check's name, printf-style. */
#define EXPECT_RC(call, want, ...)                                                  \
	do {                                                                        \
		char what_[200];                                                    \
		CUresult rc_ = (call);                                              \
		snprintf(what_, sizeof(what_), __VA_ARGS__);                        \
		expect(rc_ == (want), what_, rc_);                                  \
	} while (0)
#define EXPECT_OK(call, ...) EXPECT_RC(call, CUDA_SUCCESS, __VA_ARGS__)

/* A call the rest depends on: the program fails. */
#define MUST(call)                                                                  \
	do {                                                                        \
		CUresult rc_ = (call);                                              \
		if (rc_) {                                                          \
			printf("FATAL %s -> %s\n", #call, errname(rc_));            \
			fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__,    \
				#call, errname(rc_));                               \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

/* PTX of vgpu_poke_u32(p, v), *p = v: a kernel the host backend implements
 * too (daemon/backend/host/host_kernels.c). */
#define POKE_U32_PTX								\
	".version 8.0\n.target sm_90\n.address_size 64\n"			\
	".visible .entry vgpu_poke_u32(.param .u64 p, .param .u32 v)\n{\n"	\
	"\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n"				\
	"\tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [v];\n"		\
	"\tcvta.to.global.u64 %rd2, %rd1;\n\tst.global.u32 [%rd2], %r1;\n\tret;\n}\n"

/* The last line, "NAME: PASS (N checks)", and the exit status. */
static inline int checks_done(const char *name)
{
	printf("%s: %s (%d checks)\n", name, failures ? "FAIL" : "PASS", checks);
	return failures ? 1 : 0;
}

/*
 * Waits for the test harness to create @path, @seconds at most by the clock
 * (a sleep a signal cuts short must not end the wait early); false, with a
 * FAIL line, when it never came.
 */
static inline bool wait_for_file(const char *path, int seconds)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (!access(path, F_OK))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec >= seconds)
			break;
		usleep(10000);
	}
	printf("FAIL no %s after %d s\n", path, seconds);
	return false;
}

#endif
