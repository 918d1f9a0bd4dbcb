// SPDX-License-Identifier: MIT
/*
 * A session's checkpoint, written by its worker between two ring entries
 * (the client's next call waits until the file is complete). The order of
 * the file: VA window, contexts, allocations (records, then each one's
 * bytes), module images, functions, globals with their values, streams,
 * events, and the handle map (which context owns which handle).
 *
 * Device bytes of an uncompressed file are reserved in it and copied by
 * several threads at once (ckpt_bulk.h). Compressed, they go GPU -> the
 * writer's staging buffers (registered with the GPU once, so the copies
 * are DMA) -> zstd -> file, the io_uring writes of one buffer overlapping
 * the copy into the next.
 *
 * This file: an order carried out, streamed now or snapshotted in memory
 * during a pause and written while the program runs on. What goes into the
 * file is ckpt_collect.c's and ckpt_objects.c's (ckpt_run.h); the files an
 * order brings are ckpt_order.c's.
 */
#include "checkpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "barrier.h"
#include "ckpt.h"
#include "ckpt_parent.h"
#include "ckpt_run.h"
#include "ckpt_sink.h"
#include "clock.h"
#include "gpu_digest.h"
#include "log.h"
#include "migrate.h"
#include "worker.h"

/*
 * A checkpoint in flight. Snapshot mode: a thread prepares the pinned
 * buffer while the program runs (prep), the worker's main thread copies
 * everything during the pause (pause), a thread writes the file while the
 * program runs again (flush) and answers the supervisor.
 */
struct ckpt_job {
	struct worker *w;
	struct ckpt_order order;
	struct ckpt_answer a;
	struct vgpu_ckpt_gpu gpu;
	uint32_t driver;
	void *buf;
	size_t cap;
	bool registered;
	int state;			/* JOB_* */
	struct ckpt_sink *sink;
	uint64_t t_ordered;
	struct ckpt_parent parent;	/* incremental: opened with the order */
};

/* ABANDONED: the order was answered while its preparation hung in the
 * driver (behind GPU work that never ends); the thread frees the job. */
enum { JOB_PREPARING, JOB_READY, JOB_NO_BUFFER, JOB_ABANDONED };
static void answer(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a)
{
	if (a->status)
		vlog_warn("session %llu: checkpoint to %s failed: %s",
			  (unsigned long long)w->session_id, o->path, a->message);
	else
		vlog_info("session %llu: checkpoint to %s: %llu bytes of device memory, %llu "
			  "of host memory, %u allocations, %u modules; program paused %.3f s",
			  (unsigned long long)w->session_id, o->path,
			  (unsigned long long)a->result.device_bytes,
			  (unsigned long long)a->result.host_bytes, a->result.allocations,
			  a->result.modules, a->result.stall_ns / 1e9);
	if (send(w->ctl, a, sizeof(*a), MSG_NOSIGNAL) != sizeof(*a))
		vlog_warn("session %llu: cannot answer the supervisor: %s",
			  (unsigned long long)w->session_id, strerror(errno));
}

static int writer_open(struct worker *w, const struct ckpt_order *o,
		       const struct vgpu_ckpt_gpu *gpu, uint32_t driver, uint64_t prealloc,
		       const struct ckpt_parent *parent, struct vgpu_ckpt_writer **wr, char *err)
{
	struct vgpu_ckpt_writer_opts opts = { .gpu = gpu, .driver_version = driver,
					      .session_id = w->session_id,
					      .compress = o->flags & VGPU_CTL_F_COMPRESS ? 3 : 0,
					      .prealloc = prealloc,
					      .parent = parent ? parent->r : NULL };

	return vgpu_ckpt_writer_open_fd(wr, o->fd, o->path, &opts, err);
}

static int open_writer(struct ckpt_run *r, const struct ckpt_order *o,
		       const struct vgpu_ckpt_gpu *gpu, uint32_t driver,
		       struct vgpu_ckpt_writer **wr)
{
	char err[VGPU_CKPT_MSG];
	int ret = writer_open(r->w, o, gpu, driver, 0, r->parent, wr, err);

	return ret ? ckpt_run_fail(r, ret, "%s", err) : 0;
}

int worker_checkpoint_writer(struct worker *w, const struct ckpt_order *o, uint64_t prealloc,
			     struct vgpu_ckpt_writer **wr, char *err)
{
	struct vgpu_ckpt_gpu gpu;
	uint32_t driver;

	worker_gpu_identity(w, &gpu, &driver);
	return writer_open(w, o, &gpu, driver, prealloc, NULL, wr, err);
}

/*
 * --incremental: the session's last checkpoint, opened as the parent. With
 * none, or one that cannot serve, the checkpoint is a full one and the
 * answer's message says why.
 */
static void open_parent(struct worker *w, const struct ckpt_order *o, struct ckpt_parent *p,
			struct ckpt_answer *a)
{
	char why[VGPU_CKPT_MSG];

	memset(p, 0, sizeof(*p));
	if (!(o->flags & VGPU_CTL_F_INCREMENTAL))
		return;
	if (!o->parent[0]) {
		snprintf(a->message, sizeof(a->message),
			 "no earlier checkpoint of this session: a full one");
	} else if (ckpt_parent_open(p, o->parent_fds, o->nparent, o->parent, w->session_id, o->path,
				    why, sizeof(why))) {
		vlog_warn("session %llu: incremental checkpoint: %s; writing a full one",
			  (unsigned long long)w->session_id, why);
		snprintf(a->message, sizeof(a->message), "full, not incremental: %.88s", why);
	}
}

static void file_size(const struct ckpt_order *o, struct ckpt_answer *a)
{
	struct stat st;

	if (!a->status && !fstat(o->fd, &st))
		a->result.file_bytes = (uint64_t)st.st_size;
}

static int flushing;	/* files being written from memory */

/* Stream mode: the program waits for the whole file. */
static void checkpoint_now(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a)
{
	worker_checkpoint_file(w, o, a, NULL, NULL);
	answer(w, o, a);
	/* --stop: nothing the program does after the file may be lost, so
	 * the session ends here. Its program waits for `vgpuctl restore` of
	 * the file (VGPU_RESUME_TIMEOUT); over /dev/vgpu too, the module
	 * keeping the session's rings while the program holds it open. */
	if (!a->status && (o->flags & VGPU_CTL_F_STOP))
		worker_leave_suspended(w, o->path);
}

int worker_checkpoint_file(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a,
			   struct vgpu_ckpt_writer *wr, const struct ckpt_landing *land)
{
	struct ckpt_run r = { .w = w, .a = a, .digests = o->type != WORDER_MIGRATE };
	struct ckpt_parent parent = { 0 };
	struct vgpu_ckpt_gpu gpu;
	uint64_t t0 = vgpu_now_ns();
	uint32_t driver;
	size_t size;
	void *staging;
	bool registered;
	int ret;

	if (!wr) {
		open_parent(w, o, &parent, a);
		r.parent = parent.r ? &parent : NULL;
	}
	if (ckpt_run_drain(&r))
		goto out;
	worker_gpu_identity(w, &gpu, &driver);
	if (!wr && open_writer(&r, o, &gpu, driver, &wr))
		goto out;
	vgpu_ckpt_writer_buffers(wr, &staging, &size);
	/* Pinned staging makes the device copies DMA; without it they still work. */
	registered = !w->B.cuMemHostRegister_v2(staging, size, 0);
	r.sink = ckpt_sink_stream(&w->B, wr, !(o->flags & VGPU_CTL_F_COMPRESS));
	if (r.sink)
		ckpt_sink_landing(r.sink, land);
	if (r.sink)
		ckpt_sink_progress(r.sink, worker_progress_begin(w, w->vmem.in_use + w->vmem.created +
								    w->pool.in_use));
	ret = r.sink ? ckpt_run_collect(&r) : ckpt_run_fail(&r, -ENOMEM, "out of memory");
	if (!ret && (ret = vgpu_ckpt_finish(wr)))
		ckpt_run_fail(&r, ret, "%s", vgpu_ckpt_writer_error(wr));
	if (registered)
		w->B.cuMemHostUnregister(staging);
	ckpt_sink_free(r.sink);
	file_size(o, a);
out:
	worker_progress_end(w);
	vgpu_ckpt_writer_close(wr);	/* not finished: its temporary file goes */
	ckpt_parent_close(&parent);
	a->result.stall_ns = a->result.total_ns = vgpu_now_ns() - t0;
	return a->status;
}

/* /proc/meminfo's MemAvailable, bytes (0 if unknown). */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kb = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

static void job_free(struct ckpt_job *j);

/* The preparation's outcome; an abandoned job is the thread's to free. */
static void prepared(struct ckpt_job *j, int state)
{
	int expect = JOB_PREPARING;

	if (!__atomic_compare_exchange_n(&j->state, &expect, state, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		job_free(j);
}

static void *prepare(void *arg)
{
	struct ckpt_job *j = arg;
	struct worker *w = j->w;
	int state = JOB_NO_BUFFER;
	char why[160];

	if (!j->cap) {		/* incremental: no buffer, the digest kernel only */
		if (gpu_digest_prepare(&w->B, w->primary[0], why, sizeof(why)))
			vlog_warn("session %llu: %s", (unsigned long long)w->session_id, why);
		prepared(j, JOB_READY);
		return NULL;
	}
	j->buf = mmap(NULL, j->cap, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_NORESERVE, -1, 0);
	if (j->buf == MAP_FAILED) {
		j->buf = NULL;
	} else if (!w->B.cuCtxSetCurrent(w->primary[0]) &&
		   !w->B.cuMemHostRegister_v2(j->buf, j->cap, 0)) {
		j->registered = true;
		state = JOB_READY;
		/* The digest kernel compiled now, not while the program waits. */
		if (gpu_digest_prepare(&w->B, w->primary[0], why, sizeof(why)))
			vlog_warn("session %llu: %s", (unsigned long long)w->session_id, why);
	}
	prepared(j, state);
	return NULL;
}

static void job_free(struct ckpt_job *j)
{
	if (j->registered) {
		j->w->B.cuCtxSetCurrent(j->w->primary[0]);
		j->w->B.cuMemHostUnregister(j->buf);
	}
	if (j->buf)
		munmap(j->buf, j->cap);
	ckpt_sink_free(j->sink);
	ckpt_parent_close(&j->parent);
	ckpt_order_close(&j->order);
	free(j);
}

/* After the pause: the file from memory, while the program runs. */
static void *flush(void *arg)
{
	struct ckpt_job *j = arg;
	struct ckpt_run r = { .w = j->w, .a = &j->a,
			      .parent = j->parent.r ? &j->parent : NULL };
	struct vgpu_ckpt_writer *wr = NULL;
	int ret;

	if (!open_writer(&r, &j->order, &j->gpu, j->driver, &wr)) {
		ret = ckpt_sink_flush(j->sink, wr);
		if (ret)
			ckpt_run_fail(&r, ret, "%s", ckpt_sink_error(j->sink));
		else if ((ret = vgpu_ckpt_finish(wr)))
			ckpt_run_fail(&r, ret, "%s", vgpu_ckpt_writer_error(wr));
		vgpu_ckpt_writer_close(wr);
		file_size(&j->order, &j->a);
	}
	j->a.result.total_ns = vgpu_now_ns() - j->t_ordered;
	j->a.result.snapshot = 1;
	answer(j->w, &j->order, &j->a);
	job_free(j);
	__atomic_sub_fetch(&flushing, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Snapshot mode, the pause: everything into memory, then the program goes on. */
static void pause_and_copy(struct ckpt_job *j)
{
	struct worker *w = j->w;
	struct ckpt_run r = { .w = w, .a = &j->a, .digests = true,
			      .parent = j->parent.r ? &j->parent : NULL };
	uint64_t t0 = vgpu_now_ns();
	pthread_t t;

	if (ckpt_run_drain(&r))
		goto fail;
	worker_gpu_identity(w, &j->gpu, &j->driver);
	r.sink = j->sink = ckpt_sink_snapshot(&w->B, j->buf, j->cap);
	if (!j->sink) {
		ckpt_run_fail(&r, -ENOMEM, "out of memory");
		goto fail;
	}
	ckpt_sink_progress(j->sink, worker_progress_begin(w, w->vmem.in_use + w->vmem.created +
							     w->pool.in_use));
	if (ckpt_run_collect(&r))
		goto fail;
	worker_progress_end(w);
	j->a.result.stall_ns = vgpu_now_ns() - t0;
	__atomic_add_fetch(&flushing, 1, __ATOMIC_ACQUIRE);
	if (!pthread_create(&t, NULL, flush, j)) {
		pthread_detach(t);
		return;
	}
	flush(j);	/* no thread: write it now, the program waits */
	return;
fail:
	worker_progress_end(w);
	j->a.result.stall_ns = vgpu_now_ns() - t0;
	answer(w, &j->order, &j->a);
	job_free(j);
}

void worker_checkpoint_start(struct worker *w, const struct ckpt_order *in)
{
	struct ckpt_job *j = calloc(1, sizeof(*j));
	uint64_t want = w->vmem.in_use + w->vmem.created + (64ull << 20);
	const struct ckpt_order *o = in;
	pthread_t t;

	if (!j)
		ckpt_order_drop_fds(w->ctl);
	if (j) {
		j->order = *in;
		o = &j->order;
		if (ckpt_order_recv_fds(w->ctl, &j->order)) {
			struct ckpt_answer a = { .type = WMSG_CHECKPOINTED, .status = -EBADF };

			snprintf(a.message, sizeof(a.message), "the order came without its file");
			answer(w, o, &a);
			free(j);
			return;
		}
		j->w = w;
		j->a.type = WMSG_CHECKPOINTED;
		j->t_ordered = vgpu_now_ns();
		open_parent(w, o, &j->parent, &j->a);
		/* Incremental: what changed is not known before the pause, and
		 * often nothing has: no pinned buffer (pinning one takes longer
		 * than such a checkpoint); what changed goes to the heap. */
		if (j->parent.r)
			want = 0;
		j->cap = want;
	}
	/* Snapshot only with room to spare: else the pages would be swapped. */
	/* --stop waits for the file: the program may not run on after the state. */
	if (j && !(o->flags & (VGPU_CTL_F_DIRECT | VGPU_CTL_F_STOP)) &&
	    mem_available() > want + want / 4 + (1ull << 30) &&
	    !pthread_create(&t, NULL, prepare, j)) {
		pthread_detach(t);
		w->ckpt_job = j;
		return;
	}
	if (j) {
		ckpt_parent_close(&j->parent);	/* opened again by the file's writer */
		checkpoint_now(w, o, &j->a);
		ckpt_order_close(&j->order);
		free(j);
	} else {
		struct ckpt_answer a = { .type = WMSG_CHECKPOINTED, .status = -ENOMEM };

		snprintf(a.message, sizeof(a.message), "out of memory");
		answer(w, o, &a);
	}
}

void worker_checkpoint_poll(struct worker *w)
{
	struct ckpt_job *j = w->ckpt_job;
	int state = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);

	if (state == JOB_PREPARING)
		return;
	w->ckpt_job = NULL;
	if (state == JOB_READY) {
		pause_and_copy(j);
	} else {
		checkpoint_now(w, &j->order, &j->a);
		job_free(j);
	}
}

void worker_checkpoint_refuse(struct worker *w, int err, const char *why)
{
	struct ckpt_job *j = w->ckpt_job;

	uint64_t end = vgpu_now_ns() + (uint64_t)w->cfg.order_wait_ms * 1000000;
	int expect = JOB_PREPARING;

	if (!j)
		return;
	while (__atomic_load_n(&j->state, __ATOMIC_ACQUIRE) == JOB_PREPARING &&
	       vgpu_now_ns() < end)
		usleep(1000);
	w->ckpt_job = NULL;
	j->a.status = err;
	snprintf(j->a.message, sizeof(j->a.message), "%s", why);
	answer(w, &j->order, &j->a);
	/* Pinning the buffer can wait on GPU work that never ends: the
	 * session goes on (or ends) without it. */
	if (__atomic_compare_exchange_n(&j->state, &expect, JOB_ABANDONED, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		vlog_warn("session %llu: a checkpoint buffer is still being prepared; left to "
			  "its thread", (unsigned long long)w->session_id);
		return;
	}
	job_free(j);
}

void worker_checkpoint_finish(struct worker *w)
{
	/* A buffer still being prepared: its order will not be carried out. */
	worker_checkpoint_refuse(w, -ESHUTDOWN, "the session ended first");
	/* A file being written from memory is finished: its data is all here. */
	while (__atomic_load_n(&flushing, __ATOMIC_ACQUIRE))
		usleep(1000);
}
