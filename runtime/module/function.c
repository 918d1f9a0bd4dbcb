// SPDX-License-Identifier: MIT
/*
 * A module's functions and a library's kernels: lookup by name,
 * enumeration, and what a handle answers about itself (module, name,
 * parameter layout, loading state).
 *
 * Lookups are synchronous the first time and then answered from the
 * module's table, so a second cuLibraryGetKernel of the same name is the
 * same handle with no round trip. A function's reply carries its parameter
 * layout and attributes: cuFuncGetAttribute (func_attr.c),
 * cuFuncGetParamInfo and the checks in cuLaunchKernel never leave the
 * process.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "entry.h"
#include "init.h"
#include "log.h"
#include "module.h"

/* ---- handles -------------------------------------------------------------- */

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

CUresult vgpu_func_get(void *h, struct vgpu_func **out)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : vgpu_func_resolve((CUfunction)h, out);
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
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MODULE_GET_FUNCTION } };
	CUresult rc = vgpu_reply_whole_slot(&r);

	if (!rc) {
		r.sqe.arg[1] = vgpu_id_alloc(VGPU_K_FUNC);
		if (!r.sqe.arg[1])
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (rc)
		goto fail;
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
 * library not yet bound to a context (see vgpu_library_bind) is handed out
 * unresolved, as the driver's CUkernel is context-free; its first use
 * resolves it (vgpu_func_resolve).
 */
static CUresult lookup_function(struct module *m, const char *name, size_t len, uint32_t h,
				void **out)
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
	if (vgpu_ntab_put(&m->funcs, fn->f.name, h, fn)) {
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
	CUresult rc = vgpu_library_bind(m);

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
	void *fn;
	size_t len;
	CUresult rc = vgpu_module_lookup(hmod, &m);

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
			rc = vgpu_library_bind(m);
		if (rc)
			return rc;
	}
	rc = vgpu_module_named(m, &m->funcs, name, len, lookup_function, &fn);
	if (!rc)
		*out = &((struct func *)fn)->f;
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

/* What a handle answers about itself, each getter's one difference. */
enum func_prop { FUNC_SELF, FUNC_MODULE, FUNC_NAME, FUNC_LOADED };

/* The handle checked first, then the output, as the driver checks them. */
static CUresult func_answer(void *h, enum func_prop what, void *out)
{
	struct vgpu_func *f;
	CUresult rc = vgpu_need_out(vgpu_func_get(h, &f), out);

	if (rc)
		return rc;
	switch (what) {
	case FUNC_SELF:		/* a CUkernel is its CUfunction (module.h) */
		*(CUfunction *)out = (CUfunction)f;
		break;
	case FUNC_MODULE:
		*(void **)out = f->mod;
		break;
	case FUNC_NAME:
		*(const char **)out = f->name;
		break;
	case FUNC_LOADED:	/* the worker loads eagerly */
		*(CUfunctionLoadingState *)out = CU_FUNCTION_LOADING_STATE_LOADED;
		break;
	}
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	return func_answer(kernel, FUNC_SELF, pFunc);
}

VGPU_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	return func_answer(hfunc, FUNC_MODULE, hmod);
}

VGPU_EXPORT CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	return func_answer(kernel, FUNC_MODULE, pLib);
}

VGPU_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	return func_answer(hfunc, FUNC_NAME, name);
}

VGPU_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	return func_answer(hfunc, FUNC_NAME, name);
}

static CUresult param_info(void *h, size_t index, size_t *offset, size_t *size)
{
	struct vgpu_func *f;
	CUresult rc = vgpu_func_get(h, &f);

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
	return func_answer(function, FUNC_LOADED, state);
}

VGPU_EXPORT CUresult cuFuncLoad(CUfunction function)
{
	struct vgpu_func *f;

	return vgpu_func_get(function, &f);
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
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MODULE_FUNCTION_NAMES } };
	uint64_t next = 0, n = 0;
	CUresult rc = vgpu_reply_whole_slot(&r);

	if (rc)
		return rc;
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
	CUresult rc = vgpu_need_out(vgpu_module_resolve(h, &m), count);

	if (rc)
		return rc;
	return each_function(m, count, NULL, NULL);
}

/* The same handles cuModuleGetFunction gives for the same names. */
static CUresult enumerate_functions(void *h, void **out, unsigned int cap)
{
	struct enum_out e = { out, cap };
	struct module *m;
	unsigned int n;
	CUresult rc = vgpu_module_resolve(h, &m);

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
