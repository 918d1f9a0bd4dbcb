// SPDX-License-Identifier: MIT
/*
 * /dev/vgpu sessions (kmod.h): the supervisor registers as the module's
 * server, keeps the sessions the module announces, ends a worker whose
 * client closed its session, and attaches a session to the worker of the
 * process that opened it, never another's.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "fdpass.h"
#include "kmod.h"
#include "log.h"
#include "supervisor_state.h"

static struct ksession *ks_find(uint64_t id)
{
	for (int i = 0; i < MAX_KMOD_SESSIONS; i++)
		if (sv.ks[i].id == id)
			return &sv.ks[i];
	return NULL;
}

static void ks_opened(const struct vgpu_kmod_event *ev)
{
	struct ksession *k = ks_find(0);

	if (!k) {
		vlog_warn("/dev/vgpu session %llu: too many open sessions; killing it",
			  (unsigned long long)ev->session_id);
		vgpu_kmod_kill(sv.kfd, ev->session_id);
		return;
	}
	*k = (struct ksession){ .id = ev->session_id, .pid = ev->pid, .uid = ev->uid };
}

/* The client closed its /dev/vgpu session: its worker has nothing to do. */
static void ks_closed(uint64_t id)
{
	struct ksession *k = ks_find(id);

	if (k)
		memset(k, 0, sizeof(*k));
	for (int i = 0; i < MAX_WORKERS; i++) {
		if (!sv.w[i].pid || sv.w[i].kmod_session != id)
			continue;
		vlog_info("session %llu: /dev/vgpu session %llu closed: ending worker %d",
			  (unsigned long long)sv.w[i].session_id, (unsigned long long)id,
			  sv.w[i].pid);
		kill(sv.w[i].pid, SIGKILL);
		sv.w[i].kmod_session = 0;
		sv.w[i].closed = true;
	}
}

void sv_drain_kmod_events(void)
{
	struct vgpu_kmod_event ev;
	int ret;

	while ((ret = vgpu_kmod_read_event(sv.kfd, &ev)) == 1) {
		if (!ev.session_id)
			continue;
		if (ev.type == VGPU_KMOD_OPENED)
			ks_opened(&ev);
		else if (ev.type == VGPU_KMOD_CLOSED)
			ks_closed(ev.session_id);
		/* DOORBELL: the worker sleeps on its own fd; nothing to do. */
	}
	if (ret < 0)
		vlog_warn("/dev/vgpu events: %s", strerror(-ret));
}

void sv_arm_kmod(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_poll_add(sqe, sv.kfd, POLLIN);
	io_uring_sqe_set_data64(sqe, UD(EV_KMOD, 0));
}

/* Checks that @id is the session of worker i's client; attaches it. */
static int kmod_attach(int i, uint64_t id)
{
	struct wslot *ws = &sv.w[i];
	struct ksession *k;
	int fd;

	if (sv.kfd < 0)
		return -ENODEV;
	if (ws->kmod_session)
		return -EBUSY;
	k = ks_find(id);
	if (!k) {
		sv_drain_kmod_events();	/* its OPENED may not be read yet */
		k = ks_find(id);
	}
	if (!id || !k)
		return -ENOENT;
	if (!k->pid || k->pid != ws->client_pid) {
		vlog_warn("session %llu: pid %u names /dev/vgpu session %llu of pid %u: refused",
			  (unsigned long long)ws->session_id, ws->client_pid,
			  (unsigned long long)id, k->pid);
		return -EPERM;
	}
	if (k->attached)
		return -EBUSY;
	fd = vgpu_kmod_attach(sv.kfd, id);
	if (fd < 0)
		return fd;
	k->attached = true;
	ws->kmod_session = id;
	return fd;
}

/* The worker that had /dev/vgpu session @id attached is gone: the session
 * may be attached again, by a worker of the same client (a session taken
 * up after vgpuctl checkpoint --stop, its program still holding it). */
void sv_kmod_worker_gone(uint64_t id)
{
	struct ksession *k = id ? ks_find(id) : NULL;

	if (k)
		k->attached = false;
}

void sv_on_attach_request(int i)
{
	struct wslot *ws = &sv.w[i];
	int fd = kmod_attach(i, ws->msg.kmod_session);
	struct attach_reply rep = { .status = fd < 0 ? fd : 0 };

	vgpu_send_fds(ws->ctl, &rep, sizeof(rep), &fd, fd < 0 ? 0 : 1);
	if (fd >= 0)
		close(fd);
}
/* Serve /dev/vgpu clients too when the module is there and we may. */
void sv_kmod_register(void)
{
	sv.kfd = vgpu_kmod_server();
	if (sv.kfd >= 0)
		vlog_info("registered as the /dev/vgpu server: serving both carriers");
	else if (sv.kfd == -ENOENT)
		vlog_info("no %s: memfd carrier only", VGPU_KMOD_DEVICE);
	else if (sv.kfd == -EPERM || sv.kfd == -EACCES)
		vlog_warn("%s is present but registering as its server needs CAP_SYS_ADMIN: "
			  "memfd carrier only", VGPU_KMOD_DEVICE);
	else if (sv.kfd == -EBUSY)
		vlog_warn("%s already has a server (another vgpud?): memfd carrier only",
			  VGPU_KMOD_DEVICE);
	else
		vlog_warn("cannot register as the %s server: %s; memfd carrier only",
			  VGPU_KMOD_DEVICE, strerror(-sv.kfd));
}
