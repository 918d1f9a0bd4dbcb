// SPDX-License-Identifier: MIT
#include "fdv.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int fdv_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	union {
		char buf[FDV_CMSG_SPACE];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (nfds > FDV_MAX)
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
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int)n;
}

unsigned fdv_take(const struct msghdr *m, int *fds, unsigned room, int *cut)
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

int fdv_recv(int sock, void *buf, size_t len, int *fds, unsigned *nfds)
{
	union {
		char buf[FDV_CMSG_SPACE];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	int cut;
	ssize_t n;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		*nfds = 0;
		return -errno;
	}
	*nfds = fdv_take(&msg, fds, *nfds, &cut);
	if (cut || (msg.msg_flags & MSG_TRUNC)) {
		fdv_close(fds, *nfds);
		*nfds = 0;
		return -EMSGSIZE;
	}
	return (int)n;
}

void fdv_close(int *fds, unsigned nfds)
{
	for (unsigned i = 0; i < nfds; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}
