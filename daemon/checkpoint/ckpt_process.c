// SPDX-License-Identifier: MIT
/*
 * A session held for NVIDIA's process-checkpoint API (ckpt_process.h).
 */
#include "ckpt_process.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checkpoint.h"
#include "log.h"
#include "worker.h"

static void answer(struct worker *w, int status, const char *fmt, const char *what)
{
	struct ckpt_answer a = { .type = WMSG_CHECKPOINTED, .status = status };

	if (fmt)
		snprintf(a.message, sizeof(a.message), fmt, (unsigned long long)w->session_id,
			 what ? what : "");
	if (send(w->ctl, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
		vlog_warn("cannot answer the supervisor: %s", strerror(errno));
}

/* "Pending work drains": every context's work done. A context broken by
 * the program's own work stays broken and answers it at its next call. */
static void drain(struct worker *w)
{
	struct obj_entry *e;
	uint32_t i;

	obj_for_each(&w->ctxs, i, e) {
		CUresult rc = w->B.cuCtxSetCurrent(e->obj);

		if (!rc)
			rc = w->B.cuCtxSynchronize();
		if (rc)
			vlog_info("session %llu: context %u drained with CUDA error %d",
				  (unsigned long long)w->session_id, i, rc);
	}
	w->cur_ctx = 0;		/* the next entry sets its own context again */
}

void worker_process_order(struct worker *w, uint32_t type, const char *stalled)
{
	if (type == WORDER_UNLOCK) {
		if (!w->locked)
			return answer(w, -EBADFD, "session %llu is not locked%s", NULL);
		w->locked = false;
		vlog_info("session %llu: unlocked", (unsigned long long)w->session_id);
		return answer(w, 0, NULL, NULL);
	}
	if (w->locked)
		return answer(w, -EBADFD, "session %llu is locked already%s", NULL);
	if (stalled)
		return answer(w, -ETIMEDOUT, "session %llu cannot be locked: it is stalled (%s)",
			      stalled);
	drain(w);
	w->locked = true;
	vlog_info("session %llu: locked", (unsigned long long)w->session_id);
	answer(w, 0, NULL, NULL);
}

bool worker_hold(struct worker *w, int ms)
{
	/* Only hang-ups on the client's socket: what it writes there must
	 * not turn the wait into a spin (POLLHUP and POLLERR always come). */
	struct pollfd p[2] = {
		{ .fd = w->sock, .events = POLLRDHUP },
		{ .fd = w->ctl, .events = POLLIN },
	};

	if (w->ckpt_job || w->move_job)
		ms = 1;		/* a checkpoint being prepared is looked at often */
	if (poll(p, 2, ms) < 0)
		p[0].revents = p[1].revents = 0;
	if (p[1].revents & (POLLHUP | POLLERR))
		usleep((useconds_t)ms * 1000);	/* no supervisor: nothing to wait for */
	else if ((p[1].revents & POLLIN) &&
		 !(w->stats && __atomic_load_n(&w->stats->order_pending, __ATOMIC_ACQUIRE)))
		usleep(100);	/* the order is read once the supervisor flags it */
	return !worker_client_gone(w);
}
