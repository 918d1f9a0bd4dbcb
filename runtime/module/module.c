// SPDX-License-Identifier: MIT
/*
 * Modules, libraries, functions, kernels, globals and occupancy.
 *
 * A CUmodule and a CUlibrary are the same object (struct vgpu_module,
 * is_library telling which call made it), and so are a CUfunction and a
 * CUkernel (struct vgpu_func): cuLibraryGetModule and cuKernelGetFunction
 * return their argument. An image is loaded once, into the context that is
 * current at load time, and the worker keeps it until unload; the driver's
 * lazy loading has no counterpart to manage here. A library's kernels can
 * therefore be launched in that context only.
 *
 * Images are sized locally (image.c) and streamed with MODULE_LOAD through
 * the staging chunks; a fatbinC wrapper is sent as the fatbin it points
 * to. Function and global lookups are synchronous the first time and then
 * answered from a per-module table, so a second cuLibraryGetKernel of the
 * same name is the same handle with no round trip. A function's reply
 * carries its parameter layout and attributes: cuFuncGetAttribute,
 * cuFuncGetParamInfo and the checks in cuLaunchKernel never leave the
 * process. Occupancy answers are cached per (block size, dynamic shared
 * memory, flags).
 *
 * Locking: one mutex per module guards its tables, its functions'
 * occupancy caches and their attribute updates, and is held across the
 * lookup round trip so a name is never looked up twice. Launches read the
 * cached attributes without it (atomically, for the settable ones).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "handles.h"
#include "image.h"
#include "init.h"
#include "log.h"
#include "memory.h"

/* ---- objects -------------------------------------------------------------- */

/* Name → object, open addressing; the name is the object's own copy. */
struct nent {
	uint32_t hash;
	const char *name;
	void *obj;
};

struct ntab {
	struct nent *e;
	uint32_t cap, n;	/* cap: 0 or a power of two */
};

struct module {
	struct vgpu_module m;	/* the handle points here */
	pthread_mutex_t lock;
	void *pending;		/* a library's image until its first use */
	uint64_t pending_size;
	struct ntab funcs;	/* struct func */
	struct ntab globals;	/* struct global */
};

#define OCC_SLOTS 16

struct occ {
	int block;
	unsigned int flags;
	size_t smem;
	int blocks;		/* the answer; valid when block > 0 */
};

/* CUfunction_attribute values past the cached vgpu_func_info.attr[]. */
#define EXT_ATTRS (CU_FUNC_ATTRIBUTE_MAX - VGPU_FUNC_ATTRS)

struct func {
	struct occ occ[OCC_SLOTS];	/* under the module's lock */
	int ext[EXT_ATTRS];		/* cluster attributes as set here */
	struct vgpu_func f;		/* the handle points here; last: ends in name[] */
};

struct global {
	uint64_t addr, size;
	char name[];
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static void *ntab_get(const struct ntab *t, const char *name, uint32_t h)
{
	for (uint32_t i = h; t->cap; i++) {
		const struct nent *e = &t->e[i & (t->cap - 1)];

		if (!e->name)
			return NULL;
		if (e->hash == h && !strcmp(e->name, name))
			return e->obj;
	}
	return NULL;
}

static void ntab_place(struct nent *e, uint32_t cap, const struct nent *x)
{
	uint32_t i = x->hash;

	while (e[i & (cap - 1)].name)
		i++;
	e[i & (cap - 1)] = *x;
}

static int ntab_put(struct ntab *t, const char *name, uint32_t h, void *obj)
{
	struct nent x = { h, name, obj };

	if (2 * (t->n + 1) > t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 16;
		struct nent *e = calloc(cap, sizeof(*e));

		if (!e)
			return -ENOMEM;
		for (uint32_t i = 0; i < t->cap; i++)
			if (t->e[i].name)
				ntab_place(e, cap, &t->e[i]);
		free(t->e);
		t->e = e;
		t->cap = cap;
	}
	ntab_place(t->e, t->cap, &x);
	t->n++;
	return 0;
}

static struct module *mod_of(struct vgpu_module *m)
{
	return (struct module *)m;
}

static struct func *func_of(struct vgpu_func *f)
{
	return (struct func *)((char *)f - offsetof(struct func, f));
}

static CUresult module_lookup(void *h, struct module **out)
{
	struct module *m = h;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!m || m->m.magic != VGPU_MODULE_MAGIC) {
		vlog_debug("not a module or library: %p", h);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	*out = m;
	return CUDA_SUCCESS;
}

static CUresult bind_library(struct module *m);

/* A module or library ready for use: a library is loaded by now. */
static CUresult module_resolve(void *h, struct module **out)
{
	CUresult rc = module_lookup(h, out);

	return rc ? rc : bind_library(*out);
}

static CUresult resolve_deferred(struct vgpu_func *f);

CUresult vgpu_func_resolve(CUfunction h, struct vgpu_func **out)
{
	struct vgpu_func *f = (struct vgpu_func *)h;

	if (!f || f->magic != VGPU_FUNC_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!__atomic_load_n(&f->id, __ATOMIC_ACQUIRE)) {
		CUresult rc = resolve_deferred(f);

		if (rc)
			return rc;
	}
	*out = f;
	return CUDA_SUCCESS;
}

/* Entry check and handle check, for CUfunction and CUkernel alike. */
static CUresult func_get(void *h, struct vgpu_func **out)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : vgpu_func_resolve((CUfunction)h, out);
}

/* ---- loading -------------------------------------------------------------- */

/* Sends the image to the worker, to be module m->m.id in context ctx. */
static CUresult send_image(struct module *m, struct vgpu_ctx *ctx, const void *image,
			   uint64_t size)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MODULE_LOAD } };
	CUresult rc;

	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = m->m.id;
	r.sqe.arg[1] = size;
	r.sqe.arg[2] = VGPU_IMAGE_AUTO;
	/* arg3/arg4 (content hash) stay 0 until the worker caches images. */
	vlog_debug("module %u: loading %llu bytes (starting %02x %02x %02x %02x)", m->m.id,
		   (unsigned long long)size, size > 0 ? ((const uint8_t *)image)[0] : 0,
		   size > 1 ? ((const uint8_t *)image)[1] : 0,
		   size > 2 ? ((const uint8_t *)image)[2] : 0,
		   size > 3 ? ((const uint8_t *)image)[3] : 0);
	rc = vgpu_call_send(&r, image, size);
	if (!rc)
		__atomic_store_n(&m->m.ctx, ctx, __ATOMIC_RELEASE);
	return rc;
}

/*
 * A library belongs to no context: the driver loads it into a context when
 * it is first used there, and cudart loads its libraries before any context
 * exists (a program whose first CUDA call is a launch, cuBLAS's static
 * initialisers). Such a library keeps its image here until its first use,
 * which binds it to the context current then.
 */
static CUresult bind_library(struct module *m)
{
	struct vgpu_ctx *ctx;
	CUresult rc;

	if (__atomic_load_n(&m->m.ctx, __ATOMIC_ACQUIRE))
		return CUDA_SUCCESS;
	rc = vgpu_ctx_current(&ctx);
	if (rc)
		return rc;
	pthread_mutex_lock(&m->lock);
	if (!m->m.ctx) {
		rc = send_image(m, ctx, m->pending, m->pending_size);
		if (!rc) {
			free(m->pending);
			m->pending = NULL;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static CUresult load_bytes(const void *image, uint64_t size, bool library, struct module **out)
{
	struct vgpu_ctx *ctx = NULL;
	struct module *m;
	CUresult rc = vgpu_ctx_current(&ctx);

	if (rc && !(library && rc == CUDA_ERROR_INVALID_CONTEXT))
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->m.id = vgpu_id_alloc(VGPU_K_MODULE);
	if (!m->m.id) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (ctx) {
		rc = send_image(m, ctx, image, size);
	} else {
		m->pending = malloc(size);
		if (m->pending)
			memcpy(m->pending, image, size);
		m->pending_size = size;
		rc = m->pending ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (rc) {
		vgpu_id_free(VGPU_K_MODULE, m->m.id);
		free(m);
		return rc;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->m.magic = VGPU_MODULE_MAGIC;
	m->m.is_library = library;
	*out = m;
	return CUDA_SUCCESS;
}

static CUresult load_image(const void *image, bool library, struct module **out)
{
	const void *start;
	uint64_t size;

	if (vgpu_image_size(image, &start, &size, NULL))
		return CUDA_ERROR_INVALID_IMAGE;
	return load_bytes(start, size, library, out);
}

/* Whole files: the worker tells what they hold. PTX text must end within
 * the bytes sent (the worker reads no further), so a NUL follows the file. */
static CUresult load_file(const char *path, bool library, struct module **out)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	CUresult rc;
	int fd;

	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_FILE_NOT_FOUND;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size) {
		close(fd);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = 0;
	rc = got == (size_t)st.st_size ? load_bytes(buf, got + 1, library, out)
				       : CUDA_ERROR_FILE_NOT_FOUND;
	free(buf);
	return rc;
}

static void free_tables(struct module *m)
{
	for (uint32_t i = 0; i < m->funcs.cap; i++) {
		struct func *fn = m->funcs.e[i].obj;

		if (!m->funcs.e[i].name)
			continue;
		fn->f.magic = 0;
		free(fn->f.info);
		free(fn);
	}
	for (uint32_t i = 0; i < m->globals.cap; i++) {
		struct global *g = m->globals.e[i].obj;

		if (!m->globals.e[i].name)
			continue;
		vgpu_mem_forget_device(g->addr);
		free(g);
	}
	free(m->funcs.e);
	free(m->globals.e);
}

static CUresult unload(struct module *m)
{
	CUresult rc = m->m.ctx ? vgpu_post5(VGPU_OP_MODULE_UNLOAD, m->m.ctx->id, 0, m->m.id, 0,
					    0, 0, 0)
			       : CUDA_SUCCESS;	/* a library never used: never sent */

	vlog_debug("module %u: unloaded (%d)", m->m.id, rc);
	/* The worker drops the module's functions with it; the ids are free
	 * again once it has been told (later reuse comes after in ring order). */
	if (!rc) {
		for (uint32_t i = 0; i < m->funcs.cap; i++)
			if (m->funcs.e[i].name)
				vgpu_id_free(VGPU_K_FUNC, ((struct func *)m->funcs.e[i].obj)->f.id);
		vgpu_id_free(VGPU_K_MODULE, m->m.id);
	}
	free_tables(m);
	free(m->pending);
	m->m.magic = 0;
	pthread_mutex_destroy(&m->lock);
	free(m);
	return rc;
}

/* JIT options: accepted and ignored (the worker JITs with its own), but the
 * outputs the caller may read are filled in: empty logs, no time spent. */
static CUresult jit_options(unsigned int n, CUjit_option *opt, void **val)
{
	if (!n)
		return CUDA_SUCCESS;
	if (!opt || !val)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < n; i++) {
		if ((unsigned int)opt[i] >= CU_JIT_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
	}
	/* Logs first: their sizes are read before being answered. */
	for (unsigned int i = 0; i < n; i++) {
		if (opt[i] != CU_JIT_INFO_LOG_BUFFER && opt[i] != CU_JIT_ERROR_LOG_BUFFER)
			continue;
		for (unsigned int j = 0; j < n; j++)
			if (opt[j] == opt[i] + 1 && (uintptr_t)val[j] && val[i])
				*(char *)val[i] = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (opt[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ||
		    opt[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
			val[i] = NULL;	/* bytes of log written */
		else if (opt[i] == CU_JIT_WALL_TIME)
			memset(&val[i], 0, sizeof(float));
	}
	return CUDA_SUCCESS;
}

static CUresult library_options(unsigned int n, CUlibraryOption *opt, void **val)
{
	if (!n)
		return CUDA_SUCCESS;
	if (!opt)
		return CUDA_ERROR_INVALID_VALUE;
	/* The driver reads a value only for the option that has one:
	 * cuBLASLt passes BINARY_IS_PRESERVED with no value array. */
	for (unsigned int i = 0; i < n; i++) {
		if ((unsigned int)opt[i] >= CU_LIBRARY_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
		if (opt[i] == CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE && !val)
			return CUDA_ERROR_INVALID_VALUE;
	}
	/* CU_LIBRARY_BINARY_IS_PRESERVED needs nothing: the image is copied.
	 * HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE concerns cuLibraryGetUnifiedFunction. */
	return CUDA_SUCCESS;
}

/* ---- module and library entry points -------------------------------------- */

static CUresult load_prologue(void *out)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

VGPU_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	CUresult rc = load_prologue(module);

	return rc ? rc : load_image(image, false, (struct module **)module);
}

VGPU_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
					unsigned int numOptions, CUjit_option *options,
					void **optionValues)
{
	CUresult rc = load_prologue(module);

	if (!rc)
		rc = jit_options(numOptions, options, optionValues);
	return rc ? rc : load_image(image, false, (struct module **)module);
}

VGPU_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	CUresult rc = load_prologue(module);

	return rc ? rc : load_image(fatCubin, false, (struct module **)module);
}

VGPU_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	CUresult rc = load_prologue(module);

	return rc ? rc : load_file(fname, false, (struct module **)module);
}

VGPU_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	struct module *m;
	CUresult rc = module_lookup(hmod, &m);

	if (rc)
		return rc;
	/* A library's module view goes with cuLibraryUnload only. */
	return m->m.is_library ? CUDA_ERROR_INVALID_HANDLE : unload(m);
}

/*
 * Answered as the driver does by default since CUDA 12.2, honouring the
 * same CUDA_MODULE_LOADING variable: with LAZY, cudart loads a library on
 * first use of one of its kernels instead of every library at start-up,
 * which keeps large programs from sending all their fatbins at init.
 */
VGPU_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	const char *env = getenv("CUDA_MODULE_LOADING");
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = env && !strcmp(env, "EAGER") ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
				       CUjit_option *jitOptions, void **jitOptionsValues,
				       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				       void **libraryOptionValues, unsigned int numLibraryOptions)
{
	CUresult rc = load_prologue(library);

	if (!rc)
		rc = jit_options(numJitOptions, jitOptions, jitOptionsValues);
	if (!rc)
		rc = library_options(numLibraryOptions, libraryOptions, libraryOptionValues);
	return rc ? rc : load_image(code, true, (struct module **)library);
}

VGPU_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
					   CUjit_option *jitOptions, void **jitOptionsValues,
					   unsigned int numJitOptions,
					   CUlibraryOption *libraryOptions,
					   void **libraryOptionValues,
					   unsigned int numLibraryOptions)
{
	CUresult rc = load_prologue(library);

	if (!rc)
		rc = jit_options(numJitOptions, jitOptions, jitOptionsValues);
	if (!rc)
		rc = library_options(numLibraryOptions, libraryOptions, libraryOptionValues);
	return rc ? rc : load_file(fileName, true, (struct module **)library);
}

VGPU_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
	struct module *m;
	CUresult rc = module_lookup(library, &m);

	if (rc)
		return rc;
	return m->m.is_library ? unload(m) : CUDA_ERROR_INVALID_HANDLE;
}

VGPU_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct module *m;
	CUresult rc = module_resolve(library, &m);

	if (rc)
		return rc;
	if (!pMod)
		return CUDA_ERROR_INVALID_VALUE;
	*pMod = (CUmodule)m;
	return CUDA_SUCCESS;
}

/* ---- functions ------------------------------------------------------------ */

/* The worker's description, checked: it is ours to trust only so far. */
static struct vgpu_func_info *take_info(const void *reply, uint64_t len)
{
	const struct vgpu_func_info *fi = reply;
	struct vgpu_func_info *copy;

	if (len < sizeof(*fi) || fi->param_count > VGPU_MAX_KERNEL_PARAMS ||
	    len != sizeof(*fi) + (uint64_t)fi->param_count * sizeof(fi->param[0]) ||
	    fi->param_bytes > VGPU_MAX_PARAM_BYTES)
		return NULL;
	for (uint32_t i = 0; i < fi->param_count; i++)
		if (fi->param[i].offset > fi->param_bytes ||
		    fi->param[i].size > fi->param_bytes - fi->param[i].offset)
			return NULL;
	copy = malloc(len);
	if (copy)
		memcpy(copy, fi, len);
	return copy;
}

/* Called with m->lock held. */
/* Asks the worker for fn's function (name, layout, attributes): fills in
 * fn->f.info and then fn->f.id, which says it is usable. */
static CUresult fetch_function(struct module *m, struct func *fn, size_t len)
{
	struct vgpu_session *s = vgpu_session_peek();
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MODULE_GET_FUNCTION } };
	CUresult rc;

	r.reply_cap = s->ring.reply_slot_size;
	r.reply = malloc(r.reply_cap);
	r.sqe.arg[1] = vgpu_id_alloc(VGPU_K_FUNC);
	if (!r.reply || !r.sqe.arg[1]) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	r.sqe.ctx = m->m.ctx->id;
	r.sqe.arg[0] = m->m.id;
	r.payload = fn->f.name;
	r.payload_len = len;
	rc = vgpu_call(&r);
	if (rc)
		goto fail;
	fn->f.info = take_info(r.reply, r.cqe.val[2]);
	free(r.reply);
	if (!fn->f.info) {
		/* The worker holds the id now: it stays taken. */
		vlog_err("worker's description of %s is inconsistent", fn->f.name);
		return CUDA_ERROR_UNKNOWN;
	}
	__atomic_store_n(&fn->f.id, (uint32_t)r.sqe.arg[1], __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
fail:
	if (r.sqe.arg[1])
		vgpu_id_free(VGPU_K_FUNC, r.sqe.arg[1]);
	free(r.reply);
	return rc;
}

/*
 * A new function handle for name, under the module's lock. A kernel of a
 * library not yet bound to a context (see bind_library) is handed out
 * unresolved, as the driver's CUkernel is context-free; its first use
 * resolves it (vgpu_func_resolve).
 */
static CUresult lookup_function(struct module *m, const char *name, size_t len, uint32_t h,
				struct func **out)
{
	struct func *fn = calloc(1, sizeof(*fn) + len);
	CUresult rc = CUDA_SUCCESS;

	if (!fn)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(fn->f.name, name, len);
	fn->f.mod = &m->m;
	if (m->m.ctx)
		rc = fetch_function(m, fn, len);
	if (rc) {
		free(fn);
		return rc;
	}
	fn->f.magic = VGPU_FUNC_MAGIC;
	if (ntab_put(&m->funcs, fn->f.name, h, fn)) {
		/* Unreachable through the table, but valid: hand it out anyway. */
		vlog_warn("out of memory caching %s", name);
	}
	*out = fn;
	return CUDA_SUCCESS;
}

/* Binds the library and asks for the function, the first time it is used. */
static CUresult resolve_deferred(struct vgpu_func *f)
{
	struct module *m = mod_of(f->mod);
	CUresult rc = bind_library(m);

	if (rc)
		return rc;
	pthread_mutex_lock(&m->lock);
	if (!f->id)
		rc = fetch_function(m, func_of(f), strlen(f->name) + 1);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static CUresult get_function(void *hmod, const char *name, void **out)
{
	struct module *m;
	struct func *fn;
	size_t len;
	uint32_t h;
	CUresult rc = module_lookup(hmod, &m);

	if (rc)
		return rc;
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	len = strlen(name) + 1;
	if (len > VGPU_MAX_NAME) {
		vlog_warn("kernel name of %zu bytes is beyond the protocol's %u", len,
			  VGPU_MAX_NAME);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	/* An unbound library is bound now if a context is current; if none
	 * is, the kernel is handed out unresolved. */
	if (!__atomic_load_n(&m->m.ctx, __ATOMIC_ACQUIRE)) {
		struct vgpu_ctx *cur;

		if (vgpu_ctx_current(&cur) == CUDA_SUCCESS)
			rc = bind_library(m);
		if (rc)
			return rc;
	}
	h = name_hash(name);
	pthread_mutex_lock(&m->lock);
	fn = ntab_get(&m->funcs, name, h);
	rc = fn ? CUDA_SUCCESS : lookup_function(m, name, len, h, &fn);
	pthread_mutex_unlock(&m->lock);
	if (!rc)
		*out = &fn->f;
	else
		vlog_debug("looking up %s: error %d", name, rc);
	return rc;
}

VGPU_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	return get_function(hmod, name, (void **)hfunc);
}

VGPU_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	return get_function(library, name, (void **)pKernel);
}

VGPU_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct vgpu_func *f;
	CUresult rc = func_get(kernel, &f);

	if (rc)
		return rc;
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	*pFunc = (CUfunction)f;
	return CUDA_SUCCESS;
}

static CUresult func_module(void *h, void **out)
{
	struct vgpu_func *f;
	CUresult rc = func_get(h, &f);

	if (rc)
		return rc;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = f->mod;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	return func_module(hfunc, (void **)hmod);
}

VGPU_EXPORT CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	return func_module(kernel, (void **)pLib);
}

static CUresult func_name(void *h, const char **name)
{
	struct vgpu_func *f;
	CUresult rc = func_get(h, &f);

	if (rc)
		return rc;
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	*name = f->name;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	return func_name(hfunc, name);
}

VGPU_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	return func_name(hfunc, name);
}

static CUresult param_info(void *h, size_t index, size_t *offset, size_t *size)
{
	struct vgpu_func *f;
	CUresult rc = func_get(h, &f);

	if (rc)
		return rc;
	if (!offset || index >= f->info->param_count)
		return CUDA_ERROR_INVALID_VALUE;
	*offset = f->info->param[index].offset;
	if (size)
		*size = f->info->param[index].size;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
					size_t *paramSize)
{
	return param_info(func, paramIndex, paramOffset, paramSize);
}

VGPU_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
					  size_t *paramSize)
{
	return param_info(kernel, paramIndex, paramOffset, paramSize);
}

VGPU_EXPORT CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
	struct vgpu_func *f;
	CUresult rc = func_get(function, &f);

	if (rc)
		return rc;
	if (!state)
		return CUDA_ERROR_INVALID_VALUE;
	*state = CU_FUNCTION_LOADING_STATE_LOADED;	/* the worker loads eagerly */
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuFuncLoad(CUfunction function)
{
	struct vgpu_func *f;

	return func_get(function, &f);
}

/* ---- attributes ----------------------------------------------------------- */

static int attr_read(const struct vgpu_func *f, CUfunction_attribute a)
{
	if ((int)a < VGPU_FUNC_ATTRS)
		return __atomic_load_n(&f->info->attr[a], __ATOMIC_RELAXED);
	return __atomic_load_n(&func_of((struct vgpu_func *)f)->ext[a - VGPU_FUNC_ATTRS],
			       __ATOMIC_RELAXED);
}

/*
 * Attributes 0..9 come from the worker. The cluster ones (10..15) are not
 * in its reply: they answer 0, a kernel without __cluster_dims__, or what
 * was set here.
 */
static CUresult get_attribute(int *pi, CUfunction_attribute attrib, void *h)
{
	struct vgpu_func *f;
	CUresult rc = func_get(h, &f);

	if (rc)
		return rc;
	if (!pi || (unsigned int)attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = attr_read(f, attrib);
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	return get_attribute(pi, attrib, hfunc);
}

static CUresult check_device(CUdevice dev)
{
	const struct vgpu_device_info *d;

	return vgpu_device_info(dev, &d);
}

VGPU_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
					  CUdevice dev)
{
	CUresult rc = get_attribute(pi, attrib, kernel);

	return rc ? rc : check_device(dev);
}

static CUresult check_value(const struct vgpu_func *f, CUfunction_attribute a, int v)
{
	CUdevice dev = f->mod->ctx->dev;
	int optin = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);

	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		return v >= 0 && v <= optin - f->info->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES]
			       ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		return v >= -1 && v <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		return v >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		return v == 0 || v == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	default:
		return CUDA_ERROR_INVALID_VALUE;	/* read-only */
	}
}

/* Checked here, applied by the worker without an answer, cached at once. */
static CUresult set_attribute(void *h, CUfunction_attribute attrib, int value)
{
	struct vgpu_func *f;
	struct module *m;
	CUresult rc = func_get(h, &f);

	if (!rc)
		rc = check_value(f, attrib, value);
	if (rc)
		return rc;
	m = mod_of(f->mod);
	pthread_mutex_lock(&m->lock);
	rc = vgpu_post5(VGPU_OP_FUNC_SET_ATTRIBUTE, m->m.ctx->id, 0, f->id, attrib,
			(uint64_t)(int64_t)value, 0, 0);
	if (!rc) {
		if ((int)attrib < VGPU_FUNC_ATTRS)
			__atomic_store_n(&f->info->attr[attrib], value, __ATOMIC_RELAXED);
		else
			__atomic_store_n(&func_of(f)->ext[attrib - VGPU_FUNC_ATTRS], value,
					 __ATOMIC_RELAXED);
		/* Shared memory limits and carveout change occupancy. */
		memset(func_of(f)->occ, 0, sizeof(func_of(f)->occ));
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

VGPU_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	return set_attribute(hfunc, attrib, value);
}

VGPU_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
					  CUdevice dev)
{
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = check_device(dev);
	return rc ? rc : set_attribute(kernel, attrib, val);
}

static CUresult set_cache_config(void *h, CUfunc_cache config)
{
	struct vgpu_func *f;
	CUresult rc = func_get(h, &f);

	if (rc)
		return rc;
	if ((unsigned int)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	return vgpu_post5(VGPU_OP_FUNC_SET_CACHE_CONFIG, f->mod->ctx->id, 0, f->id, config, 0, 0,
			  0);
}

VGPU_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	return set_cache_config(hfunc, config);
}

VGPU_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = check_device(dev);
	return rc ? rc : set_cache_config(kernel, config);
}

/* ---- globals -------------------------------------------------------------- */

/* Called with m->lock held. */
static CUresult lookup_global(struct module *m, const char *name, size_t len, uint32_t h,
			      struct global **out)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MODULE_GET_GLOBAL } };
	struct global *g = malloc(sizeof(*g) + len);
	CUresult rc;

	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r.sqe.ctx = m->m.ctx->id;
	r.sqe.arg[0] = m->m.id;
	r.payload = name;
	r.payload_len = len;
	rc = vgpu_call(&r);
	if (rc) {
		free(g);
		return rc;
	}
	g->addr = r.cqe.val[0];
	g->size = r.cqe.val[1];
	memcpy(g->name, name, len);
	if (ntab_put(&m->globals, g->name, h, g)) {
		*out = g;	/* not cached: leaked, harmlessly */
		return CUDA_SUCCESS;
	}
	/* Pointer queries and copies see it as device memory without asking. */
	vgpu_mem_note_device(g->addr, g->size, m->m.ctx);
	*out = g;
	return CUDA_SUCCESS;
}

static CUresult get_global(void *hmod, const char *name, uint64_t *addr, uint64_t *size)
{
	struct module *m;
	struct global *g;
	size_t len;
	uint32_t h;
	CUresult rc = module_resolve(hmod, &m);

	if (rc)
		return rc;
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	len = strlen(name) + 1;
	if (len > VGPU_MAX_NAME)
		return CUDA_ERROR_NOT_FOUND;
	h = name_hash(name);
	pthread_mutex_lock(&m->lock);
	g = ntab_get(&m->globals, name, h);
	rc = g ? CUDA_SUCCESS : lookup_global(m, name, len, h, &g);
	pthread_mutex_unlock(&m->lock);
	if (rc)
		return rc;
	*addr = g->addr;
	*size = g->size;
	return CUDA_SUCCESS;
}

static CUresult global_out(void *hmod, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
	uint64_t addr, size;
	CUresult rc = get_global(hmod, name, &addr, &size);

	if (rc)
		return rc;
	if (dptr)
		*dptr = addr;
	if (bytes)
		*bytes = size;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
					  const char *name)
{
	return global_out(hmod, name, dptr, bytes);
}

VGPU_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
					const char *name)
{
	return global_out(library, name, dptr, bytes);
}

/* The 32-bit ABI: only an address below 4 GiB can be answered. */
VGPU_EXPORT CUresult cuModuleGetGlobal(CUdeviceptr_v1 *dptr, unsigned int *bytes, CUmodule hmod,
				       const char *name)
{
	uint64_t addr, size;
	CUresult rc = get_global(hmod, name, &addr, &size);

	if (rc)
		return rc;
	if (addr > UINT32_MAX || size > UINT32_MAX)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (dptr)
		*dptr = (CUdeviceptr_v1)addr;
	if (bytes)
		*bytes = (unsigned int)size;
	return CUDA_SUCCESS;
}

/* ---- occupancy ------------------------------------------------------------ */

static CUresult max_active_blocks(struct vgpu_func *f, int block, size_t smem,
				  unsigned int flags, int *out)
{
	struct func *fn = func_of(f);
	struct module *m = mod_of(f->mod);
	struct occ *o = &fn->occ[((unsigned int)block / 32 + smem / 256 + flags) % OCC_SLOTS];
	struct vgpu_cqe cqe = { 0 };
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&m->lock);
	if (o->block == block && o->smem == smem && o->flags == flags) {
		*out = o->blocks;
		goto out;
	}
	rc = vgpu_call5(VGPU_OP_OCCUPANCY, m->m.ctx->id, 0, f->id, (uint64_t)block, smem, flags, 0,
			&cqe);
	if (rc)
		goto out;
	*out = (int)cqe.val[0];
	*o = (struct occ){ .block = block, .flags = flags, .smem = smem, .blocks = *out };
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static CUresult occupancy(int *numBlocks, CUfunction func, int blockSize, size_t smem,
			  unsigned int flags)
{
	struct vgpu_func *f;
	CUresult rc = func_get(func, &f);

	if (rc)
		return rc;
	if (!numBlocks || blockSize <= 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	return max_active_blocks(f, blockSize, smem, flags, numBlocks);
}

VGPU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
								 int blockSize,
								 size_t dynamicSMemSize)
{
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

VGPU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
{
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

VGPU_EXPORT CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
						  const CUlaunchConfig *config)
{
	uint32_t cx = 0, cy = 0, cz = 0;
	struct vgpu_cqe cqe = { 0 };
	struct vgpu_func *f;
	CUresult rc = func_get(func, &f);

	if (rc)
		return rc;
	if (!numClusters || !config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			cx = config->attrs[i].value.clusterDim.x;
			cy = config->attrs[i].value.clusterDim.y;
			cz = config->attrs[i].value.clusterDim.z;
		}
	if (cx > 0xffffu * 2 || cy > 0xffff || cz > 0xffff ||
	    config->gridDimY > 0xffff || config->gridDimZ > 0xffff ||
	    config->blockDimY > 0xffff || config->blockDimZ > 0xffff)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(VGPU_OP_OCCUPANCY_CLUSTERS, f->mod->ctx->id, 0, f->id,
			VGPU_DIM_PACK(config->gridDimX, config->gridDimY, config->gridDimZ),
			VGPU_DIM_PACK(config->blockDimX, config->blockDimY, config->blockDimZ),
			config->sharedMemBytes, VGPU_DIM_PACK(cx, cy, cz), &cqe);
	if (!rc)
		*numClusters = (int)cqe.val[0];
	return rc;
}

/* The search cuda_runtime.h's cudaOccupancyMaxPotentialBlockSize makes:
 * every warp multiple from the limit down, keeping the best thread count. */
static CUresult potential_block_size(int *minGridSize, int *blockSize, CUfunction func,
				     CUoccupancyB2DSize b2smem, size_t smem, int limit,
				     unsigned int flags)
{
	struct vgpu_func *f;
	CUdevice dev;
	int warp, sm_threads, sms, dev_max, best = 0, best_blocks = 0, best_threads = 0;
	CUresult rc = func_get(func, &f);

	if (rc)
		return rc;
	if (!minGridSize || !blockSize || limit < 0 ||
	    flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	dev = f->mod->ctx->dev;
	warp = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
	sm_threads = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
	sms = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	dev_max = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
	if (warp <= 0)
		warp = 32;
	if (!limit || limit > dev_max)
		limit = dev_max;
	if (limit > attr_read(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
		limit = attr_read(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
	for (int aligned = (limit + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
		int try = aligned < limit ? aligned : limit, blocks = 0;

		rc = max_active_blocks(f, try, b2smem ? b2smem(try) : smem, flags, &blocks);
		if (rc)
			return rc;
		if (try * blocks > best_threads) {
			best = try;
			best_blocks = blocks;
			best_threads = try * blocks;
		}
		if (best_threads == sm_threads)
			break;
	}
	*minGridSize = best_blocks * sms;
	*blockSize = best;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
						      CUfunction func,
						      CUoccupancyB2DSize blockSizeToDynamicSMemSize,
						      size_t dynamicSMemSize, int blockSizeLimit)
{
	return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
				    dynamicSMemSize, blockSizeLimit, 0);
}

VGPU_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
	int *minGridSize, int *blockSize, CUfunction func,
	CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
	unsigned int flags)
{
	return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
				    dynamicSMemSize, blockSizeLimit, flags);
}

/*
 * From the attributes alone: the SM's shared memory split numBlocks ways
 * in 128-byte units, less the per-block reservation and the kernel's
 * static shared memory, capped by the opt-in limit. Register pressure is
 * not considered.
 */
VGPU_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize,
							     CUfunction func, int numBlocks,
							     int blockSize)
{
	struct vgpu_func *f;
	CUdevice dev;
	long per_sm, per_block, cap, stat;
	CUresult rc = func_get(func, &f);

	if (rc)
		return rc;
	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	dev = f->mod->ctx->dev;
	stat = attr_read(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
	*dynamicSmemSize = 0;
	if (blockSize > attr_read(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) ||
	    numBlocks > vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR) ||
	    (long)numBlocks * blockSize >
		    vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR))
		return CUDA_SUCCESS;
	per_sm = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	per_block = per_sm / numBlocks / 128 * 128 -
		    vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK) - stat;
	cap = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) - stat;
	if (per_block > cap)
		per_block = cap;
	if (per_block > 0)
		*dynamicSmemSize = per_block;
	return CUDA_SUCCESS;
}

/* ---- a module's functions, all of them ------------------------------------ */

/*
 * Calls visit(name) for each of the module's functions, in the driver's
 * order, the names a page of them at a time from the worker. *total gets
 * the count. A library is bound to the current context first, as a use.
 */
static CUresult each_function(struct module *m, unsigned int *total,
			      CUresult (*visit)(struct module *m, const char *name, unsigned int i,
						void *arg),
			      void *arg)
{
	struct vgpu_session *s;
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MODULE_FUNCTION_NAMES } };
	uint64_t next = 0, n = 0;
	CUresult rc = vgpu_session(&s);

	if (rc)
		return rc;
	r.reply_cap = s->ring.reply_slot_size;
	r.reply = malloc(r.reply_cap);
	if (!r.reply)
		return CUDA_ERROR_OUT_OF_MEMORY;
	do {
		const char *p = r.reply;
		uint64_t got, len;

		r.sqe.ctx = m->m.ctx->id;
		r.sqe.arg[0] = m->m.id;
		r.sqe.arg[1] = next;
		rc = vgpu_call(&r);
		if (rc)
			break;
		n = r.cqe.val[0];
		got = r.cqe.val[1];
		len = r.cqe.val[2];
		/* The worker's answer, checked: got names within len bytes. */
		if (n > UINT32_MAX || got > n - next || len > r.reply_cap || (!got && next < n)) {
			rc = CUDA_ERROR_UNKNOWN;
			break;
		}
		for (uint64_t i = 0; i < got && !rc; i++) {
			const char *end = memchr(p, 0, len - (uint64_t)(p - (const char *)r.reply));

			if (!end) {
				rc = CUDA_ERROR_UNKNOWN;
				break;
			}
			if (visit)
				rc = visit(m, p, (unsigned int)(next + i), arg);
			p = end + 1;
		}
		next += got;
	} while (!rc && next < n && visit);
	free(r.reply);
	if (!rc)
		*total = (unsigned int)n;
	return rc;
}

struct enum_out {
	void **out;
	unsigned int cap;
};

static CUresult put_function(struct module *m, const char *name, unsigned int i, void *arg)
{
	struct enum_out *e = arg;

	if (i >= e->cap)
		return CUDA_SUCCESS;
	return get_function(m, name, &e->out[i]);
}

static CUresult function_count(void *h, unsigned int *count)
{
	struct module *m;
	CUresult rc = module_resolve(h, &m);

	if (rc)
		return rc;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	return each_function(m, count, NULL, NULL);
}

/* The same handles cuModuleGetFunction gives for the same names. */
static CUresult enumerate_functions(void *h, void **out, unsigned int cap)
{
	struct enum_out e = { out, cap };
	struct module *m;
	unsigned int n;
	CUresult rc = module_resolve(h, &m);

	if (rc)
		return rc;
	if (!out || !cap)
		return CUDA_ERROR_INVALID_VALUE;
	return each_function(m, &n, put_function, &e);
}

VGPU_EXPORT CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	return function_count(mod, count);
}

VGPU_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
						CUmodule mod)
{
	return enumerate_functions(mod, (void **)functions, numFunctions);
}

VGPU_EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	return function_count(lib, count);
}

VGPU_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
					       CUlibrary lib)
{
	return enumerate_functions(lib, (void **)kernels, numKernels);
}

/*
 * The cluster dimensions in config are ignored, as the driver documents;
 * its scheduling policy, if any, is passed on.
 */
VGPU_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func,
							const CUlaunchConfig *config)
{
	uint32_t policy = 0;
	struct vgpu_cqe cqe = { 0 };
	struct vgpu_func *f;
	CUresult rc = func_get(func, &f);

	if (rc)
		return rc;
	if (!clusterSize || !config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
			policy = config->attrs[i].value.clusterSchedulingPolicyPreference;
	if (policy > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING ||
	    config->gridDimX > 0x7fffffff || config->blockDimX > 0x7fffffff ||
	    config->gridDimY > 0xffff || config->gridDimZ > 0xffff ||
	    config->blockDimY > 0xffff || config->blockDimZ > 0xffff)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(VGPU_OP_OCCUPANCY_CLUSTER_SIZE, f->mod->ctx->id, 0, f->id,
			VGPU_DIM_PACK(config->gridDimX, config->gridDimY, config->gridDimZ),
			VGPU_DIM_PACK(config->blockDimX, config->blockDimY, config->blockDimZ),
			config->sharedMemBytes, policy, &cqe);
	if (!rc)
		*clusterSize = (int)cqe.val[0];
	return rc;
}
