// SPDX-License-Identifier: MIT
/*
 * Modules for the host backend. Loading parses the image (host_image.c)
 * for kernel names and globals; every kernel becomes a function, bound to
 * its host implementation when host_kernels.c has one. A module's globals
 * live in one block of emulated device memory, allocated at load, charged
 * to the device budget, initialized from the image (else zero); each
 * global sits at its image alignment inside the block, in image order.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_backend.h"
#include "host_kernels.h"
#include "log.h"

static uint64_t page_round(uint64_t n)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);

	return (n + ps - 1) & ~(ps - 1);
}

static void func_free(struct host_func *f)
{
	host_set_del(&host.funcs, f);
	free(f->name);
	free(f);
}

void host_module_destroy(struct host_module *m)
{
	host_set_del(&host.modules, m);
	for (size_t i = 0; i < m->nfuncs; i++)
		func_free(m->funcs[i]);
	free(m->funcs);
	for (size_t i = 0; i < m->nglobals; i++)
		free(m->globals[i].name);
	free(m->globals);
	if (m->block) {
		host_global_block_free(m->block, m->block_size);
		host_budget_give(m->block_size);
	}
	free(m);
}

/* Whether the image's parameter layout for k agrees with the registry's. */
static int layout_matches(const struct host_image_kernel *ik, const struct host_kernel *k)
{
	if (ik->nparams < 0)
		return 1;	/* the image does not say (PTX) */
	if ((unsigned)ik->nparams != k->nparams)
		return 0;
	for (unsigned i = 0; i < k->nparams; i++)
		if (ik->param_off[i] != k->params[i].offset ||
		    ik->param_size[i] != k->params[i].size)
			return 0;
	return 1;
}

static struct host_func *func_new(struct host_module *m, const struct host_image_kernel *ik,
				  const struct host_image *img)
{
	struct host_func *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->name = strdup(ik->name);
	if (!f->name) {
		free(f);
		return NULL;
	}
	f->mod = m;
	f->kernel = host_kernel_find(ik->name);
	if (f->kernel && !layout_matches(ik, f->kernel)) {
		vlog_warn("host backend: kernel %s: the image's parameter layout differs from "
			  "the host implementation's", ik->name);
		f->layout_mismatch = 1;
	}
	f->max_dynamic_smem = HOST_SMEM_STATIC;
	f->carveout = -1;
	f->ptx_version = img->ptx_version;
	f->binary_version = img->binary_version;
	return f;
}

/* Lays out and fills the globals block; under host.lock. */
static CUresult globals_load(struct host_module *m, const struct host_image *img)
{
	uint64_t off = 0;

	m->globals = calloc(img->nglobals ? img->nglobals : 1, sizeof(*m->globals));
	if (!m->globals)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < img->nglobals; i++) {
		const struct host_image_global *g = &img->globals[i];
		uint64_t align = g->align ? g->align : 1;

		off = (off + align - 1) & ~(align - 1);
		m->globals[i].name = strdup(g->name);
		if (!m->globals[i].name)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->globals[i].offset = off;
		m->globals[i].size = g->size;
		m->nglobals++;
		off += g->size;
	}
	if (!off)
		return CUDA_SUCCESS;
	m->block_size = page_round(off);
	if (host_budget_take(m->block_size)) {
		m->block_size = 0;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (host_global_block_alloc(m->block_size, &m->block)) {
		host_budget_give(m->block_size);
		m->block_size = 0;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (size_t i = 0; i < img->nglobals; i++)
		if (img->globals[i].init)
			memcpy((uint8_t *)m->block + m->globals[i].offset, img->globals[i].init,
			       img->globals[i].size);
	return CUDA_SUCCESS;
}

CUresult host_cuModuleLoadData(CUmodule *pm, const void *image)
{
	struct host_image img;
	struct host_module *m;
	struct host_ctx *ctx;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	pthread_mutex_unlock(&host.lock);
	if (r)
		return r;
	if (!pm || !image)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = host_image_parse(image, &img)))
		return r;
	m = calloc(1, sizeof(*m));
	if (!m) {
		host_image_free(&img);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->ctx = ctx;
	m->funcs = calloc(img.nkernels ? img.nkernels : 1, sizeof(*m->funcs));
	pthread_mutex_lock(&host.lock);
	if (!m->funcs || host_set_add(&host.modules, m)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		free(m->funcs);
		free(m);
		goto out;
	}
	for (size_t i = 0; i < img.nkernels; i++) {
		struct host_func *f = func_new(m, &img.kernels[i], &img);

		if (!f || host_set_add(&host.funcs, f)) {
			if (f) {
				free(f->name);
				free(f);
			}
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		m->funcs[m->nfuncs++] = f;
	}
	if (!r)
		r = globals_load(m, &img);
	if (r)
		host_module_destroy(m);
	else
		*pm = (CUmodule)m;
out:
	pthread_mutex_unlock(&host.lock);
	host_image_free(&img);
	return r;
}

CUresult host_cuModuleUnload(CUmodule h)
{
	struct host_module *m = (struct host_module *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.modules, m))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		host_module_destroy(m);
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* Validates a module handle and its context; under host.lock. */
static CUresult module_check(const struct host_module *m)
{
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!host_set_has(&host.modules, m))
		return CUDA_ERROR_INVALID_HANDLE;
	return m->ctx->sticky;
}

CUresult host_cuModuleGetFunction(CUfunction *pf, CUmodule h, const char *name)
{
	struct host_module *m = (struct host_module *)h;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = module_check(m);
	if (!r && (!pf || !name))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		r = CUDA_ERROR_NOT_FOUND;
		for (size_t i = 0; i < m->nfuncs; i++)
			if (!strcmp(m->funcs[i]->name, name)) {
				*pf = (CUfunction)m->funcs[i];
				r = CUDA_SUCCESS;
				break;
			}
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule h, const char *name)
{
	struct host_module *m = (struct host_module *)h;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = module_check(m);
	if (!r && !name)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		r = CUDA_ERROR_NOT_FOUND;
		for (size_t i = 0; i < m->nglobals; i++)
			if (!strcmp(m->globals[i].name, name)) {
				if (dptr)
					*dptr = (uintptr_t)m->block + m->globals[i].offset;
				if (bytes)
					*bytes = m->globals[i].size;
				r = CUDA_SUCCESS;
				break;
			}
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* --- functions ---------------------------------------------------------- */

static CUresult func_check(const struct host_func *f)
{
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!host_set_has(&host.funcs, f))
		return CUDA_ERROR_INVALID_HANDLE;
	return f->mod->ctx->sticky;
}

CUresult host_cuFuncGetParamInfo(CUfunction h, size_t index, size_t *off, size_t *size)
{
	struct host_func *f = (struct host_func *)h;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = func_check(f);
	if (!r && !f->kernel)
		r = CUDA_ERROR_NOT_SUPPORTED;
	if (!r && index >= f->kernel->nparams)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		if (off)
			*off = f->kernel->params[index].offset;
		if (size)
			*size = f->kernel->params[index].size;
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction h)
{
	struct host_func *f = (struct host_func *)h;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = func_check(f);
	if (!r && !pi)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r)
		goto out;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = HOST_MAX_THREADS; break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = 0; break;
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 0; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = f->ptx_version; break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = f->binary_version; break;
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dynamic_smem; break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = f->carveout; break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *pi = 0; break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *pi = f->cluster[0]; break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *pi = f->cluster[1]; break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *pi = f->cluster[2]; break;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *pi = f->nonportable_cluster; break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = f->cluster_policy; break;
	default: r = CUDA_ERROR_INVALID_VALUE;
	}
out:
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuFuncSetAttribute(CUfunction h, CUfunction_attribute attrib, int value)
{
	struct host_func *f = (struct host_func *)h;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = func_check(f);
	if (r)
		goto out;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (value < 0 || (unsigned)value > HOST_SMEM_OPTIN)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			f->max_dynamic_smem = value;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if (value < -1 || value > 100)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			f->carveout = value;
		break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		if (value < 0 || value > 16)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			f->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
		break;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		if (value != 0 && value != 1)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			f->nonportable_cluster = value;
		break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		if (value < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
		    value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			f->cluster_policy = value;
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
out:
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuFuncSetCacheConfig(CUfunction h, CUfunc_cache config)
{
	struct host_func *f = (struct host_func *)h;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = func_check(f);
	if (!r && (unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		f->cache = config;
	pthread_mutex_unlock(&host.lock);
	return r;
}
