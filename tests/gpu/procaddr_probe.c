// SPDX-License-Identifier: MIT
/*
 * cuGetProcAddress conformance: our runtime/exports/procaddr.c against the real
 * driver, on the GPU machine. Build and run from the repository root:
 *
 *   gcc -std=gnu11 -O1 -D_GNU_SOURCE -I include -I common -I runtime \
 *       -I /usr/local/cuda/include tests/gpu/procaddr_probe.c runtime/exports/procaddr.c \
 *       runtime/exports/exports_gen.c runtime/exports/unsupported.c common/log.c -ldl -lpthread \
 *       -o /tmp/procaddr_probe && /tmp/procaddr_probe [MISMATCH_FILE]
 *
 * Our cuGetProcAddress is linked in (not exported: the executable has no
 * dynamic cu* symbols, so the real driver, dlopened RTLD_LOCAL, never sees
 * them). For every name of procaddr_table.h, every version the table knows
 * (and one below each) plus a few releases, and flags 0, 1 and 2, both
 * answers are compared: return code, *symbolStatus, and the function returned
 * (the real one matches when dlsym(real driver, our symbol's name) is the
 * address it returned). Then every exported name looked up verbatim, edge
 * cases (unknown names, versions above the driver's or negative, odd flags,
 * the 4-argument ABI, NULL arguments: the driver crashes on a NULL symbol or
 * pfn, in a child process, where we answer INVALID_VALUE), and the same
 * lookups after cuInit. Names the real driver exports beyond the toolkit's
 * stub (graphics interop) are printed as NOTEs, not counted. Prints
 * mismatches (all of them into MISMATCH_FILE if given) and ends with
 * "procaddr: N passed, M failed". Exit 0 when none failed.
 *
 * Result on driver 580.159.04 (CUDA 13.0), H100: 112808 passed, 0 failed.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"
#include "procaddr_table.h"
#include "unsupported.h"

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
			    CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);

#define UNSET ((void *)1)
#define ST_UNSET 77
#define STDOUT_MISMATCHES 150

static void *real;
static gpa2_fn real_gpa2;
static gpa1_fn real_gpa1;
static FILE *mfile;
static unsigned long passed, failed;
static const char *section = "";

struct answer {
	CUresult rc;
	void *p;
	int st;
};

static const char *our_name(void *p, char *buf, size_t len)
{
	if (p == NULL)
		return "NULL";
	if (p == UNSET)
		return "unset";
	for (unsigned int i = 0; i < vgpu_exports_count; i++)
		if (vgpu_exports[i].addr == p)
			return vgpu_exports[i].name;
	snprintf(buf, len, "%p?", p);
	return buf;
}

static const char *real_name(void *p, char *buf, size_t len)
{
	Dl_info di;

	if (p == NULL)
		return "NULL";
	if (p == UNSET)
		return "unset";
	if (dladdr(p, &di) && di.dli_sname) {
		if (di.dli_saddr == p)
			return di.dli_sname;
		snprintf(buf, len, "%s+%#lx", di.dli_sname,
			 (unsigned long)((char *)p - (char *)di.dli_saddr));
	} else {
		snprintf(buf, len, "%p(no symbol)", p);
	}
	return buf;
}

/* Does the real driver's pointer denote the symbol our pointer is? */
static int same_function(void *ours, void *theirs)
{
	char buf[64];

	if (ours == NULL || ours == UNSET || theirs == NULL || theirs == UNSET)
		return ours == theirs;
	return dlsym(real, our_name(ours, buf, sizeof(buf))) == theirs;
}

static void report(const char *what, struct answer o, struct answer r)
{
	char b1[128], b2[128];
	char line[512];

	snprintf(line, sizeof(line),
		 "MISMATCH [%s] %s: real rc=%d pfn=%s status=%d | ours rc=%d pfn=%s status=%d",
		 section, what, r.rc, real_name(r.p, b1, sizeof(b1)), r.st, o.rc,
		 our_name(o.p, b2, sizeof(b2)), o.st);
	if (failed <= STDOUT_MISMATCHES)
		puts(line);
	if (mfile)
		fprintf(mfile, "%s\n", line);
}

static void compare(const char *what, struct answer o, struct answer r)
{
	if (o.rc == r.rc && o.st == r.st && same_function(o.p, r.p)) {
		passed++;
		return;
	}
	failed++;
	report(what, o, r);
}

/* Both cuGetProcAddress_v2 (and, with abi1, the 4-argument one). */
static void check(const char *sym, int ver, cuuint64_t flags, int abi1)
{
	struct answer o = { 0, UNSET, ST_UNSET }, r = { 0, UNSET, ST_UNSET };
	CUdriverProcAddressQueryResult so = ST_UNSET, sr = ST_UNSET;
	char what[256];

	o.rc = cuGetProcAddress_v2(sym, &o.p, ver, flags, &so);
	r.rc = real_gpa2(sym, &r.p, ver, flags, &sr);
	o.st = so;
	r.st = sr;
	snprintf(what, sizeof(what), "cuGetProcAddress_v2(\"%s\", %d, %#llx)", sym, ver,
		 (unsigned long long)flags);
	compare(what, o, r);
	if (abi1) {
		o = (struct answer){ 0, UNSET, ST_UNSET };
		r = o;
		o.rc = cuGetProcAddress(sym, &o.p, ver, flags);
		r.rc = real_gpa1(sym, &r.p, ver, flags);
		snprintf(what, sizeof(what), "cuGetProcAddress(\"%s\", %d, %#llx)", sym, ver,
			 (unsigned long long)flags);
		compare(what, o, r);
	}
}

/*
 * A call that may crash the real driver (NULL arguments): made in a child.
 * which: 0 symbol NULL, 1 pfn NULL, 2 symbolStatus NULL.
 */
static void check_null(int which, const char *sym)
{
	struct answer o = { 0, UNSET, ST_UNSET }, r = { 0, UNSET, ST_UNSET };
	CUdriverProcAddressQueryResult so = ST_UNSET;
	int fds[2], status = 0;
	char what[128];
	pid_t pid;

	snprintf(what, sizeof(what), "NULL %s, symbol \"%s\"",
		 which == 0 ? "symbol" : which == 1 ? "pfn" : "symbolStatus", sym ? sym : "");
	o.rc = cuGetProcAddress_v2(which == 0 ? NULL : sym, which == 1 ? NULL : &o.p, 13000, 0,
				   which == 2 ? NULL : &so);
	o.st = so;
	if (pipe(fds))
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		CUdriverProcAddressQueryResult sr = ST_UNSET;

		close(fds[0]);
		r.rc = real_gpa2(which == 0 ? NULL : sym, which == 1 ? NULL : &r.p, 13000, 0,
				 which == 2 ? NULL : &sr);
		r.st = sr;
		if (write(fds[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &r, sizeof(r)) != sizeof(r)) {
		/* The driver dereferences NULL here; we answer INVALID_VALUE instead. */
		waitpid(pid, &status, 0);
		close(fds[0]);
		printf("NOTE [%s] %s: the real driver crashed (wait status %#x); ours rc=%d\n",
		       section, what, status, o.rc);
		r = (struct answer){ CUDA_ERROR_INVALID_VALUE, o.p, o.st };
		compare(what, o, r);
		return;
	}
	waitpid(pid, &status, 0);
	close(fds[0]);
	compare(what, o, r);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const char *const odd_names[] = {
		"cuNoSuchFunction", "", "cuinit", "cuInit ", "cudaMalloc", "cuWGLGetDevice",
		"cuGetExportTable", "cuGetProcAddress", "cuGraphInstantiateWithFlags",
		"cuStreamGetCtx_v2", "cudbgApiInit", "cuProfilerStart",
	};
	/*
	 * Exported by the real driver (580.159.04) but not by the toolkit's stub,
	 * so not by us: graphics interop, which it also resolves, and the
	 * undocumented cuMemGetAttribute. Reported, not counted.
	 */
	static const char *const interop_names[] = {
		"cuMemGetAttribute",
		"cuGLInit", "cuGLGetDevices", "cuGLCtxCreate", "cuGLMapBufferObject",
		"cuGLMapBufferObjectAsync", "cuGraphicsGLRegisterBuffer",
		"cuEGLStreamConsumerConnect", "cuGraphicsEGLRegisterImage", "cuVDPAUGetDevice",
		"cuVDPAUCtxCreate", "cuGraphicsVDPAURegisterVideoSurface",
	};
	static const int odd_versions[] = { 13001, 13010, 13020, 14000, 99999, INT_MAX, 0, -1,
					    INT_MIN, 1000, 1999, 2000 };
	static const cuuint64_t odd_flags[] = { 3, 4, 8, 0x10, 1ull << 32, ~0ull };
	static const int releases[] = { 11030, 12000, 12040, 12080, 13000 };
	unsigned int nentries = sizeof(vgpu_procaddr_entries) / sizeof(vgpu_procaddr_entries[0]);
	unsigned int nvariants = sizeof(vgpu_procaddr_variants) / sizeof(vgpu_procaddr_variants[0]);
	int *versions, nversions = 0, drv = 0;
	gpa2_fn our_gpa = cuGetProcAddress_v2;
	CUresult (*init)(unsigned int);
	CUresult (*drvver)(int *);
	Dl_info di;

	if (argc > 1 && !(mfile = fopen(argv[1], "w")))
		perror(argv[1]);
	real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!real) {
		printf("cannot load the real driver: %s\nprocaddr: 0 passed, 1 failed\n", dlerror());
		return 1;
	}
	real_gpa2 = (gpa2_fn)dlsym(real, "cuGetProcAddress_v2");
	real_gpa1 = (gpa1_fn)dlsym(real, "cuGetProcAddress");
	init = (CUresult(*)(unsigned int))dlsym(real, "cuInit");
	drvver = (CUresult(*)(int *))dlsym(real, "cuDriverGetVersion");
	if (!real_gpa2 || !real_gpa1 || !init || !drvver || (void *)real_gpa2 == (void *)our_gpa) {
		printf("real driver lacks cuGetProcAddress_v2/cuInit\nprocaddr: 0 passed, 1 failed\n");
		return 1;
	}
	if (dladdr((void *)real_gpa2, &di))
		printf("real driver: %s\n", di.dli_fname);
	drvver(&drv);
	printf("real driver version %d, our table CUDA %d, %u names, %u variants\n", drv,
	       VGPU_PROCADDR_CUDA_VERSION, nentries, nvariants);

	/* Versions: each the table knows, one below each, and a few releases. */
	versions = malloc(sizeof(int) * (2 * nvariants + 5));
	for (unsigned int i = 0; i < nvariants; i++) {
		versions[nversions++] = vgpu_procaddr_variants[i].version;
		versions[nversions++] = vgpu_procaddr_variants[i].version - 1;
	}
	for (unsigned int i = 0; i < 5; i++)
		versions[nversions++] = releases[i];
	qsort(versions, nversions, sizeof(int), int_cmp);
	{
		int n = 0;

		for (int i = 0; i < nversions; i++)
			if (!n || versions[n - 1] != versions[i])
				versions[n++] = versions[i];
		nversions = n;
	}
	printf("%d versions from %d to %d\n", nversions, versions[0], versions[nversions - 1]);

	section = "table";
	for (unsigned int e = 0; e < nentries; e++)
		for (int v = 0; v < nversions; v++)
			for (cuuint64_t f = 0; f < 3; f++)
				check(vgpu_procaddr_entries[e].name, versions[v], f,
				      versions[v] == 13000);
	printf("after table: %lu passed, %lu failed\n", passed, failed);

	section = "verbatim";
	for (unsigned int i = 0; i < vgpu_exports_count; i++)
		for (cuuint64_t f = 0; f < 3; f++)
			check(vgpu_exports[i].name, 13000, f, 0);
	printf("after verbatim: %lu passed, %lu failed\n", passed, failed);

	section = "edge";
	for (unsigned int i = 0; i < sizeof(odd_names) / sizeof(odd_names[0]); i++)
		for (cuuint64_t f = 0; f < 3; f++)
			check(odd_names[i], 13000, f, 1);
	for (unsigned int i = 0; i < sizeof(odd_versions) / sizeof(odd_versions[0]); i++) {
		check("cuInit", odd_versions[i], 0, 1);
		check("cuMemAlloc", odd_versions[i], 2, 0);
		check("cuNoSuchFunction", odd_versions[i], 0, 1);
	}
	for (unsigned int i = 0; i < sizeof(odd_flags) / sizeof(odd_flags[0]); i++) {
		check("cuStreamQuery", 13000, odd_flags[i], 1);
		check("cuMemcpyHtoD", 13000, odd_flags[i], 0);
		check("cuMemcpyHtoD", 3020, odd_flags[i], 0);
		check("cuInit", 13000, odd_flags[i], 0);
		check("cuNoSuchFunction", 13000, odd_flags[i], 0);
	}
	for (unsigned int i = 0; i < sizeof(interop_names) / sizeof(interop_names[0]); i++) {
		for (cuuint64_t f = 0; f < 3; f += 2) {
			CUdriverProcAddressQueryResult sr = ST_UNSET, so = ST_UNSET;
			void *pr = UNSET, *po = UNSET;
			char b1[128], b2[128];
			CUresult rr = real_gpa2(interop_names[i], &pr, 13000, f, &sr);
			CUresult ro = cuGetProcAddress_v2(interop_names[i], &po, 13000, f, &so);

			printf("NOTE [not in the stub] \"%s\" flags %llu: real rc=%d pfn=%s "
			       "status=%d | ours rc=%d pfn=%s status=%d\n",
			       interop_names[i], (unsigned long long)f, rr,
			       real_name(pr, b1, sizeof(b1)), sr, ro, our_name(po, b2, sizeof(b2)),
			       so);
		}
	}
	check_null(0, "cuInit");
	check_null(1, "cuInit");
	check_null(1, "cuNoSuchFunction");
	check_null(2, "cuInit");
	check_null(2, "cuNoSuchFunction");
	printf("after edge: %lu passed, %lu failed\n", passed, failed);

	section = "after-cuInit";
	printf("cuInit(0) = %d\n", init(0));
	for (unsigned int e = 0; e < nentries; e++)
		for (unsigned int r = 0; r < 5; r++)
			for (cuuint64_t f = 0; f < 3; f++)
				check(vgpu_procaddr_entries[e].name, releases[r], f, 0);
	for (unsigned int i = 0; i < sizeof(odd_names) / sizeof(odd_names[0]); i++)
		check(odd_names[i], 13000, 0, 1);

	if (mfile)
		fclose(mfile);
	printf("procaddr: %lu passed, %lu failed\n", passed, failed);
	return failed ? 1 : 0;
}
