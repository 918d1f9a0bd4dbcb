// SPDX-License-Identifier: MIT
/*
 * cuIpcGetEventHandle and cuIpcOpenEventHandle: the worker makes and reads
 * the 64 bytes (daemon/worker/ipc/ipc_event.c). An opened event is an event
 * of this session like any other (records, waits, queries, destroy), made
 * with CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING as the driver's are.
 */
#include "client.h"
#include "forward.h"
#include "handles.h"
#include "init.h"
#include "ipc.h"

VGPU_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_IPC_GET_EVENT } };
	struct vgpu_event *ev;
	CUresult rc;

	ENTER();
	if (!pHandle)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = vgpu_event_resolve(event, &ev)))
		return rc;
	if (!(ev->flags & CU_EVENT_INTERPROCESS))
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ev->ctx->id;
	r.sqe.arg[0] = ev->id;
	return vgpu_call_exact(&r, pHandle, sizeof(*pHandle));
}

VGPU_EXPORT CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
	const unsigned int flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_IPC_OPEN_EVENT } };
	struct vgpu_event *ev;
	struct vgpu_ctx *ctx;
	CUresult rc;

	ENTER();
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = vgpu_ctx_current(&ctx)) || (rc = vgpu_event_new(ctx, flags, &ev)))
		return rc;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = ev->id;
	r.payload = &handle;
	r.payload_len = sizeof(handle);
	rc = vgpu_call(&r);
	if (rc) {
		vgpu_event_drop(ev);	/* the worker made nothing under its id */
		return rc;
	}
	*phEvent = (CUevent)ev;
	return CUDA_SUCCESS;
}
