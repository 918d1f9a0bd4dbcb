// SPDX-License-Identifier: MIT
/*
 * cuGetProcAddress and the default export surface, without a GPU. Links with
 * runtime/procaddr.o, runtime/exports_gen.o, runtime/unsupported.o and
 * common/log.o (and any other runtime objects: it calls no driver function
 * other than cuGetProcAddress). Exit 0 pass, 1 fail.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include <cudaProfiler.h>
#include "procaddr_table.h"
#include "unsupported.h"

#include "check.h"


static const char *name_of(void *p)
{
	if (!p)
		return "NULL";
	for (unsigned int i = 0; i < vgpu_exports_count; i++)
		if (vgpu_exports[i].addr == p)
			return vgpu_exports[i].name;
	return "(not an export)";
}

/* cuGetProcAddress_v2(sym, ver, flags) gives rc, want, status. */
static void expect(const char *sym, int ver, cuuint64_t flags, CUresult rc, void *want,
		   CUdriverProcAddressQueryResult st)
{
	void *p = (void *)1;
	CUdriverProcAddressQueryResult got_st = 77;
	CUresult got = cuGetProcAddress_v2(sym, &p, ver, flags, &got_st);

	if (rc != CUDA_SUCCESS) {
		/* errors leave *pfn and *symbolStatus alone, in both ABIs */
		CHECK(got == rc && p == (void *)1 && got_st == 77,
		      "%s@%d/%llu: rc %d pfn %s status %d, want rc %d, nothing written", sym, ver,
		      (unsigned long long)flags, got, name_of(p), got_st, rc);
		got = cuGetProcAddress(sym, &p, ver, flags);
		CHECK(got == rc && p == (void *)1, "cuGetProcAddress %s@%d/%llu: rc %d, want %d", sym,
		      ver, (unsigned long long)flags, got, rc);
		return;
	}
	CHECK(got == CUDA_SUCCESS && p == want && got_st == st,
	      "%s@%d/%llu: rc %d pfn %s status %d, want pfn %s status %d", sym, ver,
	      (unsigned long long)flags, got, name_of(p), got_st, name_of(want), st);

	/* The 11.3 ABI agrees, but "nothing found" is CUDA_ERROR_NOT_FOUND there. */
	p = (void *)1;
	got = cuGetProcAddress(sym, &p, ver, flags);
	if (want)
		CHECK(got == CUDA_SUCCESS && p == want, "cuGetProcAddress %s@%d/%llu: rc %d pfn %s",
		      sym, ver, (unsigned long long)flags, got, name_of(p));
	else
		CHECK(got == CUDA_ERROR_NOT_FOUND && p == (void *)1,
		      "cuGetProcAddress %s@%d/%llu: rc %d pfn %s, want NOT_FOUND, pfn untouched", sym,
		      ver, (unsigned long long)flags, got, name_of(p));
}

#define OK(sym, ver, flags, fn) \
	expect(sym, ver, flags, CUDA_SUCCESS, (void *)&fn, CU_GET_PROC_ADDRESS_SUCCESS)
#define NONE(sym, ver, flags, st) expect(sym, ver, flags, CUDA_SUCCESS, NULL, st)

static void test_known(void)
{
	/* version boundaries */
	OK("cuMemAlloc", 3020, 0, cuMemAlloc_v2);
	OK("cuMemAlloc", 13000, 0, cuMemAlloc_v2);
	OK("cuMemAlloc", 3019, 0, cuMemAlloc);
	OK("cuMemAlloc", 2000, 0, cuMemAlloc);
	NONE("cuMemAlloc", 1999, 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	OK("cuCtxCreate", 11040, 0, cuCtxCreate_v3);
	OK("cuCtxCreate", 12050, 0, cuCtxCreate_v4);
	OK("cuCtxGetDevice", 12090, 0, cuCtxGetDevice);
	OK("cuCtxGetDevice", 13000, 0, cuCtxGetDevice_v2);
	OK("cuDeviceGetUuid", 11040, 0, cuDeviceGetUuid_v2);
	OK("cuDeviceGetUuid", 11030, 0, cuDeviceGetUuid);

	/* stream modes: 0 is legacy, 1 legacy, 2 per-thread */
	OK("cuStreamQuery", 13000, 0, cuStreamQuery);
	OK("cuStreamQuery", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, cuStreamQuery);
	OK("cuStreamQuery", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	   cuStreamQuery_ptsz);
	OK("cuMemcpyHtoD", 12000, 2, cuMemcpyHtoD_v2_ptds);
	OK("cuMemcpyHtoD", 12000, 1, cuMemcpyHtoD_v2);
	OK("cuMemcpyHtoDAsync", 12000, 2, cuMemcpyHtoDAsync_v2_ptsz);
	OK("cuStreamGetCaptureInfo", 12030, 2, cuStreamGetCaptureInfo_v3_ptsz);
	OK("cuStreamGetCaptureInfo", 11030, 2, cuStreamGetCaptureInfo_v2_ptsz);
	OK("cuStreamGetCaptureInfo", 11030, 0, cuStreamGetCaptureInfo_v2);
	OK("cuLaunchKernel", 13000, 2, cuLaunchKernel_ptsz);
	OK("cuStreamQuery", 13000, 3, cuStreamQuery_ptsz);
	/* per-thread and the name has per-thread variants: only those count */
	NONE("cuMemcpyHtoD", 6050, 2, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	OK("cuMemcpyHtoD", 6050, 1, cuMemcpyHtoD_v2);
	/* a name with no per-thread variant: flag 2 gives the legacy one */
	OK("cuInit", 13000, 2, cuInit);
	OK("cuMemAlloc", 13000, 2, cuMemAlloc_v2);

	/* the entry points themselves, and the dark API */
	OK("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2);
	OK("cuGetProcAddress", 11080, 0, cuGetProcAddress);
	NONE("cuGetProcAddress", 11020, 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	OK("cuGetExportTable", 3000, 0, cuGetExportTable);
	OK("cuGetExportTable", 13000, 2, cuGetExportTable);
	OK("cuProfilerStart", 13000, 0, cuProfilerStart);
	OK("cuGraphInstantiate", 12000, 0, cuGraphInstantiate_v2);

	/* versions compare unsigned: negative ones get the newest variant */
	OK("cuMemAlloc", -1, 0, cuMemAlloc_v2);
	OK("cuMemcpyHtoD", -2147483647 - 1, 2, cuMemcpyHtoD_v2_ptds);
	NONE("cuMemAlloc", 0, 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

	/* unknown names (ABI names are not base names), too-new versions, bad arguments */
	NONE("cuMemAlloc_v2", 13000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	NONE("cuStreamQuery_ptsz", 13000, 2, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	NONE("cuNoSuchFunction", 13000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	NONE("", 13000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	NONE("cuGLInit", 13000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	expect("cuMemAlloc", VGPU_PROCADDR_CUDA_VERSION + 10, 0, CUDA_ERROR_INVALID_VALUE, NULL, 0);
	expect("cuNoSuchFunction", 99999, 0, CUDA_ERROR_INVALID_VALUE, NULL, 0);
	expect("cuStreamQuery", 13000, 4, CUDA_ERROR_INVALID_VALUE, NULL, 0);
	expect("cuNoSuchFunction", 13000, 1ull << 32, CUDA_ERROR_INVALID_VALUE, NULL, 0);
	expect("cuInit", 13000, ~0ull, CUDA_ERROR_INVALID_VALUE, NULL, 0);
	{
		void *p = NULL;
		CHECK(cuGetProcAddress_v2(NULL, &p, 13000, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
		      "NULL symbol");
		CHECK(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, NULL) ==
			      CUDA_ERROR_INVALID_VALUE,
		      "NULL pfn");
		CHECK(cuGetProcAddress_v2("cuInit", &p, 13000, 0, NULL) == CUDA_SUCCESS &&
			      p == (void *)&cuInit,
		      "NULL symbolStatus");
	}
}

/* Every variant in the table is the export of that name, and found again. */
static void test_table(void)
{
	unsigned int nentries = sizeof(vgpu_procaddr_entries) / sizeof(vgpu_procaddr_entries[0]);
	unsigned int used = 0;

	CHECK(vgpu_exports_count == VGPU_EXPORTS_COUNT, "export count %u != %u",
	      vgpu_exports_count, VGPU_EXPORTS_COUNT);
	for (unsigned int i = 1; i < vgpu_exports_count; i++)
		CHECK(strcmp(vgpu_exports[i - 1].name, vgpu_exports[i].name) < 0,
		      "exports not sorted at %s", vgpu_exports[i].name);
	for (unsigned int i = 0; i < nentries; i++) {
		const struct vgpu_procaddr_entry *e = &vgpu_procaddr_entries[i];
		size_t len = strlen(e->name);

		if (i)
			CHECK(strcmp(vgpu_procaddr_entries[i - 1].name, e->name) < 0,
			      "entries not sorted at %s", e->name);
		for (unsigned int j = 0; j < (unsigned int)e->nlegacy + e->npt; j++) {
			const struct vgpu_procaddr_variant *v = &vgpu_procaddr_variants[e->first + j];
			const char *s = vgpu_exports[v->sym].name;
			int pt = j >= e->nlegacy;
			void *p = NULL;

			used++;
			CHECK(!strncmp(s, e->name, len) &&
				      (s[len] == 0 || s[len] == '_') &&
				      (strstr(s + len, "_pt") != NULL) == pt,
			      "%s: variant %s", e->name, s);
			if (j + 1 < e->nlegacy || (pt && j + 1 < (unsigned int)e->nlegacy + e->npt))
				CHECK(v[0].version < v[1].version, "%s: versions not ascending",
				      e->name);
			cuGetProcAddress_v2(e->name, &p, v->version, pt ? 2 : 1, NULL);
			CHECK(p == vgpu_exports[v->sym].addr, "%s@%d: got %s, want %s", e->name,
			      v->version, name_of(p), s);
		}
	}
	CHECK(used == vgpu_exports_count, "%u variants for %u exports", used, vgpu_exports_count);
}

/* Calling a default definition: CUDA_ERROR_NOT_SUPPORTED, logged once per name. */
static void *hammer(void *arg)
{
	for (int i = 0; i < 1000; i++)
		vgpu_unsupported(arg);
	return NULL;
}

static int count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_unsupported(void)
{
	char buf[8192];
	FILE *f = tmpfile();
	int saved = dup(2);
	pthread_t t[8];
	CUresult prof_rc[2] = { CUDA_SUCCESS, CUDA_SUCCESS };
	size_t n;

	if (!f || saved < 0) {
		CHECK(0, "tmpfile/dup");
		return;
	}
	fflush(stderr);
	dup2(fileno(f), 2);
	CHECK(vgpu_unsupported("cuTestOnce") == CUDA_ERROR_NOT_SUPPORTED, "return value");
	vgpu_unsupported("cuTestOnce");
	vgpu_unsupported(strdup("cuTestOnce"));	/* same name, other pointer */
	vgpu_unsupported("cuTestOther");
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, hammer, "cuTestThreads");
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	/*
	 * An exported definition reached through cuGetProcAddress: the generated
	 * default, unless the runtime linked in implements this one (then any
	 * error will do for NULL file names).
	 */
	{
		CUresult (*fn)(const char *, const char *, CUoutput_mode) = NULL;

		cuGetProcAddress_v2("cuProfilerInitialize", (void **)&fn, 13000, 0, NULL);
		CHECK((void *)fn == (void *)&cuProfilerInitialize, "cuProfilerInitialize");
		if (fn) {
			prof_rc[0] = fn(NULL, NULL, CU_OUT_KEY_VALUE_PAIR);
			prof_rc[1] = fn(NULL, NULL, CU_OUT_KEY_VALUE_PAIR);
		}
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	CHECK(count_lines(buf, "cuTestOnce:") == 1, "cuTestOnce logged %d times:\n%s",
	      count_lines(buf, "cuTestOnce:"), buf);
	CHECK(count_lines(buf, "cuTestOther:") == 1, "cuTestOther not logged once");
	CHECK(count_lines(buf, "cuTestThreads:") == 1, "cuTestThreads logged %d times",
	      count_lines(buf, "cuTestThreads:"));
	CHECK(count_lines(buf, "cuProfilerInitialize:") <= 1, "cuProfilerInitialize logged %d times",
	      count_lines(buf, "cuProfilerInitialize:"));
	CHECK(prof_rc[0] != CUDA_SUCCESS && prof_rc[1] == prof_rc[0],
	      "cuProfilerInitialize(NULL, NULL) = %d, %d", prof_rc[0], prof_rc[1]);
	if (count_lines(buf, "cuProfilerInitialize:"))
		CHECK(prof_rc[0] == CUDA_ERROR_NOT_SUPPORTED, "default definition returned %d",
		      prof_rc[0]);
	CHECK(strstr(buf, "warn") != NULL, "not at warn level:\n%s", buf);
}

int main(void)
{
	setenv("VGPU_LOG", "warn", 1);
	test_known();
	test_table();
	test_unsupported();
	printf("procaddr: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
