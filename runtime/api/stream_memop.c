// SPDX-License-Identifier: MIT
/*
 * Stream memory operations: write a 32- or 64-bit word, wait until one
 * satisfies a condition, or a batch of both, in stream order; and the
 * context-wide event record and wait (CUDA 12.5).
 *
 * The flags and the alignment are checked here, so a bad call fails at
 * once as with the driver. A word in the session's device window or host
 * pool is the client's for sure, and the operation is posted without
 * waiting; any other address (a module global, or a foreign one) goes as a
 * synchronous call, so that the worker's refusal comes back from this call.
 * So does a flush of remote writes, which the driver refuses (NOT_SUPPORTED)
 * on a device that cannot flush (CAN_FLUSH_REMOTE_WRITES 0, the H100's).
 *
 * The _v1 entry points (cuStreamWriteValue32 & co, CUDA 8) differ from
 * _v2 only in taking CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER, which lets a
 * write pass earlier ones: keeping the barrier honours it too, so it is
 * dropped; v1 batches take no memory barrier operation.
 */
#include "client.h"
#include "driver.h"
#include "entry.h"
#include "handles.h"
#include "init.h"

/* "count: The number of operations in the array. Must be less than 256." */
#define BATCH_MAX 255

static bool own_word(uint64_t p, uint64_t n)
{
	struct vgpu_session *s = vgpu_session_peek();

	return s && (vgpu_is_pool(s, p, n) || (vgpu_is_device(s, p) && vgpu_is_device(s, p + n - 1)));
}

static CUresult submit(struct vgpu_req *r, bool sync)
{
	return sync ? vgpu_call(r) : vgpu_post(r);
}

static CUresult word_op(uint16_t op, CUstream h, bool ptds, CUdeviceptr addr, uint64_t value,
			unsigned int flags, unsigned int size)
{
	struct vgpu_ctx *ctx;
	uint32_t sid;
	CUresult rc = vgpu_enter_stream(h, ptds, &ctx, &sid);

	if (rc)
		return rc;
	if (!addr || addr % size)
		return CUDA_ERROR_INVALID_VALUE;
	if (!own_word(addr, size) ||
	    (op == VGPU_OP_STREAM_WAIT_VALUE && (flags & CU_STREAM_WAIT_VALUE_FLUSH)))
		return vgpu_call5(op, ctx->id, sid, addr, value, flags, size, 0, NULL);
	return vgpu_post5(op, ctx->id, sid, addr, value, flags, size, 0);
}

static CUresult write_value(CUstream h, bool ptds, CUdeviceptr addr, uint64_t v,
			    unsigned int flags, unsigned int size, bool v1)
{
	if (v1)
		flags &= ~(unsigned int)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
	if (flags)
		return vgpu_initialized() ? vgpu_initialized() : CUDA_ERROR_INVALID_VALUE;
	return word_op(VGPU_OP_STREAM_WRITE_VALUE, h, ptds, addr, v, flags, size);
}

static bool wait_flags_ok(unsigned int flags)
{
	return (flags & ~(unsigned int)CU_STREAM_WAIT_VALUE_FLUSH) <= CU_STREAM_WAIT_VALUE_NOR;
}

static CUresult wait_value(CUstream h, bool ptds, CUdeviceptr addr, uint64_t v,
			   unsigned int flags, unsigned int size)
{
	if (!wait_flags_ok(flags))
		return vgpu_initialized() ? vgpu_initialized() : CUDA_ERROR_INVALID_VALUE;
	return word_op(VGPU_OP_STREAM_WAIT_VALUE, h, ptds, addr, v, flags, size);
}

#define WRITE_ENTRY(name, type, size, ptds, v1)						\
	VGPU_EXPORT CUresult name(CUstream stream, CUdeviceptr addr, type value,		\
				  unsigned int flags)						\
	{											\
		return write_value(stream, ptds, addr, value, flags, size, v1);		\
	}
#define WAIT_ENTRY(name, type, size, ptds)							\
	VGPU_EXPORT CUresult name(CUstream stream, CUdeviceptr addr, type value,		\
				  unsigned int flags)						\
	{											\
		return wait_value(stream, ptds, addr, value, flags, size);			\
	}

WRITE_ENTRY(cuStreamWriteValue32, cuuint32_t, 4, false, true)
WRITE_ENTRY(cuStreamWriteValue32_ptsz, cuuint32_t, 4, true, true)
WRITE_ENTRY(cuStreamWriteValue32_v2, cuuint32_t, 4, false, false)
WRITE_ENTRY(cuStreamWriteValue32_v2_ptsz, cuuint32_t, 4, true, false)
WRITE_ENTRY(cuStreamWriteValue64, cuuint64_t, 8, false, true)
WRITE_ENTRY(cuStreamWriteValue64_ptsz, cuuint64_t, 8, true, true)
WRITE_ENTRY(cuStreamWriteValue64_v2, cuuint64_t, 8, false, false)
WRITE_ENTRY(cuStreamWriteValue64_v2_ptsz, cuuint64_t, 8, true, false)
WAIT_ENTRY(cuStreamWaitValue32, cuuint32_t, 4, false)
WAIT_ENTRY(cuStreamWaitValue32_ptsz, cuuint32_t, 4, true)
WAIT_ENTRY(cuStreamWaitValue32_v2, cuuint32_t, 4, false)
WAIT_ENTRY(cuStreamWaitValue32_v2_ptsz, cuuint32_t, 4, true)
WAIT_ENTRY(cuStreamWaitValue64, cuuint64_t, 8, false)
WAIT_ENTRY(cuStreamWaitValue64_ptsz, cuuint64_t, 8, true)
WAIT_ENTRY(cuStreamWaitValue64_v2, cuuint64_t, 8, false)
WAIT_ENTRY(cuStreamWaitValue64_v2_ptsz, cuuint64_t, 8, true)

/* ---- batches ------------------------------------------------------------- */

/* One operation as the driver checks it; *own stays true while every word
 * is surely the client's and nothing asks for a flush, which only the
 * device can answer. */
static CUresult batch_one(const CUstreamBatchMemOpParams *p, bool v1, bool *own)
{
	unsigned int size = 4;

	switch (p->operation) {
	case CU_STREAM_MEM_OP_WAIT_VALUE_64:
		size = 8;
		/* fall through */
	case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		if (!wait_flags_ok(p->waitValue.flags))
			return CUDA_ERROR_INVALID_VALUE;
		if (p->waitValue.flags & CU_STREAM_WAIT_VALUE_FLUSH)
			*own = false;
		break;
	case CU_STREAM_MEM_OP_WRITE_VALUE_64:
		size = 8;
		/* fall through */
	case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		if (p->writeValue.flags & ~(v1 ? (unsigned int)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER
					       : 0u))
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
		/* The driver asks the device first: NOT_SUPPORTED, flags or not. */
		*own = false;
		return CUDA_SUCCESS;
	case CU_STREAM_MEM_OP_BARRIER:
		if (v1 || p->memoryBarrier.flags > CU_STREAM_MEMORY_BARRIER_TYPE_GPU)
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* waitValue and writeValue share their address field. */
	if (!p->waitValue.address || p->waitValue.address % size)
		return CUDA_ERROR_INVALID_VALUE;
	if (!own_word(p->waitValue.address, size))
		*own = false;
	return CUDA_SUCCESS;
}

static CUresult batch(CUstream h, bool ptds, unsigned int count,
		      const CUstreamBatchMemOpParams *ops, unsigned int flags, bool v1)
{
	CUstreamBatchMemOpParams copy[BATCH_MAX];
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_STREAM_BATCH_MEMOP } };
	struct vgpu_ctx *ctx;
	bool own = true;
	uint32_t sid;
	CUresult rc = vgpu_enter_stream(h, ptds, &ctx, &sid);

	if (rc)
		return rc;
	/* The driver checks the flags first, then takes an empty batch, its
	 * array unread, as nothing to do. */
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!count)
		return CUDA_SUCCESS;
	if (count > BATCH_MAX || !ops)
		return CUDA_ERROR_INVALID_VALUE;
	if (count * sizeof(*ops) > vgpu_payload_max())
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < count; i++) {
		rc = batch_one(&ops[i], v1, &own);
		if (rc)
			return rc;
		copy[i] = ops[i];
		if (v1 && (copy[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
			   copy[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64))
			copy[i].writeValue.flags = 0;
	}
	r.sqe.ctx = ctx->id;
	r.sqe.stream = sid;
	r.sqe.arg[0] = count;
	r.sqe.arg[1] = flags;
	r.payload = copy;
	r.payload_len = count * (uint32_t)sizeof(*ops);
	return submit(&r, !own);
}

#define BATCH_ENTRY(name, ptds, v1)								\
	VGPU_EXPORT CUresult name(CUstream stream, unsigned int count,			\
				  CUstreamBatchMemOpParams *paramArray, unsigned int flags)	\
	{											\
		return batch(stream, ptds, count, paramArray, flags, v1);			\
	}

BATCH_ENTRY(cuStreamBatchMemOp, false, true)
BATCH_ENTRY(cuStreamBatchMemOp_ptsz, true, true)
BATCH_ENTRY(cuStreamBatchMemOp_v2, false, false)
BATCH_ENTRY(cuStreamBatchMemOp_v2_ptsz, true, false)

/* ---- context-wide events ------------------------------------------------- */

static CUresult ctx_event(uint16_t op, CUcontext hctx, CUevent hev)
{
	struct vgpu_event *ev;
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_ctx_resolve(hctx, &ctx);
	if (!rc)
		rc = vgpu_event_resolve(hev, &ev);
	if (rc)
		return rc;
	return vgpu_post5(op, ctx->id, 0, ev->id, 0, 0, 0, 0);
}

VGPU_EXPORT CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent)
{
	return ctx_event(VGPU_OP_CTX_RECORD_EVENT, hCtx, hEvent);
}

VGPU_EXPORT CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent)
{
	return ctx_event(VGPU_OP_CTX_WAIT_EVENT, hCtx, hEvent);
}
