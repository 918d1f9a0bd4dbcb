// SPDX-License-Identifier: MIT
/*
 * The control socket (include/vgpu/ctl.h): one request per connection,
 * read through the supervisor's io_uring so a slow or silent asker never
 * holds up the event loop, checked field by field, answered with
 * non-blocking sends (an asker that does not read loses its answer).
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
#include "log.h"

#define MAX_CONN 16

static struct {
	const struct admin_ops *ops;
	int fd[MAX_CONN];		/* -1: free */
	/* one byte more than the largest request: a longer message shows as
	 * too long (a SEQPACKET read cuts a message to the buffer silently) */
	union {
		struct vgpu_ctl_req req;
		uint8_t bytes[sizeof(struct vgpu_ctl_req) + VGPU_CTL_MAX_ARG + 1];
	} in[MAX_CONN];
} ad;

void admin_init(const struct admin_ops *ops)
{
	ad.ops = ops;
	for (int i = 0; i < MAX_CONN; i++)
		ad.fd[i] = -1;
}

int admin_add(int fd)
{
	for (int i = 0; i < MAX_CONN; i++)
		if (ad.fd[i] < 0) {
			ad.fd[i] = fd;
			return i;
		}
	vlog_warn("control socket: more than %d requests at once; one refused", MAX_CONN);
	close(fd);
	return -1;
}

int admin_fd(int slot)
{
	return ad.fd[slot];
}

void *admin_buffer(int slot, size_t *len)
{
	*len = sizeof(ad.in[slot].bytes);
	return ad.in[slot].bytes;
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

	va_start(ap, fmt);
	vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	vlog_warn("control socket: %s", r.message);
	send_all(fd, &r, sizeof(r));
}

/* Why the request is not one we answer, or NULL. */
static const char *check(const struct vgpu_ctl_req *q, ssize_t len, int *err)
{
	const char *arg = (const char *)(q + 1);
	uint32_t allowed = 0;

	*err = EINVAL;
	if (len < (ssize_t)sizeof(*q))
		return "a request is at least 64 bytes";
	if (q->magic != VGPU_CTL_MAGIC)
		return "not a vgpu control request (bad magic)";
	*err = EPROTONOSUPPORT;
	if (q->version != VGPU_CTL_VERSION)
		return "unsupported control protocol version";
	*err = EINVAL;
	if (q->arg_len > VGPU_CTL_MAX_ARG || len != (ssize_t)(sizeof(*q) + q->arg_len))
		return "the message is not the request and its argument";
	for (size_t i = 0; i < sizeof(q->reserved); i++)
		if (q->reserved[i])
			return "reserved bytes must be zero";
	switch (q->op) {
	case VGPU_CTL_SESSIONS:
		if (q->arg_len)
			return "sessions takes no argument";
		break;
	case VGPU_CTL_CHECKPOINT:
		allowed = VGPU_CTL_F_COMPRESS | VGPU_CTL_F_DIRECT | VGPU_CTL_F_STOP |
			  VGPU_CTL_F_INCREMENTAL;
		if (!q->session)
			return "checkpoint needs a session";
		if (!q->arg_len || memchr(arg, 0, q->arg_len) != arg + q->arg_len - 1)
			return "the path must be one NUL-terminated string";
		if (arg[0] != '/')
			return "the path must be absolute";
		break;
	case VGPU_CTL_RESTORE:
		allowed = VGPU_CTL_F_GPU;
		if (q->session)
			return "restore takes no session: the file names it";
		if (!q->arg_len || memchr(arg, 0, q->arg_len) != arg + q->arg_len - 1)
			return "the path must be one NUL-terminated string";
		if (arg[0] != '/')
			return "the path must be absolute";
		break;
	case VGPU_CTL_MIGRATE:
		allowed = VGPU_CTL_F_GPU;
		if (!q->session)
			return "migrate needs a session";
		if (q->arg_len)
			return "migrate takes no argument";
		break;
	default:
		*err = EOPNOTSUPP;
		return "unknown operation";
	}
	if (q->flags & ~allowed)
		return "unknown flags";
	if (q->gpu && !(q->flags & VGPU_CTL_F_GPU))
		return "a GPU index without the GPU flag";
	if (q->gpu >= 64)
		return "GPU index out of range";
	return NULL;
}

static void answer_sessions(int fd, uint64_t session)
{
	struct vgpu_ctl_reply r = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION };
	struct vgpu_ctl_session *s = calloc(ADMIN_MAX_SESSIONS, sizeof(*s));
	size_t n;

	if (!s) {
		refuse(fd, ENOMEM, "out of memory");
		return;
	}
	n = ad.ops->list_sessions(s, ADMIN_MAX_SESSIONS, session);
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

void admin_done(int slot, ssize_t res)
{
	const struct vgpu_ctl_req *q = &ad.in[slot].req;
	int fd = ad.fd[slot], err;
	const char *why;

	ad.fd[slot] = -1;
	if (res < 0) {
		close(fd);
		return;
	}
	why = check(q, res, &err);
	if (why) {
		refuse(fd, err, "%s", why);
	} else if (q->op == VGPU_CTL_SESSIONS) {
		answer_sessions(fd, q->session);
	} else {
		char because[112];

		if (q->op == VGPU_CTL_RESTORE) {
			err = ad.ops->restore((const char *)(q + 1),
					      q->flags & VGPU_CTL_F_GPU ? (int)q->gpu : -1,
					      because, sizeof(because));
			if (!err) {
				struct vgpu_ctl_reply r = { .magic = VGPU_CTL_MAGIC,
							    .version = VGPU_CTL_VERSION };

				send_all(fd, &r, sizeof(r));
				close(fd);
				return;
			}
			refuse(fd, -err, "%s", because);
			close(fd);
			return;
		}
		if (q->op == VGPU_CTL_MIGRATE)
			err = ad.ops->migrate(slot, q->session,
					      q->flags & VGPU_CTL_F_GPU ? (int)q->gpu : -1,
					      because, sizeof(because));
		else
			err = ad.ops->checkpoint(slot, q->session, q->flags, (const char *)(q + 1),
						 because, sizeof(because));
		if (!err) {
			ad.fd[slot] = fd;	/* held until the worker answers */
			return;
		}
		refuse(fd, -err, "%s", because);
	}
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

void admin_abort(int slot, int err, const char *why)
{
	int fd = ad.fd[slot];

	if (fd < 0)
		return;
	refuse(fd, err, "%s", why);
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
