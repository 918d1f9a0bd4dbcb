// SPDX-License-Identifier: MIT
/*
 * Unit test for the dark API (runtime/dark/dark_api.c, dark_cls.c,
 * dark_integrity.c), without a daemon: the few driver entry points the
 * tables call are faked below. Exit 0 = pass, 1 = fail.
 *
 * Build (from the repo root):
 *   gcc -std=gnu11 -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE -I include \
 *     -I common -I runtime -I /usr/local/cuda/include \
 *     tests/unit/test_dark_api.c runtime/dark/dark_api.c runtime/dark/dark_cls.c \
 *     runtime/dark/dark_integrity.c common/log.c -lpthread -o test_dark_api
 */
#include "dark_api.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                              \
		}                                                                \
	} while (0)

/* ---- Fake driver entry points -------------------------------------------- */

static struct { int dummy; } ctx_a, ctx_b, ctx_primary;
static __thread CUcontext current_ctx;

static CUuuid fake_uuid[2] = {
	{ .bytes = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } },
	{ .bytes = { 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 } },
};

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	*pctx = current_ctx;
	return CUDA_SUCCESS;
}

static CUcontext pushed_ctx;
static CUdeviceptr next_dptr = 0x200000000000ull;

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	pushed_ctx = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
	*ctx = pushed_ctx;
	pushed_ctx = NULL;
	return CUDA_SUCCESS;
}

/* Allocations only while a context is pushed, as the runtime's would be. */
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	if (!pushed_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	*p = next_dptr;
	next_dptr += (size + 0xfffff) & ~0xfffffull;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
	(void)ctx;
	*dev = 0;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
	*id = (uintptr_t)ctx;
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
	*n = 2;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	if (dev < 0 || dev > 1)
		return CUDA_ERROR_INVALID_DEVICE;
	*uuid = fake_uuid[dev];
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice dev)
{
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = dev; return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0x18 + dev; return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = 0; return CUDA_SUCCESS;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
}

static const void *last_loaded;
static int last_loader; /* 1 = cuModuleLoadData, 2 = cuModuleLoadFatBinary */

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	last_loaded = image;
	last_loader = 1;
	*module = (CUmodule)0x1234;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *image)
{
	last_loaded = image;
	last_loader = 2;
	*module = (CUmodule)0x5678;
	return CUDA_SUCCESS;
}

/* What the cluster and module slots call, recorded. */
static struct { CUfunction f; int attr, value, n; } last_set;
static int attr_values[CU_FUNC_ATTRIBUTE_MAX];
static struct { CUfunction f; CUlaunchConfig cfg; CUlaunchAttribute attr; int calls; } last_occ;

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
	if (f != (CUfunction)0xf1)
		return CUDA_ERROR_INVALID_HANDLE;
	last_set.f = f;
	last_set.attr = a;
	last_set.value = v;
	last_set.n++;
	attr_values[a] = v;
	return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
	if (f != (CUfunction)0xf1)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!v || (unsigned)a >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*v = attr_values[a] + 1000 * (int)a;	/* says which attribute was read */
	return CUDA_SUCCESS;
}

static CUresult record_occ(CUfunction f, const CUlaunchConfig *c)
{
	last_occ.f = f;
	last_occ.cfg = *c;
	last_occ.attr = c->numAttrs ? c->attrs[0] : (CUlaunchAttribute){ 0 };
	last_occ.calls++;
	return f == (CUfunction)0xf1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuOccupancyMaxPotentialClusterSize(int *size, CUfunction f, const CUlaunchConfig *c)
{
	*size = 8;
	return record_occ(f, c);
}

CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *c)
{
	*n = 33;
	return record_occ(f, c);
}

CUresult cuCtxGetDevice(CUdevice *dev)
{
	*dev = 0;
	return CUDA_SUCCESS;
}

static int tpc_mapping_calls;

CUresult vgpu_tpc_mapping(CUdevice dev, unsigned char **vgpc, unsigned char **mtpc)
{
	tpc_mapping_calls++;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*vgpc = malloc(4);
	*mtpc = malloc(4);
	memcpy(*vgpc, "\0\1\2\3", 4);
	memcpy(*mtpc, "\0\0\0\1", 4);
	return CUDA_SUCCESS;
}

/* A module 0x3d with three functions 0xa0, 0xa1, 0xa2 of 0, 1 and 2 parameters. */
CUresult cuModuleGetFunctionCount(unsigned int *n, CUmodule m)
{
	if (m != (CUmodule)0x3d)
		return CUDA_ERROR_INVALID_HANDLE;
	*n = 3;
	return CUDA_SUCCESS;
}

CUresult cuModuleEnumerateFunctions(CUfunction *fs, unsigned int n, CUmodule m)
{
	if (m != (CUmodule)0x3d)
		return CUDA_ERROR_INVALID_HANDLE;
	for (unsigned int i = 0; i < n && i < 3; i++)
		fs[i] = (CUfunction)(uintptr_t)(0xa0 + i);
	return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
	uintptr_t k = (uintptr_t)f;

	if (k < 0xa0 || k > 0xa2)
		return CUDA_ERROR_INVALID_HANDLE;
	if (i >= k - 0xa0)
		return CUDA_ERROR_INVALID_VALUE;
	*off = 8 * i;
	if (size)
		*size = 8;
	return CUDA_SUCCESS;
}

static int peek_calls;

CUresult vgpu_primary_ctx_peek(CUdevice dev, CUcontext *pctx)
{
	peek_calls++;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*pctx = (CUcontext)&ctx_primary;
	return CUDA_SUCCESS;
}

/* ---- Helpers --------------------------------------------------------------- */

static const void *const *table(enum vgpu_dark_table t)
{
	const void *p = NULL;

	CHECK(cuGetExportTable(&p, &vgpu_dark_tables[t].uuid) == CUDA_SUCCESS);
	CHECK(p == vgpu_dark_tables[t].slots);
	return p;
}

/* ---- Lookup and table shape ----------------------------------------------- */

static void test_lookup(void)
{
	CUuuid unknown = { .bytes = { (char)0xf8, (char)0xcf, (char)0xf9, 0x51, 0x21, 0x46,
				      (char)0x8b, 0x4e, (char)0xb9, (char)0xe2, (char)0xfb, 0x46,
				      (char)0x9e, 0x7c, 0x0d, (char)0xd9 } };
	const void *p = (const void *)0x1;

	CHECK(cuGetExportTable(&p, &unknown) == CUDA_ERROR_INVALID_VALUE);
	CHECK(p == NULL);
	CHECK(cuGetExportTable(NULL, &unknown) == CUDA_ERROR_INVALID_VALUE);
	p = (const void *)0x1;
	CHECK(cuGetExportTable(&p, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(p == NULL);

	for (unsigned t = 0; t < VGPU_DARK_NTABLES; t++) {
		const struct vgpu_dark_table_desc *d = &vgpu_dark_tables[t];
		const void *const *s = table(t);

		CHECK(d->name && d->nslots > 0);
		if (d->size_header)
			CHECK((uintptr_t)s[0] == d->nslots * sizeof(void *));
		for (unsigned i = 0; i < d->nslots; i++) {
			if (!s[i])
				fprintf(stderr, "NULL slot %s[%u]\n", d->name, i);
			CHECK(s[i] != NULL);
		}
		/* Distinct UUIDs. */
		for (unsigned u = 0; u < t; u++)
			CHECK(memcmp(vgpu_dark_tables[u].uuid.bytes, d->uuid.bytes, 16));
	}

	/* Known raw UUID prefixes (reference/interception.md §3). */
	CHECK(!memcmp(vgpu_dark_tables[VGPU_DARK_CUDART_INTERFACE].uuid.bytes, "\x6b\xd5\xfb\x6c", 4));
	CHECK(!memcmp(vgpu_dark_tables[VGPU_DARK_CONTEXT_LOCAL_STORAGE].uuid.bytes, "\xc6\x93\x33\x6e", 4));
	CHECK(!memcmp(vgpu_dark_tables[VGPU_DARK_INTEGRITY_CHECK].uuid.bytes, "\xd4\x08\x20\x55", 4));
	CHECK(!memcmp(vgpu_dark_tables[VGPU_DARK_CONTEXT_CHECKS].uuid.bytes, "\x26\x3e\x88\x60", 4));
	CHECK(vgpu_dark_tables[VGPU_DARK_CONTEXT_LOCAL_STORAGE].size_header == 0);
	CHECK(vgpu_dark_tables[VGPU_DARK_CUDART_INTERFACE].nslots == 13);
}

static void test_tools_context(void)
{
	const void *const *s = table(VGPU_DARK_TOOLS_CONTEXT);
	CUresult (*dev)(CUcontext, CUdevice *) = (CUresult (*)(CUcontext, CUdevice *))s[3];
	CUresult (*num)(CUcontext, uint64_t *) = (CUresult (*)(CUcontext, uint64_t *))s[4];
	CUresult (*obj)(CUcontext, uint64_t, uint64_t **) =
		(CUresult (*)(CUcontext, uint64_t, uint64_t **))s[51];
	CUresult (*q39)(CUcontext, const uint64_t *, uint64_t *) =
		(CUresult (*)(CUcontext, const uint64_t *, uint64_t *))s[39];
	CUresult (*other)(void) = (CUresult (*)(void))s[10];
	CUdevice d = -1;
	uint64_t v = 7, *o = NULL, *o2 = NULL;

	CHECK((uintptr_t)s[0] == 93 * sizeof(void *));
	CHECK(dev((CUcontext)0x10, &d) == CUDA_SUCCESS && d == 0);
	CHECK(dev((CUcontext)0x10, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(num(NULL, &v) == CUDA_SUCCESS && v == 0);
	CHECK(num((CUcontext)0x10, &v) == CUDA_SUCCESS && v == 0x10);
	/* [51]: one object per context, as the driver lays it out: eight
	 * records of 0x800-byte device buffers, contiguous, in a ring. */
	CHECK(obj((CUcontext)&ctx_a, 0, &o) == CUDA_SUCCESS && o);
	CHECK(o[0] == 1 && o[1] == 0 && o[2] == (uintptr_t)&ctx_a && o[5] == 1 && o[11] == 1);
	CHECK(((uint64_t *)o[9])[0] == (uintptr_t)&ctx_a);
	for (int i = 0; i < 8; i++) {
		const uint64_t *r = (const uint64_t *)o[15 + i];

		CHECK(r[1] == 0x200000000000ull + 0x800ull * i && r[2] == 0x800);
		CHECK(r[5] == (uintptr_t)o && r[7] == o[15 + (i + 1) % 8] &&
		      r[6] == o[15 + (i + 7) % 8]);
	}
	CHECK(pushed_ctx == NULL);
	CHECK(obj((CUcontext)&ctx_a, 0, &o2) == CUDA_SUCCESS && o2 == o);
	CHECK(obj((CUcontext)&ctx_b, 0, &o2) == CUDA_SUCCESS && o2 != o &&
	      o2[2] == (uintptr_t)&ctx_b);
	CHECK(obj((CUcontext)&ctx_a, UINT64_MAX, &o) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(obj((CUcontext)&ctx_a, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
	/* [39]: the driver's answer for that object. */
	v = 0;
	CHECK(q39((CUcontext)&ctx_a, o, &v) == CUDA_SUCCESS && v == 7);
	CHECK(q39((CUcontext)&ctx_a, NULL, &v) == CUDA_ERROR_INVALID_VALUE);
	CHECK(other() == CUDA_ERROR_NOT_SUPPORTED);
}

static void test_unemulated_slot(void)
{
	const void *const *s = table(VGPU_DARK_CUDART_INTERFACE);
	CUresult (*fn)(void) = (CUresult (*)(void))s[3];

	CHECK(fn() == CUDA_ERROR_NOT_SUPPORTED);
	/* Tools' thread state: [2] is the calling thread's context. */
	s = table(VGPU_DARK_TOOLS_TLS);
	CHECK((uintptr_t)s[0] == 3 * sizeof(void *));
	fn = (CUresult (*)(void))s[1];
	CHECK(fn() == CUDA_SUCCESS);
	{
		CUresult (*cur)(CUcontext *) = (CUresult (*)(CUcontext *))s[2];
		CUcontext c = (CUcontext)0x1;

		current_ctx = (CUcontext)&ctx_b;
		CHECK(cur(&c) == CUDA_SUCCESS && c == (CUcontext)&ctx_b);
		current_ctx = NULL;
		CHECK(cur(&c) == CUDA_SUCCESS && c == NULL);
		CHECK(cur(NULL) == CUDA_ERROR_INVALID_VALUE);
	}
}

/* ---- CUDART_INTERFACE ------------------------------------------------------ */

static void test_cudart_interface(void)
{
	const void *const *s = table(VGPU_DARK_CUDART_INTERFACE);
	CUresult (*primary)(CUcontext *, CUdevice) = (CUresult (*)(CUcontext *, CUdevice))s[2];
	CUresult (*from_cubin)(CUmodule *, const void *) = (CUresult (*)(CUmodule *, const void *))s[1];
	CUresult (*ext1)(CUmodule *, const void *, void *, void *, unsigned) =
		(CUresult (*)(CUmodule *, const void *, void *, void *, unsigned))s[6];
	CUresult (*ext2)(const void *, CUmodule *, void *, void *, unsigned) =
		(CUresult (*)(const void *, CUmodule *, void *, void *, unsigned))s[8];
	CUresult (*load_compilers)(void) = (CUresult (*)(void))s[12];
	static const uint32_t fatbin[4] = { 0xba55ed50u, 0x00100001u, 0, 0 };
	struct { uint32_t magic, version; const void *data, *extra; } wrapper = {
		0x466243b1u, 1, fatbin, NULL
	};
	CUcontext ctx = NULL;
	CUmodule mod = NULL;

	CHECK(primary(&ctx, 0) == CUDA_SUCCESS && ctx == (CUcontext)&ctx_primary);
	CHECK(peek_calls == 1);
	CHECK(primary(NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(primary(&ctx, 7) == CUDA_ERROR_INVALID_DEVICE);

	CHECK(from_cubin(&mod, &wrapper) == CUDA_SUCCESS);
	CHECK(last_loaded == fatbin && last_loader == 2 && mod == (CUmodule)0x5678);
	mod = NULL;
	CHECK(ext1(&mod, &wrapper, NULL, NULL, 0) == CUDA_SUCCESS && mod);
	CHECK(ext1(&mod, &wrapper, (void *)1, NULL, 0) == CUDA_ERROR_NOT_SUPPORTED);
	mod = NULL;
	last_loaded = NULL;
	CHECK(ext2(fatbin, &mod, NULL, NULL, 0) == CUDA_SUCCESS && last_loaded == fatbin);
	CHECK(ext2(fatbin, &mod, NULL, NULL, 3) == CUDA_ERROR_NOT_SUPPORTED);
	CHECK(from_cubin(NULL, &wrapper) == CUDA_ERROR_INVALID_VALUE);
	CHECK(load_compilers() == CUDA_SUCCESS);
}

/* ---- Small tables ---------------------------------------------------------- */

static void test_small_tables(void)
{
	const void *const *s = table(VGPU_DARK_TOOLS_RUNTIME_CALLBACK_HOOKS);
	void (*buf)(void **, size_t *) = (void (*)(void **, size_t *))s[2];
	void *p = NULL;
	size_t n = 0;

	buf(&p, &n);
	CHECK(p && n == 1024);
	memset(p, 0xab, n); /* the runtime writes there */
	buf = (void (*)(void **, size_t *))s[6];
	p = NULL;
	buf(&p, &n);
	CHECK(p && n == 14);
	memset(p, 0xcd, n);

	s = table(VGPU_DARK_CONTEXT_CHECKS);
	{
		CUresult (*check)(CUcontext, uint32_t *, const void **) =
			(CUresult (*)(CUcontext, uint32_t *, const void **))s[2];
		uint32_t (*global)(void) = (uint32_t (*)(void))s[3];
		uint32_t flags = 99;
		const void *detail = &flags;

		CHECK(check((CUcontext)&ctx_a, &flags, &detail) == CUDA_SUCCESS);
		CHECK(flags == 0 && detail == NULL);
		CHECK(global() == 0);
	}

	s = table(VGPU_DARK_DEVICE_EXTENDED_RT);
	{
		CUresult (*b13)(unsigned char *, CUdevice) = (CUresult (*)(unsigned char *, CUdevice))s[13];
		unsigned char c = 7;

		CHECK(b13(&c, 0) == CUDA_SUCCESS && c == 0);
	}
}

/* ---- CONTEXT_LOCAL_STORAGE ------------------------------------------------- */

struct dtor_call {
	CUcontext ctx;
	void *key, *value;
};
static struct dtor_call dtor_log[16];
static int ndtor;

static void record_dtor(CUcontext ctx, void *key, void *value)
{
	if (ndtor < 16)
		dtor_log[ndtor++] = (struct dtor_call){ ctx, key, value };
}

/* A destructor that uses the table itself, as the runtime's does. */
static void reentrant_dtor(CUcontext ctx, void *key, void *value)
{
	void *v;

	record_dtor(ctx, key, value);
	CHECK(vgpu_cls_get(&v, ctx, key) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(vgpu_cls_put((CUcontext)&ctx_b, (void *)0xbeef, value, NULL) == CUDA_SUCCESS);
}

static void *other_thread(void *arg)
{
	void *v = NULL;

	(void)arg;
	/* No current context on this thread. */
	CHECK(vgpu_cls_get(&v, NULL, (void *)0x10) == CUDA_ERROR_INVALID_CONTEXT);
	current_ctx = (CUcontext)&ctx_b;
	CHECK(vgpu_cls_put(NULL, (void *)0x10, (void *)0x77, NULL) == CUDA_SUCCESS);
	return NULL;
}

static void test_cls(void)
{
	const void *const *s = table(VGPU_DARK_CONTEXT_LOCAL_STORAGE);
	CUresult (*put)(CUcontext, void *, void *, vgpu_cls_dtor) =
		(CUresult (*)(CUcontext, void *, void *, vgpu_cls_dtor))s[0];
	CUresult (*del)(CUcontext, void *) = (CUresult (*)(CUcontext, void *))s[1];
	CUresult (*get)(void **, CUcontext, void *) = (CUresult (*)(void **, CUcontext, void *))s[2];
	CUcontext a = (CUcontext)&ctx_a, b = (CUcontext)&ctx_b;
	void *k1 = (void *)0x10, *k2 = (void *)0x20, *v = NULL;
	pthread_t th;

	/* No current context: NULL ctx cannot resolve. */
	current_ctx = NULL;
	CHECK(put(NULL, k1, (void *)1, NULL) == CUDA_ERROR_INVALID_CONTEXT);

	CHECK(get(&v, a, k1) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(put(a, k1, (void *)0x111, record_dtor) == CUDA_SUCCESS);
	CHECK(get(&v, a, k1) == CUDA_SUCCESS && v == (void *)0x111);
	CHECK(get(&v, b, k1) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(get(NULL, a, k1) == CUDA_ERROR_INVALID_VALUE);

	/* NULL and (CUcontext)-1 mean the current context. */
	current_ctx = a;
	v = NULL;
	CHECK(get(&v, NULL, k1) == CUDA_SUCCESS && v == (void *)0x111);
	v = NULL;
	CHECK(get(&v, (CUcontext)(intptr_t)-1, k1) == CUDA_SUCCESS && v == (void *)0x111);
	CHECK(put(NULL, k2, (void *)0x222, record_dtor) == CUDA_SUCCESS);
	CHECK(get(&v, a, k2) == CUDA_SUCCESS && v == (void *)0x222);

	/* Replace keeps one entry and takes the new value. */
	CHECK(put(a, k1, (void *)0x333, record_dtor) == CUDA_SUCCESS);
	CHECK(get(&v, a, k1) == CUDA_SUCCESS && v == (void *)0x333);

	/* Delete drops without running the destructor. */
	CHECK(put(b, k1, (void *)0x444, record_dtor) == CUDA_SUCCESS);
	CHECK(del(b, k1) == CUDA_SUCCESS);
	CHECK(get(&v, b, k1) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(del(b, k1) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(ndtor == 0);

	/* Another thread with its own current context. */
	CHECK(pthread_create(&th, NULL, other_thread, NULL) == 0);
	pthread_join(th, NULL);
	CHECK(get(&v, b, k1) == CUDA_SUCCESS && v == (void *)0x77);

	/* Destroying a runs a's destructors, in registration order, once. */
	vgpu_cls_context_destroyed(a);
	CHECK(ndtor == 2);
	CHECK(dtor_log[0].ctx == a && dtor_log[0].key == k1 && dtor_log[0].value == (void *)0x333);
	CHECK(dtor_log[1].ctx == a && dtor_log[1].key == k2 && dtor_log[1].value == (void *)0x222);
	CHECK(get(&v, a, k1) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(get(&v, a, k2) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(get(&v, b, k1) == CUDA_SUCCESS && v == (void *)0x77);
	vgpu_cls_context_destroyed(a);
	CHECK(ndtor == 2);

	/* The handle is reusable after destruction (primary ctx reset). */
	CHECK(put(a, k1, (void *)0x555, reentrant_dtor) == CUDA_SUCCESS);
	vgpu_cls_context_destroyed(a);
	CHECK(ndtor == 3 && dtor_log[2].value == (void *)0x555);
	CHECK(get(&v, b, (void *)0xbeef) == CUDA_SUCCESS && v == (void *)0x555);

	vgpu_cls_context_destroyed(b);
	vgpu_cls_context_destroyed(NULL);
	CHECK(ndtor == 3); /* b's entries had no destructor */
	CHECK(get(&v, b, k1) == CUDA_ERROR_INVALID_HANDLE);
	current_ctx = NULL;
}

/* ---- INTEGRITY_CHECK -------------------------------------------------------- */

static void hex16(const uint8_t *d, char out[33])
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_md2(void)
{
	static const struct { const char *in, *out; } kat[] = { /* RFC 1319 A.5 */
		{ "", "8350e5a3e24c153df2275c9f80692773" },
		{ "a", "32ec01ec4a6dac72c0ab96fb34c0b5d1" },
		{ "abc", "da853b0d3f88d99b30283a69e6ded6bb" },
		{ "message digest", "ab4f496bfb2a530b219ff33031fe06b0" },
		{ "abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b" },
		{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		  "da33def2a42df13975352846c30338cd" },
		{ "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
		  "d5976f79d83d3a0dc9806c3c66f3efd8" },
	};

	for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		uint8_t d[16];
		char hex[33];

		vgpu_dark_md2(kat[i].in, strlen(kat[i].in), d);
		hex16(d, hex);
		if (strcmp(hex, kat[i].out))
			fprintf(stderr, "MD2(\"%s\") = %s, want %s\n", kat[i].in, hex, kat[i].out);
		CHECK(!strcmp(hex, kat[i].out));
	}
}

static void test_integrity(void)
{
	const void *const *s = table(VGPU_DARK_INTEGRITY_CHECK);
	CUresult (*check)(uint32_t, uint64_t, uint64_t *) =
		(CUresult (*)(uint32_t, uint64_t, uint64_t *))s[1];
	struct vgpu_dark_device_id devs[2];
	struct vgpu_dark_integrity_input in;
	uint64_t out[2], again[2];

	/* Fixed answers for version % 10 == 0 and 1. */
	CHECK(check(13000, 1, out) == CUDA_SUCCESS);
	CHECK(out[0] == 0x3341181c03cb675cULL && out[1] == 0x8ed383aa1f4cd1e8ULL);
	CHECK(check(12090, 2, out) == CUDA_SUCCESS);
	CHECK(out[0] == 0x3341181c03cb675cULL && out[1] == 0x8ed383aa1f4cd1e8ULL);
	CHECK(check(13001, 3, out) == CUDA_SUCCESS);
	CHECK(out[0] == 0x1841181c03cb675cULL && out[1] == 0x8ed383aa1f4cd1e8ULL);
	CHECK(check(13002, 3, NULL) == CUDA_ERROR_INVALID_VALUE);

	/* A fixed input gives a fixed answer (regression value computed by the
	 * implementation that the CUDA 13.0 runtime accepted). */
	memset(devs, 0, sizeof(devs));
	devs[0].uuid = fake_uuid[0];
	devs[0].pci_bus = 0x18;
	devs[1].uuid = fake_uuid[1];
	devs[1].pci_domain = 1;
	devs[1].pci_bus = 0x2a;
	devs[1].pci_device = 3;
	in = (struct vgpu_dark_integrity_input){
		.runtime_version = 13002, .unix_seconds = 0x682b9cee, .driver_version = 13000,
		.pid = 0x2fa423, .tid = 0xf79c1000,
		.cudart_table = (const void *)0x7ffff6958240,
		.integrity_table = (const void *)0x7ffff6958220,
		.check_fn = (const void *)0x7ffff2aaf4a0,
		.ndevices = 2, .devices = devs,
	};
	vgpu_dark_integrity_hash(&in, out);
	vgpu_dark_integrity_hash(&in, again);
	CHECK(out[0] == again[0] && out[1] == again[1]);
	CHECK(out[0] == 0xca80378aa70d7250ULL && out[1] == 0x029ea13832e4cd5dULL);

	/* Every input matters. */
	in.unix_seconds++;
	vgpu_dark_integrity_hash(&in, again);
	CHECK(again[0] != out[0] || again[1] != out[1]);
	in.unix_seconds--;
	devs[1].pci_device = 4;
	vgpu_dark_integrity_hash(&in, again);
	CHECK(again[0] != out[0] || again[1] != out[1]);
	devs[1].pci_device = 3;
	in.ndevices = 1;
	vgpu_dark_integrity_hash(&in, again);
	CHECK(again[0] != out[0] || again[1] != out[1]);

	/* The table slot hashes what the driver reports about this process. */
	CHECK(check(13002, 0x682b9cee, out) == CUDA_SUCCESS);
	in.ndevices = 2;
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.cudart_table = vgpu_dark_tables[VGPU_DARK_CUDART_INTERFACE].slots;
	in.integrity_table = s;
	in.check_fn = s[1];
	devs[0].pci_domain = 0;
	devs[1].pci_domain = 1;
	devs[1].pci_bus = 0x19;
	devs[1].pci_device = 0;
	vgpu_dark_integrity_hash(&in, again);
	CHECK(out[0] == again[0] && out[1] == again[1]);
}

/* The driver's sizes (580.159), and the tables it does not serve. */
static void test_sizes(void)
{
	static const struct { enum vgpu_dark_table t; unsigned slots; } sizes[] = {
		{ VGPU_DARK_CUDART_INTERFACE, 13 }, { VGPU_DARK_TOOLS_TLS, 3 },
		{ VGPU_DARK_TOOLS_RUNTIME_CALLBACK_HOOKS, 7 }, { VGPU_DARK_CTX_CREATE_BYPASS, 2 },
		{ VGPU_DARK_DEVICE_EXTENDED_RT, 31 }, { VGPU_DARK_INTEGRITY_CHECK, 3 },
		{ VGPU_DARK_CONTEXT_CHECKS, 15 }, { VGPU_DARK_TOOLS_CONTEXT, 93 },
		{ VGPU_DARK_TOOLS_MODULE, 99 }, { VGPU_DARK_TOOLS_MEMORY, 60 },
		{ VGPU_DARK_TOOLS_TRAP_HANDLER, 23 }, { VGPU_DARK_TOOLS_PUSH_BUFFER_HAL, 32 },
		{ VGPU_DARK_TOOLS_RM, 44 }, { VGPU_DARK_CLUSTER_PROTOTYPE, 17 },
		{ VGPU_DARK_JIT, 7 },
	};
	static const unsigned char not_served[][16] = {
		/* HEAP_ACCESS: INVALID_VALUE from the 580 driver */
		{ 0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a, 0xac, 0xc5, 0x1d, 0x29, 0xce,
		  0xa6, 0x31, 0xae },
		/* NVML's: slot 21 returns a pointer, a stub's error would be one */
		{ 0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47, 0xb0, 0x30, 0xc5, 0xda, 0x33,
		  0x0e, 0xa4, 0xe9 },
	};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const void *const *s = table(sizes[i].t);

		CHECK(vgpu_dark_tables[sizes[i].t].nslots == sizes[i].slots);
		CHECK((uintptr_t)s[0] == sizes[i].slots * sizeof(void *));
	}
	for (unsigned i = 0; i < sizeof(not_served) / sizeof(not_served[0]); i++) {
		CUuuid id;
		const void *p = (const void *)0x1;

		memcpy(id.bytes, not_served[i], 16);
		CHECK(cuGetExportTable(&p, &id) == CUDA_ERROR_INVALID_VALUE && !p);
	}
	/* The raw byte order of the ClusterPrototype id (1734dc26-800d-...). */
	CHECK(!memcmp(vgpu_dark_tables[VGPU_DARK_CLUSTER_PROTOTYPE].uuid.bytes,
		      "\x17\x34\xdc\x26\x80\x0d\x47\x45\x87\x26\xc0\xf1\xe7\xdd\x8b\xca", 16));
}

/* Every stub fails, and says so once however often it is called. */
static void test_stubs_log_once(void)
{
	static char buf[1 << 20];	/* a line per stub */
	char path[] = "/tmp/test_dark_api.XXXXXX";
	int fd = mkstemp(path), saved = dup(2), hits = 0;
	ssize_t got;

	CHECK(fd >= 0 && saved >= 0);
	if (fd < 0 || saved < 0)
		return;
	unlink(path);
	vgpu_log_init("test_dark_api", VGPU_LOG_WARN);
	dup2(fd, 2);
	for (unsigned t = 0; t < VGPU_DARK_NTABLES; t++) {
		const struct vgpu_dark_table_desc *d = &vgpu_dark_tables[t];
		const void *const *s = table(t);

		for (unsigned i = d->size_header ? 1 : 0; i < d->nslots; i++) {
			if (s[i] != d->stubs[i])
				continue;
			for (int k = 0; k < 3; k++)
				CHECK(((CUresult (*)(void))s[i])() == CUDA_ERROR_NOT_SUPPORTED);
		}
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	vgpu_log_init("test_dark_api", VGPU_LOG_ERROR);
	got = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[got > 0 ? got : 0] = 0;
	for (const char *p = buf; (p = strstr(p, "TOOLS_RM[5]")); p++)
		hits++;
	CHECK(hits == 1);
	CHECK(strstr(buf, "JIT[1]") && strstr(buf, "CLUSTER_PROTOTYPE[16]"));
}

static void test_cluster_prototype(void)
{
	const void *const *s = table(VGPU_DARK_CLUSTER_PROTOTYPE);
	CUfunction f = (CUfunction)0xf1;
	int x = 0, y = 0, z = 0, v = 0;
	unsigned char *vgpc = NULL, *mtpc = NULL;

	CHECK(((CUresult (*)(CUfunction, int, int, int))s[1])(f, 2, 1, 1) == CUDA_SUCCESS);
	CHECK(last_set.n == 3 && last_set.attr == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH &&
	      last_set.value == 1);
	CHECK(attr_values[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] == 2);
	CHECK(((CUresult (*)(CUfunction, int, int, int))s[1])((CUfunction)0xbad, 2, 1, 1) ==
	      CUDA_ERROR_INVALID_HANDLE);
	CHECK(((CUresult (*)(CUfunction, int))s[2])(f, 1) == CUDA_SUCCESS &&
	      last_set.attr == CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
	CHECK(((CUresult (*)(CUfunction, int))s[3])(f, 1) == CUDA_SUCCESS &&
	      last_set.attr == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED);
	CHECK(((CUresult (*)(unsigned char **, unsigned char **))s[4])(&vgpc, &mtpc) ==
	      CUDA_SUCCESS && tpc_mapping_calls == 1 && vgpc && mtpc && vgpc[3] == 3);
	CHECK(((CUresult (*)(unsigned char *, unsigned char *))s[13])(vgpc, mtpc) == CUDA_SUCCESS);
	CHECK(((CUresult (*)(unsigned char **, unsigned char **))s[4])(NULL, &mtpc) ==
	      CUDA_ERROR_INVALID_VALUE);
	CHECK(((CUresult (*)(CUfunction, int *, int *, int *))s[5])(f, &x, &y, &z) == CUDA_SUCCESS);
	CHECK(x == 2 + 1000 * CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH &&
	      y == 1 + 1000 * CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT &&
	      z == 1 + 1000 * CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH);
	CHECK(((CUresult (*)(CUfunction, int *))s[6])(f, &v) == CUDA_SUCCESS &&
	      v == 1 + 1000 * CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
	CHECK(((CUresult (*)(CUfunction, int *))s[7])(f, &v) == CUDA_SUCCESS &&
	      v == 1 + 1000 * CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED);
	CHECK(((CUresult (*)(CUfunction, int *))s[12])(f, &v) == CUDA_SUCCESS &&
	      v == 1000 * CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET);
	/* [8]: the fake device answers INVALID_VALUE for CLUSTER_LAUNCH, passed on. */
	CHECK(((CUresult (*)(CUdevice, int *))s[8])(0, &v) == CUDA_ERROR_INVALID_VALUE);
	CHECK(((CUresult (*)(CUfunction, int, size_t, int *))s[9])(f, 128, 1024, &v) ==
	      CUDA_SUCCESS && v == 8);
	CHECK(last_occ.cfg.blockDimX == 128 && last_occ.cfg.sharedMemBytes == 1024 &&
	      last_occ.cfg.numAttrs == 0);
	CHECK(((CUresult (*)(CUfunction, int, size_t, int, int *))s[10])(f, 256, 0, 4, &v) ==
	      CUDA_SUCCESS && v == 33);
	CHECK(last_occ.cfg.blockDimX == 256 && last_occ.cfg.gridDimX == 4 &&
	      last_occ.attr.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION &&
	      last_occ.attr.value.clusterDim.x == 4 && last_occ.attr.value.clusterDim.y == 1);
	CHECK(((CUresult (*)(CUfunction, int, size_t, int, int *))s[10])(f, 256, 0, 0, &v) ==
	      CUDA_ERROR_INVALID_VALUE);
	CHECK(((uint32_t (*)(int, uint32_t))s[11])(0, 16) == 0);
	CHECK(((CUresult (*)(int *))s[14])(&v) == CUDA_ERROR_NOT_SUPPORTED);
}

static CUfunction visited[8];
static CUmodule visited_mod;
static int nvisited;

static void visit(void *user, CUfunction f, CUmodule m)
{
	CHECK(user == (void *)0x5eed);
	if (nvisited < 8)
		visited[nvisited++] = f;
	visited_mod = m;
}

static void test_tools_module(void)
{
	const void *const *s = table(VGPU_DARK_TOOLS_MODULE);
	CUresult (*iter)(CUcontext, CUmodule, void (*)(void *, CUfunction, CUmodule), void *) =
		(CUresult (*)(CUcontext, CUmodule, void (*)(void *, CUfunction, CUmodule), void *))s[7];
	CUresult (*count)(CUfunction, size_t *) = (CUresult (*)(CUfunction, size_t *))s[33];
	size_t n = 99;

	CHECK(iter(NULL, (CUmodule)0x3d, visit, (void *)0x5eed) == (CUresult)3);
	CHECK(nvisited == 3 && visited[0] == (CUfunction)0xa0 && visited[2] == (CUfunction)0xa2 &&
	      visited_mod == (CUmodule)0x3d);
	CHECK(iter(NULL, (CUmodule)0x3e, visit, (void *)0x5eed) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(iter(NULL, (CUmodule)0x3d, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(count((CUfunction)0xa2, &n) == CUDA_SUCCESS && n == 2);
	CHECK(count((CUfunction)0xa0, &n) == CUDA_SUCCESS && n == 0);
	CHECK(count((CUfunction)0xbad, &n) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(count((CUfunction)0xa1, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(s[93] != NULL);	/* the driver's is NULL */
}

int main(void)
{
	vgpu_log_init("test_dark_api", VGPU_LOG_ERROR);
	test_lookup();
	test_sizes();
	test_cluster_prototype();
	test_tools_module();
	test_stubs_log_once();
	test_unemulated_slot();
	test_tools_context();
	test_cudart_interface();
	test_small_tables();
	test_cls();
	test_md2();
	test_integrity();
	if (failures) {
		fprintf(stderr, "test_dark_api: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_dark_api: ok\n");
	return 0;
}
