// SPDX-License-Identifier: MIT
/*
 * Clients of the daemon's socket, from accept to a worker: credentials
 * checked, a poll for the hello armed (admission.c keeps the waiting room
 * and its policy), then the oldest ready ones handed to idle workers.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admission.h"
#include "fdpass.h"
#include "log.h"
#include "supervisor_state.h"

static bool peer_ok(int fd, struct ucred *cr)
{
	socklen_t len = sizeof(*cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0 || len != sizeof(*cr)) {
		vlog_warn("client without credentials refused");
		return false;
	}
	return true;
}

/* Sessions served for @uid now (a moved session counts once). */
static unsigned int serving(uid_t uid)
{
	unsigned int n = 0;

	for (int i = 0; i < MAX_WORKERS; i++)
		n += sv.w[i].pid && sv.w[i].state == W_BUSY && !sv.w[i].moved &&
		     sv.w[i].client_uid == uid;
	return n;
}

/* Hands a client whose hello is there to an idle worker: false if none. */
static bool give_to_idle(int fd, const struct ucred *cr)
{
	static struct worker_handoff h;

	for (int i = 0; i < MAX_WORKERS; i++) {
		if (!sv.w[i].pid || sv.w[i].state != W_IDLE)
			continue;
		memset(&h, 0, sizeof(h));
		h.session_id = ++sv.next_session;
		h.uid = cr->uid;
		h.gid = cr->gid;
		h.pid = cr->pid;
		h.type = HANDOFF_CLIENT;
		if (vgpu_send_fds(sv.w[i].ctl, &h, sizeof(h), &fd, 1) < 0)
			continue;
		sv.w[i].state = W_BUSY;
		sv.w[i].session_id = h.session_id;
		sv.w[i].client_pid = cr->pid;
		sv.w[i].client_uid = cr->uid;
		sv.w[i].client_gid = cr->gid;
		sv.sessions++;
		vlog_info("session %llu: pid %d uid %d -> worker %d",
			  (unsigned long long)h.session_id, cr->pid, cr->uid, sv.w[i].pid);
		close(fd);
		return true;
	}
	return false;
}

/* Clients whose hello came, oldest first, to the idle workers. */
void sv_drain_pending(void)
{
	int i;

	while (sv_count(W_IDLE) && (i = admit_oldest_ready()) >= 0) {
		struct admit_entry *e = admit_at(i);
		struct ucred cr = e->cr;
		char why[96];

		/* Its other connections may have become sessions meanwhile. */
		if (serving(cr.uid) >= sv.cfg->limits.user_sessions) {
			snprintf(why, sizeof(why), "uid %d already has %u sessions "
				 "(vgpud --user-sessions)", (int)cr.uid, serving(cr.uid));
			admit_drop(i, EUSERS, why);
			continue;
		}
		if (!give_to_idle(e->fd, &cr))
			break;
		admit_take(i);
	}
}

static struct io_uring_sqe *get_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	if (!sqe) {	/* many at once (a sweep): make room */
		io_uring_submit(&sv.ring);
		sqe = io_uring_get_sqe(&sv.ring);
	}
	return sqe;
}

static uint64_t hello_ud(int i)
{
	return UD(EV_HELLO, (uint32_t)admit_at(i)->gen << 16 | (uint32_t)i);
}

/* A new client waits, holding no worker, until its hello is there. */
void sv_on_client(int fd)
{
	struct io_uring_sqe *sqe;
	struct ucred cr;
	int i;

	if (!peer_ok(fd, &cr)) {
		close(fd);
		return;
	}
	i = admit_add(fd, &cr);
	if (i < 0)
		return;
	sqe = get_sqe();
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, hello_ud(i));
}

void sv_on_hello(uint32_t idx, int res)
{
	int i = idx & 0xffff;
	struct admit_entry *e;

	if (i >= ADMIT_MAX || res < 0)
		return;		/* the poll was cancelled */
	e = admit_at(i);
	if (e->fd < 0 || e->gen != (uint16_t)(idx >> 16))
		return;		/* that connection is gone already */
	if (!(res & POLLIN) || res & (POLLHUP | POLLERR)) {
		admit_drop(i, 0, NULL);	/* gone: nobody to serve */
		return;
	}
	if (sv_nvml_query(e->fd, &e->cr)) {	/* answered without a worker */
		admit_take(i);
		return;
	}
	e->hello = true;
	sv_fill_pool();
	sv_drain_pending();
}

void sv_hello_overdue(int i)
{
	struct io_uring_sqe *sqe = get_sqe();
	char why[64];

	io_uring_prep_poll_remove(sqe, hello_ud(i));
	io_uring_sqe_set_data64(sqe, 0);
	snprintf(why, sizeof(why), "no hello within %u s", sv.cfg->limits.hello_timeout);
	admit_drop(i, ETIMEDOUT, why);
}

void sv_arm_tick(void)
{
	struct io_uring_sqe *sqe = get_sqe();

	sv.tick.tv_sec = 1;
	io_uring_prep_timeout(sqe, &sv.tick, 0, 0);
	io_uring_sqe_set_data64(sqe, UD(EV_ADMIT_TICK, 0));
}
void sv_arm_accept(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_accept(sqe, sv.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD(EV_ACCEPT, 0));
}
