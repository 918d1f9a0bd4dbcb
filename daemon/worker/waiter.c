// SPDX-License-Identifier: MIT
/*
 * Waits that would stall the ring (a stream, event or context
 * synchronize) run here, on their own thread, so one client thread waiting
 * on a long kernel never holds up another thread's launches. The answer is
 * posted once the wait is over.
 */
#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "worker.h"

#define SPIN_NS 30000	/* poll this long before handing a wait over */

struct wait_job {
	struct wait_job *next;
	CUcontext ctx;
	CUevent ev;		/* NULL: synchronize the whole context */
	int own_ev;		/* return ev to the pool afterwards */
	struct vgpu_cqe cqe;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct wait_job *head, **tail;
	CUevent pool[64];
	int npool;
	struct worker *w;
	bool running;			/* a job taken and not yet answered */
} q = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

bool waiter_busy(void)
{
	bool busy;

	pthread_mutex_lock(&q.lock);
	busy = q.head || q.running;
	pthread_mutex_unlock(&q.lock);
	return busy;
}

static void *waiter_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		struct wait_job *j;
		CUresult rc;

		pthread_mutex_lock(&q.lock);
		while (!q.head)
			pthread_cond_wait(&q.cond, &q.lock);
		j = q.head;
		q.head = j->next;
		if (!q.head)
			q.tail = &q.head;
		q.running = true;
		pthread_mutex_unlock(&q.lock);

		rc = w->B.cuCtxSetCurrent(j->ctx);
		if (!rc)
			rc = j->ev ? w->B.cuEventSynchronize(j->ev) : w->B.cuCtxSynchronize();
		if (!j->cqe.result)
			j->cqe.result = rc;
		worker_post(w, &j->cqe);
		pthread_mutex_lock(&q.lock);
		q.running = false;
		pthread_mutex_unlock(&q.lock);
		if (j->own_ev) {
			pthread_mutex_lock(&q.lock);
			if (q.npool < 64)
				q.pool[q.npool++] = j->ev;
			else
				w->B.cuEventDestroy_v2(j->ev);
			pthread_mutex_unlock(&q.lock);
		}
		free(j);
	}
	return NULL;
}

int waiter_start(struct worker *w)
{
	pthread_t t;
	int ret;

	q.tail = &q.head;
	q.w = w;
	ret = pthread_create(&t, NULL, waiter_main, w);
	if (ret)
		return -ret;
	pthread_detach(t);
	return 0;
}

static void enqueue(struct worker *w, CUevent ev, int own_ev, const struct vgpu_cqe *cqe)
{
	struct wait_job *j = malloc(sizeof(*j));
	CUcontext ctx = NULL;
	struct obj_entry *e = obj_get(&w->ctxs, w->cur_ctx);

	if (e)
		ctx = e->obj;
	if (!j) {
		struct vgpu_cqe c = *cqe;

		c.result = CUDA_ERROR_OUT_OF_MEMORY;
		worker_post(w, &c);
		return;
	}
	*j = (struct wait_job){ .ctx = ctx, .ev = ev, .own_ev = own_ev, .cqe = *cqe };
	pthread_mutex_lock(&q.lock);
	*q.tail = j;
	q.tail = &j->next;
	pthread_cond_signal(&q.cond);
	pthread_mutex_unlock(&q.lock);
}

void waiter_after_event(struct worker *w, CUevent ev, uint32_t ctx_id,
			const struct vgpu_cqe *cqe)
{
	(void)ctx_id;
	enqueue(w, ev, 0, cqe);
}

void waiter_after_ctx_sync(struct worker *w, uint32_t ctx_id, const struct vgpu_cqe *cqe)
{
	(void)ctx_id;
	enqueue(w, NULL, 0, cqe);
}

static CUresult pool_event(struct worker *w, CUevent *ev)
{
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&q.lock);
	if (q.npool)
		*ev = q.pool[--q.npool];
	else
		rc = w->B.cuEventCreate(ev, CU_EVENT_DISABLE_TIMING);
	pthread_mutex_unlock(&q.lock);
	return rc;
}

CUresult waiter_poll(struct worker *w, CUstream s)
{
	CUresult rc;

	/* Short work (a small copy, an empty kernel) is done within
	 * microseconds: answer here rather than pay for a thread handoff. */
	for (uint64_t t0 = vgpu_now_ns(), i = 0;; i++) {
		rc = w->B.cuStreamQuery(s);
		if (rc != CUDA_ERROR_NOT_READY)
			return rc;
		if ((i & 7) == 7 && vgpu_now_ns() - t0 > SPIN_NS)
			return rc;
	}
}

enum op_status reply_after_stream(struct worker *w, struct op_call *call, CUstream s)
{
	struct vgpu_cqe *c = call->cqe;
	CUevent ev;
	CUresult rc = waiter_poll(w, s);

	/* Found done by a query, which need not flush the device's printf
	 * buffer: when something may have printed, a synchronization of the
	 * finished stream (immediate) flushes it, as the program's sync would. */
	if (!rc && __atomic_load_n(&w->print_dirty, __ATOMIC_RELAXED))
		rc = w->B.cuStreamSynchronize(s);
	if (rc != CUDA_ERROR_NOT_READY) {
		c->result = rc;
		return OP_DONE;
	}
	rc = pool_event(w, &ev);
	if (!rc)
		rc = w->B.cuEventRecordWithFlags(ev, s, 0);
	if (rc) {
		/* No event to wait on: wait right here instead. */
		c->result = w->B.cuStreamSynchronize(s);
		return OP_DONE;
	}
	worker_fold_deferred(w, c);
	enqueue(w, ev, 1, c);
	return OP_LATER;
}
