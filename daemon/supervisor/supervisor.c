// SPDX-License-Identifier: MIT
/*
 * The supervisor's event loop (supervisor.h): the sockets set up, every
 * io_uring completion routed to the file of its concern, signals, and the
 * stop. Its state is supervisor_state.h's.
 */
#include "supervisor.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin.h"
#include "admission.h"
#include "clock.h"
#include "log.h"
#include "process_ckpt.h"
#include "supervisor_state.h"

struct sv_state sv;

/* @dir and the folders above it, 0755 where they are missing. */
static void make_dirs(char *dir)
{
	for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		mkdir(dir, 0755);
		*p = '/';
	}
	mkdir(dir, 0755);
}

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
		make_dirs(dir);	/* /run/vgpu/client, /run/vgpu/control on first start */
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
static void arm_signal(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.sig_fd, &sv.si, sizeof(sv.si), 0);
	io_uring_sqe_set_data64(sqe, UD(EV_SIGNAL, 0));
}

static void on_signal(void)
{
	if (sv.si.ssi_signo == SIGCHLD) {
		sv_reap_children();
	} else if (sv.cfg->checkpoint_on_exit && !sv.draining && sv.si.ssi_signo == SIGTERM) {
		vlog_info("signal %u: suspending every session, then stopping", sv.si.ssi_signo);
		sv_start_drain();
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
		if (cqe->res >= 0)
			sv_on_client(cqe->res);
		else if (cqe->res != -EINTR && cqe->res != -ECONNABORTED)
			vlog_warn("accept: %s", strerror(-cqe->res));
		sv_arm_accept();
		break;
	case EV_SIGNAL:
		if (cqe->res == sizeof(sv.si))
			on_signal();
		arm_signal();
		sv_fill_pool();
		break;
	case EV_WORKER:
		if (sv.w[idx & 0xffff].pid && sv.w[idx & 0xffff].ctl >= 0 &&
		    sv.w[idx & 0xffff].gen == (uint16_t)(idx >> 16))
			sv_on_worker_msg(idx & 0xffff, cqe->res);
		break;
	case EV_KMOD:
		sv_drain_kmod_events();
		sv_arm_kmod();
		break;
	case EV_CTL_ACCEPT:
		if (cqe->res >= 0)
			sv_on_ctl_accept(cqe->res);
		sv_arm_ctl_accept();
		break;
	case EV_CTL_READ:
		admin_done(idx, cqe->res);
		break;
	case EV_RESTORED:
		sv_restores_done();
		sv_arm_restored();
		break;
	case EV_HELLO:
		sv_on_hello((uint32_t)idx, cqe->res);
		break;
	case EV_PARKED:
		sv_on_parked((uint32_t)idx, cqe->res);
		break;
	case EV_ADMIT_TICK:
		admit_sweep(vgpu_now_ns(), sv_hello_overdue);
		sv_arm_tick();
		break;
	case EV_DRAIN_TIMEOUT:
		if (sv.draining) {
			vlog_warn("%u sessions did not suspend in time: stopping anyway", sv.draining);
			sv.stopping = true;
		}
		break;
	}
}
/* Waiting clients hold descriptors: as many as the hard limit allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
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
	sv.ctl_fd = -1;
	if (cfg->control_path) {
		sv.ctl_fd = listen_on(cfg->control_path, cfg->control_mode);
		if (sv.ctl_fd < 0) {
			vlog_err("cannot listen on %s: %s", cfg->control_path,
				 strerror(-sv.ctl_fd));
			unlink(cfg->socket_path);
			return 1;
		}
	}
	sv.stats = mmap(NULL, MAX_WORKERS * sizeof(*sv.stats), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sv.stats == MAP_FAILED) {
		vlog_warn("no shared statistics for workers: %s", strerror(errno));
		sv.stats = NULL;
	}
	sv_nvml_init();	/* before the first worker: they share it */
	admin_init(&sv_admin_ops, cfg->admin_gid);
	sv.restore_ev = eventfd(0, EFD_CLOEXEC);
	if (sv.restore_ev < 0)
		vlog_warn("no eventfd (%s): vgpuctl restore refused", strerror(errno));
	admit_init(&cfg->limits);
	raise_fd_limit();
	ret = io_uring_queue_init(256, &sv.ring, 0);
	if (ret) {
		vlog_err("io_uring: %s", strerror(-ret));
		return 1;
	}
	sv_kmod_register();
	if (cfg->restore)
		sv_load_suspended(cfg->restore);
	if (sv.ctl_fd >= 0)
		sv_arm_ctl_accept();
	if (sv.restore_ev >= 0)
		sv_arm_restored();
	sv_arm_accept();
	arm_signal();
	sv_arm_tick();
	if (sv.kfd >= 0)
		sv_arm_kmod();
	sv_fill_pool();
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
	if (sv.ctl_fd >= 0) {
		unlink(cfg->control_path);
		close(sv.ctl_fd);
	}
	admin_close_all();
	admit_close_all();
	sv_stop_workers();
	if (sv.kfd >= 0)
		close(sv.kfd);
	io_uring_queue_exit(&sv.ring);
	return 0;
}
