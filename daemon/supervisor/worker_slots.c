// SPDX-License-Identifier: MIT
/*
 * The supervisor's workers: each started ahead of time with its backend
 * ready (worker_child), its messages read and routed (ready, attach,
 * resume, checkpoints written, a move under way), and reaped when it ends.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin.h"
#include "admission.h"
#include "fdpass.h"
#include "jit_cache.h"
#include "log.h"
#include "privdrop.h"
#include "process_ckpt.h"
#include "supervisor_state.h"

/* The worker becomes its client's user, or --worker-user for root's (privdrop.h). */
static int become_client(const struct worker_handoff *h)
{
	uid_t uid = h->uid ? h->uid : sv.cfg->worker_uid;
	gid_t gid = h->uid ? h->gid : sv.cfg->worker_gid;
	int ret = jit_cache_open(sv.cfg->worker.jit_cache, h->uid, uid, gid);

	if (ret == -EACCES)
		vlog_info("session %llu: no JIT cache: root's programs are served as nobody "
			  "(no --worker-user, no vgpu-worker user)", (unsigned long long)h->session_id);
	else if (ret)
		vlog_warn("session %llu: no JIT cache in %s/%u: %s; PTX is compiled at each load",
			  (unsigned long long)h->session_id, sv.cfg->worker.jit_cache,
			  (unsigned)h->uid, strerror(-ret));
	ret = privdrop(uid, gid);

	if (ret)
		vlog_err("session %llu: cannot become uid %u gid %u: %s",
			 (unsigned long long)h->session_id, (unsigned)uid, (unsigned)gid,
			 strerror(-ret));
	return ret;
}

static void worker_child(int ctl, int slot)
{
	static struct worker_handoff h;
	struct worker w;
	int fds[MIGRATE_MAX_FDS], nfds = MIGRATE_MAX_FDS, ret;
	uint8_t ready = 1;

	prctl(PR_SET_PDEATHSIG, SIGTERM);	/* the daemon's end is ours */
	signal(SIGPIPE, SIG_IGN);
	ret = worker_prepare(&w, sv.cfg->backend, &sv.cfg->worker);
	if (ret) {
		ready = 0;
		(void)!write(ctl, &ready, 1);
		_exit(2);
	}
	if (sv.stats)	/* before "ready": the supervisor reads it then */
		sv.stats[slot].gpus = (uint16_t)w.device_count;
	sv_nvml_describe(&w);	/* the first worker ready: for NVML queries */
	if (write(ctl, &ready, 1) != 1)
		_exit(1);
	ret = vgpu_recv_fds(ctl, &h, sizeof(h), fds, &nfds);
	if (ret != sizeof(h) || nfds < 1)
		_exit(0);	/* the daemon is stopping */
	w.stats = sv.stats ? &sv.stats[slot] : NULL;
	if (w.stats)
		w.stats->gpu = 0;
	if (become_client(&h)) {
		if (h.type == HANDOFF_CLIENT)
			worker_refuse(fds[0], EPERM, "vgpud's worker could not give up root");
		_exit(1);
	}
	w.client_pid = h.pid;
	w.client_uid = h.uid;
	if (h.type == HANDOFF_RESUME)
		ret = worker_resume(&w, &h, fds, nfds, ctl);
	else
		ret = worker_serve(&w, fds[0], ctl, h.session_id);
	_exit(ret ? 1 : 0);
}

static void arm_worker(int i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.w[i].ctl, &sv.w[i].ckpt, sizeof(sv.w[i].ckpt), 0);
	/* With the slot's generation: a read of a worker gone can complete after
	 * its slot went to a new one, and must not be taken for the new one's. */
	io_uring_sqe_set_data64(sqe, UD(EV_WORKER, (uint32_t)sv.w[i].gen << 16 | i));
}

static int spawn_worker(void)
{
	int sp[2], i;
	pid_t pid;

	for (i = 0; i < MAX_WORKERS && sv.w[i].pid; i++)
		;
	if (i == MAX_WORKERS)
		return -EAGAIN;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (!pid) {
		close(sp[0]);
		close(sv.listen_fd);
		close(sv.sig_fd);
		if (sv.kfd >= 0)
			close(sv.kfd);	/* the server is the supervisor alone */
		if (sv.ctl_fd >= 0)
			close(sv.ctl_fd);
		admin_close_all();
		admit_close_all();
		io_uring_queue_exit(&sv.ring);
		sigprocmask(SIG_SETMASK, &(sigset_t){ 0 }, NULL);
		worker_child(sp[1], i);
	}
	close(sp[1]);
	if (sv.stats)
		memset(&sv.stats[i], 0, sizeof(sv.stats[i]));
	sv.w[i] = (struct wslot){ .pid = pid, .ctl = sp[0], .state = W_STARTING, .admin_slot = -1,
				  .moved_from = -1, .gen = (uint16_t)(sv.w[i].gen + 1) };
	arm_worker(i);
	return 0;
}

unsigned int sv_count(enum wstate st)
{
	unsigned int n = 0;

	for (int i = 0; i < MAX_WORKERS; i++)
		n += sv.w[i].pid && sv.w[i].state == st;
	return n;
}

void sv_fill_pool(void)
{
	unsigned int have = sv_count(W_STARTING) + sv_count(W_IDLE);

	if (sv.stopping)
		return;
	while (have < sv.cfg->pool_size + admit_ready_count()) {
		if (spawn_worker())
			break;
		have++;
	}
}
void sv_on_worker_msg(int i, int res)
{
	struct wslot *ws = &sv.w[i];

	if (res == 1 && ws->msg.type == WMSG_READY && ws->state == W_STARTING) {
		ws->state = W_IDLE;
		if (sv.stats)
			sv.gpus = sv.stats[i].gpus;
		arm_worker(i);	/* hang-up on this socket is how it ends */
		sv_drain_pending();
		return;
	}
	if (res == sizeof(ws->msg) && ws->msg.type == WMSG_ATTACH && ws->state == W_BUSY) {
		sv_on_attach_request(i);
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->ckpt) && ws->ckpt.type == WMSG_MIGRATING && ws->admin_slot >= 0) {
		if (!sv_process_migrating(i))
			sv_on_migrating(i);
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->ckpt) && ws->ckpt.type == WMSG_CHECKPOINTED && ws->suspending) {
		ws->suspending = false;
		ws->suspended = !ws->ckpt.status;
		if (ws->ckpt.status)
			vlog_warn("session %llu could not be suspended: %s",
				  (unsigned long long)ws->session_id, ws->ckpt.message);
		sv_drain_file_done(ws, !ws->ckpt.status);
		sv_drained_one();
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->msg) && ws->msg.type == WMSG_RESUME && ws->state == W_BUSY) {
		sv_on_resume_request(i);
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->ckpt) && ws->ckpt.type == WMSG_CHECKPOINTED && ws->admin_slot >= 0 &&
	    ws->proc_action && sv_process_answer(i)) {
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->ckpt) && ws->ckpt.type == WMSG_CHECKPOINTED && ws->admin_slot >= 0) {
		if (ws->moved_from >= 0) {
			sv_moved(i);
			ws->ckpt.result.paused_at_ns = ws->paused_at;
		}
		if (ws->ordered.n && !ws->ckpt.status)
			sv_new_last(ws);
		chain_close(&ws->ordered);
		admin_checkpointed(ws->admin_slot, &ws->ckpt);
		ws->admin_slot = -1;
		/* --stop: the worker ends the session itself after the write. */
		ws->stopped = ws->stop_after && !ws->ckpt.status;
		ws->stop_after = false;
		arm_worker(i);
		return;
	}
	if (ws->suspending) {		/* died before it answered */
		ws->suspending = false;
		sv_drain_file_done(ws, false);
		sv_drained_one();
	}
	if (ws->moved_from >= 0) {	/* died while taking the session over */
		ws->ckpt.status = -EPIPE;
		sv_moved(i);
	}
	if (ws->admin_slot >= 0) {
		admin_abort(ws->admin_slot, EPIPE, "the session ended before its checkpoint was done");
		ws->admin_slot = -1;
	}
	if (res == 1 && ws->msg.type == WMSG_FAILED)
		vlog_err("worker %d could not start its backend", ws->pid);
	/* EOF: the worker is gone; SIGCHLD reaps it. */
	close(ws->ctl);
	ws->ctl = -1;
}

void sv_reap_children(void)
{
	uint16_t gen;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < MAX_WORKERS; i++) {
			struct wslot *ws = &sv.w[i];

			if (ws->pid != pid)
				continue;
			if (ws->state == W_BUSY)
				sv.sessions--;
			if (ws->moved)
				;	/* its session lives on in another worker */
			else if (ws->suspended)
				vlog_info("session %llu suspended; its client waits",
					  (unsigned long long)ws->session_id);
			else if (ws->stopped)
				vlog_info("session %llu ended after its checkpoint",
					  (unsigned long long)ws->session_id);
			else if (WIFSIGNALED(status) && ws->closed)
				vlog_info("session %llu ended with its /dev/vgpu session",
					  (unsigned long long)ws->session_id);
			else if (WIFSIGNALED(status))
				vlog_warn("worker %d (session %llu) killed by signal %d",
					  pid, (unsigned long long)ws->session_id,
					  WTERMSIG(status));
			else if (ws->state == W_BUSY)
				vlog_info("session %llu ended", (unsigned long long)ws->session_id);
			else if (WEXITSTATUS(status) == 2 && !sv.stopping) {
				vlog_err("workers cannot start: stopping");
				sv.stopping = true;
			}
			if (ws->admin_slot >= 0)
				admin_abort(ws->admin_slot, EPIPE,
					    "the session ended before its checkpoint was done");
			if (ws->ctl >= 0)
				close(ws->ctl);
			chain_close(&ws->ordered);
			chain_close(&ws->last);
			chain_close(&ws->move);
			sv_kmod_worker_gone(ws->kmod_session);
			sv_drain_file_done(ws, false);
			gen = ws->gen;
			memset(ws, 0, sizeof(*ws));
			ws->gen = gen;
			ws->ctl = ws->admin_slot = ws->moved_from = -1;
		}
	}
}
void sv_stop_workers(void)
{
	for (int i = 0; i < MAX_WORKERS; i++)
		if (sv.w[i].pid)
			kill(sv.w[i].pid, SIGTERM);
	for (int i = 0; i < MAX_WORKERS; i++)
		if (sv.w[i].pid)
			waitpid(sv.w[i].pid, NULL, 0);
}
