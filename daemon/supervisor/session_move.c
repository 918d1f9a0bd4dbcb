// SPDX-License-Identifier: MIT
/*
 * vgpuctl move: a session from its worker to an idle one (migrate.h): the
 * order to the old worker, its checkpoint and descriptors handed to the
 * new one, and the verdict back to the old.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admin.h"
#include "fdpass.h"
#include "log.h"
#include "supervisor_state.h"

/* The verdict to the worker a session was leaving (migrate.h, step 4). */
void sv_moved(int j)
{
	struct wslot *to = &sv.w[j], *from = &sv.w[to->moved_from];
	struct migrate_verdict v = { .status = to->ckpt.status };

	if (from->ctl >= 0 && send(from->ctl, &v, sizeof(v), MSG_NOSIGNAL) != sizeof(v))
		vlog_warn("worker %d: cannot tell it the session moved", from->pid);
	if (!v.status) {
		from->moved = true;
		from->kmod_session = 0;	/* the new worker serves it */
		chain_close(&to->last);
		to->last = from->last;	/* the session's, wherever it runs */
		memset(&from->last, 0, sizeof(from->last));
		vlog_info("session %llu: moved from worker %d to worker %d",
			  (unsigned long long)to->session_id, from->pid, to->pid);
	}
	if (v.status)	/* the move failed: the /dev/vgpu session stays the old worker's */
		to->kmod_session = 0;
	to->moved_from = -1;
}

/* The old worker wrote its checkpoint: give the session to an idle worker
 * with the descriptors it sends (migrate.h, steps 2-3). */
void sv_on_migrating(int i)
{
	static struct worker_handoff h;
	struct wslot *ws = &sv.w[i];
	int fds[MIGRATE_MAX_FDS], nfds = MIGRATE_KMOD_FDS, j, n, slot = ws->admin_slot;

	if (ws->ckpt.status) {		/* refused: the old worker serves on */
		admin_checkpointed(slot, &ws->ckpt);
		ws->admin_slot = -1;
		chain_close(&ws->move);
		return;
	}
	memset(&h, 0, sizeof(h));
	n = vgpu_recv_fds(ws->ctl, &h.st, sizeof(h.st), fds, &nfds);
	for (j = 0; j < MAX_WORKERS; j++)
		if (sv.w[j].pid && sv.w[j].state == W_IDLE)
			break;
	if (n != sizeof(h.st) || (unsigned)nfds != migrate_session_fds(&h.st) || j == MAX_WORKERS ||
	    !ws->move.n || (h.st.carrier == VGPU_CARRIER_KMOD) != !!ws->kmod_session) {
		struct migrate_verdict v = { .status = -EAGAIN };

		for (int k = 0; n >= 0 && k < nfds; k++)
			close(fds[k]);
		if (send(ws->ctl, &v, sizeof(v), MSG_NOSIGNAL) != sizeof(v))
			vlog_warn("worker %d: cannot tell it to serve on", ws->pid);
		admin_abort(slot, EAGAIN, j == MAX_WORKERS ? "no idle worker to move the session to"
						 : "the session's hand-over was incomplete");
		ws->admin_slot = -1;
		chain_close(&ws->move);
		return;
	}
	h.session_id = ws->session_id;
	h.uid = ws->client_uid;
	h.gid = ws->client_gid;
	h.pid = ws->client_pid;
	h.type = HANDOFF_RESUME;
	/* Onto the GPU ordered, else the one the session is on. */
	h.gpu = ws->move_gpu >= 0 ? ws->move_gpu : sv.stats ? sv.stats[i].gpu : -1;
	snprintf(h.path, sizeof(h.path), "%s", ws->move.path);
	fds[nfds] = ws->move.fd[0];	/* the state, written */
	n = vgpu_send_fds(sv.w[j].ctl, &h, sizeof(h), fds, nfds + 1);
	for (int k = 0; k < nfds; k++)
		close(fds[k]);	/* the new worker has them, and the old one still */
	chain_close(&ws->move);
	sv.w[j].state = W_BUSY;
	sv.w[j].session_id = ws->session_id;
	sv.w[j].client_pid = ws->client_pid;
	sv.w[j].client_uid = ws->client_uid;
	sv.w[j].client_gid = ws->client_gid;
	sv.w[j].admin_slot = slot;
	sv.w[j].moved_from = i;
	sv.w[j].paused_at = ws->ckpt.result.paused_at_ns;
	sv.w[j].kmod_session = ws->kmod_session;	/* its CLOSED ends the new worker */
	sv.sessions++;
	ws->admin_slot = -1;
	if (n < 0) {
		sv.w[j].ckpt.status = -EPIPE;
		sv_moved(j);
	}
}

int sv_order_move_file(struct wslot *ws, struct ckpt_order *o, const char *name, char *why,
		       size_t len)
{
	/* The daemon's own file, with no name anyone could open or guess: it
	 * travels as a descriptor, to the old worker and the new. */
	int ret, fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0) {
		snprintf(why, len, "memfd_create: %s", strerror(errno));
		return -errno;
	}
	chain_close(&ws->move);
	ret = chain_dup(&ws->move, &fd, 1, o->path);
	if (!ret && (ret = ckpt_order_send(ws->ctl, o, fd, NULL, 0)))
		chain_close(&ws->move);
	close(fd);
	return ret ? 1 : 0;
}

int sv_order_migrate(const struct ctl_caller *who, int slot, uint64_t id, int gpu, char *why,
		     size_t len)
{
	static struct ckpt_order o;
	int ret = sv_check_gpu(gpu, why, len);

	if (ret)
		return ret;

	for (int i = 0; i < MAX_WORKERS; i++) {
		struct wslot *ws = &sv.w[i];

		if (!ws->pid || ws->state != W_BUSY || ws->session_id != id || ws->moved ||
		    !ctl_may(who, ws->client_uid))
			continue;
		if (ws->closed || ws->ctl < 0 || ws->moved_from >= 0) {
			snprintf(why, len, "session %llu is ending or moving", (unsigned long long)id);
			return -ESHUTDOWN;
		}
		if (ws->locked) {	/* the new worker would serve it unlocked */
			snprintf(why, len, "session %llu is locked (cuCheckpointProcessLock)",
				 (unsigned long long)id);
			return -EBUSY;
		}
		if (ws->admin_slot >= 0 || !sv.stats) {
			snprintf(why, len, "session %llu is being checkpointed", (unsigned long long)id);
			return -EBUSY;
		}
		if (!sv_count(W_IDLE)) {
			snprintf(why, len, "no idle worker to move the session to");
			return -EAGAIN;
		}
		memset(&o, 0, sizeof(o));
		o.type = WORDER_MIGRATE;
		snprintf(o.path, sizeof(o.path), "memfd:vgpu-move-%llu", (unsigned long long)id);
		ret = sv_order_move_file(ws, &o, "vgpu-move", why, len);
		if (ret < 0)
			return ret;
		if (ret) {
			snprintf(why, len, "cannot reach session %llu's worker", (unsigned long long)id);
			return -EIO;
		}
		ws->admin_slot = slot;
		ws->move_gpu = gpu;
		__atomic_store_n(&sv.stats[i].order_pending, 1, __ATOMIC_RELEASE);
		if (gpu >= 0)
			vlog_info("session %llu: move to GPU %d ordered", (unsigned long long)id, gpu);
		else
			vlog_info("session %llu: move ordered", (unsigned long long)id);
		return 0;
	}
	snprintf(why, len, "no session %llu", (unsigned long long)id);
	return -ENOENT;
}
