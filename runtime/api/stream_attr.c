// SPDX-License-Identifier: MIT
/*
 * Stream attributes (access policy window, synchronization policy,
 * priority, memory synchronization domain and its map): kept by the
 * worker's driver, per stream, so every get is a round trip and every set
 * answers the driver's own error. A priority set here also changes what
 * cuStreamGetPriority answers, as it does with the driver, the legacy NULL
 * stream's too (the driver takes one for it). Each call's ABI variants are
 * generated (calls.def: hand).
 */
#include <string.h>

#include "calls_hand_gen.h"
#include "client.h"
#include "driver.h"
#include "entry.h"
#include "forward.h"
#include "handles.h"
#include "init.h"

/* The driver clamps a priority it is given: cache what it kept (st NULL:
 * the context's legacy NULL stream). */
static void refresh_priority(struct vgpu_stream *st, struct vgpu_ctx *ctx, uint32_t sid)
{
	CUstreamAttrValue got;
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_STREAM_GET_ATTR, .ctx = ctx->id,
				       .stream = sid, .arg = { CU_LAUNCH_ATTRIBUTE_PRIORITY } },
			      .reply = &got, .reply_cap = sizeof(got) };

	if (vgpu_call(&r) || r.cqe.val[2] != sizeof(got))
		return;
	if (st)
		st->priority = got.priority;
	else if (!sid)
		ctx->null_priority = got.priority;
}

CUresult vgpu_hand_cuStreamSetAttribute(bool ptds, CUstream h, CUstreamAttrID id,
					const CUstreamAttrValue *v)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_STREAM_SET_ATTR } };
	struct vgpu_stream *st;
	struct vgpu_ctx *ctx;
	uint32_t sid;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_stream_lookup(h, ptds, &st, &ctx);
	if (!rc)
		rc = vgpu_stream_resolve(h, ptds, NULL, &sid);
	if (rc)
		return rc;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ctx->id;
	r.sqe.stream = sid;
	r.sqe.arg[0] = (uint32_t)id;
	r.payload = v;
	r.payload_len = sizeof(*v);
	rc = vgpu_call(&r);
	if (!rc && id == CU_LAUNCH_ATTRIBUTE_PRIORITY)
		refresh_priority(st, ctx, sid);
	return rc;
}

CUresult vgpu_hand_cuStreamGetAttribute(bool ptds, CUstream h, CUstreamAttrID id,
					CUstreamAttrValue *out)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_STREAM_GET_ATTR } };
	struct vgpu_ctx *ctx;
	uint32_t sid;
	CUresult rc = vgpu_need_out(vgpu_enter_stream(h, ptds, &ctx, &sid), out);

	if (rc)
		return rc;
	r.sqe.ctx = ctx->id;
	r.sqe.stream = sid;
	r.sqe.arg[0] = (uint32_t)id;
	return vgpu_call_exact(&r, out, sizeof(*out));
}

CUresult vgpu_hand_cuStreamCopyAttributes(bool ptds, CUstream dst, CUstream src)
{
	struct vgpu_stream *st;
	struct vgpu_ctx *dctx, *sctx;
	uint32_t did, sid;
	struct vgpu_cqe cqe;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_stream_lookup(dst, ptds, &st, &dctx);
	if (!rc)
		rc = vgpu_stream_resolve(dst, ptds, NULL, &did);
	if (!rc)
		rc = vgpu_stream_resolve(src, ptds, &sctx, &sid);
	if (rc)
		return rc;
	/* "Both streams must have the same context" (INVALID_VALUE otherwise). */
	if (sctx != dctx)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(VGPU_OP_STREAM_COPY_ATTRS, dctx->id, did, sid, 0, 0, 0, 0, &cqe);
	if (!rc)
		refresh_priority(st, dctx, did);
	return rc;
}
