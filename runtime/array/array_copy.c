// SPDX-License-Identifier: MIT
/*
 * Copies with a CUDA array at either end: cuMemcpy2D/3D (and their async
 * and peer forms, handed over by copy.c) and cuMemcpyAtoA/AtoD/AtoH/DtoA/
 * HtoA. Each becomes VGPU_OP_ARRAY_COPY entries: arrays by id, the other
 * end an address the worker reaches (device memory, the pinned pool).
 * Pageable host memory is staged through a pinned block of the pool, in
 * pieces of whole slices, whole rows, or parts of a row; such copies are
 * synchronous for the host buffer, as CUDA makes pageable copies. The
 * rest is posted when the program asked for an asynchronous copy.
 *
 * The 1D forms address an array as its bytes in order (rows, then slices):
 * a range is cut into a partial row, whole rows, and a partial row.
 */
#include <pthread.h>
#include <string.h>

#include "array.h"
#include "calls_hand_gen.h"
#include "driver.h"
#include "init.h"
#include "log.h"
#include "memory.h"
#include "vgpu/array_format.h"

#define BOUNCE_SIZE	(4u << 20)

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Where the copy runs. */
struct run {
	struct vgpu_session *s;
	uint32_t ctx, stream;
	bool async;
};

/* A copy's extent: bytes, rows, slices. */
struct shape3 {
	uint64_t w, h, d;
};

/* One end: on the wire, and for pageable memory the program's address. */
struct aend {
	struct vgpu_copy_end w;
	uint8_t *host;		/* pageable: first byte; NULL: w says it all */
};

static CUresult begin(struct run *r, CUstream h, bool ptds, bool async)
{
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_session(&r->s);

	if (!rc)
		rc = vgpu_stream_resolve(h, ptds, &ctx, &r->stream);
	if (rc)
		return rc;
	r->ctx = ctx->id;
	r->async = async;
	return CUDA_SUCCESS;
}

/* @sync: a piece staged through the pinned block, which is reused at once. */
static CUresult issue(const struct run *r, const struct vgpu_array_copy *c, bool sync)
{
	struct vgpu_req q = {
		.sqe = { .opcode = VGPU_OP_ARRAY_COPY, .ctx = r->ctx, .stream = r->stream,
			 .arg = { sync ? VGPU_ARRAY_COPY_STAGED : 0 } },
		.payload = c, .payload_len = sizeof(*c),
	};

	return r->async && !sync ? vgpu_post(&q) : vgpu_call(&q);
}

/* ---- the pinned block --------------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	uint64_t addr;
	bool tried;
} bounce = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The block, held until bounce_put; 0 (not held) when the pool has no room. */
static uint64_t bounce_get(const struct run *r)
{
	struct vgpu_cqe c = { 0 };

	pthread_mutex_lock(&bounce.lock);
	if (!bounce.tried) {
		bounce.tried = true;
		if (!vgpu_call5(VGPU_OP_HOST_ALLOC, r->ctx, 0, BOUNCE_SIZE, 0, 0, 0, 0, &c) &&
		    vgpu_is_pool(r->s, c.val[0], BOUNCE_SIZE))
			bounce.addr = c.val[0];
		else
			vlog_warn("no pinned block for array copies of pageable memory");
	}
	if (!bounce.addr)
		pthread_mutex_unlock(&bounce.lock);
	return bounce.addr;
}

static void bounce_put(void)
{
	pthread_mutex_unlock(&bounce.lock);
}

/* ---- ends --------------------------------------------------------------------- */

static CUresult array_end(CUarray h, size_t x, size_t y, size_t z, size_t lod, struct aend *e)
{
	struct vgpu_array *a;
	CUresult rc = vgpu_array_resolve(h, &a);

	if (rc)
		return rc;
	if (lod)
		return CUDA_ERROR_INVALID_VALUE;	/* "must be zero" */
	e->w = (struct vgpu_copy_end){ .kind = VGPU_COPY_END_ARRAY, .ref = a->id,
				       .x = x, .y = y, .z = z };
	e->host = NULL;
	return CUDA_SUCCESS;
}

/*
 * An address end: device or pool memory goes as it is; anything else is
 * the program's pageable memory, rebased to its first byte for staging.
 */
static CUresult addr_end(const struct run *r, CUmemorytype t, const void *host, CUdeviceptr dev,
			 size_t x, size_t y, size_t z, size_t pitch, size_t height,
			 const CUDA_MEMCPY3D *c, struct aend *e)
{
	uint64_t base, first, span, t1, t2;
	enum vgpu_mem_kind k;

	if (t == CU_MEMORYTYPE_HOST)
		base = (uintptr_t)host;
	else if (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED)
		base = dev;
	else
		return CUDA_ERROR_INVALID_VALUE;
	if (!base || ((c->Height > 1 || c->Depth > 1) && pitch < c->WidthInBytes) ||
	    (c->Depth > 1 && height < c->Height))
		return CUDA_ERROR_INVALID_VALUE;
	if (__builtin_mul_overflow(z, height, &t1) || __builtin_add_overflow(t1, y, &t1) ||
	    __builtin_mul_overflow(t1, pitch, &t1) || __builtin_add_overflow(t1, x, &t1) ||
	    __builtin_add_overflow(base, t1, &first) ||
	    __builtin_mul_overflow((uint64_t)pitch, height, &t2) ||
	    __builtin_mul_overflow(t2, c->Depth - 1, &span) ||
	    __builtin_mul_overflow((uint64_t)pitch, c->Height - 1, &t2) ||
	    __builtin_add_overflow(span, t2, &span) ||
	    __builtin_add_overflow(span, c->WidthInBytes, &span) ||
	    first + span < first)
		return CUDA_ERROR_INVALID_VALUE;
	k = vgpu_mem_classify(r->s, first, span, NULL);
	if (k == VGPU_MEM_DEVICE || k == VGPU_MEM_POOL) {
		e->w = (struct vgpu_copy_end){ .kind = VGPU_COPY_END_ADDR, .ref = base, .x = x,
					       .y = y, .z = z, .pitch = pitch, .height = height };
		e->host = NULL;
	} else {
		e->w = (struct vgpu_copy_end){ .kind = VGPU_COPY_END_ADDR, .pitch = pitch,
					       .height = height };
		e->host = (uint8_t *)(uintptr_t)first;
	}
	return CUDA_SUCCESS;
}

static CUresult end_of(const struct run *r, CUmemorytype t, const void *host, CUdeviceptr dev,
		       CUarray arr, size_t x, size_t y, size_t z, size_t lod, size_t pitch,
		       size_t height, const CUDA_MEMCPY3D *c, struct aend *e)
{
	if (t == CU_MEMORYTYPE_ARRAY)
		return array_end(arr, x, y, z, lod, e);
	return addr_end(r, t, host, dev, x, y, z, pitch, height, c, e);
}

/* ---- staging ------------------------------------------------------------------ */

/* Rows between the program's memory @h (pitch, slice stride) and the
 * block (packed), @up: towards the block. */
static void pack(uint8_t *blk, uint8_t *h, size_t pitch, size_t slice, uint64_t w, uint64_t rows,
		 uint64_t slices, bool up)
{
	for (uint64_t s = 0; s < slices; s++)
		for (uint64_t y = 0; y < rows; y++) {
			uint8_t *p = h + s * slice + y * pitch, *b = blk + (s * rows + y) * w;

			if (up)
				memcpy(b, p, w);
			else
				memcpy(p, b, w);
		}
}

/*
 * One piece: @w bytes x @rows x @slices of the array end @a starting at
 * (dx, dy, dz) from its origin, and of the pageable memory @h.
 */
static CUresult piece(const struct run *r, uint64_t blk, const struct aend *a, uint8_t *h,
		      size_t pitch, size_t slice, uint64_t dx, uint64_t dy, uint64_t dz, uint64_t w,
		      uint64_t rows, uint64_t slices, bool up)
{
	struct vgpu_array_copy c = { .width = w, .height = rows, .depth = slices };
	struct vgpu_copy_end b = { .kind = VGPU_COPY_END_ADDR, .ref = blk, .pitch = w,
				   .height = rows };
	struct vgpu_copy_end ae = a->w;
	CUresult rc;

	ae.x += dx;
	ae.y += dy;
	ae.z += dz;
	c.src = up ? b : ae;
	c.dst = up ? ae : b;
	if (up)
		pack((uint8_t *)(uintptr_t)blk, h, pitch, slice, w, rows, slices, true);
	rc = issue(r, &c, true);
	if (!rc && !up)
		pack((uint8_t *)(uintptr_t)blk, h, pitch, slice, w, rows, slices, false);
	return rc;
}

/* Between an array end and pageable memory, through the pinned block. */
static CUresult staged(const struct run *r, const struct aend *a, const struct aend *h,
		       const struct shape3 *sh, bool up)
{
	size_t pitch = h->w.pitch, slice = h->w.pitch * h->w.height;
	uint64_t blk = bounce_get(r), w = sh->w, n;
	CUresult rc = CUDA_SUCCESS;

	if (!blk)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (w * sh->h <= BOUNCE_SIZE) {			/* whole slices */
		for (uint64_t z = 0; z < sh->d && !rc; z += n) {
			n = MIN(sh->d - z, BOUNCE_SIZE / (w * sh->h));
			rc = piece(r, blk, a, h->host + z * slice, pitch, slice, 0, 0, z, w, sh->h,
				   n, up);
		}
	} else if (w <= BOUNCE_SIZE) {			/* whole rows */
		for (uint64_t z = 0; z < sh->d && !rc; z++)
			for (uint64_t y = 0; y < sh->h && !rc; y += n) {
				n = MIN(sh->h - y, BOUNCE_SIZE / w);
				rc = piece(r, blk, a, h->host + z * slice + y * pitch, pitch, slice,
					   0, y, z, w, n, 1, up);
			}
	} else {					/* parts of rows */
		for (uint64_t z = 0; z < sh->d && !rc; z++)
			for (uint64_t y = 0; y < sh->h && !rc; y++)
				for (uint64_t x = 0; x < w && !rc; x += n) {
					n = MIN(w - x, BOUNCE_SIZE);
					rc = piece(r, blk, a, h->host + z * slice + y * pitch + x,
						   pitch, slice, x, y, z, n, 1, 1, up);
				}
	}
	bounce_put();
	return rc;
}

/* ---- the copies ---------------------------------------------------------------- */

CUresult vgpu_array_memcpy3d(const CUDA_MEMCPY3D *p, CUstream hs, bool ptds, bool async)
{
	struct aend s, d;
	struct run r;
	CUresult rc;

	ENTER();
	if (!p || p->reserved0 || p->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	rc = begin(&r, hs, ptds, async);
	if (!rc)
		rc = end_of(&r, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
			    p->srcXInBytes, p->srcY, p->srcZ, p->srcLOD, p->srcPitch, p->srcHeight,
			    p, &s);
	if (!rc)
		rc = end_of(&r, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
			    p->dstXInBytes, p->dstY, p->dstZ, p->dstLOD, p->dstPitch, p->dstHeight,
			    p, &d);
	if (rc || !p->WidthInBytes || !p->Height || !p->Depth)
		return rc;
	if (s.host && d.host)
		return CUDA_ERROR_INVALID_VALUE;	/* an array is at one end at least */
	if (s.host || d.host) {
		struct shape3 sh = { p->WidthInBytes, p->Height, p->Depth };

		return s.host ? staged(&r, &d, &s, &sh, true) : staged(&r, &s, &d, &sh, false);
	}
	{
		struct vgpu_array_copy c = { .src = s.w, .dst = d.w, .width = p->WidthInBytes,
					     .height = p->Height, .depth = p->Depth };

		return issue(&r, &c, false);
	}
}

CUresult vgpu_array_memcpy2d(const CUDA_MEMCPY2D *p, CUstream h, bool ptds, bool async)
{
	CUDA_MEMCPY3D c;

	ENTER();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	c = (CUDA_MEMCPY3D){
		.srcXInBytes = p->srcXInBytes, .srcY = p->srcY, .srcMemoryType = p->srcMemoryType,
		.srcHost = p->srcHost, .srcDevice = p->srcDevice, .srcArray = p->srcArray,
		.srcPitch = p->srcPitch,
		.dstXInBytes = p->dstXInBytes, .dstY = p->dstY, .dstMemoryType = p->dstMemoryType,
		.dstHost = p->dstHost, .dstDevice = p->dstDevice, .dstArray = p->dstArray,
		.dstPitch = p->dstPitch,
		.WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = 1,
	};
	/* One slice: the slice height is never used, but must pass the checks. */
	c.srcHeight = p->Height;
	c.dstHeight = p->Height;
	return vgpu_array_memcpy3d(&c, h, ptds, async);
}

/* ---- the 1D forms --------------------------------------------------------------- */

/* One side of a 1D copy: an array (offset counted in its bytes in order),
 * or memory. */
struct lin {
	CUmemorytype t;
	CUarray a;
	const void *host;
	CUdeviceptr dev;
	uint64_t off;
};

/* The array's row and slice sizes in bytes. */
static CUresult geometry(CUarray h, uint64_t *row, uint64_t *rows, uint64_t *slices)
{
	struct vgpu_array *a;
	CUresult rc = vgpu_array_resolve(h, &a);
	uint32_t e;

	if (rc)
		return rc;
	e = vgpu_array_elem_bytes(a->desc.Format, a->desc.NumChannels);
	if (!e)
		return CUDA_ERROR_NOT_SUPPORTED;	/* a format not laid out element-wise */
	*row = a->desc.Width * e;
	*rows = a->desc.Height ? a->desc.Height : 1;
	*slices = a->desc.Depth ? a->desc.Depth : 1;
	return CUDA_SUCCESS;
}

static void lin_set(const struct lin *l, uint64_t pos, uint64_t row, uint64_t rows, bool dst,
		    CUDA_MEMCPY3D *c)
{
	uint64_t x = 0, y = 0, z = 0;

	if (l->t == CU_MEMORYTYPE_ARRAY) {
		x = pos % row;
		y = pos / row % rows;
		z = pos / row / rows;
	}
	if (dst) {
		c->dstMemoryType = l->t;
		c->dstArray = l->a;
		c->dstHost = l->host ? (uint8_t *)l->host + pos : NULL;
		c->dstDevice = l->dev ? l->dev + pos : 0;
		c->dstXInBytes = x;
		c->dstY = y;
		c->dstZ = z;
		c->dstPitch = row;
		c->dstHeight = rows;
	} else {
		c->srcMemoryType = l->t;
		c->srcArray = l->a;
		c->srcHost = l->host ? (const uint8_t *)l->host + pos : NULL;
		c->srcDevice = l->dev ? l->dev + pos : 0;
		c->srcXInBytes = x;
		c->srcY = y;
		c->srcZ = z;
		c->srcPitch = row;
		c->srcHeight = rows;
	}
}

/*
 * @n bytes from @s to @d, one of them (or both) an array. With two arrays
 * their geometries must agree, as the pieces are cut by one of them.
 */
static CUresult linear(const struct lin *d, const struct lin *s, uint64_t n, CUstream h,
		       bool ptds, bool async)
{
	const struct lin *a = d->t == CU_MEMORYTYPE_ARRAY ? d : s;
	uint64_t row, rows, slices, total, done = 0;
	CUresult rc = geometry(a->a, &row, &rows, &slices);

	if (rc)
		return rc;
	total = row * rows * slices;
	if (d->t == CU_MEMORYTYPE_ARRAY && s->t == CU_MEMORYTYPE_ARRAY) {
		uint64_t r2, rows2, slices2;

		rc = geometry(s->a, &r2, &rows2, &slices2);
		if (rc)
			return rc;
		/* Pieces cut so that neither crosses a row of its array. */
		if (s->off > r2 * rows2 * slices2 || n > r2 * rows2 * slices2 - s->off)
			return CUDA_ERROR_INVALID_VALUE;
		if (d->off > total || n > total - d->off)
			return CUDA_ERROR_INVALID_VALUE;
		while (done < n && !rc) {
			uint64_t k = MIN(n - done, MIN(row - (d->off + done) % row,
						       r2 - (s->off + done) % r2));
			CUDA_MEMCPY3D c = { .WidthInBytes = k, .Height = 1, .Depth = 1 };

			lin_set(d, d->off + done, row, rows, true, &c);
			lin_set(s, s->off + done, r2, rows2, false, &c);
			rc = vgpu_array_memcpy3d(&c, h, ptds, async);
			done += k;
		}
		return rc;
	}
	if (a->off > total || n > total - a->off)
		return CUDA_ERROR_INVALID_VALUE;
	while (done < n && !rc) {
		uint64_t pos = a->off + done, x = pos % row, k;
		CUDA_MEMCPY3D c = { .Depth = 1 };

		if (x || n - done < row) {
			k = MIN(n - done, row - x);		/* part of a row */
			c.WidthInBytes = k;
			c.Height = 1;
		} else {
			uint64_t y = pos / row % rows;		/* whole rows of one slice */

			c.Height = MIN((n - done) / row, rows - y);
			c.WidthInBytes = row;
			k = c.Height * row;
		}
		lin_set(d, d == a ? pos : d->off + done, row, rows, true, &c);
		lin_set(s, s == a ? pos : s->off + done, row, rows, false, &c);
		/* The memory side is packed: its pitch is the row. */
		rc = vgpu_array_memcpy3d(&c, h, ptds, async);
		done += k;
	}
	return rc;
}

#define ARR(h, o)	((struct lin){ .t = CU_MEMORYTYPE_ARRAY, .a = (h), .off = (o) })
#define HOST(p)		((struct lin){ .t = CU_MEMORYTYPE_HOST, .host = (p) })
#define DEV(p)		((struct lin){ .t = CU_MEMORYTYPE_DEVICE, .dev = (p) })

static CUresult lin1(struct lin d, struct lin s, uint64_t n, CUstream h, bool ptds, bool async)
{
	ENTER();
	if (!n)
		return CUDA_SUCCESS;
	if ((d.t == CU_MEMORYTYPE_HOST && !d.host) || (s.t == CU_MEMORYTYPE_HOST && !s.host) ||
	    (d.t == CU_MEMORYTYPE_DEVICE && !d.dev) || (s.t == CU_MEMORYTYPE_DEVICE && !s.dev))
		return CUDA_ERROR_INVALID_VALUE;
	return linear(&d, &s, n, h, ptds, async);
}

CUresult vgpu_hand_cuMemcpyAtoA(bool ptds, CUarray dst, size_t doff, CUarray src, size_t soff,
				size_t n)
{
	return lin1(ARR(dst, doff), ARR(src, soff), n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyAtoD(bool ptds, CUdeviceptr dst, CUarray src, size_t off, size_t n)
{
	return lin1(DEV(dst), ARR(src, off), n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyAtoH(bool ptds, void *dst, CUarray src, size_t off, size_t n)
{
	return lin1(HOST(dst), ARR(src, off), n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyAtoHAsync(bool ptds, void *dst, CUarray src, size_t off, size_t n,
				     CUstream h)
{
	return lin1(HOST(dst), ARR(src, off), n, h, ptds, true);
}

CUresult vgpu_hand_cuMemcpyDtoA(bool ptds, CUarray dst, size_t off, CUdeviceptr src, size_t n)
{
	return lin1(ARR(dst, off), DEV(src), n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyHtoA(bool ptds, CUarray dst, size_t off, const void *src, size_t n)
{
	return lin1(ARR(dst, off), HOST(src), n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyHtoAAsync(bool ptds, CUarray dst, size_t off, const void *src,
				     size_t n, CUstream h)
{
	return lin1(ARR(dst, off), HOST(src), n, h, ptds, true);
}

/* The CUDA 2.x forms: 32-bit offsets, counts and device pointers. */
VGPU_EXPORT CUresult cuMemcpyAtoA(CUarray dst, unsigned int doff, CUarray src, unsigned int soff,
				  unsigned int n)
{
	return vgpu_hand_cuMemcpyAtoA(false, dst, doff, src, soff, n);
}

VGPU_EXPORT CUresult cuMemcpyAtoD(CUdeviceptr_v1 dst, CUarray src, unsigned int off,
				  unsigned int n)
{
	return vgpu_hand_cuMemcpyAtoD(false, dst, src, off, n);
}

VGPU_EXPORT CUresult cuMemcpyAtoH(void *dst, CUarray src, unsigned int off, unsigned int n)
{
	return vgpu_hand_cuMemcpyAtoH(false, dst, src, off, n);
}

VGPU_EXPORT CUresult cuMemcpyAtoHAsync(void *dst, CUarray src, unsigned int off, unsigned int n,
				       CUstream h)
{
	return vgpu_hand_cuMemcpyAtoHAsync(false, dst, src, off, n, h);
}

VGPU_EXPORT CUresult cuMemcpyDtoA(CUarray dst, unsigned int off, CUdeviceptr_v1 src,
				  unsigned int n)
{
	return vgpu_hand_cuMemcpyDtoA(false, dst, off, src, n);
}

VGPU_EXPORT CUresult cuMemcpyHtoA(CUarray dst, unsigned int off, const void *src, unsigned int n)
{
	return vgpu_hand_cuMemcpyHtoA(false, dst, off, src, n);
}

VGPU_EXPORT CUresult cuMemcpyHtoAAsync(CUarray dst, unsigned int off, const void *src,
				       unsigned int n, CUstream h)
{
	return vgpu_hand_cuMemcpyHtoAAsync(false, dst, off, src, n, h);
}
