// SPDX-License-Identifier: MIT
/* Device and pinned host memory, memsets and the copies that need no staging. */
#include "log.h"
#include "worker.h"

/*
 * Addresses a client names must be its own: inside its device window, a
 * live allocation of its host pool, or a module global it looked up
 * (those live where the driver puts them). Anything else could make the
 * worker read or write its own private memory through unified addressing.
 */
static int in_window(struct worker *w, uint64_t p, uint64_t len)
{
	return p >= w->vmem.base && len <= w->vmem.size &&
	       p - w->vmem.base <= w->vmem.size - len;
}

int worker_addr_ok(struct worker *w, uint64_t p, uint64_t len)
{
	return in_window(w, p, len) || hostpool_contains(&w->pool, p, len) ||
	       worker_global_contains(w, p, len) || graph_mem_contains(p, len);
}

static CUdevice ctx_device(struct worker *w)
{
	struct obj_entry *e = obj_get(&w->ctxs, w->cur_ctx);

	return e ? w->devices[(uint32_t)e->aux] : w->devices[0];
}

static enum op_status op_mem_alloc(struct worker *w, struct op_call *call)
{
	CUdeviceptr p = 0;

	pools_settle(w);
	call->cqe->result = vmem_alloc(&w->vmem, ctx_device(w), call->sqe->arg[0], &p);
	call->cqe->val[0] = p;
	return OP_DONE;
}

static enum op_status op_mem_alloc_pitch(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t width = s->arg[0], height = s->arg[1], elem = s->arg[2], pitch, bytes;
	CUdeviceptr p = 0;

	/* The texture pitch alignment, and the whole, may not wrap. */
	if (!width || !height || (elem != 4 && elem != 8 && elem != 16) ||
	    __builtin_add_overflow(width, 511, &pitch) ||
	    __builtin_mul_overflow(pitch & ~511ull, height, &bytes)) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	pitch &= ~511ull;
	pools_settle(w);
	call->cqe->result = vmem_alloc(&w->vmem, ctx_device(w), bytes, &p);
	call->cqe->val[0] = p;
	call->cqe->val[1] = pitch;
	return OP_DONE;
}

static enum op_status op_mem_free(struct worker *w, struct op_call *call)
{
	/* cuMemFree waits for the device, so nothing still uses the memory. */
	CUresult rc;

	if (pools_mem_free(w, call->sqe->arg[0], &rc) ||
	    graph_mem_free(w, call->sqe->arg[0], NULL, false, &rc)) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	rc = w->B.cuCtxSynchronize();

	call->cqe->result = rc ? rc : vmem_free(&w->vmem, call->sqe->arg[0]);
	return OP_DONE;
}

static enum op_status op_host_alloc(struct worker *w, struct op_call *call)
{
	unsigned int flags = (unsigned int)call->sqe->arg[1];
	bool relaxed = flags & VGPU_HOST_ALLOC_FOR_CAPTURE;
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	void *p = NULL;

	if (relaxed && w->B.cuThreadExchangeStreamCaptureMode(&mode))
		relaxed = false;
	call->cqe->result = hostpool_alloc(&w->pool, call->sqe->arg[0],
					   flags & ~VGPU_HOST_ALLOC_FOR_CAPTURE, &p);
	if (relaxed)
		w->B.cuThreadExchangeStreamCaptureMode(&mode);
	call->cqe->val[0] = (uintptr_t)p;
	return OP_DONE;
}

static enum op_status op_host_free(struct worker *w, struct op_call *call)
{
	CUresult rc = w->B.cuCtxSynchronize();

	call->cqe->result = rc ? rc : hostpool_free(&w->pool, (void *)(uintptr_t)call->sqe->arg[0]);
	return OP_DONE;
}

static enum op_status op_get_range(struct worker *w, struct op_call *call)
{
	CUdeviceptr base = 0;
	size_t size = 0;

	call->cqe->result = vmem_range_of(&w->vmem, call->sqe->arg[0], &base, &size);
	call->cqe->val[0] = base;
	call->cqe->val[1] = size;
	return OP_DONE;
}

/*
 * The bytes a pitched area spans, pitch * (height - 1) + width, when the
 * client may touch all of it: no term wraps, rows do not overlap, and it
 * lies in its own memory. Everything here came over the wire.
 */
static bool area_ok(struct worker *w, uint64_t p, uint64_t pitch, uint64_t width,
		    uint64_t height)
{
	uint64_t span;

	if (!width || !height || pitch < width ||
	    __builtin_mul_overflow(pitch, height - 1, &span) ||
	    __builtin_add_overflow(span, width, &span))
		return false;
	return worker_addr_ok(w, p, span);
}

/* Finish a copy: asynchronous calls are done; synchronous ones answer
 * when the stream has caught up. */
static enum op_status finish(struct worker *w, struct op_call *call, CUstream s, CUresult rc)
{
	call->cqe->result = rc;
	if (rc || !call->sqe->tag)
		return OP_DONE;
	return reply_after_stream(w, call, s);
}

static enum op_status op_memset(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t dst = s->arg[0], elem = s->arg[2], count = s->arg[3], bytes;
	uint64_t pitch = s->arg[4] >> 32, height = (uint32_t)s->arg[4];
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc)
		return finish(w, call, NULL, rc);
	if ((elem != 1 && elem != 2 && elem != 4) || __builtin_mul_overflow(count, elem, &bytes))
		return finish(w, call, NULL, CUDA_ERROR_INVALID_VALUE);
	if (!height) {
		if (!worker_addr_ok(w, dst, bytes))
			return finish(w, call, NULL, CUDA_ERROR_INVALID_VALUE);
		if (elem == 1)
			rc = w->B.cuMemsetD8Async(dst, (unsigned char)s->arg[1], count, st);
		else if (elem == 2)
			rc = w->B.cuMemsetD16Async(dst, (unsigned short)s->arg[1], count, st);
		else
			rc = w->B.cuMemsetD32Async(dst, (unsigned int)s->arg[1], count, st);
		return finish(w, call, st, rc);
	}
	/* An empty row is nothing to set, as cuMemsetD2D* does. */
	if (!count)
		return finish(w, call, st, CUDA_SUCCESS);
	if (!area_ok(w, dst, pitch, bytes, height))
		return finish(w, call, NULL, CUDA_ERROR_INVALID_VALUE);
	if (elem == 1)
		rc = w->B.cuMemsetD2D8Async(dst, pitch, (unsigned char)s->arg[1], count, height, st);
	else if (elem == 2)
		rc = w->B.cuMemsetD2D16Async(dst, pitch, (unsigned short)s->arg[1], count, height, st);
	else
		rc = w->B.cuMemsetD2D32Async(dst, pitch, (unsigned int)s->arg[1], count, height, st);
	return finish(w, call, st, rc);
}

static enum op_status op_htod(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc || s->arg[1] != call->len || !worker_addr_ok(w, s->arg[0], call->len))
		return finish(w, call, NULL, rc ? rc : CUDA_ERROR_INVALID_VALUE);
	if (worker_capturing(w, st))
		return finish(w, call, NULL, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	/* The payload copy is pageable memory, so the driver has staged it
	 * by the time this returns and the buffer may be reused. */
	rc = w->B.cuMemcpyHtoDAsync_v2(s->arg[0], call->payload, call->len, st);
	return finish(w, call, st, rc);
}

static enum op_status op_htod_pool(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc || !worker_addr_ok(w, s->arg[0], s->arg[2]) ||
	    !hostpool_contains(&w->pool, s->arg[1], s->arg[2]))
		return finish(w, call, NULL, rc ? rc : CUDA_ERROR_INVALID_VALUE);
	rc = w->B.cuMemcpyHtoDAsync_v2(s->arg[0], (void *)(uintptr_t)s->arg[1], s->arg[2], st);
	return finish(w, call, st, rc);
}

static enum op_status op_dtoh_pool(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc || !worker_addr_ok(w, s->arg[1], s->arg[2]) ||
	    !hostpool_contains(&w->pool, s->arg[0], s->arg[2]))
		return finish(w, call, NULL, rc ? rc : CUDA_ERROR_INVALID_VALUE);
	rc = w->B.cuMemcpyDtoHAsync_v2((void *)(uintptr_t)s->arg[0], s->arg[1], s->arg[2], st);
	return finish(w, call, st, rc);
}

static enum op_status op_dtoh(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc || s->arg[1] > w->ring.reply_slot_size || !worker_addr_ok(w, s->arg[0], s->arg[1])) {
		call->cqe->result = rc ? rc : CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	if (worker_capturing(w, st)) {
		call->cqe->result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		return OP_DONE;
	}
	/* The reply slot is pageable to the driver: the copy is complete when
	 * the call returns. */
	rc = w->B.cuMemcpyDtoHAsync_v2(call->reply, s->arg[0], s->arg[1], st);
	if (!rc)
		rc = w->B.cuStreamSynchronize(st);
	call->cqe->result = rc;
	call->cqe->val[2] = rc ? 0 : s->arg[1];
	return OP_DONE;
}

static enum op_status op_dtod(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc || !worker_addr_ok(w, s->arg[0], s->arg[2]) ||
	    !worker_addr_ok(w, s->arg[1], s->arg[2]))
		return finish(w, call, NULL, rc ? rc : CUDA_ERROR_INVALID_VALUE);
	rc = w->B.cuMemcpyDtoDAsync_v2(s->arg[0], s->arg[1], s->arg[2], st);
	return finish(w, call, st, rc);
}

static enum op_status op_copy2d(struct worker *w, struct op_call *call)
{
	struct vgpu_copy2d c;
	CUDA_MEMCPY2D m = { 0 };
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (rc || call->len != sizeof(c))
		return finish(w, call, NULL, rc ? rc : CUDA_ERROR_INVALID_VALUE);
	__builtin_memcpy(&c, call->payload, sizeof(c));
	if (!area_ok(w, c.src, c.src_pitch, c.width, c.height) ||
	    !area_ok(w, c.dst, c.dst_pitch, c.width, c.height))
		return finish(w, call, NULL, CUDA_ERROR_INVALID_VALUE);
	m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	m.srcDevice = c.src;
	m.srcPitch = c.src_pitch;
	m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	m.dstDevice = c.dst;
	m.dstPitch = c.dst_pitch;
	m.WidthInBytes = c.width;
	m.Height = c.height;
	rc = w->B.cuMemcpy2DAsync_v2(&m, st);
	return finish(w, call, st, rc);
}

const struct op_desc exec_memory_ops[] = {
	OP(MEM_ALLOC, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_mem_alloc),
	OP(MEM_ALLOC_PITCH, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_mem_alloc_pitch),
	OP(MEM_FREE, OPF_NEEDS_CTX, op_mem_free),
	OP(HOST_ALLOC, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_host_alloc),
	OP(HOST_FREE, OPF_NEEDS_CTX, op_host_free),
	OP(MEM_GET_RANGE, OPF_SYNC_ONLY, op_get_range),
	OP(MEMSET, OPF_NEEDS_CTX, op_memset),
	OP(MEMCPY_HTOD, OPF_NEEDS_CTX, op_htod),
	OP(MEMCPY_HTOD_POOL, OPF_NEEDS_CTX, op_htod_pool),
	OP(MEMCPY_DTOH_POOL, OPF_NEEDS_CTX, op_dtoh_pool),
	OP(MEMCPY_DTOH, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_dtoh),
	OP(MEMCPY_DTOD, OPF_NEEDS_CTX, op_dtod),
	OP(MEMCPY_2D, OPF_NEEDS_CTX, op_copy2d),
	{ 0 },
};
