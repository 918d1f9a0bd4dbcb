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

#include "log.h"

#define MAX_CONN 16

static struct {
	const struct admin_ops *ops;
	int fd[MAX_CONN];		/* -1: free */
	/* one byte more than a request: a longer message shows as too long
	 * (a SEQPACKET read cuts a message to the buffer silently) */
	union {
		struct vgpu_ctl_req req;
		uint8_t bytes[sizeof(struct vgpu_ctl_req) + 1];
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
	*err = EINVAL;
	if (len != sizeof(*q))
		return "a request is exactly 64 bytes";
	if (q->magic != VGPU_CTL_MAGIC)
		return "not a vgpu control request (bad magic)";
	*err = EPROTONOSUPPORT;
	if (q->version != VGPU_CTL_VERSION)
		return "unsupported control protocol version";
	*err = EINVAL;
	if (q->flags)
		return "unknown flags";
	for (size_t i = 0; i < sizeof(q->reserved); i++)
		if (q->reserved[i])
			return "reserved bytes must be zero";
	*err = EOPNOTSUPP;
	if (q->op != VGPU_CTL_SESSIONS)
		return "unknown operation";
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
	if (why)
		refuse(fd, err, "%s", why);
	else
		answer_sessions(fd, q->session);
	close(fd);
}

void admin_close_all(void)
{
	for (int i = 0; i < MAX_CONN; i++)
		if (ad.fd[i] >= 0) {
			close(ad.fd[i]);
			ad.fd[i] = -1;
		}
}
