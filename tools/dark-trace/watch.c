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

/*
 * Page watch: the watched pages are made unreadable; a fault on one logs the
 * instruction and address, opens every page and single-steps (trap flag);
 * the trap logs the word read and closes the pages again.
 */
#define WATCH_PAGES 64
#define WATCH_LOG 4096
static uintptr_t wpages[WATCH_PAGES];
static int nwpages, watching;
static struct { uintptr_t rip, addr, val; } wlog[WATCH_LOG];
static int nwlog;
static __thread uintptr_t wpending;
static uintptr_t watch_obj;		/* ToolsContext[51]'s last object */

void watch_note_object(uintptr_t obj)
{
	watch_obj = obj;
}

static void watch_protect(int prot)
{
	for (int i = 0; i < nwpages; i++)
		mprotect((void *)wpages[i], 4096, prot);
}

static int watched(uintptr_t a)
{
	for (int i = 0; i < nwpages; i++)
		if (a - wpages[i] < 4096)
			return 1;
	return 0;
}

static void watch_segv(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;

	if (!watching || !watched((uintptr_t)si->si_addr)) {
		signal(sig, SIG_DFL);
		return;
	}
	wpending = (uintptr_t)si->si_addr;
	if (nwlog < WATCH_LOG) {
		wlog[nwlog].rip = uc->uc_mcontext.gregs[REG_RIP];
		wlog[nwlog].addr = wpending;
	}
	watch_protect(PROT_READ | PROT_WRITE);
	uc->uc_mcontext.gregs[REG_EFL] |= 0x100;
}

static void watch_trap(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
	if (nwlog < WATCH_LOG) {
		peek(wpending & ~7ul, &wlog[nwlog].val, 8);
		nwlog++;
	}
	if (watching)
		watch_protect(PROT_NONE);
}

static void watch_add(uintptr_t p)
{
	uintptr_t pg = p & ~4095ul;
	uint64_t probe;

	if (p < 0x10000 || peek(p, &probe, 8) || watched(p) || nwpages >= WATCH_PAGES)
		return;
	wpages[nwpages++] = pg;
}

void watch_arm(uintptr_t ctx)
{
	static int installed, arms;
	uint64_t o[24], r[8];

	if (!getenv("DARK_TRACE_WATCH") || watching || arms++ >= 10)
		return;
	if (!installed) {
		struct sigaction sa = { .sa_flags = SA_SIGINFO | SA_NODEFER };

		sa.sa_sigaction = watch_segv;
		sigaction(SIGSEGV, &sa, NULL);
		sa.sa_sigaction = watch_trap;
		sigaction(SIGTRAP, &sa, NULL);
		installed = 1;
	}
	nwpages = 0;
	nwlog = 0;
	watch_add(ctx);
	watch_add(ctx + 4096);
	if (watch_obj && !peek(watch_obj, o, sizeof(o))) {
		watch_add(watch_obj);
		watch_add(watch_obj + sizeof(o));
		watch_add(o[2]);
		watch_add(o[9]);
		for (int i = 15; i < 23; i++) {
			watch_add(o[i]);
			if (!peek(o[i], r, sizeof(r))) {
				watch_add(r[0]);
				watch_add(r[3]);
			}
		}
	}
	fprintf(stderr, "[dark-trace] watch: %d pages (ctx %#lx, obj %#lx)\n", nwpages, ctx,
		watch_obj);
	watching = 1;
	watch_protect(PROT_NONE);
}

/* The library p lies in (its file name) and p's offset from its base. */
static const char *where(uintptr_t p, uintptr_t *off)
{
	Dl_info info;
	const char *slash;

	*off = p;
	if (!dladdr((void *)p, &info) || !info.dli_fname)
		return "?";
	*off = p - (uintptr_t)info.dli_fbase;
	slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}

void watch_disarm(const char *why)
{
	if (!watching)
		return;
	watching = 0;
	watch_protect(PROT_READ | PROT_WRITE);
	fprintf(stderr, "[dark-trace] watch ends at %s: %d accesses\n", why, nwlog);
	for (int i = 0; i < nwlog && i < WATCH_LOG; i++) {
		uintptr_t code_off, data_off;
		const char *code = where(wlog[i].rip, &code_off);
		const char *data = where(wlog[i].addr, &data_off);

		fprintf(stderr, "[dark-trace]   watch %s+%#lx reads %#lx (%s+%#lx) = %#lx\n", code,
			code_off, wlog[i].addr, data, data_off, wlog[i].val);
	}
}
