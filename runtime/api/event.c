// SPDX-License-Identifier: MIT
/*
 * Events. Create, destroy and record are posted without waiting (errors
 * come back at the next synchronous call); synchronize, query and elapsed
 * time wait for the worker's answer.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "calls_hand_gen.h"
#include "driver.h"
#include "handles.h"
#include "init.h"

#define EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

CUresult vgpu_event_resolve(CUevent h, struct vgpu_event **out)
{
	struct vgpu_event *ev = (struct vgpu_event *)h;

	if (!ev || ev->magic != VGPU_EVENT_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = ev;
	return CUDA_SUCCESS;
}

/* Live events by id, for what the worker names by id (graph nodes). */
#define BY_ID_CHUNK	4096u
#define BY_ID_MAX	(1u << 22)	/* as many as the worker's tables hold */

static pthread_mutex_t by_id_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vgpu_event **by_id[BY_ID_MAX / BY_ID_CHUNK];

/* Under by_id_lock. false: no memory for the entry. */
static bool by_id_set(uint32_t id, struct vgpu_event *ev)
{
	struct vgpu_event ***c = &by_id[id / BY_ID_CHUNK];

	if (id >= BY_ID_MAX)
		return false;
	if (!*c && (!ev || !(*c = calloc(BY_ID_CHUNK, sizeof(**c)))))
		return !ev;
	(*c)[id % BY_ID_CHUNK] = ev;
	return true;
}

CUevent vgpu_event_by_id(uint32_t id)
{
	struct vgpu_event *ev = NULL;

	pthread_mutex_lock(&by_id_lock);
	if (id && id < BY_ID_MAX && by_id[id / BY_ID_CHUNK])
		ev = by_id[id / BY_ID_CHUNK][id % BY_ID_CHUNK];
	pthread_mutex_unlock(&by_id_lock);
	return (CUevent)ev;
}

static CUresult resolve(CUevent h, struct vgpu_event **out)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : vgpu_event_resolve(h, out);
}

CUresult vgpu_event_new(struct vgpu_ctx *ctx, unsigned int flags, struct vgpu_event **out)
{
	struct vgpu_event *ev = vgpu_obj_new(sizeof(*ev), offsetof(struct vgpu_event, id),
					     VGPU_K_EVENT);
	bool ok;

	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ev->magic = VGPU_EVENT_MAGIC;
	ev->ctx = ctx;
	ev->flags = flags;
	pthread_mutex_lock(&by_id_lock);
	ok = by_id_set(ev->id, ev);
	pthread_mutex_unlock(&by_id_lock);
	if (!ok) {
		vgpu_id_free(VGPU_K_EVENT, ev->id);
		free(ev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = ev;
	return CUDA_SUCCESS;
}

void vgpu_event_drop(struct vgpu_event *ev)
{
	pthread_mutex_lock(&by_id_lock);
	by_id_set(ev->id, NULL);
	pthread_mutex_unlock(&by_id_lock);
	vgpu_id_free(VGPU_K_EVENT, ev->id);
	ev->magic = 0;
	free(ev);
}

VGPU_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct vgpu_event *ev;
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!phEvent || (Flags & ~(unsigned int)EVENT_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	/* Shared events keep no time (cuIpcGetEventHandle, runtime/ipc/). */
	if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_ctx_current(&ctx);
	if (rc)
		return rc;
	if ((rc = vgpu_event_new(ctx, Flags, &ev)))
		return rc;
	rc = vgpu_post5(VGPU_OP_EVENT_CREATE, ctx->id, 0, ev->id, Flags, 0, 0, 0);
	if (rc) {
		vgpu_event_drop(ev);
		return rc;
	}
	*phEvent = (CUevent)ev;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuEventDestroy(CUevent h)
{
	struct vgpu_event *ev;
	CUresult rc = resolve(h, &ev);

	if (rc)
		return rc;
	pthread_mutex_lock(&by_id_lock);
	by_id_set(ev->id, NULL);
	pthread_mutex_unlock(&by_id_lock);
	rc = vgpu_post5(VGPU_OP_EVENT_DESTROY, ev->ctx->id, 0, ev->id, 0, 0, 0, 0);
	/* Reusable once the worker has been told (ring order does the rest). */
	if (!rc)
		vgpu_id_free(VGPU_K_EVENT, ev->id);
	ev->magic = 0;
	free(ev);
	return rc;
}

CUresult vgpu_hand_cuEventRecordWithFlags(bool ptds, CUevent h, CUstream hStream,
					  unsigned int flags)
{
	struct vgpu_event *ev;
	struct vgpu_ctx *ctx;
	uint32_t sid;
	CUresult rc = resolve(h, &ev);

	if (rc)
		return rc;
	if (flags & ~(unsigned int)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_stream_resolve(hStream, ptds, &ctx, &sid);
	if (rc)
		return rc;
	/* Another process may wait on a shared event as soon as the program
	 * tells it: the record has reached the worker when this returns. */
	if (ev->flags & CU_EVENT_INTERPROCESS)
		return vgpu_call5(VGPU_OP_EVENT_RECORD, ctx->id, sid, ev->id, flags, 0, 0, 0,
				  NULL);
	return vgpu_post5(VGPU_OP_EVENT_RECORD, ctx->id, sid, ev->id, flags, 0, 0, 0);
}

CUresult vgpu_hand_cuEventRecord(bool ptds, CUevent hEvent, CUstream hStream)
{
	return vgpu_hand_cuEventRecordWithFlags(ptds, hEvent, hStream, 0);
}

static CUresult event_call(uint16_t op, CUevent h)
{
	struct vgpu_event *ev;
	CUresult rc = resolve(h, &ev);

	return rc ? rc : vgpu_call5(op, ev->ctx->id, 0, ev->id, 0, 0, 0, 0, NULL);
}

VGPU_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
	return event_call(VGPU_OP_EVENT_SYNCHRONIZE, hEvent);
}

VGPU_EXPORT CUresult cuEventQuery(CUevent hEvent)
{
	return event_call(VGPU_OP_EVENT_QUERY, hEvent);
}

CUresult vgpu_hand_cuEventElapsedTime(float *ms, CUevent hStart, CUevent hEnd)
{
	struct vgpu_event *a, *b;
	struct vgpu_cqe cqe = { 0 };
	uint32_t bits;
	CUresult rc = resolve(hStart, &a);

	if (!rc)
		rc = resolve(hEnd, &b);
	if (rc)
		return rc;
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(VGPU_OP_EVENT_ELAPSED, a->ctx->id, 0, a->id, b->id, 0, 0, 0, &cqe);
	if (rc)
		return rc;
	bits = (uint32_t)cqe.val[0];
	memcpy(ms, &bits, sizeof(*ms));
	return CUDA_SUCCESS;
}
