// SPDX-License-Identifier: MIT
/*
 * The old worker's end of a session's move (migrate.h): the file made
 * ready while the program runs on, the hand-over to the new worker, and
 * suspending a session to a file (migrate.c rebuilds it).
 */
#include "ckpt_calls.h"
#include "migrate.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "array_state.h"
#include "barrier.h"
#include "ckpt.h"
#include "ckpt_bulk.h"
#include "clock.h"
#include "fdpass.h"
#include "host_image.h"
#include "ipc.h"
#include "log.h"
#include "retained.h"
#include "worker.h"


__attribute__((format(printf, 3, 4)))
static int refuse_move(struct worker *w, int err, const char *fmt, ...)
{
	struct ckpt_answer a = { .type = WMSG_MIGRATING, .status = err };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a.message, sizeof(a.message), fmt, ap);
	va_end(ap);
	vlog_warn("session %llu: not moved: %s", (unsigned long long)w->session_id, a.message);
	migrate_say(w, &a);
	return err;
}

/* A move's file, made ready by a thread while the program runs on. */
struct move_job {
	struct worker *w;
	struct ckpt_order order;
	struct vgpu_ckpt_writer *wr;	/* NULL: opened in the pause instead */
	uint64_t prealloc;
	struct ckpt_landing land;	/* the file mapped and pinned; map NULL: not */
	int done;
};

/*
 * The file, its blocks allocated, mapped and registered with the GPU: the
 * pause then copies device memory straight into it (DMA at the link's
 * rate), not through the copy threads' buffers and a write each.
 */
static void land_map(struct move_job *j)
{
	struct worker *w = j->w;
	void *m = mmap(NULL, j->prealloc, PROT_READ | PROT_WRITE, MAP_SHARED,
		       vgpu_ckpt_writer_fd(j->wr), 0);

	if (m == MAP_FAILED)
		return;
	if (w->B.cuCtxSetCurrent(w->primary[0]) || w->B.cuMemHostRegister_v2(m, j->prealloc, 0)) {
		munmap(m, j->prealloc);
		return;
	}
	j->land = (struct ckpt_landing){ .map = m, .len = j->prealloc };
}

static void land_unmap(struct move_job *j)
{
	if (!j->land.map)
		return;
	j->w->B.cuCtxSetCurrent(j->w->primary[0]);
	j->w->B.cuMemHostUnregister(j->land.map);
	munmap(j->land.map, j->land.len);
	j->land.map = NULL;
}

static void *move_prepare(void *arg)
{
	struct move_job *j = arg;
	char err[VGPU_CKPT_MSG];

	if (worker_checkpoint_writer(j->w, &j->order, j->prealloc, &j->wr, err)) {
		vlog_warn("session %llu: the move's file cannot be prepared: %s",
			  (unsigned long long)j->w->session_id, err);
		j->wr = NULL;
	} else {
		land_map(j);
	}
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

void worker_migrate_start(struct worker *w, const struct ckpt_order *o)
{
	struct move_job *j = calloc(1, sizeof(*j));
	pthread_t t;

	if (!j) {
		ckpt_order_drop_fds(w->ctl);
		return (void)refuse_move(w, -ENOMEM, "out of memory");
	}
	j->order = *o;
	if (ckpt_order_recv_fds(w->ctl, &j->order)) {
		free(j);
		return (void)refuse_move(w, -EBADF, "the order came without the move's file");
	}
	j->w = w;
	/* The device and pool bytes, and room for the rest of the state. */
	j->prealloc = w->vmem.in_use + w->vmem.created + w->pool.in_use + (64ull << 20);
	if (pthread_create(&t, NULL, move_prepare, j)) {
		worker_migrate_out(w, &j->order, NULL, NULL);
		ckpt_order_close(&j->order);
		free(j);
		return;
	}
	pthread_detach(t);
	w->move_job = j;
}

void worker_migrate_poll(struct worker *w)
{
	struct move_job *j = w->move_job;

	if (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE))
		return;
	w->move_job = NULL;
	worker_migrate_out(w, &j->order, j->wr, &j->land);
	land_unmap(j);
	ckpt_order_close(&j->order);
	free(j);
}

void worker_migrate_refuse(struct worker *w, int err, const char *why)
{
	struct move_job *j = w->move_job;

	if (!j)
		return;
	while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE))
		usleep(1000);
	land_unmap(j);
	vgpu_ckpt_writer_close(j->wr);	/* not finished: its temporary file goes */
	refuse_move(w, err, "%s", why);
	w->move_job = NULL;
	ckpt_order_close(&j->order);
	free(j);
}

void worker_migrate_finish(struct worker *w)
{
	worker_migrate_refuse(w, -ESHUTDOWN, "the session ended first");
}

void worker_migrate_out(struct worker *w, const struct ckpt_order *o, struct vgpu_ckpt_writer *wr,
			const struct ckpt_landing *land)
{
	struct ckpt_answer a = { 0 };
	struct migrate_state st = { .wl = w->wl, .deferred = w->deferred,
				    .carrier = w->ring.kmod ? VGPU_CARRIER_KMOD : VGPU_CARRIER_MEMFD };
	struct migrate_verdict v;
	/* Over /dev/vgpu the rings are the module's: the next worker maps
	 * them through this worker's fd (the module keeps the session while
	 * any worker fd is open). */
	int fds[MIGRATE_KMOD_FDS] = { w->sock, w->region_fd, w->bell_fd, w->pool.fd,
				      w->print_out, w->kmod.fd };
	uint64_t paused_at = vgpu_now_ns();

	if (w->cb_posted != __atomic_load_n(&w->cb_finished, __ATOMIC_ACQUIRE)) {
		vgpu_ckpt_writer_close(wr);
		return (void)refuse_move(w, -EBUSY, "host callbacks are pending");
	}
	for (int i = 0; i < 2000 && waiter_busy(); i++)
		usleep(1000);
	if (waiter_busy()) {
		vgpu_ckpt_writer_close(wr);
		return (void)refuse_move(w, -EBUSY, "a wait is still being answered");
	}
	if (ipc_move_refusal(w)) {
		vgpu_ckpt_writer_close(wr);
		return (void)refuse_move(w, -EOPNOTSUPP, "%s", ipc_move_refusal(w));
	}
	if (worker_checkpoint_file(w, o, &a, wr, land)) {
		a.type = WMSG_MIGRATING;
		migrate_say(w, &a);
		return;
	}
	worker_sq_release(&w->ring);	/* every entry taken is the next worker's */
	memcpy(st.comm, w->comm, sizeof(st.comm));
	a.type = WMSG_MIGRATING;
	a.result.paused_at_ns = paused_at;
	migrate_say(w, &a);
	if (vgpu_send_fds(w->ctl, &st, sizeof(st), fds, (int)migrate_session_fds(&st)) < 0) {
		vlog_warn("session %llu: cannot hand the session over: %s",
			  (unsigned long long)w->session_id, strerror(errno));
		return;
	}
	/* The client waits until the supervisor says who serves it. */
	if (recv(w->ctl, &v, sizeof(v), 0) != sizeof(v))
		v.status = -EPIPE;
	if (v.status) {
		vlog_warn("session %llu: the move failed (%d): serving on",
			  (unsigned long long)w->session_id, v.status);
		return;
	}
	vlog_info("session %llu: moved to another worker", (unsigned long long)w->session_id);
	w->moved = true;
}

void worker_suspend(struct worker *w, const struct ckpt_order *in)
{
	struct ckpt_answer a = { .type = WMSG_CHECKPOINTED };
	struct ckpt_order *o = malloc(sizeof(*o));

	if (!o) {
		ckpt_order_drop_fds(w->ctl);
		a.status = -ENOMEM;
		snprintf(a.message, sizeof(a.message), "out of memory");
		migrate_say(w, &a);
		return;
	}
	*o = *in;
	if (ckpt_order_recv_fds(w->ctl, o)) {
		a.status = -EBADF;
		snprintf(a.message, sizeof(a.message), "the order came without its file");
	} else if (w->ring.kmod) {
		a.status = -EOPNOTSUPP;
		snprintf(a.message, sizeof(a.message), "sessions over /dev/vgpu cannot be suspended yet");
	} else if (w->cb_posted != __atomic_load_n(&w->cb_finished, __ATOMIC_ACQUIRE)) {
		a.status = -EBUSY;
		snprintf(a.message, sizeof(a.message), "host callbacks are pending");
	} else if (!worker_checkpoint_file(w, o, &a, NULL, NULL)) {
		worker_leave_suspended(w, o->path);
	}
	ckpt_order_close(o);
	free(o);
	a.type = WMSG_CHECKPOINTED;
	migrate_say(w, &a);
}

void worker_leave_suspended(struct worker *w, const char *path)
{
	worker_sq_release(&w->ring);
	/* Before the worker goes: the client sees this, not a dead worker. */
	write_once(&w->ring.sh->state, VGPU_WORKER_SUSPENDED);
	w->moved = true;
	vlog_info("session %llu: suspended to %s; its program waits to be taken up",
		  (unsigned long long)w->session_id, path);
}

