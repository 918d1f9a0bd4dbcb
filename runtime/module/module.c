// SPDX-License-Identifier: MIT
/*
 * Modules and libraries: loading, unloading and the handle checks
 * (objects in module.h).
 *
 * An image is loaded once, into the context that is current at load time,
 * and the worker keeps it until unload; the driver's lazy loading has no
 * counterpart to manage here. A library's kernels can therefore be
 * launched in that context only.
 *
 * Images are sized locally (image.c) and streamed with MODULE_LOAD through
 * the staging chunks; a fatbinC wrapper is sent as the fatbin it points
 * to. Function lookups are in function.c, globals in global.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "entry.h"
#include "image.h"
#include "init.h"
#include "log.h"
#include "memory.h"
#include "module.h"

/* ---- handles -------------------------------------------------------------- */

CUresult vgpu_module_lookup(void *h, struct module **out)
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

/* A module or library ready for use: a library is loaded by now. */
CUresult vgpu_module_resolve(void *h, struct module **out)
{
	CUresult rc = vgpu_module_lookup(h, out);

	return rc ? rc : vgpu_library_bind(*out);
}

/* The object named @name in @t, one of @m's tables: the kept one, else
 * the one @fetch makes, under @m's lock so a name is fetched once. */
CUresult vgpu_module_named(struct module *m, struct ntab *t, const char *name, size_t len,
			   vgpu_module_fetch fetch, void **out)
{
	uint32_t h = vgpu_name_hash(name);
	CUresult rc;

	pthread_mutex_lock(&m->lock);
	*out = vgpu_ntab_get(t, name, h);
	rc = *out ? CUDA_SUCCESS : fetch(m, name, len, h, out);
	pthread_mutex_unlock(&m->lock);
	return rc;
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
CUresult vgpu_library_bind(struct module *m)
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
	m = vgpu_obj_new(sizeof(*m), offsetof(struct module, m.id), VGPU_K_MODULE);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
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

CUresult vgpu_module_read_file(const char *path, uint64_t max, CUresult bad, uint8_t **buf,
			       size_t *len)
{
	struct stat st;
	size_t got = 0;
	uint8_t *b;
	int fd;

	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_FILE_NOT_FOUND;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > max || (uint64_t)st.st_size >= SIZE_MAX) {
		close(fd);
		return bad;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(b);
		return CUDA_ERROR_FILE_NOT_FOUND;
	}
	b[got] = 0;
	*buf = b;
	*len = got;
	return CUDA_SUCCESS;
}

/* Whole files: the worker tells what they hold. PTX text must end within
 * the bytes sent (the worker reads no further), so a NUL follows the file. */
static CUresult load_file(const char *path, bool library, struct module **out)
{
	uint8_t *buf;
	size_t len;
	CUresult rc = vgpu_module_read_file(path, UINT64_MAX, CUDA_ERROR_INVALID_IMAGE, &buf, &len);

	if (rc)
		return rc;
	rc = load_bytes(buf, len + 1, library, out);
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

VGPU_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	CUresult rc = vgpu_enter_nonnull(module);

	return rc ? rc : load_image(image, false, (struct module **)module);
}

VGPU_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
					unsigned int numOptions, CUjit_option *options,
					void **optionValues)
{
	CUresult rc = vgpu_enter_nonnull(module);

	if (!rc)
		rc = jit_options(numOptions, options, optionValues);
	return rc ? rc : load_image(image, false, (struct module **)module);
}

VGPU_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	CUresult rc = vgpu_enter_nonnull(module);

	return rc ? rc : load_image(fatCubin, false, (struct module **)module);
}

VGPU_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	CUresult rc = vgpu_enter_nonnull(module);

	return rc ? rc : load_file(fname, false, (struct module **)module);
}

/* cuModuleUnload or (@library) cuLibraryUnload: a library's module view
 * goes with cuLibraryUnload only, a module with cuModuleUnload only. */
static CUresult unload_handle(void *h, bool library)
{
	struct module *m;
	CUresult rc = vgpu_module_lookup(h, &m);

	if (rc)
		return rc;
	return m->m.is_library == library ? unload(m) : CUDA_ERROR_INVALID_HANDLE;
}

VGPU_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	return unload_handle(hmod, false);
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
	CUresult rc = vgpu_enter_nonnull(mode);

	if (rc)
		return rc;
	*mode = env && !strcmp(env, "EAGER") ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
	return CUDA_SUCCESS;
}

/* What cuLibraryLoadData and cuLibraryLoadFromFile check before loading. */
static CUresult library_entry(CUlibrary *library, CUjit_option *jitOptions,
			      void **jitOptionsValues, unsigned int numJitOptions,
			      CUlibraryOption *libraryOptions, void **libraryOptionValues,
			      unsigned int numLibraryOptions)
{
	CUresult rc = vgpu_enter_nonnull(library);

	if (!rc)
		rc = jit_options(numJitOptions, jitOptions, jitOptionsValues);
	if (!rc)
		rc = library_options(numLibraryOptions, libraryOptions, libraryOptionValues);
	return rc;
}

VGPU_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
				       CUjit_option *jitOptions, void **jitOptionsValues,
				       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				       void **libraryOptionValues, unsigned int numLibraryOptions)
{
	CUresult rc = library_entry(library, jitOptions, jitOptionsValues, numJitOptions,
				    libraryOptions, libraryOptionValues, numLibraryOptions);

	return rc ? rc : load_image(code, true, (struct module **)library);
}

VGPU_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
					   CUjit_option *jitOptions, void **jitOptionsValues,
					   unsigned int numJitOptions,
					   CUlibraryOption *libraryOptions,
					   void **libraryOptionValues,
					   unsigned int numLibraryOptions)
{
	CUresult rc = library_entry(library, jitOptions, jitOptionsValues, numJitOptions,
				    libraryOptions, libraryOptionValues, numLibraryOptions);

	return rc ? rc : load_file(fileName, true, (struct module **)library);
}

VGPU_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
	return unload_handle(library, true);
}

VGPU_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct module *m;
	CUresult rc = vgpu_need_out(vgpu_module_resolve(library, &m), pMod);

	if (rc)
		return rc;
	*pMod = (CUmodule)m;
	return CUDA_SUCCESS;
}
