// SPDX-License-Identifier: MIT
/*
 * dark-trace: a libcuda.so.1 that forwards every call to the real driver and
 * wraps the hidden export tables (cuGetExportTable) so each call into one of
 * their slots is logged to stderr with its first arguments and its return
 * value. A developer's tool for learning what a CUDA library expects of a
 * table vgpu serves: run the library natively with this directory first in
 * LD_LIBRARY_PATH and DARK_TRACE_REAL naming the real driver.
 *
 *   DARK_TRACE_REAL   path of the real libcuda.so.1 (required)
 *   DARK_TRACE_MAX    calls logged per slot (default 20)
 *   DARK_TRACE_API    set: also log the driver functions handed out by
 *                     cuGetProcAddress (name, arguments, result)
 *   DARK_TRACE_DEEP   set: dump one level further behind pointer arguments
 *   DARK_TRACE_WATCH  set: after each ToolsContext[4] call, log every read of
 *                     the context and of ToolsContext[51]'s object, its
 *                     records and what they point to, until the next
 *                     logged call (needs DARK_TRACE_API to end the window)
 *   DARK_TRACE_STEP   a path prefix: after the second ToolsContext[4] call
 *                     (cuBLAS's first GEMM), single-step the program until
 *                     the next logged call and write the instructions run
 *                     in libcublas* to PREFIX.1, one "lib+offset" a line
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dark_trace.h"

#define MAX_STUBS 4096
#define DEPTH 256

extern const uintptr_t dark_trace_stubs[MAX_STUBS];
extern void dark_trace_post(void);
extern const char *const dark_trace_names[];
extern void *dark_trace_fwd[];
extern const int dark_trace_nnames;

static void *real;
static uintptr_t orig[MAX_STUBS];
static char tag[MAX_STUBS][48];
static int calls[MAX_STUBS];
static int nstubs, max_log = 20;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static __thread struct { uintptr_t ret; int idx; uintptr_t args[4]; } stack[DEPTH];
static __thread int depth;

__attribute__((constructor)) static void load_real(void)
{
	const char *path = getenv("DARK_TRACE_REAL");

	if (getenv("DARK_TRACE_MAX"))
		max_log = atoi(getenv("DARK_TRACE_MAX"));
	real = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!real) {
		fprintf(stderr, "[dark-trace] cannot load DARK_TRACE_REAL=%s: %s\n",
			path ? path : "(unset)", dlerror());
		abort();
	}
	for (int i = 0; i < dark_trace_nnames; i++)
		dark_trace_fwd[i] = dlsym(real, dark_trace_names[i]);
}

/* Copies len bytes at p, or fails on memory that is not mapped. */
int peek(uintptr_t p, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)p, len };

	return p && process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* What a pointer argument points to: 6 words, and 24 more behind the first. */
static void dump(const char *tag, const char *when, int argno, uintptr_t p)
{
	uint64_t w[6], v[24];

	if (peek(p, w, sizeof(w)))
		return;
	fprintf(stderr, "[dark-trace]   %s %s arg%d %#lx: %lx %lx %lx %lx %lx %lx\n", tag, when,
		argno, p, w[0], w[1], w[2], w[3], w[4], w[5]);
	if (!peek(w[0], v, sizeof(v)))
	{
		fprintf(stderr, "[dark-trace]     *%lx:", w[0]);
		for (int i = 0; i < 24; i++)
			fprintf(stderr, " %lx", v[i]);
		fputc('\n', stderr);
		for (int i = 0; getenv("DARK_TRACE_DEEP") && i < 24; i++) {
			uint64_t u[8];

			if (v[i] < 0x10000 || peek(v[i], u, sizeof(u)))
				continue;
			fprintf(stderr, "[dark-trace]       [%d] *%lx: %lx %lx %lx %lx %lx %lx %lx %lx\n",
				i, v[i], u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]);
		}
	}
}


__attribute__((visibility("hidden"))) uintptr_t dark_trace_pre(long idx, uintptr_t *retslot, const uintptr_t *regs)
{
	/* regs: rax r9 r8 rcx rdx rsi rdi, from low to high */
	step_stop();
	watch_disarm(tag[idx]);
	if (__atomic_fetch_add(&calls[idx], 1, __ATOMIC_RELAXED) < max_log)
		fprintf(stderr, "[dark-trace] %s(%#lx, %#lx, %#lx, %#lx, %#lx)\n", tag[idx],
			regs[6], regs[5], regs[4], regs[3], regs[2]);
	if (calls[idx] <= max_log)
		for (int a = 0; a < 4; a++)
			dump(tag[idx], "before", a, regs[6 - a]);
	if (depth < DEPTH) {
		for (int a = 0; a < 4; a++)
			stack[depth].args[a] = regs[6 - a];
		stack[depth].ret = *retslot;
		stack[depth].idx = (int)idx;
		*retslot = (uintptr_t)dark_trace_post;
	}
	depth++;
	return orig[idx];
}

__attribute__((visibility("hidden"))) uintptr_t dark_trace_post_hook(uintptr_t rax)
{
	int idx;

	depth--;
	idx = stack[depth].idx;
	if (calls[idx] <= max_log) {
		fprintf(stderr, "[dark-trace] %s -> %#lx\n", tag[idx], rax);
		for (int a = 0; a < 4; a++)
			dump(tag[idx], "after", a, stack[depth].args[a]);
	}
	if (!strcmp(tag[idx], "21318c60[51]")) {
		uintptr_t obj = 0;

		peek(stack[depth].args[2], &obj, sizeof(obj));
		watch_note_object(obj);
	}
	if (!strcmp(tag[idx], "21318c60[4]")) {
		watch_arm(stack[depth].args[0]);
		step_arm();
	}
	return stack[depth].ret;
}

static int is_driver_code(uintptr_t p)
{
	Dl_info info, self;

	return p && dladdr((void *)p, &info) && info.dli_fname &&
	       strstr(info.dli_fname, "libcuda") &&
	       !(dladdr((void *)is_driver_code, &self) && self.dli_fbase == info.dli_fbase);
}

/* A trampoline for fn named name (one per distinct fn), or fn itself. */
static uintptr_t stub_for(uintptr_t fn, const char *name)
{
	uintptr_t r = fn;

	pthread_mutex_lock(&lock);
	for (int k = 0; k < nstubs; k++)
		if (orig[k] == fn && !strcmp(tag[k], name)) {
			r = dark_trace_stubs[k];
			goto out;
		}
	if (nstubs < MAX_STUBS) {
		int k = nstubs++;

		orig[k] = fn;
		snprintf(tag[k], sizeof(tag[k]), "%s", name);
		r = dark_trace_stubs[k];
	}
out:
	pthread_mutex_unlock(&lock);
	return r;
}

static const void *wrap_table(const unsigned char *id, const uintptr_t *t)
{
	size_t n = t[0] % 8 == 0 && t[0] >= 16 && t[0] <= 8192 ? t[0] / 8 : 64;
	uintptr_t *copy = calloc(n, sizeof(*copy));

	fprintf(stderr, "[dark-trace] table %02x%02x%02x%02x: %zu slots (word 0 = %#lx)\n",
		id[0], id[1], id[2], id[3], n, t[0]);
	for (size_t i = 0; i < n; i++) {
		char name[48];

		copy[i] = t[i];
		if (!is_driver_code(t[i]))
			continue;
		snprintf(name, sizeof(name), "%02x%02x%02x%02x[%zu]", id[0], id[1], id[2], id[3], i);
		copy[i] = stub_for(t[i], name);
	}
	return copy;
}

int cuGetExportTable(const void **table, const unsigned char *id)
{
	static int (*fn)(const void **, const unsigned char *);
	static struct { unsigned char id[16]; const void *copy; } seen[64];
	static int nseen;
	int rc;

	if (!fn)
		fn = dlsym(real, "cuGetExportTable");
	rc = fn(table, id);
	fprintf(stderr, "[dark-trace] cuGetExportTable(%02x%02x%02x%02x-...) -> %d\n", id[0], id[1],
		id[2], id[3], rc);
	/* The integrity check hashes the addresses of its own table and of
	 * CUDART_INTERFACE: those two are passed through unwrapped. */
	if (rc || !*table || !memcmp(id, "\xd4\x08\x20\x55", 4) ||
	    !memcmp(id, "\x6b\xd5\xfb\x6c", 4))
		return rc;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < nseen; i++)
		if (!memcmp(seen[i].id, id, 16)) {
			*table = seen[i].copy;
			pthread_mutex_unlock(&lock);
			return rc;
		}
	pthread_mutex_unlock(&lock);
	{
		const void *copy = wrap_table(id, *table);

		pthread_mutex_lock(&lock);
		if (nseen < 64) {
			memcpy(seen[nseen].id, id, 16);
			seen[nseen++].copy = copy;
		}
		pthread_mutex_unlock(&lock);
		*table = copy;
	}
	return rc;
}

int cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags);
int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, void *status);

/* The three entry points that lead to the tables are ours, however asked for. */
static int gpa_common(const char *sym, void **pfn, int rc)
{
	static const char *const names[] = { "cuGetExportTable", "cuGetProcAddress",
					     "cuGetProcAddress_v2" };
	void *const ours[] = { (void *)cuGetExportTable, (void *)cuGetProcAddress,
			       (void *)cuGetProcAddress_v2 };

	for (int i = 0; !rc && pfn && *pfn && i < 3; i++)
		if (*pfn == dlsym(real, names[i]))
			*pfn = ours[i];
	if (!rc && pfn && is_driver_code((uintptr_t)*pfn) && getenv("DARK_TRACE_API"))
		*pfn = (void *)stub_for((uintptr_t)*pfn, sym);
	return rc;
}

int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, void *status)
{
	int (*fn)(const char *, void **, int, uint64_t, void *) =
		dlsym(real, "cuGetProcAddress_v2");

	return gpa_common(sym, pfn, fn(sym, pfn, ver, flags, status));
}

int cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags)
{
	int (*fn)(const char *, void **, int, uint64_t) = dlsym(real, "cuGetProcAddress");

	return gpa_common(sym, pfn, fn(sym, pfn, ver, flags));
}
