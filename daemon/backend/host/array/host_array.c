// SPDX-License-Identifier: MIT
/*
 * CUDA arrays and mipmapped arrays on the host backend: host memory laid
 * out element by element (format x channels bytes each), rows of width
 * elements back to back, slices (or layers, or cube faces) of height rows;
 * 3D copies with an array at either end. The formats are those
 * array_format.h lays out; block-compressed and YUV arrays, sparse and
 * deferred-mapping arrays are refused (NOT_SUPPORTED): nothing here would
 * read them. Arrays and mipmapped arrays are guarded by host.lock, their
 * bytes by host.map as all emulated memory is.
 */
#include <stdlib.h>
#include <string.h>

#include "vgpu/array_format.h"
#include "host_array.h"
#include "host_backend.h"

#define ARRAY_MAGIC	0x61727279u	/* "arry" */
#define MIPMAP_MAGIC	0x6d69706du	/* "mipm" */
#define MAX_LEVELS	32

struct host_mipmap {
	uint32_t magic;
	struct host_ctx *ctx;
	CUDA_ARRAY3D_DESCRIPTOR d;
	unsigned int levels;
	struct host_array *level[MAX_LEVELS];
};

static struct host_set arrays, mipmaps;

struct host_array *host_array_get(CUarray h)
{
	struct host_array *a = (struct host_array *)h;

	return a && host_set_has(&arrays, a) && a->magic == ARRAY_MAGIC ? a : NULL;
}

static struct host_mipmap *mipmap_get(CUmipmappedArray h)
{
	struct host_mipmap *m = (struct host_mipmap *)h;

	return m && host_set_has(&mipmaps, m) && m->magic == MIPMAP_MAGIC ? m : NULL;
}

int host_mipmap_live(CUmipmappedArray h, unsigned int *levels, unsigned int *flags)
{
	struct host_mipmap *m = mipmap_get(h);

	if (!m)
		return 0;
	*levels = m->levels;
	*flags = m->d.Flags;
	return 1;
}

/* ---- descriptors ------------------------------------------------------------ */

static uint64_t at_least1(uint64_t v)
{
	return v ? v : 1;
}

/* The device's limits for an array of this shape (backend_host.c's table). */
static CUresult check_shape(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	unsigned int f = d->Flags;
	size_t w = d->Width, h = d->Height, n = d->Depth;

	if (!w)
		return CUDA_ERROR_INVALID_VALUE;
	if (f & CUDA_ARRAY3D_CUBEMAP) {
		if (w != h || w > 32768 || !n || n % 6 || (!(f & CUDA_ARRAY3D_LAYERED) && n != 6) ||
		    n > 2046)
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	}
	if (f & CUDA_ARRAY3D_LAYERED) {
		if (!n || n > 2048 || w > 32768 || h > 32768)
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	}
	if (!h && n)
		return CUDA_ERROR_INVALID_VALUE;
	if (!h)
		return w <= 131072 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (!n)
		return w <= 131072 && h <= 65536 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	return w <= 16384 && h <= 16384 && n <= 16384 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult check_desc(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	const unsigned int known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
		CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE |
		CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING |
		CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;

	if (!d || (d->Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING |
			CUDA_ARRAY3D_VIDEO_ENCODE_DECODE | CUDA_ARRAY3D_COLOR_ATTACHMENT))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4)
		return CUDA_ERROR_INVALID_VALUE;
	if (!vgpu_array_elem_bytes(d->Format, d->NumChannels))
		return CUDA_ERROR_NOT_SUPPORTED;	/* block-compressed, YUV: not laid out here */
	return check_shape(d);
}

/* ---- arrays ------------------------------------------------------------------ */

static void array_free(struct host_array *a)
{
	host_set_del(&arrays, a);
	host_budget_give(a->bytes);
	a->magic = 0;
	free(a->data);
	free(a);
}

/* A new array of shape d (checked); under host.lock. */
static CUresult array_new(struct host_ctx *ctx, const CUDA_ARRAY3D_DESCRIPTOR *d,
			  struct host_mipmap *mm, struct host_array **out)
{
	struct host_array *a = calloc(1, sizeof(*a));
	uint64_t bytes;

	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->magic = ARRAY_MAGIC;
	a->ctx = ctx;
	a->mm = mm;
	a->d = *d;
	a->elem = vgpu_array_elem_bytes(d->Format, d->NumChannels);
	a->row = d->Width * a->elem;
	a->rows = at_least1(d->Height);
	a->slices = at_least1(d->Depth);
	if (__builtin_mul_overflow(a->row, a->rows, &a->slice) ||
	    __builtin_mul_overflow(a->slice, a->slices, &bytes))
		goto nomem;
	a->bytes = bytes;
	a->data = calloc(1, bytes);
	if (!a->data)
		goto nomem;
	if (host_budget_take(bytes))
		goto nomem;
	if (host_set_add(&arrays, a)) {
		host_budget_give(bytes);
		goto nomem;
	}
	*out = a;
	return CUDA_SUCCESS;
nomem:
	free(a->data);
	free(a);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult host_cuArray3DCreate_v2(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	struct host_array *a;
	struct host_ctx *ctx;
	CUresult r;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = check_desc(d)))
		return r;
	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	if (!r)
		r = array_new(ctx, d, NULL, &a);
	pthread_mutex_unlock(&host.lock);
	if (!r)
		*out = (CUarray)a;
	return r;
}

CUresult host_cuArrayDestroy(CUarray h)
{
	struct host_array *a;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&host.lock);
	a = host_array_get(h);
	if (!a || a->mm)		/* a level belongs to its mipmapped array */
		r = CUDA_ERROR_INVALID_HANDLE;
	if (!r) {
		pthread_rwlock_wrlock(&host.map);	/* no copy reads it now */
		array_free(a);
		pthread_rwlock_unlock(&host.map);
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray h)
{
	struct host_array *a;
	CUresult r = CUDA_SUCCESS;

	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	a = host_array_get(h);
	if (!a)
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*d = a->d;
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, CUarray h,
					   CUdevice dev)
{
	struct host_array *a;
	CUresult r = CUDA_SUCCESS;

	if (!req || dev != 0)
		return dev != 0 ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	a = host_array_get(h);
	if (!a)
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*req = (CUDA_ARRAY_MEMORY_REQUIREMENTS){ .size = a->bytes, .alignment = 512 };
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* Sparse arrays are refused at creation: no array here has sparse
 * properties, which the driver answers for a non-sparse one. */
CUresult host_cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES *p, CUarray h)
{
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = host_array_get(h) ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* Planes are the YUV formats', which this backend does not lay out. */
CUresult host_cuArrayGetPlane(CUarray *out, CUarray h, unsigned int plane)
{
	CUresult r;

	(void)plane;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = host_array_get(h) ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* ---- mipmapped arrays ------------------------------------------------------------ */

static void level_desc(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int l, CUDA_ARRAY3D_DESCRIPTOR *o)
{
	bool layers = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);

	*o = *d;
	o->Width = at_least1(d->Width >> l);
	o->Height = d->Height ? at_least1(d->Height >> l) : 0;
	if (!layers)
		o->Depth = d->Depth ? at_least1(d->Depth >> l) : 0;
}

static void mipmap_free(struct host_mipmap *m)
{
	for (unsigned int i = 0; i < m->levels; i++)
		if (m->level[i])
			array_free(m->level[i]);
	host_set_del(&mipmaps, m);
	m->magic = 0;
	free(m);
}

CUresult host_cuMipmappedArrayCreate(CUmipmappedArray *out, const CUDA_ARRAY3D_DESCRIPTOR *d,
				     unsigned int levels)
{
	struct host_mipmap *m;
	struct host_ctx *ctx;
	CUresult r;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = check_desc(d)))
		return r;
	levels = vgpu_mipmap_levels(d->Width, d->Height, d->Depth, d->Flags, levels);
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->magic = MIPMAP_MAGIC;
	m->d = *d;
	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&ctx);
	if (!r && host_set_add(&mipmaps, m))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r) {
		pthread_mutex_unlock(&host.lock);
		free(m);
		return r;
	}
	m->ctx = ctx;
	for (unsigned int i = 0; i < levels && !r; i++) {
		CUDA_ARRAY3D_DESCRIPTOR ld;

		level_desc(d, i, &ld);
		r = array_new(ctx, &ld, m, &m->level[i]);
		m->levels = i + 1;
	}
	if (r)
		mipmap_free(m);
	pthread_mutex_unlock(&host.lock);
	if (!r)
		*out = (CUmipmappedArray)m;
	return r;
}

CUresult host_cuMipmappedArrayGetLevel(CUarray *out, CUmipmappedArray h, unsigned int level)
{
	struct host_mipmap *m;
	CUresult r = CUDA_SUCCESS;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	m = mipmap_get(h);
	if (!m)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (level >= m->levels)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*out = (CUarray)m->level[level];
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	struct host_mipmap *m;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&host.lock);
	m = mipmap_get(h);
	if (!m) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		pthread_rwlock_wrlock(&host.map);
		mipmap_free(m);
		pthread_rwlock_unlock(&host.map);
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req,
						    CUmipmappedArray h, CUdevice dev)
{
	struct host_mipmap *m;
	CUresult r = CUDA_SUCCESS;

	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!req)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	m = mipmap_get(h);
	if (!m) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		*req = (CUDA_ARRAY_MEMORY_REQUIREMENTS){ .alignment = 512 };
		for (unsigned int i = 0; i < m->levels; i++)
			req->size += m->level[i]->bytes;
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuMipmappedArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES *p,
						  CUmipmappedArray h)
{
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = mipmap_get(h) ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* Everything a context made goes with it; under host.lock. */
static void drop_array(void *p, void *ctx)
{
	struct host_array *a = p;

	if (a->ctx == ctx && !a->mm)
		array_free(a);
}

static void drop_mipmap(void *p, void *ctx)
{
	struct host_mipmap *m = p;

	if (m->ctx == ctx)
		mipmap_free(m);
}

void host_array_release_ctx(struct host_ctx *ctx)
{
	host_set_each(&mipmaps, drop_mipmap, ctx);
	host_set_each(&arrays, drop_array, ctx);
}

/* ---- 3D copies ----------------------------------------------------------------- */

/* One end of a copy: its first byte, and the strides between rows and slices. */
struct cend {
	uint8_t *p;
	size_t pitch, slice;
	unsigned int acc;	/* emulated memory to check, or 0 */
};

static CUresult end_of(CUmemorytype t, const void *host_p, CUdeviceptr dev, CUarray arr,
		       size_t x, size_t y, size_t z, size_t lod, size_t pitch, size_t height,
		       const CUDA_MEMCPY3D *c, unsigned int acc, struct cend *e)
{
	uint64_t base, off;

	if (lod)
		return CUDA_ERROR_INVALID_VALUE;
	if (t == CU_MEMORYTYPE_ARRAY) {
		struct host_array *a = host_array_get(arr);

		if (!a)
			return CUDA_ERROR_INVALID_HANDLE;
		if (x > a->row || c->WidthInBytes > a->row - x || y > a->rows ||
		    c->Height > a->rows - y || z > a->slices || c->Depth > a->slices - z)
			return CUDA_ERROR_INVALID_VALUE;
		e->p = a->data + z * a->slice + y * a->row + x;
		e->pitch = a->row;
		e->slice = a->slice;
		e->acc = 0;
		return CUDA_SUCCESS;
	}
	if (t == CU_MEMORYTYPE_HOST) {
		base = (uintptr_t)host_p;
		e->acc = 0;
	} else if (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED) {
		base = dev;
		e->acc = acc;
	} else {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!base || (c->Height > 1 || c->Depth > 1 ? pitch < c->WidthInBytes : 0) ||
	    (c->Depth > 1 && height < c->Height))
		return CUDA_ERROR_INVALID_VALUE;
	if (__builtin_mul_overflow(z, height, &off) || __builtin_add_overflow(off, y, &off) ||
	    __builtin_mul_overflow(off, pitch, &off) || __builtin_add_overflow(off, x, &off) ||
	    __builtin_add_overflow(base, off, &base) ||
	    __builtin_mul_overflow(pitch, height, &e->slice))
		return CUDA_ERROR_INVALID_VALUE;
	e->p = (uint8_t *)(uintptr_t)base;
	e->pitch = pitch;
	return CUDA_SUCCESS;
}

/* Every row of every slice in emulated memory allowing e->acc; under host.map. */
static int end_ok(const struct cend *e, const CUDA_MEMCPY3D *c)
{
	uint64_t span;

	if (!e->acc)
		return 1;
	if (__builtin_mul_overflow(e->slice, c->Depth - 1, &span) ||
	    __builtin_add_overflow(span, (uint64_t)e->pitch * (c->Height - 1), &span) ||
	    __builtin_add_overflow(span, c->WidthInBytes, &span) ||
	    (uintptr_t)e->p + span < (uintptr_t)e->p)
		return 0;
	if (host_range_ok((uintptr_t)e->p, span, e->acc))
		return 1;
	for (size_t z = 0; z < c->Depth; z++)
		for (size_t y = 0; y < c->Height; y++)
			if (!host_range_ok((uintptr_t)(e->p + z * e->slice + y * e->pitch),
					   c->WidthInBytes, e->acc))
				return 0;
	return 1;
}

CUresult host_cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *c, CUstream s)
{
	struct host_ctx *ctx;
	struct cend src, dst;
	CUresult r;

	if (!c || c->reserved0 || c->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	r = host_stream_ctx(s, &ctx);
	if (!r)
		r = end_of(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes,
			   c->srcY, c->srcZ, c->srcLOD, c->srcPitch, c->srcHeight, c, HOST_READ,
			   &src);
	if (!r)
		r = end_of(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes,
			   c->dstY, c->dstZ, c->dstLOD, c->dstPitch, c->dstHeight, c, HOST_WRITE,
			   &dst);
	if (r || !c->WidthInBytes || !c->Height || !c->Depth) {
		pthread_mutex_unlock(&host.lock);
		return r;
	}
	pthread_rwlock_rdlock(&host.map);
	if (!end_ok(&src, c) || !end_ok(&dst, c))
		r = CUDA_ERROR_INVALID_VALUE;
	for (size_t z = 0; z < c->Depth && !r; z++)
		for (size_t y = 0; y < c->Height; y++)
			memmove(dst.p + z * dst.slice + y * dst.pitch,
				src.p + z * src.slice + y * src.pitch, c->WidthInBytes);
	pthread_rwlock_unlock(&host.map);
	pthread_mutex_unlock(&host.lock);
	return r;
}
