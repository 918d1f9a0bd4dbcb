// SPDX-License-Identifier: MIT
/*
 * The control socket (include/vgpu/ctl.h): one request per connection, its
 * caller taken at accept, read with its descriptors through the
 * supervisor's io_uring so a slow or silent asker never holds up the event
 * loop, checked field by field (ctl_request.c), answered with non-blocking
 * sends (an asker that does not read loses its answer). Every descriptor
 * that came with a request is closed once it is acted on or refused.
 */
#include "admin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checkpoint.h"
#include "fdpass.h"
#include "log.h"

#define MAX_CONN 64
#define USER_CONN 4		/* requests open at once for one user (not admins) */
#define MAX_GROUPS 1024		/* a caller's groups looked at for the admin group */

static struct {
	const struct admin_ops *ops;
	gid_t admin_gid;
	int fd[MAX_CONN];		/* -1: free */
	struct ctl_caller who[MAX_CONN];
	/* one byte more than the largest request: a longer message shows as
	 * too long (a SEQPACKET read cuts a message to the buffer silently) */
	union {
		struct vgpu_ctl_req req;
		uint8_t bytes[sizeof(struct vgpu_ctl_req) + VGPU_CTL_MAX_ARG + 1];
	} in[MAX_CONN];
	/* room for one descriptor more than any request takes: more shows as
	 * too many (the kernel cuts the rest, MSG_CTRUNC) */
	union {
		char buf[CMSG_SPACE(sizeof(int) * (VGPU_CTL_MAX_FDS + 1))];
		struct cmsghdr align;
	} cmsg[MAX_CONN];
	struct iovec iov[MAX_CONN];
	struct msghdr msg[MAX_CONN];
} ad;

void admin_init(const struct admin_ops *ops, gid_t admin_gid)
{
	ad.ops = ops;
	ad.admin_gid = admin_gid;
	for (int i = 0; i < MAX_CONN; i++)
		ad.fd[i] = -1;
}

/* Who is on the other end of @fd, as the kernel saw it at connect. */
static int caller_of(int fd, struct ctl_caller *who)
{
	static gid_t groups[MAX_GROUPS];
	socklen_t len = sizeof(struct ucred), glen = sizeof(groups);
	struct ucred cr;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr))
		return -EINVAL;
	/* More groups than we look at: only the primary one counts. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) < 0)
		glen = 0;
	*who = (struct ctl_caller){ .pid = (uint32_t)cr.pid, .uid = cr.uid, .gid = cr.gid };
	who->admin = ctl_is_admin(cr.uid, cr.gid, groups, glen / sizeof(gid_t), ad.admin_gid);
	return 0;
}

static void refuse(int fd, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Requests @uid has open now (read, or waiting for a worker's answer). */
static int open_of(uid_t uid)
{
	int n = 0;

	for (int i = 0; i < MAX_CONN; i++)
		n += ad.fd[i] >= 0 && ad.who[i].uid == uid;
	return n;
}

int admin_add(int fd)
{
	struct ctl_caller who;

	if (caller_of(fd, &who)) {
		vlog_warn("control socket: a caller without credentials refused");
		close(fd);
		return -1;
	}
	if (!who.admin && open_of(who.uid) >= USER_CONN) {
		refuse(fd, EUSERS, "uid %u already has %d requests open", who.uid, USER_CONN);
		close(fd);
		return -1;
	}
	for (int i = 0; i < MAX_CONN; i++)
		if (ad.fd[i] < 0) {
			ad.fd[i] = fd;
			ad.who[i] = who;
			return i;
		}
	refuse(fd, EAGAIN, "more than %d requests at once", MAX_CONN);
	close(fd);
	return -1;
}

int admin_fd(int slot)
{
	return ad.fd[slot];
}

struct msghdr *admin_msg(int slot)
{
	ad.iov[slot] = (struct iovec){ .iov_base = ad.in[slot].bytes,
				       .iov_len = sizeof(ad.in[slot].bytes) };
	ad.msg[slot] = (struct msghdr){ .msg_iov = &ad.iov[slot], .msg_iovlen = 1,
					.msg_control = ad.cmsg[slot].buf,
					.msg_controllen = sizeof(ad.cmsg[slot].buf) };
	return &ad.msg[slot];
}

static bool send_all(int fd, const void *p, size_t len)
{
	return send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len;
}

__attribute__((format(printf, 3, 4)))
static void refuse(int fd, int err, const char *fmt, ...)
{
	struct vgpu_ctl_reply r = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
				    .status = -err };
	va_list ap;

	static struct vgpu_ratelimit rl;
	unsigned int held;

	va_start(ap, fmt);
	vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	send_all(fd, &r, sizeof(r));
	if (!vgpu_ratelimit(&rl, &held))
		return;
	if (held)
		vlog_warn("control socket: %s (and %u more refusals not logged)", r.message, held);
	else
		vlog_warn("control socket: %s", r.message);
}

static void answer_sessions(int fd, const struct ctl_caller *who, uint64_t session)
{
	struct vgpu_ctl_reply r = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION };
	struct vgpu_ctl_session *s = calloc(ADMIN_MAX_SESSIONS, sizeof(*s));
	size_t n;

	if (!s) {
		refuse(fd, ENOMEM, "out of memory");
		return;
	}
	n = ad.ops->list_sessions(who, s, ADMIN_MAX_SESSIONS, session);
	if (session && !n) {
		refuse(fd, ENOENT, "no session %llu", (unsigned long long)session);
		free(s);
		return;
	}
	r.count = (uint32_t)n;
	if (send_all(fd, &r, sizeof(r)))
		for (size_t i = 0; i < n; i += VGPU_CTL_RECORDS_PER_MSG) {
			size_t k = n - i < VGPU_CTL_RECORDS_PER_MSG ? n - i : VGPU_CTL_RECORDS_PER_MSG;

			if (!send_all(fd, s + i, k * sizeof(*s)))
				break;
		}
	free(s);
}

/* A checked request: its answer, or its order with the answer to come.
 * fds: what came with it, the operation's to duplicate what it keeps. */
static void act(int slot, int fd, const struct ctl_parsed *p, const int *fds)
{
	const struct ctl_caller *who = &ad.who[slot];
	const struct vgpu_ctl_req *q = p->q;
	char because[112];
	int err;

	switch (q->op) {
	case VGPU_CTL_SESSIONS:
		answer_sessions(fd, who, q->session);
		break;
	case VGPU_CTL_PROCESS: {
		struct vgpu_ctl_process now;

		memset(&now, 0, sizeof(now));
		err = ad.ops->process(who, slot, (uint32_t)q->session, &p->proc, p->gpu, &now,
				      because, sizeof(because));
		if (!err) {
			ad.fd[slot] = fd;	/* held until the worker answers */
			return;
		}
		ad.fd[slot] = fd;
		if (err > 0)
			admin_process_done(slot, 0, "", &now);
		else
			admin_process_done(slot, -err, because, NULL);
		return;
	}
	default:
		if (q->op == VGPU_CTL_RESTORE)
			err = ad.ops->restore(who, slot, p->path, p->gpu, fds, p->nfds, because,
					      sizeof(because));
		else if (q->op == VGPU_CTL_MIGRATE)
			err = ad.ops->migrate(who, slot, q->session, p->gpu, because,
					      sizeof(because));
		else
			err = ad.ops->checkpoint(who, slot, q->session, q->flags, p->path,
						 fds[0], because, sizeof(because));
		if (!err) {
			ad.fd[slot] = fd;	/* held until the worker answers */
			return;
		}
		refuse(fd, -err, "%s", because);
	}
	close(fd);
}

void admin_done(int slot, ssize_t res)
{
	int fd = ad.fd[slot], err, fds[VGPU_CTL_MAX_FDS + 1], cut = 0;
	unsigned nfds = 0;
	struct ctl_parsed p;
	const char *why;

	ad.fd[slot] = -1;
	if (res >= 0)	/* every descriptor taken, so that each is closed below */
		nfds = vgpu_fds_take(&ad.msg[slot], fds, VGPU_CTL_MAX_FDS + 1, &cut);
	if (res < 0) {
		if (res == -ECANCELED)	/* its time limit (ctl_orders.c) */
			refuse(fd, ETIMEDOUT, "no request in time");
		close(fd);
		return;
	}
	if (cut)
		why = "more file descriptors than any request takes";
	else
		why = ctl_parse(ad.in[slot].bytes, (size_t)res, nfds, &ad.who[slot], &p, &err);
	if (why)
		refuse(fd, cut ? EINVAL : err, "%s", why);
	else
		act(slot, fd, &p, fds);
	vgpu_fds_close(fds, nfds);
	if (why)
		close(fd);
}

void admin_checkpointed(int slot, const struct ckpt_answer *a)
{
	struct vgpu_ctl_reply r = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
				    .status = a->status, .count = a->status ? 0 : 1 };
	int fd = ad.fd[slot];

	if (fd < 0)
		return;
	memcpy(r.message, a->message, sizeof(r.message));
	r.message[sizeof(r.message) - 1] = 0;
	if (send_all(fd, &r, sizeof(r)) && !a->status)
		send_all(fd, &a->result, sizeof(a->result));
	close(fd);
	ad.fd[slot] = -1;
}

void admin_process_done(int slot, int err, const char *why, const struct vgpu_ctl_process *rec)
{
	struct vgpu_ctl_reply r = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
				    .count = 1 };
	int fd = ad.fd[slot];

	if (fd < 0)
		return;
	if (err || !rec) {
		refuse(fd, err ? err : EIO, "%s", why);
	} else if (send_all(fd, &r, sizeof(r))) {
		send_all(fd, rec, sizeof(*rec));
	}
	close(fd);
	ad.fd[slot] = -1;
}

void admin_abort(int slot, int err, const char *why)
{
	int fd = ad.fd[slot];

	if (fd < 0)
		return;
	refuse(fd, err, "%s", why);
	close(fd);
	ad.fd[slot] = -1;
}

void admin_restored(int slot, int err, const char *why)
{
	struct vgpu_ctl_reply r = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION };
	int fd = ad.fd[slot];

	if (fd < 0)
		return;
	if (err)
		refuse(fd, err, "%s", why);
	else
		send_all(fd, &r, sizeof(r));
	close(fd);
	ad.fd[slot] = -1;
}

void admin_close_all(void)
{
	for (int i = 0; i < MAX_CONN; i++)
		if (ad.fd[i] >= 0) {
			close(ad.fd[i]);
			ad.fd[i] = -1;
		}
}
