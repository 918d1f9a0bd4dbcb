// SPDX-License-Identifier: MIT
/*
 * Texture references on the host backend: the state the driver keeps for
 * one (format, address modes, filtering, mipmap settings, border colour,
 * flags, the memory bound), kept and read back. The host backend samples
 * no textures: no kernel it runs reads one.
 */
#include <stdlib.h>
#include <string.h>

#include "host_array.h"
#include "host_backend.h"

#define TEXREF_MAGIC 0x74657872u	/* "texr" */

struct host_texref {
	uint32_t magic;
	CUarray_format format;
	int channels;
	CUaddress_mode am[3];
	CUfilter_mode filter, mip_filter;
	float bias, min_clamp, max_clamp;
	unsigned int max_aniso, flags;
	float border[4];
	CUdeviceptr addr;	/* 0: no memory bound */
	CUarray array;		/* or an array bound (host_array.c's) */
	CUmipmappedArray mipmap;	/* or a mipmapped array */
};

static struct host_texref *tex(CUtexref h)
{
	struct host_texref *t = (struct host_texref *)h;

	return t && t->magic == TEXREF_MAGIC ? t : NULL;
}

CUresult host_cuTexRefCreate(CUtexref *out)
{
	struct host_texref *t;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	t = calloc(1, sizeof(*t));
	if (!t)
		return CUDA_ERROR_OUT_OF_MEMORY;
	t->magic = TEXREF_MAGIC;
	t->format = CU_AD_FORMAT_UNSIGNED_INT8;
	t->channels = 1;
	*out = (CUtexref)t;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefDestroy(CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	t->magic = 0;
	free(t);
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefSetAddress_v2(size_t *offset, CUtexref h, CUdeviceptr p, size_t bytes)
{
	struct host_texref *t = tex(h);

	(void)bytes;
	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	t->addr = p;
	t->array = NULL;
	t->mipmap = NULL;
	if (offset)
		*offset = 0;	/* allocations are aligned: no offset to add */
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefSetAddress2D_v3(CUtexref h, const CUDA_ARRAY_DESCRIPTOR *desc, CUdeviceptr p,
				      size_t pitch)
{
	struct host_texref *t = tex(h);

	(void)pitch;
	if (!t || !desc)
		return CUDA_ERROR_INVALID_VALUE;
	t->addr = p;
	t->array = NULL;
	t->mipmap = NULL;
	t->format = desc->Format;
	t->channels = (int)desc->NumChannels;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefGetAddress_v2(CUdeviceptr *p, CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t || !p || !t->addr)
		return CUDA_ERROR_INVALID_VALUE;
	*p = t->addr;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefSetFormat(CUtexref h, CUarray_format fmt, int channels)
{
	struct host_texref *t = tex(h);

	if (!t || (channels != 1 && channels != 2 && channels != 4))
		return CUDA_ERROR_INVALID_VALUE;
	t->format = fmt;
	t->channels = channels;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefGetFormat(CUarray_format *fmt, int *channels, CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t || !fmt || !channels)
		return CUDA_ERROR_INVALID_VALUE;
	*fmt = t->format;
	*channels = t->channels;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefSetAddressMode(CUtexref h, int dim, CUaddress_mode am)
{
	struct host_texref *t = tex(h);

	if (!t || dim < 0 || dim > 2)
		return CUDA_ERROR_INVALID_VALUE;
	t->am[dim] = am;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefGetAddressMode(CUaddress_mode *am, CUtexref h, int dim)
{
	struct host_texref *t = tex(h);

	if (!t || !am || dim < 0 || dim > 2)
		return CUDA_ERROR_INVALID_VALUE;
	*am = t->am[dim];
	return CUDA_SUCCESS;
}

/* The settings that are one value each: set and get. */
#define TEXREF_VALUE(set, get, type, field)				\
	CUresult host_##set(CUtexref h, type v)				\
	{								\
		struct host_texref *t = tex(h);				\
									\
		if (!t)							\
			return CUDA_ERROR_INVALID_VALUE;		\
		t->field = v;						\
		return CUDA_SUCCESS;					\
	}								\
	CUresult host_##get(type *v, CUtexref h)			\
	{								\
		struct host_texref *t = tex(h);				\
									\
		if (!t || !v)						\
			return CUDA_ERROR_INVALID_VALUE;		\
		*v = t->field;						\
		return CUDA_SUCCESS;					\
	}
TEXREF_VALUE(cuTexRefSetFilterMode, cuTexRefGetFilterMode, CUfilter_mode, filter)
TEXREF_VALUE(cuTexRefSetMipmapFilterMode, cuTexRefGetMipmapFilterMode, CUfilter_mode, mip_filter)
TEXREF_VALUE(cuTexRefSetMipmapLevelBias, cuTexRefGetMipmapLevelBias, float, bias)
TEXREF_VALUE(cuTexRefSetFlags, cuTexRefGetFlags, unsigned int, flags)

CUresult host_cuTexRefSetMaxAnisotropy(CUtexref h, unsigned int v)
{
	struct host_texref *t = tex(h);

	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	t->max_aniso = v;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefGetMaxAnisotropy(int *v, CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t || !v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = (int)t->max_aniso;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefSetMipmapLevelClamp(CUtexref h, float lo, float hi)
{
	struct host_texref *t = tex(h);

	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	t->min_clamp = lo;
	t->max_clamp = hi;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefGetMipmapLevelClamp(float *lo, float *hi, CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t || !lo || !hi)
		return CUDA_ERROR_INVALID_VALUE;
	*lo = t->min_clamp;
	*hi = t->max_clamp;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefSetBorderColor(CUtexref h, float *rgba)
{
	struct host_texref *t = tex(h);

	if (!t || !rgba)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(t->border, rgba, sizeof(t->border));
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefGetBorderColor(float *rgba, CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t || !rgba)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(rgba, t->border, sizeof(t->border));
	return CUDA_SUCCESS;
}

/* Binding an array: the texture takes the array's format unless told to
 * keep its own (CU_TRSA_OVERRIDE_FORMAT). */
CUresult host_cuTexRefSetArray(CUtexref h, CUarray a, unsigned int flags)
{
	struct host_texref *t = tex(h);
	struct host_array *arr;
	CUresult r = CUDA_SUCCESS;

	if (!t || (flags & ~CU_TRSA_OVERRIDE_FORMAT))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	arr = host_array_get(a);
	if (!arr) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		if (!(flags & CU_TRSA_OVERRIDE_FORMAT)) {
			t->format = arr->d.Format;
			t->channels = (int)arr->d.NumChannels;
		}
		t->array = a;
		t->mipmap = NULL;
		t->addr = 0;
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuTexRefGetArray(CUarray *a, CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t || !a || !t->array)
		return CUDA_ERROR_INVALID_VALUE;
	*a = t->array;
	return CUDA_SUCCESS;
}

CUresult host_cuTexRefSetMipmappedArray(CUtexref h, CUmipmappedArray m, unsigned int flags)
{
	struct host_texref *t = tex(h);
	unsigned int levels, aflags;
	CUresult r = CUDA_SUCCESS;

	if (!t || (flags & ~CU_TRSA_OVERRIDE_FORMAT))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host_mipmap_live(m, &levels, &aflags)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		t->mipmap = m;
		t->array = NULL;
		t->addr = 0;
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuTexRefGetMipmappedArray(CUmipmappedArray *m, CUtexref h)
{
	struct host_texref *t = tex(h);

	if (!t || !m || !t->mipmap)
		return CUDA_ERROR_INVALID_VALUE;
	*m = t->mipmap;
	return CUDA_SUCCESS;
}
