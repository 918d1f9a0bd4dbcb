// SPDX-License-Identifier: MIT
/*
 * NVIDIA's process-checkpoint API on the control socket (VGPU_CTL_PROCESS,
 * include/vgpu/ctl.h): a process's session locked, checkpointed into the
 * daemon's memory, restored and unlocked by any caller that may act on it
 * (the control socket's rule: its own uid, root, the admin group).
 *
 * The states, as NVIDIA names them:
 *   RUNNING       the session's worker serves it
 *   LOCKED        its worker holds it (ckpt_process.h): entries wait in the
 *                 ring, GPU work drained
 *   CHECKPOINTED  parked here: its worker wrote the state to a memfd of
 *                 ours and ended (GPU memory and contexts freed); we hold
 *                 the session's socket, region, doorbell, pool and stdout,
 *                 so the program notices nothing but the wait
 * A checkpoint is a move (session_move.c, migrate.h) whose hand-over waits
 * here; a restore is its second half, into an idle worker that starts
 * held. A failed restore leaves the session parked: it may be tried again.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_process.h"
#include "clock.h"
#include "fdpass.h"
#include "log.h"
#include "process_ckpt.h"
#include "supervisor_state.h"

#define MAX_PARKED 64

/* What a worker slot's pending process action is (wslot.proc_action). */
enum { PROC_NONE, PROC_LOCK, PROC_UNLOCK, PROC_CHECKPOINT, PROC_RESTORE,
       PROC_LOCK_TOO_LATE };	/* a lock past its timeout being undone */

struct parked {
	bool used;
	uint16_t gen;			/* counts the sessions this slot has held */
	uint64_t session;
	uint32_t pid, uid, gid;
	int gpu;			/* the GPU its device 0 was on */
	struct migrate_state st;
	int fds[MIGRATE_KMOD_FDS];	/* socket, region, doorbell, pool, stdout, and
					 * over /dev/vgpu the worker fd (it keeps the
					 * module's session) */
	unsigned nfds;
	uint64_t kmod_session;
	struct chain file;		/* the memfd with its state */
	struct vgpu_ctl_checkpoint figures;
};

static struct parked parked[MAX_PARKED];

static uint64_t parked_ud(int k)
{
	return UD(EV_PARKED, (uint32_t)k | (uint32_t)parked[k].gen << 16);
}

static struct io_uring_sqe *sqe_get(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	if (!sqe) {
		io_uring_submit(&sv.ring);
		sqe = io_uring_get_sqe(&sv.ring);
	}
	return sqe;
}

/* The program's end of the session hanging up is how a parked one ends. */
static void watch(int k)
{
	struct io_uring_sqe *sqe = sqe_get();

	if (!sqe)
		return;
	io_uring_prep_poll_add(sqe, parked[k].fds[0], POLLRDHUP);
	io_uring_sqe_set_data64(sqe, parked_ud(k));
}

static void unpark(struct parked *pk)
{
	struct io_uring_sqe *sqe = sqe_get();
	uint16_t gen = pk->gen;

	if (sqe) {	/* its watch goes: the socket lives on in a worker */
		io_uring_prep_poll_remove(sqe, parked_ud((int)(pk - parked)));
		io_uring_sqe_set_data64(sqe, 0);
	}
	vgpu_fds_close(pk->fds, pk->nfds);
	chain_close(&pk->file);
	memset(pk, 0, sizeof(*pk));
	pk->gen = gen;
}

void sv_on_parked(uint32_t idx, int res)
{
	struct parked *pk = &parked[idx & 0xffff];

	if ((idx & 0xffff) >= MAX_PARKED || !pk->used || pk->gen != (uint16_t)(idx >> 16))
		return;		/* restored meanwhile: the watch was for an old one */
	if (res < 0) {
		if (res != -ECANCELED)
			watch((int)(pk - parked));
		return;
	}
	vlog_info("session %llu: its program went while checkpointed",
		  (unsigned long long)pk->session);
	unpark(pk);
}

/* The memfd's bytes into a new file @tmp, synced. */
static int copy_out(int from, const char *tmp)
{
	char buf[1 << 16];
	off_t off = 0;
	ssize_t n;
	int to = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), err = 0;

	if (to < 0)
		return -errno;
	while ((n = pread(from, buf, sizeof(buf), off)) > 0) {
		if (write(to, buf, (size_t)n) != n) {
			err = -EIO;
			break;
		}
		off += n;
	}
	if (n < 0)
		err = -errno;
	if (!err && fsync(to))
		err = -errno;
	close(to);
	return err;
}

/*
 * --checkpoint-on-exit: a parked session's state is a checkpoint already.
 * It goes to DIR/session-N.vgc as a drain's would, and its program is told
 * to wait for a daemon to take it up (vgpud --restore DIR), as a suspended
 * one is. Over /dev/vgpu the module ends the session with this daemon:
 * nothing to keep.
 */
void sv_parked_drain(const char *dir)
{
	for (int k = 0; k < MAX_PARKED; k++) {
		struct parked *pk = &parked[k];
		char path[PATH_MAX], tmp[PATH_MAX + 32];
		struct vgpu_shared *sh;
		int err;

		if (!pk->used)
			continue;
		if (pk->kmod_session) {
			vlog_warn("session %llu: checkpointed over /dev/vgpu; it ends with this daemon",
				  (unsigned long long)pk->session);
			continue;
		}
		snprintf(path, sizeof(path), "%s/session-%llu.vgc", dir,
			 (unsigned long long)pk->session);
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
		err = copy_out(pk->file.fd[0], tmp);
		if (!err && rename(tmp, path))
			err = -errno;
		if (err) {
			unlink(tmp);
			vlog_warn("session %llu: its checkpoint cannot be kept in %s: %s",
				  (unsigned long long)pk->session, dir, strerror(-err));
			continue;
		}
		sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, pk->fds[1], 0);
		if (sh != MAP_FAILED) {
			/* The program sees this, not a dead worker, when we go. */
			__atomic_store_n(&sh->state, VGPU_WORKER_SUSPENDED, __ATOMIC_RELEASE);
			munmap(sh, sizeof(*sh));
		}
		vlog_info("session %llu: checkpointed for process %u, kept in %s",
			  (unsigned long long)pk->session, pk->pid, path);
	}
}

static struct parked *find_parked(const struct ctl_caller *who, uint32_t pid)
{
	for (int k = 0; k < MAX_PARKED; k++)
		if (parked[k].used && parked[k].pid == pid && ctl_may(who, parked[k].uid))
			return &parked[k];
	return NULL;
}

/* The worker serving @pid's session (a restore's new one included). */
static int find_live(const struct ctl_caller *who, uint32_t pid)
{
	for (int i = 0; i < MAX_WORKERS; i++) {
		const struct wslot *ws = &sv.w[i];

		if (ws->pid && ws->state == W_BUSY && ws->client_pid == pid && !ws->moved &&
		    ctl_may(who, ws->client_uid))
			return i;
	}
	return -1;
}

/* A lock or unlock order: no descriptor follows it. */
static int send_order(int i, uint32_t type)
{
	static struct ckpt_order o;

	memset(&o, 0, sizeof(o));
	o.type = type;
	if (send(sv.w[i].ctl, &o, sizeof(o), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(o))
		return -EIO;
	__atomic_store_n(&sv.stats[i].order_pending, 1, __ATOMIC_RELEASE);
	return 0;
}

static int order_checkpoint(int i, char *why, size_t len)
{
	static struct ckpt_order o;
	struct wslot *ws = &sv.w[i];
	int ret;

	memset(&o, 0, sizeof(o));
	o.type = WORDER_MIGRATE;
	snprintf(o.path, sizeof(o.path), "memfd:vgpu-process-%u", ws->client_pid);
	/* The daemon's own file, reachable by no name: the state stays ours. */
	ret = sv_order_move_file(ws, &o, "vgpu-process", why, len);
	if (ret < 0)
		return ret;
	if (ret) {
		snprintf(why, len, "cannot reach the session's worker");
		return -EIO;
	}
	__atomic_store_n(&sv.stats[i].order_pending, 1, __ATOMIC_RELEASE);
	return 0;
}

static int order_restore(const struct parked *pk, int gpu, char *why, size_t len)
{
	static struct worker_handoff h;
	int fds[MIGRATE_MAX_FDS], j;

	for (j = 0; j < MAX_WORKERS; j++)
		if (sv.w[j].pid && sv.w[j].state == W_IDLE)
			break;
	if (j == MAX_WORKERS) {
		snprintf(why, len, "no idle worker to restore the session in");
		return -EAGAIN;
	}
	memset(&h, 0, sizeof(h));
	h.session_id = pk->session;
	h.uid = pk->uid;
	h.gid = pk->gid;
	h.pid = pk->pid;
	h.type = HANDOFF_RESUME;
	h.flags = HANDOFF_F_LOCKED;
	h.gpu = gpu >= 0 ? gpu : pk->gpu;
	h.st = pk->st;
	snprintf(h.path, sizeof(h.path), "memfd:vgpu-process-%u", pk->pid);
	memcpy(fds, pk->fds, pk->nfds * sizeof(int));
	fds[pk->nfds] = pk->file.fd[0];
	/* Copies go: ours stay parked until the new worker says it serves. */
	if (vgpu_send_fds(sv.w[j].ctl, &h, sizeof(h), fds, (int)pk->nfds + 1) < 0) {
		snprintf(why, len, "cannot reach an idle worker");
		return -EIO;
	}
	sv.w[j].state = W_BUSY;
	sv.w[j].session_id = pk->session;
	sv.w[j].client_pid = pk->pid;
	sv.w[j].client_uid = pk->uid;
	sv.w[j].client_gid = pk->gid;
	sv.w[j].locked = true;
	sv.w[j].kmod_session = pk->kmod_session;
	sv.sessions++;
	return j;
}

static void fill_state(struct vgpu_ctl_process *now, int i, const struct parked *pk)
{
	now->state = pk ? VGPU_CTL_PROC_CHECKPOINTED
			: sv.w[i].locked ? VGPU_CTL_PROC_LOCKED : VGPU_CTL_PROC_RUNNING;
	now->session = pk ? pk->session : sv.w[i].session_id;
}

int sv_order_process(const struct ctl_caller *who, int slot, uint32_t pid,
		     const struct vgpu_ctl_process_req *a, int gpu, struct vgpu_ctl_process *now,
		     char *why, size_t len)
{
	struct parked *pk;
	struct wslot *ws;
	int i, ret;

	pk = find_parked(who, pid);
	i = find_live(who, pid);
	if (!pk && i < 0) {
		snprintf(why, len, "process %u has no session here", pid);
		return -ESRCH;
	}
	if (a->action == VGPU_CTL_PROC_STATE) {
		fill_state(now, i, pk);
		return 1;
	}
	if (!sv.stats) {
		snprintf(why, len, "the daemon keeps no worker figures: no orders");
		return -EOPNOTSUPP;
	}
	ws = i >= 0 ? &sv.w[i] : NULL;
	if (ws && (ws->admin_slot >= 0 || ws->moved_from >= 0)) {
		snprintf(why, len, "session %llu is being checkpointed, moved or restored",
			 (unsigned long long)ws->session_id);
		return -EBUSY;
	}
	if (ws && (ws->closed || ws->ctl < 0)) {
		snprintf(why, len, "session %llu is ending", (unsigned long long)ws->session_id);
		return -ESHUTDOWN;
	}
	if (a->action == VGPU_CTL_PROC_RESTORE) {
		if (!pk) {
			snprintf(why, len, "process %u is not checkpointed", pid);
			return -EBADFD;
		}
		if ((ret = sv_check_gpu(gpu, why, len)))
			return ret;
		i = order_restore(pk, gpu, why, len);
		if (i < 0)
			return i;
		sv.w[i].admin_slot = slot;
		sv.w[i].proc_action = PROC_RESTORE;
		vlog_info("session %llu: process restore ordered", (unsigned long long)pk->session);
		return 0;
	}
	if (pk) {
		snprintf(why, len, "process %u is checkpointed", pid);
		return -EBADFD;
	}
	switch (a->action) {
	case VGPU_CTL_PROC_LOCK:
		if (ws->locked) {
			snprintf(why, len, "process %u is locked already", pid);
			return -EBADFD;
		}
		ret = send_order(i, WORDER_LOCK);
		ws->proc_action = PROC_LOCK;
		ws->lock_deadline = a->timeout_ms ? vgpu_now_ns() + a->timeout_ms * 1000000ull : 0;
		break;
	case VGPU_CTL_PROC_UNLOCK:
		if (!ws->locked) {
			snprintf(why, len, "process %u is not locked", pid);
			return -EBADFD;
		}
		ret = send_order(i, WORDER_UNLOCK);
		ws->proc_action = PROC_UNLOCK;
		break;
	default:	/* VGPU_CTL_PROC_CHECKPOINT */
		if (!ws->locked) {
			snprintf(why, len, "process %u is not locked", pid);
			return -EBADFD;
		}
		ret = order_checkpoint(i, why, len);
		ws->proc_action = PROC_CHECKPOINT;
		break;
	}
	if (ret) {
		ws->proc_action = PROC_NONE;
		if (ret == -EIO)
			snprintf(why, len, "cannot reach the session's worker");
		return ret;
	}
	ws->admin_slot = slot;
	return 0;
}

static void done(struct wslot *ws, int err, const char *why, const struct vgpu_ctl_process *rec)
{
	admin_process_done(ws->admin_slot, err, why, rec);
	ws->admin_slot = -1;
	ws->proc_action = PROC_NONE;
}

bool sv_process_answer(int i)
{
	struct wslot *ws = &sv.w[i];
	struct vgpu_ctl_process rec = { .session = ws->session_id };
	int err = -ws->ckpt.status;

	ws->ckpt.message[sizeof(ws->ckpt.message) - 1] = 0;
	switch (ws->proc_action) {
	case PROC_LOCK:
		if (!err)
			ws->locked = true;
		if (!err && ws->lock_deadline && vgpu_now_ns() > ws->lock_deadline &&
		    !send_order(i, WORDER_UNLOCK)) {
			ws->proc_action = PROC_LOCK_TOO_LATE;	/* answered once undone */
			return true;
		}
		rec.state = VGPU_CTL_PROC_LOCKED;
		break;
	case PROC_LOCK_TOO_LATE:
		if (!err)
			ws->locked = false;
		done(ws, ETIMEDOUT, "the lock came after its timeout", NULL);
		return true;
	case PROC_UNLOCK:
		if (!err)
			ws->locked = false;
		rec.state = VGPU_CTL_PROC_RUNNING;
		break;
	case PROC_RESTORE:
		for (int k = 0; !err && k < MAX_PARKED; k++)
			if (parked[k].used && parked[k].session == ws->session_id) {
				unpark(&parked[k]);
			}
		if (err) {
			ws->locked = false;
			ws->kmod_session = 0;	/* still the parked session's */
			vlog_warn("session %llu: the process restore failed: %s",
				  (unsigned long long)ws->session_id, ws->ckpt.message);
		} else {
			vlog_info("session %llu: restored, locked", (unsigned long long)ws->session_id);
		}
		rec.ckpt = ws->ckpt.result;	/* the take-up's own figures */
		rec.state = VGPU_CTL_PROC_LOCKED;
		break;
	default:
		return false;
	}
	done(ws, err, ws->ckpt.message, err ? NULL : &rec);
	return true;
}

bool sv_process_migrating(int i)
{
	struct wslot *ws = &sv.w[i];
	struct vgpu_ctl_process rec = { .session = ws->session_id,
					.state = VGPU_CTL_PROC_CHECKPOINTED };
	struct migrate_verdict v = { .status = -EAGAIN };
	struct migrate_state st;
	struct parked *pk = NULL;
	int fds[MIGRATE_KMOD_FDS], nfds = MIGRATE_KMOD_FDS, n;

	if (ws->proc_action != PROC_CHECKPOINT)
		return false;
	if (ws->ckpt.status) {		/* refused: the session stays locked */
		ws->ckpt.message[sizeof(ws->ckpt.message) - 1] = 0;
		chain_close(&ws->move);
		done(ws, -ws->ckpt.status, ws->ckpt.message, NULL);
		return true;
	}
	n = vgpu_recv_fds(ws->ctl, &st, sizeof(st), fds, &nfds);
	for (int k = 0; k < MAX_PARKED && !pk; k++)
		if (!parked[k].used)
			pk = &parked[k];
	if (n != sizeof(st) || (unsigned)nfds != migrate_session_fds(&st) || !pk || !ws->move.n ||
	    (st.carrier == VGPU_CARRIER_KMOD) != !!ws->kmod_session) {
		if (n >= 0)
			vgpu_fds_close(fds, (unsigned)nfds);
		if (send(ws->ctl, &v, sizeof(v), MSG_NOSIGNAL) != sizeof(v))
			vlog_warn("worker %d: cannot tell it to serve on", ws->pid);
		chain_close(&ws->move);
		done(ws, EAGAIN, pk ? "the session's hand-over was incomplete"
				    : "too many checkpointed processes", NULL);
		return true;
	}
	*pk = (struct parked){ .used = true, .gen = (uint16_t)(pk->gen + 1),
			       .session = ws->session_id, .pid = ws->client_pid,
			       .uid = ws->client_uid, .gid = ws->client_gid,
			       .gpu = sv.stats[i].gpu, .st = st, .file = ws->move,
			       .figures = ws->ckpt.result, .nfds = (unsigned)nfds,
			       .kmod_session = ws->kmod_session };
	memcpy(pk->fds, fds, (size_t)nfds * sizeof(int));
	memset(&ws->move, 0, sizeof(ws->move));
	watch((int)(pk - parked));
	v.status = 0;		/* the old worker ends: the GPU state goes with it */
	if (send(ws->ctl, &v, sizeof(v), MSG_NOSIGNAL) != sizeof(v))
		vlog_warn("worker %d: cannot tell it the session is parked", ws->pid);
	ws->moved = true;
	ws->locked = false;
	ws->kmod_session = 0;	/* held here now, with its worker fd */
	rec.ckpt = ws->ckpt.result;
	vlog_info("session %llu: checkpointed for process %u, its worker %d ends",
		  (unsigned long long)ws->session_id, ws->client_pid, ws->pid);
	done(ws, 0, "", &rec);
	return true;
}
