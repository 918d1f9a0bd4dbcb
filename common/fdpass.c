// SPDX-License-Identifier: MIT
#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VGPU_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (nfds < 0 || nfds > VGPU_MAX_FDS)
		return -EINVAL;
	if (nfds) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &msg, flags);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int)n;
}

int vgpu_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	return send_fds(sock, buf, len, fds, nfds, MSG_NOSIGNAL);
}

int vgpu_send_fd_nowait(int sock, const void *buf, size_t len, int fd)
{
	return send_fds(sock, buf, len, &fd, fd >= 0, MSG_DONTWAIT | MSG_NOSIGNAL);
}

unsigned vgpu_fds_take(const struct msghdr *m, int *fds, unsigned room, int *cut)
{
	unsigned got = 0;

	*cut = !!(m->msg_flags & MSG_CTRUNC);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		size_t cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (got < room) {
				fds[got++] = fd;
			} else {
				close(fd);
				*cut = 1;
			}
		}
	}
	return got;
}

void vgpu_fds_close(int *fds, unsigned nfds)
{
	for (unsigned i = 0; i < nfds; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/*
 * One message; *nfds in: room, out: got. *cut: descriptors came beyond the
 * room (closed) or were cut by the kernel; *flags: the message's flags.
 */
static int recv_fds(int sock, void *buf, size_t len, int *fds, unsigned *nfds, int *cut,
		    int *flags)
{
	union {
		char buf[VGPU_FDS_CMSG_SPACE];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	ssize_t n;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		*nfds = 0;
		return -errno;
	}
	*nfds = vgpu_fds_take(&msg, fds, *nfds, cut);
	*flags = msg.msg_flags;
	return (int)n;
}

int vgpu_recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds)
{
	unsigned got = *nfds < 0 ? 0 : (unsigned)*nfds;
	int cut, flags, n = recv_fds(sock, buf, len, fds, &got, &cut, &flags);

	if (n >= 0 && (flags & (MSG_TRUNC | MSG_CTRUNC))) {
		vgpu_fds_close(fds, got);
		got = 0;
		n = -EMSGSIZE;
	}
	*nfds = (int)got;
	return n;
}

int vgpu_recv_fds_exact(int sock, void *buf, size_t len, int *fds, unsigned *nfds)
{
	int cut, flags, n = recv_fds(sock, buf, len, fds, nfds, &cut, &flags);

	if (n >= 0 && (cut || (flags & MSG_TRUNC))) {
		vgpu_fds_close(fds, *nfds);
		*nfds = 0;
		return -EMSGSIZE;
	}
	return n;
}
