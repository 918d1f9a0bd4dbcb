// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "dark_trace.h"

/* Single-step recording (DARK_TRACE_STEP). */
#define STEP_MAX (4u << 20)
static uintptr_t *steps;
static unsigned nsteps;
static volatile int stepping;
static int step_arms;

static void step_trap(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;

	(void)sig;
	(void)si;
	if (!stepping || nsteps >= STEP_MAX) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
		return;
	}
	steps[nsteps++] = uc->uc_mcontext.gregs[REG_RIP];
	uc->uc_mcontext.gregs[REG_EFL] |= 0x100;
}

void step_arm(void)
{
	const char *prefix = getenv("DARK_TRACE_STEP");
	struct sigaction sa = { .sa_flags = SA_SIGINFO };

	static int seen;

	if (!prefix || stepping || ++seen != 2)
		return;
	if (!steps)
		steps = malloc(STEP_MAX * sizeof(*steps));
	step_arms++;
	nsteps = 0;
	sa.sa_sigaction = step_trap;
	sigaction(SIGTRAP, &sa, NULL);
	stepping = 1;
	__asm__ volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory", "cc");
}

void step_stop(void)
{
	char path[512];
	FILE *f;
	unsigned n;

	if (!stepping)
		return;
	stepping = 0;
	n = nsteps;
	snprintf(path, sizeof(path), "%s.%d", getenv("DARK_TRACE_STEP"), step_arms);
	f = fopen(path, "w");
	if (!f)
		return;
	for (unsigned i = 0, prev_in = 0; i < n; i++) {
		Dl_info info;
		const char *b;
		int in;

		if (!dladdr((void *)steps[i], &info) || !info.dli_fname)
			continue;
		in = strstr(info.dli_fname, "libcublas") != NULL;
		b = strrchr(info.dli_fname, '/');
		/* libcublas* instructions, and where each of its calls out lands */
		if (in || prev_in)
			fprintf(f, "%s+%#lx%s%s\n", b ? b + 1 : info.dli_fname,
				steps[i] - (uintptr_t)info.dli_fbase, in ? "" : " ",
				in || !info.dli_sname ? "" : info.dli_sname);
		prev_in = in;
	}
	fclose(f);
	fprintf(stderr, "[dark-trace] step: %u instructions, libcublas ones in %s\n", n, path);
}
