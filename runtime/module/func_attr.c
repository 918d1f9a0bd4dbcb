// SPDX-License-Identifier: MIT
/*
 * Function and kernel attributes and cache configuration: read from the
 * description the worker gave at lookup (function.c), set through the
 * worker and cached at once.
 */
#include <string.h>

#include "driver.h"
#include "init.h"
#include "module.h"

/* ---- attributes ----------------------------------------------------------- */

int vgpu_func_attr_read(const struct vgpu_func *f, CUfunction_attribute a)
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
	CUresult rc = vgpu_func_get(h, &f);

	if (rc)
		return rc;
	if (!pi || (unsigned int)attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = vgpu_func_attr_read(f, attrib);
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
	CUresult rc = vgpu_func_get(h, &f);

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
	CUresult rc = vgpu_func_get(h, &f);

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
