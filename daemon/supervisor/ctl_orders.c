// SPDX-License-Identifier: MIT
/*
 * The control socket's orders the supervisor carries out (admin.c reads
 * and answers the requests): sessions listed, checkpoints ordered and the
 * file each one leaves as the parent of the next, GPUs checked; and the
 * socket's connections accepted with their time to ask.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin.h"
#include "log.h"
#include "process_ckpt.h"
#include "supervisor_state.h"

/* gpu: an index the workers see, or -1; else -ENODEV and why. */
int sv_check_gpu(int gpu, char *why, size_t len)
{
	if (gpu >= 0 && gpu >= sv.gpus) {
		snprintf(why, len, "no GPU %d: vgpud's workers see %d", gpu, sv.gpus);
		return -ENODEV;
	}
	return 0;
}
/*
 * A checkpoint vgpuctl ordered is written: it is the session's last one,
 * the parent of its next incremental, and that one's parents with it when
 * it refers to them.
 */
void sv_new_last(struct wslot *ws)
{
	struct chain c = ws->ordered;

	if (ws->ckpt.result.incremental && ws->last.n && ws->last.n < VGPU_CKPT_MAX_CHAIN) {
		memcpy(c.fd + 1, ws->last.fd, ws->last.n * sizeof(int));
		c.n += ws->last.n;
		ws->last.n = 0;
	}
	chain_close(&ws->last);
	ws->last = c;
	memset(&ws->ordered, 0, sizeof(ws->ordered));
}
static size_t list_sessions(const struct ctl_caller *who, struct vgpu_ctl_session *out,
			    size_t max, uint64_t id)
{
	size_t n = 0;

	for (int i = 0; i < MAX_WORKERS && n < max; i++) {
		const struct wslot *ws = &sv.w[i];
		struct vgpu_ctl_session *r = &out[n];

		if (!ws->pid || ws->state != W_BUSY || ws->moved || (id && ws->session_id != id) ||
		    !ctl_may(who, ws->client_uid))
			continue;
		*r = (struct vgpu_ctl_session){
			.id = ws->session_id,
			.pid = ws->client_pid,
			.uid = ws->client_uid,
			.state = ws->closed ? VGPU_CTL_STATE_ENDING : VGPU_CTL_STATE_SERVING,
			.worker_pid = (uint32_t)ws->pid,
		};
		if (sv.stats) {
			const struct worker_stats *st = &sv.stats[i];

			r->device_bytes = __atomic_load_n(&st->device_bytes, __ATOMIC_RELAXED);
			r->pool_bytes = __atomic_load_n(&st->pool_bytes, __ATOMIC_RELAXED);
			r->state_done = __atomic_load_n(&st->state_done, __ATOMIC_RELAXED);
			r->state_total = __atomic_load_n(&st->state_total, __ATOMIC_RELAXED);
			r->gpu = __atomic_load_n(&st->gpu, __ATOMIC_RELAXED);
			memcpy(r->comm, st->comm, sizeof(r->comm));
			memcpy(r->carrier, st->carrier, sizeof(r->carrier));
			r->comm[sizeof(r->comm) - 1] = 0;
			r->carrier[sizeof(r->carrier) - 1] = 0;
		}
		n++;
	}
	return n;
}
/*
 * The file vgpuctl created and passes (its caller's, opened with its
 * caller's rights): a regular, empty file open for reading and writing.
 * The worker writes and syncs it through this descriptor; vgpuctl names it.
 */
static int check_target(int fd, char *why, size_t len)
{
	int fl = fcntl(fd, F_GETFL);
	struct stat st;

	if (fl < 0 || fstat(fd, &st) < 0) {
		snprintf(why, len, "the descriptor passed is not an open file");
		return -EBADF;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "the descriptor passed is not a regular file");
		return -EINVAL;
	}
	if ((fl & O_ACCMODE) != O_RDWR || (fl & O_APPEND)) {
		snprintf(why, len, "the file passed must be open for reading and writing, "
			 "not appending");
		return -EBADF;
	}
	if (st.st_size) {
		snprintf(why, len, "the file passed is not empty");
		return -EEXIST;
	}
	return 0;
}

static int order_checkpoint(const struct ctl_caller *who, int slot, uint64_t id, uint32_t flags,
			    const char *path, int fd, char *why, size_t len)
{
	static struct ckpt_order o;
	int ret = check_target(fd, why, len);

	if (ret)
		return ret;
	for (int i = 0; i < MAX_WORKERS; i++) {
		struct wslot *ws = &sv.w[i];
		unsigned np = 0;

		/* Another user's session is answered as one that is not there;
		 * a worker the session moved away from (not reaped yet) is not
		 * the session's: a checkpoint ordered of it failed as "ending". */
		if (!ws->pid || ws->state != W_BUSY || ws->session_id != id || ws->moved ||
		    !ctl_may(who, ws->client_uid))
			continue;
		if (ws->closed || ws->ctl < 0) {
			snprintf(why, len, "session %llu is ending", (unsigned long long)id);
			return -ESHUTDOWN;
		}
		if (ws->admin_slot >= 0 || !sv.stats) {
			snprintf(why, len, "a checkpoint of session %llu is already being written",
				 (unsigned long long)id);
			return -EBUSY;
		}
		memset(&o, 0, sizeof(o));
		o.type = WORDER_CHECKPOINT;
		o.flags = flags;
		snprintf(o.path, sizeof(o.path), "%s", path);
		/* The parent is the file the session's last checkpoint went to,
		 * kept open since: not a path opened again. */
		if (flags & VGPU_CTL_F_INCREMENTAL && ws->last.n &&
		    ws->last.n < VGPU_CKPT_MAX_CHAIN) {
			snprintf(o.parent, sizeof(o.parent), "%s", ws->last.path);
			np = ws->last.n;
		}
		chain_close(&ws->ordered);
		ret = chain_dup(&ws->ordered, &fd, 1, path);
		if (ret) {
			snprintf(why, len, "cannot keep the file: %s", strerror(-ret));
			return ret;
		}
		ret = ckpt_order_send(ws->ctl, &o, fd, ws->last.fd, np);
		if (ret) {
			chain_close(&ws->ordered);
			snprintf(why, len, "cannot reach session %llu's worker: %s",
				 (unsigned long long)id, strerror(-ret));
			return -EIO;
		}
		ws->admin_slot = slot;
		ws->stop_after = flags & VGPU_CTL_F_STOP;
		/* After the order is queued: the worker reads it once it sees this. */
		__atomic_store_n(&sv.stats[i].order_pending, 1, __ATOMIC_RELEASE);
		vlog_info("session %llu: checkpoint to %s ordered by uid %u",
			  (unsigned long long)id, path, who->uid);
		return 0;
	}
	snprintf(why, len, "no session %llu", (unsigned long long)id);
	return -ENOENT;
}
const struct admin_ops sv_admin_ops = { .list_sessions = list_sessions,
					.checkpoint = order_checkpoint,
					.migrate = sv_order_migrate,
					.restore = sv_order_restore,
					.process = sv_order_process };

void sv_arm_ctl_accept(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_accept(sqe, sv.ctl_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD(EV_CTL_ACCEPT, 0));
}

void sv_on_ctl_accept(int fd)
{
	int slot = admin_add(fd);
	struct io_uring_sqe *sqe;

	if (slot < 0)
		return;
	if (io_uring_sq_space_left(&sv.ring) < 2)
		io_uring_submit(&sv.ring);	/* the read and its time limit go together */
	sqe = io_uring_get_sqe(&sv.ring);
	/* With the descriptors the request brings, close-on-exec at once. */
	io_uring_prep_recvmsg(sqe, fd, admin_msg(slot), MSG_CMSG_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD(EV_CTL_READ, slot));
	/* A silent asker holds its place --hello-timeout seconds at most. */
	sqe->flags |= IOSQE_IO_LINK;
	sv.ctl_ts.tv_sec = sv.cfg->limits.hello_timeout;
	sqe = io_uring_get_sqe(&sv.ring);
	io_uring_prep_link_timeout(sqe, &sv.ctl_ts, 0);
	io_uring_sqe_set_data64(sqe, 0);
}
