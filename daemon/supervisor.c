// SPDX-License-Identifier: MIT
#include "supervisor.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdpass.h"
#include "log.h"

#define MAX_WORKERS 1024

/* Supervisor -> worker over the worker's control socket. */
struct handoff {
	uint64_t session_id;
	uint32_t uid, pid;
};

enum wstate { W_STARTING, W_IDLE, W_BUSY };

struct wslot {
	pid_t pid;
	int ctl;		/* our end of the control socketpair */
	enum wstate state;
	uint64_t session_id;
	uint8_t msg;		/* readiness byte lands here */
};

/* What an io_uring completion is about. */
enum ev_kind { EV_ACCEPT = 1, EV_SIGNAL, EV_WORKER };
#define UD(kind, idx) (((uint64_t)(kind) << 32) | (uint32_t)(idx))

static struct {
	const struct supervisor_config *cfg;
	struct io_uring ring;
	int listen_fd, sig_fd;
	struct signalfd_siginfo si;
	struct wslot w[MAX_WORKERS];
	int pending[64];	/* accepted clients waiting for a worker */
	int npending;
	uint64_t next_session;
	unsigned int sessions;
	bool stopping;
} sv;

static int listen_on(const char *path, unsigned int mode)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[sizeof(a.sun_path)], *slash;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755);	/* /run/vgpu on first start */
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket someone answers on belongs to a running daemon: leave it. */
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -EADDRINUSE;
	}
	close(fd);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);	/* a stale socket from a daemon that died */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(path, mode) < 0 ||
	    listen(fd, 128) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* ---- workers ------------------------------------------------------------ */

static void worker_child(int ctl)
{
	struct worker w;
	struct handoff h;
	int fd = -1, nfds = 1, ret;
	uint8_t ready = 1;

	prctl(PR_SET_PDEATHSIG, SIGTERM);	/* the daemon's end is ours */
	signal(SIGPIPE, SIG_IGN);
	ret = worker_prepare(&w, sv.cfg->backend, &sv.cfg->worker);
	if (ret) {
		ready = 0;
		(void)!write(ctl, &ready, 1);
		_exit(2);
	}
	if (write(ctl, &ready, 1) != 1)
		_exit(1);
	ret = vgpu_recv_fds(ctl, &h, sizeof(h), &fd, &nfds);
	if (ret != sizeof(h) || nfds != 1)
		_exit(0);	/* the daemon is stopping */
	close(ctl);
	ret = worker_serve(&w, fd, h.session_id);
	_exit(ret ? 1 : 0);
}

static void arm_worker(int i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.w[i].ctl, &sv.w[i].msg, 1, 0);
	io_uring_sqe_set_data64(sqe, UD(EV_WORKER, i));
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
		io_uring_queue_exit(&sv.ring);
		sigprocmask(SIG_SETMASK, &(sigset_t){ 0 }, NULL);
		worker_child(sp[1]);
	}
	close(sp[1]);
	sv.w[i] = (struct wslot){ .pid = pid, .ctl = sp[0], .state = W_STARTING };
	arm_worker(i);
	return 0;
}

static unsigned int count(enum wstate st)
{
	unsigned int n = 0;

	for (int i = 0; i < MAX_WORKERS; i++)
		n += sv.w[i].pid && sv.w[i].state == st;
	return n;
}

static void fill_pool(void)
{
	unsigned int have = count(W_STARTING) + count(W_IDLE);

	if (sv.stopping)
		return;
	while (have < sv.cfg->pool_size + (unsigned int)sv.npending) {
		if (spawn_worker())
			break;
		have++;
	}
}

static bool peer_ok(int fd, struct ucred *cr)
{
	socklen_t len = sizeof(*cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0 || len != sizeof(*cr)) {
		vlog_warn("client without credentials refused");
		return false;
	}
	return true;
}

static void give_to_idle(int fd)
{
	struct ucred cr;
	struct handoff h;

	if (!peer_ok(fd, &cr)) {
		close(fd);
		return;
	}
	for (int i = 0; i < MAX_WORKERS; i++) {
		if (!sv.w[i].pid || sv.w[i].state != W_IDLE)
			continue;
		h = (struct handoff){ .session_id = ++sv.next_session, .uid = cr.uid, .pid = cr.pid };
		if (vgpu_send_fds(sv.w[i].ctl, &h, sizeof(h), &fd, 1) < 0)
			continue;
		sv.w[i].state = W_BUSY;
		sv.w[i].session_id = h.session_id;
		sv.sessions++;
		vlog_info("session %llu: pid %d uid %d -> worker %d",
			  (unsigned long long)h.session_id, cr.pid, cr.uid, sv.w[i].pid);
		close(fd);
		return;
	}
	if (sv.npending == (int)(sizeof(sv.pending) / sizeof(sv.pending[0]))) {
		vlog_warn("too many clients waiting for a worker; refusing one");
		close(fd);
		return;
	}
	sv.pending[sv.npending++] = fd;
}

static void drain_pending(void)
{
	while (sv.npending && count(W_IDLE)) {
		int fd = sv.pending[0];

		memmove(sv.pending, sv.pending + 1, --sv.npending * sizeof(int));
		give_to_idle(fd);
	}
}

static void on_worker_msg(int i, int res)
{
	struct wslot *ws = &sv.w[i];

	if (res == 1 && ws->msg == 1 && ws->state == W_STARTING) {
		ws->state = W_IDLE;
		arm_worker(i);	/* hang-up on this socket is how it ends */
		drain_pending();
		return;
	}
	if (res == 1 && ws->msg == 0)
		vlog_err("worker %d could not start its backend", ws->pid);
	/* EOF: the worker is gone; SIGCHLD reaps it. */
	close(ws->ctl);
	ws->ctl = -1;
}

static void reap_children(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < MAX_WORKERS; i++) {
			struct wslot *ws = &sv.w[i];

			if (ws->pid != pid)
				continue;
			if (ws->state == W_BUSY)
				sv.sessions--;
			if (WIFSIGNALED(status))
				vlog_warn("worker %d (session %llu) killed by signal %d",
					  pid, (unsigned long long)ws->session_id,
					  WTERMSIG(status));
			else if (ws->state == W_BUSY)
				vlog_info("session %llu ended", (unsigned long long)ws->session_id);
			else if (WEXITSTATUS(status) == 2 && !sv.stopping) {
				vlog_err("workers cannot start: stopping");
				sv.stopping = true;
			}
			if (ws->ctl >= 0)
				close(ws->ctl);
			memset(ws, 0, sizeof(*ws));
		}
	}
}

/* ---- the loop ----------------------------------------------------------- */

static void arm_accept(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_accept(sqe, sv.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD(EV_ACCEPT, 0));
}

static void arm_signal(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.sig_fd, &sv.si, sizeof(sv.si), 0);
	io_uring_sqe_set_data64(sqe, UD(EV_SIGNAL, 0));
}

static void on_signal(void)
{
	if (sv.si.ssi_signo == SIGCHLD) {
		reap_children();
	} else {
		vlog_info("signal %u: stopping", sv.si.ssi_signo);
		sv.stopping = true;
	}
}

static void handle(struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	int idx = (uint32_t)ud;

	switch (ud >> 32) {
	case EV_ACCEPT:
		if (cqe->res >= 0) {
			give_to_idle(cqe->res);
			fill_pool();
		} else if (cqe->res != -EINTR && cqe->res != -ECONNABORTED) {
			vlog_warn("accept: %s", strerror(-cqe->res));
		}
		arm_accept();
		break;
	case EV_SIGNAL:
		if (cqe->res == sizeof(sv.si))
			on_signal();
		arm_signal();
		fill_pool();
		break;
	case EV_WORKER:
		if (sv.w[idx].ctl >= 0)
			on_worker_msg(idx, cqe->res);
		break;
	}
}

static void stop_workers(void)
{
	for (int i = 0; i < MAX_WORKERS; i++)
		if (sv.w[i].pid)
			kill(sv.w[i].pid, SIGTERM);
	for (int i = 0; i < MAX_WORKERS; i++)
		if (sv.w[i].pid)
			waitpid(sv.w[i].pid, NULL, 0);
}

int supervisor_run(const struct supervisor_config *cfg)
{
	sigset_t mask;
	int ret;

	sv.cfg = cfg;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sv.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	sv.listen_fd = listen_on(cfg->socket_path, cfg->socket_mode);
	if (sv.listen_fd == -EADDRINUSE) {
		vlog_err("another vgpud is already serving %s", cfg->socket_path);
		return 1;
	}
	if (sv.listen_fd < 0) {
		vlog_err("cannot listen on %s: %s", cfg->socket_path, strerror(-sv.listen_fd));
		return 1;
	}
	ret = io_uring_queue_init(256, &sv.ring, 0);
	if (ret) {
		vlog_err("io_uring: %s", strerror(-ret));
		return 1;
	}
	arm_accept();
	arm_signal();
	fill_pool();
	vlog_info("listening on %s (%s backend, %u workers ready)", cfg->socket_path,
		  cfg->backend, cfg->pool_size);
	while (!sv.stopping) {
		struct io_uring_cqe *cqe;

		io_uring_submit(&sv.ring);
		ret = io_uring_wait_cqe(&sv.ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret) {
			vlog_err("io_uring wait: %s", strerror(-ret));
			break;
		}
		handle(cqe);
		io_uring_cqe_seen(&sv.ring, cqe);
	}
	unlink(cfg->socket_path);
	stop_workers();
	io_uring_queue_exit(&sv.ring);
	return 0;
}
