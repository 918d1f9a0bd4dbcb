// SPDX-License-Identifier: MIT
/*
 * Host backend: what the client's hidden tables (runtime/dark_*.c) need of a
 * driver. A module's functions in image order, a function's name, the
 * largest cluster a kernel can use, and cuGetExportTable, which this
 * emulation answers honestly: it is not NVIDIA's driver and has no hidden
 * tables at all (CUDA_ERROR_NOT_FOUND, never a made-up table).
 */
#include <string.h>

#include "host_backend.h"

/* Portable and non-portable cluster size limits of the emulated Hopper. */
#define HOST_CLUSTER_PORTABLE 8
#define HOST_CLUSTER_NONPORTABLE 16

/* Under host.lock. */
static CUresult module_ok(const struct host_module *m)
{
	if (!host_set_has(&host.modules, m))
		return CUDA_ERROR_INVALID_HANDLE;
	return m->ctx->sticky;
}

CUresult host_cuModuleGetFunctionCount(unsigned int *count, CUmodule h)
{
	struct host_module *m = (struct host_module *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	r = module_ok(m);
	if (!r && !count)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		*count = (unsigned int)m->nfuncs;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* The first n functions, in the order the image lists them. */
CUresult host_cuModuleEnumerateFunctions(CUfunction *out, unsigned int n, CUmodule h)
{
	struct host_module *m = (struct host_module *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	r = module_ok(m);
	if (!r && (!out || !n))
		r = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !r && i < n && i < m->nfuncs; i++)
		out[i] = (CUfunction)m->funcs[i];
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuFuncGetName(const char **name, CUfunction h)
{
	struct host_func *f = (struct host_func *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.funcs, f))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (!name)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*name = f->name;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/*
 * As the driver documents it: a required cluster size wins; otherwise the
 * portable limit, or the non-portable one where the kernel allows it; 0
 * when a block of this shape does not fit an SM at all.
 */
CUresult host_cuOccupancyMaxPotentialClusterSize(int *size, CUfunction h, const CUlaunchConfig *c)
{
	struct host_func *f = (struct host_func *)h;
	int per_sm = 0, required = 0, nonportable = 0;
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!size || !c || (c->numAttrs && !c->attrs) || !c->blockDimX || !c->blockDimY ||
	    !c->blockDimZ)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.funcs, f)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		r = f->mod->ctx->sticky;
		if (f->cluster[0])
			required = f->cluster[0] * (f->cluster[1] ? f->cluster[1] : 1) *
				   (f->cluster[2] ? f->cluster[2] : 1);
		nonportable = f->nonportable_cluster;
	}
	pthread_mutex_unlock(&host.lock);
	if (r)
		return r;
	r = host_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		&per_sm, h, (int)(c->blockDimX * c->blockDimY * c->blockDimZ), c->sharedMemBytes, 0);
	if (r)
		return r;
	if (!per_sm)
		*size = 0;
	else if (required)
		*size = required;
	else
		*size = nonportable ? HOST_CLUSTER_NONPORTABLE : HOST_CLUSTER_PORTABLE;
	return CUDA_SUCCESS;
}

/* No hidden tables here: the worker reports that no real driver is behind it. */
CUresult host_cuGetExportTable(const void **table, const CUuuid *id)
{
	if (!table || !id)
		return CUDA_ERROR_INVALID_VALUE;
	*table = NULL;
	return CUDA_ERROR_NOT_FOUND;
}
