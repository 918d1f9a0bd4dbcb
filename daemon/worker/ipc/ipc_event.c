// SPDX-License-Identifier: MIT
/*
 * CUDA IPC event handles between vgpu sessions of the same user:
 * cuIpcGetEventHandle and cuIpcOpenEventHandle. How the handle finds its
 * exporter and who may use it: ipc_server.c.
 *
 * The workers are processes of the backend's driver, so the backend's own
 * IPC event handle works between them: the exporter's worker takes it
 * (cuIpcGetEventHandle on its event, made CU_EVENT_INTERPROCESS) and keeps
 * it in its table of exports; the importer's worker, once the exporter has
 * checked who asks, gets those 64 bytes in the answer and opens them with
 * the backend (cuIpcOpenEventHandle) as an event of its session under the
 * id the program's runtime issued. Records, waits, queries and destroys of
 * it are then the session's usual event calls. The host backend emulates
 * the backend's handle (daemon/backend/host/host_ipc.c).
 *
 * Destroying the exported event ends its exports (later opens fail). A
 * session holding an opened event refuses checkpoints (the event is the
 * other process's); an exporter's checkpoint carries its event as a plain
 * one of the same flags, and its move is refused once another session
 * opened the event (ipc_move_refusal).
 */
#include <string.h>

#include "ipc.h"
#include "ipc_state.h"
#include "log.h"

void ipc_event_gone(struct worker *w, CUevent ev)
{
	if (w->ipc && ev)
		ipc_exports_end(w->ipc, IPC_KIND_EVENT, (uint64_t)(uintptr_t)ev);
}

/* sqe.ctx, arg0 event id; R: slot holds the 64 bytes */
static enum op_status op_get_event(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = ipc_state_get(w);
	struct obj_entry *o = obj_get(&w->events, call->sqe->arg[0]);
	struct ipc_export e = { .kind = IPC_KIND_EVENT, .fd = -1 };
	CUipcEventHandle dh;
	CUresult rc;

	call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
	if (!o)
		return OP_DONE;
	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	/* Only interprocess events; an opened one stays the other process's. */
	if (!(o->aux & CU_EVENT_INTERPROCESS) || (o->aux & IPC_EVENT_IMPORTED))
		return OP_DONE;
	if (!x) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	if (!ipc_export_find(x, IPC_KIND_EVENT, (uint64_t)(uintptr_t)o->obj, &e)) {
		memset(&dh, 0, sizeof(dh));
		rc = w->B.cuIpcGetEventHandle(&dh, (CUevent)o->obj);
		if (rc) {
			call->cqe->result = rc;
			return OP_DONE;
		}
		e.what = (uint64_t)(uintptr_t)o->obj;
		memcpy(e.data, &dh, sizeof(e.data));
		if ((rc = ipc_export_add(x, &e))) {
			call->cqe->result = rc;
			return OP_DONE;
		}
	}
	return ipc_reply_handle(x, &e, call);
}

/* sqe.ctx, arg0 the new event's id; P: the 64 bytes */
static enum op_status op_open_event(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = ipc_state_get(w);
	uint64_t id = call->sqe->arg[0];
	CUipcEventHandle dh;
	struct ipc_answer a;
	struct ipc_handle h;
	CUevent ev = NULL;
	CUresult rc;
	int fd = -1;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (call->len != sizeof(h) || !id || id > UINT32_MAX || obj_get(&w->events, id))
		return OP_DONE;
	if ((rc = ipc_handle_in(x, call->payload, IPC_KIND_EVENT, &h))) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	rc = ipc_ask(w, &h, &a, &fd);
	/* The backend judges the bytes: they are another process's word. */
	if (!rc) {
		memcpy(&dh, a.data, sizeof(dh));
		rc = w->B.cuIpcOpenEventHandle(&ev, dh);
	}
	if (!rc && obj_insert(&w->events, (uint32_t)id, ev,
			      CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING | IPC_EVENT_IMPORTED,
			      NULL)) {
		w->B.cuEventDestroy_v2(ev);
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

const struct op_desc exec_ipc_event_ops[] = {
	OP(IPC_GET_EVENT, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_get_event),
	OP(IPC_OPEN_EVENT, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_open_event),
	{ 0 },
};
