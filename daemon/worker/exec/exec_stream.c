// SPDX-License-Identifier: MIT
/* Streams, events, and host functions that run back in the client. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "barrier.h"
#include "futex.h"
#include "ipc.h"
#include "log.h"
#include "retained.h"
#include "worker.h"

static enum op_status op_stream_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct retained_stream *info;
	CUstream st;
	CUresult rc;

	if (obj_get(&w->streams, s->arg[0])) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	info = malloc(sizeof(*info));
	if (!info) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	*info = (struct retained_stream){ (uint32_t)s->arg[1], (int32_t)s->arg[2] };
	rc = w->B.cuStreamCreateWithPriority(&st, (unsigned int)s->arg[1], (int)(int64_t)s->arg[2]);
	if (rc)
		free(info);
	if (!rc && obj_insert(&w->streams, s->arg[0], st, s->ctx, info)) {
		w->B.cuStreamDestroy_v2(st);
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_stream_destroy(struct worker *w, struct op_call *call)
{
	struct obj_entry *e = obj_get(&w->streams, call->sqe->arg[0]);

	if (!e) {
		call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	/* The driver lets queued work finish after destroy, as CUDA promises. */
	call->cqe->result = w->B.cuStreamDestroy_v2(e->obj);
	obj_remove(&w->streams, call->sqe->arg[0]);
	pools_stream_gone(w, (uint32_t)call->sqe->arg[0]);
	return OP_DONE;
}

static enum op_status op_stream_sync(struct worker *w, struct op_call *call)
{
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	pools_sync_point(w);

	if (rc) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	return reply_after_stream(w, call, st);
}

static enum op_status op_stream_query(struct worker *w, struct op_call *call)
{
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	call->cqe->result = rc ? rc : w->B.cuStreamQuery(st);
	return OP_DONE;
}

static CUevent event_of(struct worker *w, uint64_t id)
{
	struct obj_entry *e = obj_get(&w->events, id);

	return e ? e->obj : NULL;
}

static enum op_status op_stream_wait_event(struct worker *w, struct op_call *call)
{
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);
	CUevent ev = event_of(w, call->sqe->arg[0]);

	if (!rc && !ev)
		rc = CUDA_ERROR_INVALID_HANDLE;
	call->cqe->result = rc ? rc : w->B.cuStreamWaitEvent(st, ev, (unsigned int)call->sqe->arg[1]);
	if (!call->cqe->result)
		pools_stream_waited(w, call->sqe->stream, (uint32_t)call->sqe->arg[0], st);
	return OP_DONE;
}

struct host_func_job {
	struct worker *w;
	uint64_t cookie;
	uint32_t seq;
};

/* Runs in stream order on the driver's callback thread (or inline with the
 * host backend): ask the client to run the function, wait until it has. */
static void CUDA_CB host_func_trampoline(void *arg)
{
	struct host_func_job *j = arg;
	struct worker *w = j->w;
	struct vgpu_cqe c = { .tag = 0, .val = { j->cookie, j->seq } };
	uint32_t *ack = &w->ring.sh->cb_ack[j->seq % VGPU_CB_SLOTS];

	worker_post(w, &c);
	for (;;) {
		uint32_t v = load_acquire(ack);

		if (v == j->seq)
			break;
		if (vgpu_futex_wait(ack, v, 50) != -ETIMEDOUT)
			continue;
		if (worker_client_gone(w))
			break;
		worker_order_stalled(w, "in a host callback");
	}
	__atomic_add_fetch(&w->cb_finished, 1, __ATOMIC_RELEASE);
	free(j);
}

static enum op_status op_host_func(struct worker *w, struct op_call *call)
{
	struct host_func_job *j;
	unsigned int us = 100;
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	/* Recorded as a host node, which runs at every launch: a graph host
	 * node's job, which stays (graph_host.c; the runtime keeps the cookie). */
	if (!rc && worker_capturing(w, st)) {
		CUDA_HOST_NODE_PARAMS_v2 hp;

		rc = graph_host_params(w, call->sqe->arg[0], &hp);
		call->cqe->result = rc ? rc : w->B.cuLaunchHostFunc(st, hp.fn, hp.userData);
		return OP_DONE;
	}
	j = malloc(sizeof(*j));
	if (!j || rc) {
		free(j);
		call->cqe->result = rc ? rc : CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	/* Each callback in flight owns an acknowledgement slot. */
	while (__atomic_load_n(&w->cb_posted, __ATOMIC_ACQUIRE) - load_acquire(&w->cb_finished) >=
	       VGPU_CB_SLOTS - 1) {
		if (!worker_wait_client(w, false, us, "in host callbacks"))
			break;
		us = us < 5000 ? 2 * us : 10000;
	}
	j->w = w;
	j->cookie = call->sqe->arg[0];
	j->seq = __atomic_add_fetch(&w->cb_posted, 1, __ATOMIC_ACQ_REL);
	rc = w->B.cuLaunchHostFunc(st, host_func_trampoline, j);
	if (rc) {
		__atomic_sub_fetch(&w->cb_posted, 1, __ATOMIC_ACQ_REL);
		free(j);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_event_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUevent ev;
	CUresult rc;

	if (obj_get(&w->events, s->arg[0])) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	rc = w->B.cuEventCreate(&ev, (unsigned int)s->arg[1]);
	if (!rc && obj_insert(&w->events, s->arg[0], ev, s->arg[1], NULL)) {
		w->B.cuEventDestroy_v2(ev);
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_event_destroy(struct worker *w, struct op_call *call)
{
	CUevent ev = event_of(w, call->sqe->arg[0]);

	ipc_event_gone(w, ev);
	call->cqe->result = ev ? w->B.cuEventDestroy_v2(ev) : CUDA_ERROR_INVALID_HANDLE;
	obj_remove(&w->events, call->sqe->arg[0]);
	pools_event_gone(w, (uint32_t)call->sqe->arg[0]);
	return OP_DONE;
}

static enum op_status op_event_record(struct worker *w, struct op_call *call)
{
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);
	CUevent ev = event_of(w, call->sqe->arg[0]);

	if (!rc && !ev)
		rc = CUDA_ERROR_INVALID_HANDLE;
	call->cqe->result = rc ? rc : w->B.cuEventRecordWithFlags(ev, st,
								  (unsigned int)call->sqe->arg[1]);
	if (!call->cqe->result)
		pools_event_recorded(w, (uint32_t)call->sqe->arg[0], call->sqe->stream, st);
	return OP_DONE;
}

static enum op_status op_event_sync(struct worker *w, struct op_call *call)
{
	CUevent ev = event_of(w, call->sqe->arg[0]);
	CUresult rc;

	if (!ev) {
		call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	pools_sync_point(w);
	rc = w->B.cuEventQuery(ev);
	if (rc != CUDA_ERROR_NOT_READY) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	worker_fold_deferred(w, call->cqe);
	waiter_after_event(w, ev, call->sqe->ctx, call->cqe);
	return OP_LATER;
}

static enum op_status op_event_query(struct worker *w, struct op_call *call)
{
	CUevent ev = event_of(w, call->sqe->arg[0]);

	call->cqe->result = ev ? w->B.cuEventQuery(ev) : CUDA_ERROR_INVALID_HANDLE;
	return OP_DONE;
}

static enum op_status op_event_elapsed(struct worker *w, struct op_call *call)
{
	CUevent a = event_of(w, call->sqe->arg[0]), b = event_of(w, call->sqe->arg[1]);
	float ms = 0;
	uint32_t bits;

	call->cqe->result = a && b ? w->B.cuEventElapsedTime_v2(&ms, a, b)
				   : CUDA_ERROR_INVALID_HANDLE;
	memcpy(&bits, &ms, sizeof(bits));
	call->cqe->val[0] = bits;
	return OP_DONE;
}

const struct op_desc exec_stream_ops[] = {
	OP(STREAM_CREATE, OPF_NEEDS_CTX, op_stream_create),
	OP(STREAM_DESTROY, OPF_NEEDS_CTX, op_stream_destroy),
	OP(STREAM_SYNCHRONIZE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_stream_sync),
	OP(STREAM_QUERY, OPF_NEEDS_CTX | OPF_SYNC_ONLY | OPF_NO_PRINT, op_stream_query),
	OP(STREAM_WAIT_EVENT, OPF_NEEDS_CTX, op_stream_wait_event),
	OP(HOST_FUNC, OPF_NEEDS_CTX, op_host_func),
	OP(EVENT_CREATE, OPF_NEEDS_CTX, op_event_create),
	OP(EVENT_DESTROY, OPF_NEEDS_CTX, op_event_destroy),
	OP(EVENT_RECORD, OPF_NEEDS_CTX, op_event_record),
	OP(EVENT_SYNCHRONIZE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_event_sync),
	OP(EVENT_QUERY, OPF_NEEDS_CTX | OPF_SYNC_ONLY | OPF_NO_PRINT, op_event_query),
	OP(EVENT_ELAPSED, OPF_NEEDS_CTX | OPF_SYNC_ONLY | OPF_NO_PRINT, op_event_elapsed),
	{ 0 },
};
