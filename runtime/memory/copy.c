// SPDX-License-Identifier: MIT
/*
 * Copies and memsets. The path is chosen by address, not by the entry
 * point's name (with unified addressing, cuMemcpyHtoD may be handed any
 * pointer):
 *   device or pinned pool at both ends  one entry, DMA on the worker
 *                                       (DTOD, HTOD_POOL, DTOH_POOL, 2D)
 *   pageable -> device, <= 64 KiB       MEMCPY_HTOD, the data in the payload
 *   pageable <-> device, >= 256 KiB     MEMCPY_*_PINNED: over /dev/vgpu, the
 *                                       buffer's pages pinned and mapped into
 *                                       the worker (registrations cached,
 *                                       pinreg.c)
 *   pageable -> device, larger          MEMCPY_HTOD_STAGED, staging chunks
 *   device -> pageable, <= reply slot   MEMCPY_DTOH, the answer in the slot
 *   device -> pageable, larger          MEMCPY_DTOH_STAGED, staging chunks
 *   host -> host                        memcpy here, once the stream is idle
 * Registered program memory is pageable here (see memory.c).
 *
 * Synchronous entry points wait for the worker's answer, which comes once
 * the stream has caught up. Asynchronous ones return at once where the
 * program's memory is no longer needed: DMA between pinned and device
 * memory, and small pageable uploads (the data is in the payload ring).
 * The rest is synchronous for the host buffer, as CUDA makes pageable
 * async copies.
 */
#include "calls_hand_gen.h"
#include "memory.h"
#include "array.h"

#include <pthread.h>
#include <string.h>

#include "driver.h"
#include "init.h"
#include "log.h"
#include "pinreg.h"
#include "graph.h"
#include "graph_hostcopy.h"
#include "unsupported.h"

#define SMALL_COPY	(64u << 10)	/* pageable uploads carried in the payload */
#define BULK_PIECE	(1ull << 30)	/* one staged transfer at most */
#define BOUNCE_SIZE	(4u << 20)	/* pinned block that packs pitched rows */

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Where a copy runs: its session, context and stream. */
struct xfer {
	struct vgpu_session *s;
	uint32_t ctx, stream;
	bool async;		/* the program need not wait for it */
};

static CUresult xfer_begin(struct xfer *x, CUstream h, bool ptds, bool async)
{
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_session(&x->s);

	if (!rc)
		rc = vgpu_stream_resolve(h, ptds, &ctx, &x->stream);
	if (rc)
		return rc;
	x->ctx = ctx->id;
	x->async = async;
	return CUDA_SUCCESS;
}

/* An entry that needs no bulk transfer: posted for async copies. */
static CUresult issue(const struct xfer *x, struct vgpu_req *r)
{
	r->sqe.ctx = x->ctx;
	r->sqe.stream = x->stream;
	return x->async ? vgpu_post(r) : vgpu_call(r);
}

static CUresult issue5(const struct xfer *x, uint16_t op, uint64_t a0, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t a4)
{
	struct vgpu_req r = { .sqe = { .opcode = op, .arg = { a0, a1, a2, a3, a4 } } };

	return issue(x, &r);
}

static CUresult stream_idle(const struct xfer *x)
{
	return vgpu_call5(VGPU_OP_STREAM_SYNCHRONIZE, x->ctx, x->stream, 0, 0, 0, 0, 0, NULL);
}

static bool dma_ok(enum vgpu_mem_kind k)
{
	return k == VGPU_MEM_DEVICE || k == VGPU_MEM_POOL;
}

/* ---- one-dimensional copies ---------------------------------------------- */

/* Pageable memory <-> device through a pinned registration: false when the
 * copy must be staged (*rc untouched), else true with the copy's result.
 * Synchronous: the worker answers once the bytes have moved. */
static bool copy_pinned(const struct xfer *x, uint64_t dev, uint8_t *host, uint64_t n, bool up,
			CUresult *rc)
{
	struct vgpu_req r = { .sqe = { .ctx = x->ctx, .stream = x->stream } };
	struct vgpu_pin_use u;

	if (n < VGPU_PINREG_MIN || vgpu_pinreg_get(x->s, (uintptr_t)host, n, !up, &u))
		return false;
	r.sqe.opcode = up ? VGPU_OP_MEMCPY_HTOD_PINNED : VGPU_OP_MEMCPY_DTOH_PINNED;
	r.sqe.arg[0] = up ? dev : u.handle;
	r.sqe.arg[1] = up ? u.handle : u.offset;
	r.sqe.arg[2] = up ? u.offset : dev;
	r.sqe.arg[3] = n;
	*rc = vgpu_call(&r);
	vgpu_pinreg_put(&u);
	return true;
}

/* A copy too large for one entry: through a pinned registration where the
 * host range has one, else staged through the bulk channel in pieces. */
static CUresult copy_bulk(const struct xfer *x, uint64_t dev, uint8_t *host, uint64_t n, bool up)
{
	uint16_t op = up ? VGPU_OP_MEMCPY_HTOD_STAGED : VGPU_OP_MEMCPY_DTOH_STAGED;
	CUresult rc;

	if (copy_pinned(x, dev, host, n, up, &rc))
		return rc;
	for (uint64_t done = 0; done < n;) {
		uint64_t piece = MIN(n - done, BULK_PIECE);
		struct vgpu_req r = {
			.sqe = { .opcode = op, .ctx = x->ctx, .stream = x->stream,
				 .arg = { dev + done, piece } },
		};

		if (up)
			rc = vgpu_call_send(&r, host + done, piece);
		else
			rc = vgpu_call_recv(&r, host + done, piece);
		if (rc)
			return rc;
		done += piece;
	}
	return CUDA_SUCCESS;
}

static CUresult upload(const struct xfer *x, uint64_t dst, const uint8_t *src, uint64_t n)
{
	if (n <= MIN(SMALL_COPY, vgpu_payload_max())) {
		struct vgpu_req r = {
			.sqe = { .opcode = VGPU_OP_MEMCPY_HTOD, .arg = { dst, n } },
			.payload = src,
			.payload_len = (uint32_t)n,
		};

		return issue(x, &r);
	}
	return copy_bulk(x, dst, (uint8_t *)src, n, true);
}

/* Always synchronous: the data lands in the program's buffer. */
static CUresult download(const struct xfer *x, uint8_t *dst, uint64_t src, uint64_t n)
{
	if (n <= x->s->ring.reply_slot_size) {
		struct vgpu_req r = {
			.sqe = { .opcode = VGPU_OP_MEMCPY_DTOH, .ctx = x->ctx,
				 .stream = x->stream, .arg = { src, n } },
			.reply = dst,
			.reply_cap = (uint32_t)n,
		};
		CUresult rc = vgpu_call(&r);

		if (!rc && r.cqe.val[2] != n)
			rc = CUDA_ERROR_UNKNOWN;
		return rc;
	}
	return copy_bulk(x, src, dst, n, false);
}

static CUresult copy_1d(const struct xfer *x, uint64_t dst, uint64_t src, uint64_t n)
{
	enum vgpu_mem_kind dk = vgpu_mem_classify(x->s, dst, n, NULL);
	enum vgpu_mem_kind sk = vgpu_mem_classify(x->s, src, n, NULL);
	CUresult rc;

	if (dma_ok(dk) && dma_ok(sk)) {
		uint16_t op = VGPU_OP_MEMCPY_DTOD;

		if (dk == VGPU_MEM_DEVICE && sk == VGPU_MEM_POOL)
			op = VGPU_OP_MEMCPY_HTOD_POOL;
		else if (dk == VGPU_MEM_POOL && sk == VGPU_MEM_DEVICE)
			op = VGPU_OP_MEMCPY_DTOH_POOL;
		return issue5(x, op, dst, src, n, 0, 0);
	}
	if (dk == VGPU_MEM_DEVICE)
		return upload(x, dst, (const uint8_t *)(uintptr_t)src, n);
	if (sk == VGPU_MEM_DEVICE)
		return download(x, (uint8_t *)(uintptr_t)dst, src, n);
	/* Host to host: CUDA orders it after the stream's earlier work. */
	rc = stream_idle(x);
	if (!rc)
		memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return rc;
}

enum dir { ANY, HTOD, DTOH, DTOD };

/* While a stream of the session captures, an async copy between device
 * memory and the program's pageable memory may have to be recorded as a
 * graph copy node staged through the pinned pool (graph_hostcopy.c). */
static bool captured_pageable(const struct xfer *x, uint64_t dst, uint64_t src, uint64_t n)
{
	enum vgpu_mem_kind dk, sk;

	if (!vgpu_graph_capturing())
		return false;
	dk = vgpu_mem_classify(x->s, dst, n, NULL);
	sk = vgpu_mem_classify(x->s, src, n, NULL);
	return (dk == VGPU_MEM_DEVICE && !dma_ok(sk)) || (sk == VGPU_MEM_DEVICE && !dma_ok(dk));
}

/* The explicit-direction entry points: the "device" ends must be memory the
 * device can reach (device or pinned); the rest follows the addresses. */
static CUresult memcpy_entry(enum dir d, uint64_t dst, uint64_t src, uint64_t n, CUstream h,
			     bool ptds, bool async)
{
	struct xfer x;
	CUresult rc;

	ENTER();
	if (!n)
		return CUDA_SUCCESS;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	rc = xfer_begin(&x, h, ptds, async);
	if (rc)
		return rc;
	if ((d == HTOD || d == DTOD) && !dma_ok(vgpu_mem_classify(x.s, dst, 1, NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((d == DTOH || d == DTOD) && !dma_ok(vgpu_mem_classify(x.s, src, 1, NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if (dst + n < dst || src + n < src)
		return CUDA_ERROR_INVALID_VALUE;
	if (async && captured_pageable(&x, dst, src, n)) {	/* into the capture */
		bool done;

		rc = vgpu_graph_capture_staged(h, ptds, dst, src, n, &done);
		if (done)
			return rc;
	}
	return copy_1d(&x, dst, src, n);
}

#define HP(p) ((uint64_t)(uintptr_t)(p))

CUresult vgpu_hand_cuMemcpyHtoD(bool ptds, CUdeviceptr dst, const void *src, size_t n)
{
	return memcpy_entry(HTOD, dst, HP(src), n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyDtoH(bool ptds, void *dst, CUdeviceptr src, size_t n)
{
	return memcpy_entry(DTOH, HP(dst), src, n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyDtoD(bool ptds, CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return memcpy_entry(DTOD, dst, src, n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyHtoDAsync(bool ptds, CUdeviceptr dst, const void *src, size_t n,
				     CUstream h)
{
	return memcpy_entry(HTOD, dst, HP(src), n, h, ptds, true);
}

CUresult vgpu_hand_cuMemcpyDtoHAsync(bool ptds, void *dst, CUdeviceptr src, size_t n, CUstream h)
{
	return memcpy_entry(DTOH, HP(dst), src, n, h, ptds, true);
}

CUresult vgpu_hand_cuMemcpyDtoDAsync(bool ptds, CUdeviceptr dst, CUdeviceptr src, size_t n,
				     CUstream h)
{
	return memcpy_entry(DTOD, dst, src, n, h, ptds, true);
}

CUresult vgpu_hand_cuMemcpy(bool ptds, CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return memcpy_entry(ANY, dst, src, n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyAsync(bool ptds, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
	return memcpy_entry(ANY, dst, src, n, h, ptds, true);
}

/* The 32-bit legacy forms. */
VGPU_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr_v1 dst, const void *src, unsigned int n)
{
	return memcpy_entry(HTOD, dst, HP(src), n, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr_v1 src, unsigned int n)
{
	return memcpy_entry(DTOH, HP(dst), src, n, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n)
{
	return memcpy_entry(DTOD, dst, src, n, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dst, const void *src, unsigned int n,
				       CUstream h)
{
	return memcpy_entry(HTOD, dst, HP(src), n, h, false, true);
}

VGPU_EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr_v1 src, unsigned int n, CUstream h)
{
	return memcpy_entry(DTOH, HP(dst), src, n, h, false, true);
}

VGPU_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n,
				       CUstream h)
{
	return memcpy_entry(DTOD, dst, src, n, h, false, true);
}

/* ---- peers: one device per context here, so only the same device --------- */

static CUresult peer_check(CUcontext dc, CUcontext sc)
{
	struct vgpu_ctx *d, *s;
	CUresult rc = vgpu_ctx_resolve(dc, &d);

	if (!rc)
		rc = vgpu_ctx_resolve(sc, &s);
	if (rc)
		return rc;
	if (d->dev != s->dev)
		return vgpu_unsupported("cuMemcpyPeer between devices");
	return CUDA_SUCCESS;
}

static CUresult peer_entry(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc,
			   size_t n, CUstream h, bool ptds, bool async)
{
	CUresult rc;

	ENTER();
	if (!dc || !sc)
		return CUDA_ERROR_INVALID_CONTEXT;
	rc = peer_check(dc, sc);
	return rc ? rc : memcpy_entry(DTOD, dst, src, n, h, ptds, async);
}

CUresult vgpu_hand_cuMemcpyPeer(bool ptds, CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
				CUcontext sc, size_t n)
{
	return peer_entry(dst, dc, src, sc, n, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpyPeerAsync(bool ptds, CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
				     CUcontext sc, size_t n, CUstream h)
{
	return peer_entry(dst, dc, src, sc, n, h, ptds, true);
}

/* ---- pitched copies ---------------------------------------------------------- */

/* One end of a 2D/3D copy, reduced to an address. */
struct end {
	uint64_t addr;		/* first byte copied */
	uint64_t pitch;		/* bytes between rows */
	uint64_t height;	/* rows between slices (3D) */
	enum vgpu_mem_kind kind;
};

/* A CUDA_MEMCPY3D reduced to addresses (2D copies have depth 1). */
struct shape {
	uint64_t w, h, d;
};

static CUresult end_of(CUmemorytype t, const void *host, CUdeviceptr dev, uint64_t x, uint64_t y,
		       uint64_t z, uint64_t pitch, uint64_t height, struct end *e)
{
	uint64_t base;

	switch ((int)t) {
	case CU_MEMORYTYPE_HOST:
		base = HP(host);
		break;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED:
		base = dev;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!base)
		return CUDA_ERROR_INVALID_VALUE;
	e->addr = base + (z * height + y) * pitch + x;
	e->pitch = pitch;
	e->height = height;
	return CUDA_SUCCESS;
}

/* Bytes a pitched end spans, and its kind. */
static bool end_check(const struct xfer *x, struct end *e, uint64_t w, uint64_t h)
{
	uint64_t span;

	if (h > 1 && e->pitch < w)
		return false;
	if (h > 1 && e->pitch > (UINT64_MAX - w) / (h - 1))
		return false;
	span = (h - 1) * e->pitch + w;
	if (e->addr + span < e->addr)
		return false;
	e->kind = vgpu_mem_classify(x->s, e->addr, span, NULL);
	return true;
}

static void rows_local(uint64_t dst, uint64_t dpitch, uint64_t src, uint64_t spitch, uint64_t w,
		       uint64_t h)
{
	for (uint64_t i = 0; i < h; i++)
		memmove((void *)(uintptr_t)(dst + i * dpitch),
			(const void *)(uintptr_t)(src + i * spitch), w);
}

/*
 * A pinned block that packs the rows of a pitched copy with one pageable
 * end, so the worker moves them with one 2D copy instead of one call per
 * row. One copy at a time uses it; 0 when the pool has no room.
 */
static struct {
	pthread_mutex_t lock;
	uint64_t addr;
	bool tried;
} bounce = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t bounce_get(const struct xfer *x)
{
	struct vgpu_cqe c = { 0 };

	pthread_mutex_lock(&bounce.lock);
	if (!bounce.tried) {
		bounce.tried = true;
		if (!vgpu_call5(VGPU_OP_HOST_ALLOC, x->ctx, 0, BOUNCE_SIZE, 0, 0, 0, 0, &c) &&
		    vgpu_is_pool(x->s, c.val[0], BOUNCE_SIZE))
			bounce.addr = c.val[0];
		else
			vlog_debug("no pinned bounce block: pitched copies go row by row");
	}
	if (!bounce.addr)
		pthread_mutex_unlock(&bounce.lock);
	return bounce.addr;
}

static void bounce_put(void)
{
	pthread_mutex_unlock(&bounce.lock);
}

static CUresult copy2d_dma(const struct xfer *x, const struct end *d, const struct end *s,
			   uint64_t w, uint64_t h)
{
	struct vgpu_copy2d c = {
		.src = s->addr, .dst = d->addr, .src_pitch = h > 1 ? s->pitch : w,
		.dst_pitch = h > 1 ? d->pitch : w, .width = w, .height = h,
	};
	struct vgpu_req r = {
		.sqe = { .opcode = VGPU_OP_MEMCPY_2D },
		.payload = &c,
		.payload_len = sizeof(c),
	};

	return issue(x, &r);
}

/* Pitched rows between pageable memory and memory the device reaches. */
static CUresult copy2d_staged(const struct xfer *x, const struct end *d, const struct end *s,
			      uint64_t w, uint64_t h)
{
	bool up = dma_ok(d->kind);
	struct xfer sync = *x;
	uint64_t b = w <= BOUNCE_SIZE ? bounce_get(x) : 0;
	CUresult rc = CUDA_SUCCESS;

	sync.async = false;	/* the bounce block is reused at once */
	if (!b) {
		for (uint64_t i = 0; i < h && !rc; i++)
			rc = copy_1d(up ? x : &sync, d->addr + i * d->pitch, s->addr + i * s->pitch, w);
		return rc;
	}
	for (uint64_t done = 0, n; done < h && !rc; done += n) {
		struct end bd = { b, w, 0, VGPU_MEM_POOL }, sd, dd;

		n = MIN(h - done, BOUNCE_SIZE / w);
		sd = *s;
		sd.addr += done * s->pitch;
		dd = *d;
		dd.addr += done * d->pitch;
		if (up) {
			rows_local(b, w, sd.addr, sd.pitch, w, n);
			rc = copy2d_dma(&sync, &dd, &bd, w, n);
		} else {
			rc = copy2d_dma(&sync, &bd, &sd, w, n);
			if (!rc)
				rows_local(dd.addr, dd.pitch, b, w, w, n);
		}
	}
	bounce_put();
	return rc;
}

static CUresult copy_2d(const struct xfer *x, struct end *d, struct end *s, uint64_t w, uint64_t h)
{
	CUresult rc;

	if (!end_check(x, d, w, h) || !end_check(x, s, w, h))
		return CUDA_ERROR_INVALID_VALUE;
	if (h == 1 || (d->pitch == w && s->pitch == w))
		return copy_1d(x, d->addr, s->addr, w * h);
	if (dma_ok(d->kind) && dma_ok(s->kind))
		return copy2d_dma(x, d, s, w, h);
	if (dma_ok(d->kind) || dma_ok(s->kind))
		return copy2d_staged(x, d, s, w, h);
	rc = stream_idle(x);
	if (!rc)
		rows_local(d->addr, d->pitch, s->addr, s->pitch, w, h);
	return rc;
}

/* Slices of a 3D copy; one 2D copy when the slices are back to back. */
static CUresult copy_3d(const struct xfer *x, struct end *d, struct end *s, const struct shape *sh)
{
	CUresult rc = CUDA_SUCCESS;

	if (!sh->w || !sh->h || !sh->d)
		return CUDA_SUCCESS;
	if (sh->d == 1)
		return copy_2d(x, d, s, sh->w, sh->h);
	if (d->height < sh->h || s->height < sh->h)
		return CUDA_ERROR_INVALID_VALUE;
	if (d->height == sh->h && s->height == sh->h && sh->h <= UINT64_MAX / sh->d)
		return copy_2d(x, d, s, sh->w, sh->h * sh->d);
	for (uint64_t z = 0; z < sh->d && !rc; z++) {
		struct end dz = *d, sz = *s;

		dz.addr += z * d->height * d->pitch;
		sz.addr += z * s->height * s->pitch;
		rc = copy_2d(x, &dz, &sz, sh->w, sh->h);
	}
	return rc;
}

static CUresult run_3d(struct end *d, struct end *s, const struct shape *sh, CUstream h, bool ptds,
		       bool async)
{
	struct xfer x;
	CUresult rc = xfer_begin(&x, h, ptds, async);

	return rc ? rc : copy_3d(&x, d, s, sh);
}

static CUresult memcpy2d_entry(const CUDA_MEMCPY2D *p, CUstream h, bool ptds, bool async)
{
	struct end d, s;
	struct shape sh;
	CUresult rc;

	ENTER();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return vgpu_array_memcpy2d(p, h, ptds, async);	/* runtime/array/ */
	rc = end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, 0,
		    p->srcPitch, 0, &s);
	if (!rc)
		rc = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, 0,
			    p->dstPitch, 0, &d);
	if (rc)
		return rc;
	sh = (struct shape){ p->WidthInBytes, p->Height, 1 };
	return run_3d(&d, &s, &sh, h, ptds, async);
}

static CUresult memcpy3d_entry(const CUDA_MEMCPY3D *p, CUstream h, bool ptds, bool async)
{
	struct end d, s;
	struct shape sh;
	CUresult rc;

	ENTER();
	if (!p || p->reserved0 || p->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return vgpu_array_memcpy3d(p, h, ptds, async);
	rc = end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ,
		    p->srcPitch, p->srcHeight, &s);
	if (!rc)
		rc = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
			    p->dstZ, p->dstPitch, p->dstHeight, &d);
	if (rc)
		return rc;
	sh = (struct shape){ p->WidthInBytes, p->Height, p->Depth };
	return run_3d(&d, &s, &sh, h, ptds, async);
}

/* A peer copy with an array: the contexts checked, the rest a 3D copy. */
static CUresult array_peer(const CUDA_MEMCPY3D_PEER *p, CUstream h, bool ptds, bool async)
{
	CUDA_MEMCPY3D c = {
		.srcXInBytes = p->srcXInBytes, .srcY = p->srcY, .srcZ = p->srcZ,
		.srcLOD = p->srcLOD, .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost,
		.srcDevice = p->srcDevice, .srcArray = p->srcArray, .srcPitch = p->srcPitch,
		.srcHeight = p->srcHeight,
		.dstXInBytes = p->dstXInBytes, .dstY = p->dstY, .dstZ = p->dstZ,
		.dstLOD = p->dstLOD, .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost,
		.dstDevice = p->dstDevice, .dstArray = p->dstArray, .dstPitch = p->dstPitch,
		.dstHeight = p->dstHeight,
		.WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = p->Depth,
	};

	return vgpu_array_memcpy3d(&c, h, ptds, async);
}

static CUresult memcpy3d_peer_entry(const CUDA_MEMCPY3D_PEER *p, CUstream h, bool ptds,
				    bool async)
{
	struct end d, s;
	struct shape sh;
	CUresult rc;

	ENTER();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	rc = peer_check(p->dstContext, p->srcContext);
	if (!rc && (p->srcMemoryType == CU_MEMORYTYPE_ARRAY ||
		    p->dstMemoryType == CU_MEMORYTYPE_ARRAY))
		return array_peer(p, h, ptds, async);
	if (!rc)
		rc = end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
			    p->srcZ, p->srcPitch, p->srcHeight, &s);
	if (!rc)
		rc = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
			    p->dstZ, p->dstPitch, p->dstHeight, &d);
	if (rc)
		return rc;
	sh = (struct shape){ p->WidthInBytes, p->Height, p->Depth };
	return run_3d(&d, &s, &sh, h, ptds, async);
}

CUresult vgpu_hand_cuMemcpy2D(bool ptds, const CUDA_MEMCPY2D *p)
{
	return memcpy2d_entry(p, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpy2DUnaligned(bool ptds, const CUDA_MEMCPY2D *p)
{
	return memcpy2d_entry(p, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpy2DAsync(bool ptds, const CUDA_MEMCPY2D *p, CUstream h)
{
	return memcpy2d_entry(p, h, ptds, true);
}

CUresult vgpu_hand_cuMemcpy3D(bool ptds, const CUDA_MEMCPY3D *p)
{
	return memcpy3d_entry(p, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpy3DAsync(bool ptds, const CUDA_MEMCPY3D *p, CUstream h)
{
	return memcpy3d_entry(p, h, ptds, true);
}

CUresult vgpu_hand_cuMemcpy3DPeer(bool ptds, const CUDA_MEMCPY3D_PEER *p)
{
	return memcpy3d_peer_entry(p, NULL, ptds, false);
}

CUresult vgpu_hand_cuMemcpy3DPeerAsync(bool ptds, const CUDA_MEMCPY3D_PEER *p, CUstream h)
{
	return memcpy3d_peer_entry(p, h, ptds, true);
}

/* The 32-bit legacy descriptors, widened. */
static CUresult memcpy2d_v1(const CUDA_MEMCPY2D_v1 *p, CUstream h, bool async)
{
	CUDA_MEMCPY2D c;

	ENTER();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	c = (CUDA_MEMCPY2D){
		.srcXInBytes = p->srcXInBytes, .srcY = p->srcY,
		.srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost,
		.srcDevice = p->srcDevice, .srcArray = p->srcArray, .srcPitch = p->srcPitch,
		.dstXInBytes = p->dstXInBytes, .dstY = p->dstY,
		.dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost,
		.dstDevice = p->dstDevice, .dstArray = p->dstArray, .dstPitch = p->dstPitch,
		.WidthInBytes = p->WidthInBytes, .Height = p->Height,
	};
	return memcpy2d_entry(&c, h, false, async);
}

static CUresult memcpy3d_v1(const CUDA_MEMCPY3D_v1 *p, CUstream h, bool async)
{
	CUDA_MEMCPY3D c;

	ENTER();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	c = (CUDA_MEMCPY3D){
		.srcXInBytes = p->srcXInBytes, .srcY = p->srcY, .srcZ = p->srcZ,
		.srcLOD = p->srcLOD, .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost,
		.srcDevice = p->srcDevice, .srcArray = p->srcArray, .reserved0 = p->reserved0,
		.srcPitch = p->srcPitch, .srcHeight = p->srcHeight,
		.dstXInBytes = p->dstXInBytes, .dstY = p->dstY, .dstZ = p->dstZ,
		.dstLOD = p->dstLOD, .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost,
		.dstDevice = p->dstDevice, .dstArray = p->dstArray, .reserved1 = p->reserved1,
		.dstPitch = p->dstPitch, .dstHeight = p->dstHeight,
		.WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = p->Depth,
	};
	return memcpy3d_entry(&c, h, false, async);
}

VGPU_EXPORT CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1 *p)
{
	return memcpy2d_v1(p, NULL, false);
}

VGPU_EXPORT CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1 *p)
{
	return memcpy2d_v1(p, NULL, false);
}

VGPU_EXPORT CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1 *p, CUstream h)
{
	return memcpy2d_v1(p, h, true);
}

VGPU_EXPORT CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1 *p)
{
	return memcpy3d_v1(p, NULL, false);
}

VGPU_EXPORT CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1 *p, CUstream h)
{
	return memcpy3d_v1(p, h, true);
}

/* ---- memsets ------------------------------------------------------------------- */

#define MEMSET_MAX_ROWS 0xffffffffull	/* arg4 carries the height in 32 bits */

/* @h rows of @w elements of @elem bytes, @pitch bytes apart (a 1-D memset
 * is one row). */
static CUresult memset_entry(uint64_t dst, uint32_t v, uint32_t elem, uint64_t w, uint64_t pitch,
			     uint64_t h, CUstream hs, bool ptds, bool async)
{
	uint64_t row, span;
	struct xfer x;
	CUresult rc;

	ENTER();
	if (!dst || dst % elem)
		return CUDA_ERROR_INVALID_VALUE;
	if (!w || !h)
		return CUDA_SUCCESS;
	if (w > UINT64_MAX / elem)
		return CUDA_ERROR_INVALID_VALUE;
	row = w * elem;
	if (h > 1 && (pitch < row || pitch > (UINT64_MAX - row) / (h - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	span = (h - 1) * pitch + row;
	rc = xfer_begin(&x, hs, ptds, async);
	if (rc)
		return rc;
	if (!dma_ok(vgpu_mem_classify(x.s, dst, span, NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if (h == 1)
		return issue5(&x, VGPU_OP_MEMSET, dst, v, elem, w, 0);
	if (pitch > UINT32_MAX) {
		for (uint64_t i = 0; i < h && !rc; i++)
			rc = issue5(&x, VGPU_OP_MEMSET, dst + i * pitch, v, elem, w, 0);
		return rc;
	}
	for (uint64_t done = 0, n; done < h && !rc; done += n) {
		n = MIN(h - done, MEMSET_MAX_ROWS);
		rc = issue5(&x, VGPU_OP_MEMSET, dst + done * pitch, v, elem, w, pitch << 32 | n);
	}
	return rc;
}

#define MEMSET_1D(name, T, elem, ptds, async)						\
	VGPU_EXPORT CUresult name(CUdeviceptr dst, T v, size_t n)			\
	{										\
		return memset_entry(dst, v, elem, n, 0, 1, NULL, ptds, async);		\
	}
#define MEMSET_1D_ASYNC(name, T, elem, ptds)						\
	VGPU_EXPORT CUresult name(CUdeviceptr dst, T v, size_t n, CUstream h)		\
	{										\
		return memset_entry(dst, v, elem, n, 0, 1, h, ptds, true);		\
	}
#define MEMSET_2D(name, T, elem, ptds)							\
	VGPU_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h) \
	{										\
		return memset_entry(dst, v, elem, w, pitch, h, NULL, ptds, false);	\
	}
#define MEMSET_2D_ASYNC(name, T, elem, ptds)						\
	VGPU_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h, \
				  CUstream hs)						\
	{										\
		return memset_entry(dst, v, elem, w, pitch, h, hs, ptds, true);		\
	}

MEMSET_1D(cuMemsetD8_v2, unsigned char, 1, false, false)
MEMSET_1D(cuMemsetD16_v2, unsigned short, 2, false, false)
MEMSET_1D(cuMemsetD32_v2, unsigned int, 4, false, false)
MEMSET_1D(cuMemsetD8_v2_ptds, unsigned char, 1, true, false)
MEMSET_1D(cuMemsetD16_v2_ptds, unsigned short, 2, true, false)
MEMSET_1D(cuMemsetD32_v2_ptds, unsigned int, 4, true, false)
MEMSET_1D_ASYNC(cuMemsetD8Async, unsigned char, 1, false)
MEMSET_1D_ASYNC(cuMemsetD16Async, unsigned short, 2, false)
MEMSET_1D_ASYNC(cuMemsetD32Async, unsigned int, 4, false)
MEMSET_1D_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, true)
MEMSET_1D_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, true)
MEMSET_1D_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, true)
MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1, false)
MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2, false)
MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4, false)
MEMSET_2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, true)
MEMSET_2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, true)
MEMSET_2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, true)
MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, false)
MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, false)
MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, false)
MEMSET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, true)
MEMSET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, true)
MEMSET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, true)

/* The 32-bit legacy forms. */
VGPU_EXPORT CUresult cuMemsetD8(CUdeviceptr_v1 dst, unsigned char v, unsigned int n)
{
	return memset_entry(dst, v, 1, n, 0, 1, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemsetD16(CUdeviceptr_v1 dst, unsigned short v, unsigned int n)
{
	return memset_entry(dst, v, 2, n, 0, 1, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemsetD32(CUdeviceptr_v1 dst, unsigned int v, unsigned int n)
{
	return memset_entry(dst, v, 4, n, 0, 1, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemsetD2D8(CUdeviceptr_v1 dst, unsigned int pitch, unsigned char v,
				  unsigned int w, unsigned int h)
{
	return memset_entry(dst, v, 1, w, pitch, h, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemsetD2D16(CUdeviceptr_v1 dst, unsigned int pitch, unsigned short v,
				   unsigned int w, unsigned int h)
{
	return memset_entry(dst, v, 2, w, pitch, h, NULL, false, false);
}

VGPU_EXPORT CUresult cuMemsetD2D32(CUdeviceptr_v1 dst, unsigned int pitch, unsigned int v,
				   unsigned int w, unsigned int h)
{
	return memset_entry(dst, v, 4, w, pitch, h, NULL, false, false);
}
