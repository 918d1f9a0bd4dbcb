// SPDX-License-Identifier: MIT
/*
 * Texture and surface objects on the host backend: their descriptors
 * checked as the driver checks them, kept, and read back. No kernel here
 * samples them. Values are small integers, the lowest free one first (as
 * the driver hands out its descriptor slots), under host.lock.
 */
#include <stdlib.h>
#include <string.h>

#include "vgpu/array_format.h"
#include "host_array.h"
#include "host_backend.h"

#define MAX_OBJS	(1u << 20)	/* values past it are refused */
#define TEX_ALIGN	512		/* CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT */
#define PITCH_ALIGN	32		/* CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT */

struct host_texobj {
	struct host_ctx *ctx;
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	int has_view;
};

/* Objects by value: slot v - 1 holds value v. */
struct objs {
	struct host_texobj **o;
	size_t cap;
};

static struct objs texs, surfs;

static int objs_put(struct objs *t, struct host_texobj *o, unsigned long long *value)
{
	size_t i;

	for (i = 0; i < t->cap && t->o[i]; i++)
		;
	if (i == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct host_texobj **n;

		if (cap > MAX_OBJS || !(n = realloc(t->o, cap * sizeof(*n))))
			return -1;
		memset(n + t->cap, 0, (cap - t->cap) * sizeof(*n));
		t->o = n;
		t->cap = cap;
	}
	t->o[i] = o;
	*value = i + 1;
	return 0;
}

static struct host_texobj *objs_get(struct objs *t, unsigned long long v)
{
	return v && v <= t->cap ? t->o[v - 1] : NULL;
}

/* ---- checks ------------------------------------------------------------------ */

static CUresult check_linear(const CUDA_RESOURCE_DESC *r)
{
	uint32_t e = vgpu_array_elem_bytes(r->res.linear.format, r->res.linear.numChannels);
	uint64_t p = r->res.linear.devPtr, n = r->res.linear.sizeInBytes;
	CUresult rc = CUDA_SUCCESS;

	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	if (!p || p % TEX_ALIGN || !n || n % e || n / e > 268435456u)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_rwlock_rdlock(&host.map);
	if (!host_range_ok(p, n, HOST_READ))
		rc = CUDA_ERROR_INVALID_VALUE;
	pthread_rwlock_unlock(&host.map);
	return rc;
}

static CUresult check_pitch2d(const CUDA_RESOURCE_DESC *r)
{
	uint32_t e = vgpu_array_elem_bytes(r->res.pitch2D.format, r->res.pitch2D.numChannels);
	uint64_t p = r->res.pitch2D.devPtr, w = r->res.pitch2D.width, h = r->res.pitch2D.height;
	uint64_t pitch = r->res.pitch2D.pitchInBytes;
	CUresult rc = CUDA_SUCCESS;

	if (!e || !p || p % TEX_ALIGN || !w || !h || w > 131072 || h > 65000 ||
	    pitch % PITCH_ALIGN || pitch > 2097120 || pitch < w * e)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_rwlock_rdlock(&host.map);
	if (!host_range_ok(p, pitch * (h - 1) + w * e, HOST_READ))
		rc = CUDA_ERROR_INVALID_VALUE;
	pthread_rwlock_unlock(&host.map);
	return rc;
}

/* Under host.lock; *levels gets the mipmap levels the resource has. */
static CUresult check_res(const CUDA_RESOURCE_DESC *r, bool surface, unsigned int *levels)
{
	struct host_array *a;
	unsigned int flags;

	if (!r || r->flags)
		return CUDA_ERROR_INVALID_VALUE;
	*levels = 1;
	switch (r->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		a = host_array_get(r->res.array.hArray);
		if (!a)
			return CUDA_ERROR_INVALID_HANDLE;
		/* A surface over an array made without SURFACE_LDST is made
		 * all the same (H100, driver 580); only its use would fail. */
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		if (surface)
			return CUDA_ERROR_INVALID_VALUE;
		if (!host_mipmap_live(r->res.mipmap.hMipmappedArray, levels, &flags))
			return CUDA_ERROR_INVALID_HANDLE;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_LINEAR:
		return surface ? CUDA_ERROR_INVALID_VALUE : check_linear(r);
	case CU_RESOURCE_TYPE_PITCH2D:
		return surface ? CUDA_ERROR_INVALID_VALUE : check_pitch2d(r);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult check_tex(const CUDA_TEXTURE_DESC *t)
{
	const unsigned int known = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
		CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP;

	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < 3; i++)
		if ((unsigned)t->addressMode[i] > CU_TR_ADDRESS_MODE_BORDER)
			return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned)t->filterMode > CU_TR_FILTER_MODE_LINEAR ||
	    (unsigned)t->mipmapFilterMode > CU_TR_FILTER_MODE_LINEAR || (t->flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult check_view(const CUDA_RESOURCE_VIEW_DESC *v, const CUDA_RESOURCE_DESC *r,
			   unsigned int levels)
{
	if (!v)
		return CUDA_SUCCESS;
	if (r->resType != CU_RESOURCE_TYPE_ARRAY && r->resType != CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
		return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned)v->format > CU_RES_VIEW_FORMAT_UNSIGNED_BC7 || !v->width ||
	    v->firstMipmapLevel > v->lastMipmapLevel || v->lastMipmapLevel >= levels ||
	    v->firstLayer > v->lastLayer)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* ---- objects ------------------------------------------------------------------ */

static CUresult obj_create(struct objs *t, bool surface, unsigned long long *out,
			   const CUDA_RESOURCE_DESC *res, const CUDA_TEXTURE_DESC *tex,
			   const CUDA_RESOURCE_VIEW_DESC *view)
{
	struct host_texobj *o;
	struct host_ctx *ctx;
	unsigned int levels;
	CUresult r;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!surface && (r = check_tex(tex)))
		return r;
	o = calloc(1, sizeof(*o));
	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	if (!r)
		r = check_res(res, surface, &levels);
	if (!r && !surface)
		r = check_view(view, res, levels);
	if (!r) {
		o->ctx = ctx;
		o->res = *res;
		if (!surface)
			o->tex = *tex;
		if (view) {
			o->view = *view;
			o->has_view = 1;
		}
		if (objs_put(t, o, out))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&host.lock);
	if (r)
		free(o);
	return r;
}

static CUresult obj_destroy(struct objs *t, unsigned long long v)
{
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&host.lock);
	if (!objs_get(t, v)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		free(t->o[v - 1]);
		t->o[v - 1] = NULL;
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuTexObjectCreate(CUtexObject *out, const CUDA_RESOURCE_DESC *res,
				const CUDA_TEXTURE_DESC *tex, const CUDA_RESOURCE_VIEW_DESC *view)
{
	return obj_create(&texs, false, out, res, tex, view);
}

CUresult host_cuTexObjectDestroy(CUtexObject v)
{
	return obj_destroy(&texs, v);
}

CUresult host_cuSurfObjectCreate(CUsurfObject *out, const CUDA_RESOURCE_DESC *res)
{
	return obj_create(&surfs, true, out, res, NULL, NULL);
}

CUresult host_cuSurfObjectDestroy(CUsurfObject v)
{
	return obj_destroy(&surfs, v);
}

/* The Get* calls: what creation kept. */
static CUresult obj_read(struct objs *t, unsigned long long v, CUDA_RESOURCE_DESC *res,
			 CUDA_TEXTURE_DESC *tex, CUDA_RESOURCE_VIEW_DESC *view)
{
	struct host_texobj *o;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&host.lock);
	o = objs_get(t, v);
	if (!o)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (view && !o->has_view)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (res)
		*res = o->res;
	else if (tex)
		*tex = o->tex;
	else
		*view = o->view;
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *res, CUtexObject v)
{
	return res ? obj_read(&texs, v, res, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}

CUresult host_cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *tex, CUtexObject v)
{
	return tex ? obj_read(&texs, v, NULL, tex, NULL) : CUDA_ERROR_INVALID_VALUE;
}

CUresult host_cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *view, CUtexObject v)
{
	return view ? obj_read(&texs, v, NULL, NULL, view) : CUDA_ERROR_INVALID_VALUE;
}

CUresult host_cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *res, CUsurfObject v)
{
	return res ? obj_read(&surfs, v, res, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}

static void drop_ctx(struct objs *t, struct host_ctx *ctx)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->o[i] && t->o[i]->ctx == ctx) {
			free(t->o[i]);
			t->o[i] = NULL;
		}
}

void host_texobj_release_ctx(struct host_ctx *ctx)
{
	drop_ctx(&texs, ctx);
	drop_ctx(&surfs, ctx);
}
