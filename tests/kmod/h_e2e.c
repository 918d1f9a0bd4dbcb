// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The daemon's checks of a /dev/vgpu hello, in the guest with vgpud running
 * as the module's server: h_e2e SOCKET. A session id named by another
 * process, an unknown id, an unknown carrier, a memfd hello naming a
 * session and a second attach are refused with the right errno; the
 * session's own process is welcomed; closing the session ends its worker.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"
#include "vgpu/proto.h"

static const char *sock_path;

static int dial(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror(sock_path);
		return -1;
	}
	return fd;
}

/* Sends a hello; returns the welcome's status, the socket in *sockp. */
static int hello(uint32_t carrier, uint64_t id, int *sockp, int *nfdsp)
{
	struct vgpu_hello h = {
		.magic = VGPU_PROTO_MAGIC, .version = VGPU_PROTO_VERSION,
		.features = VGPU_FEAT_ALL, .pid = getpid(), .sq_entries = 256,
		.cq_entries = 512, .carrier = carrier, .kmod_session = id,
	};
	struct vgpu_welcome wl;
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec iov = { &wl, sizeof(wl) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int s = dial(), nfds = 0;
	ssize_t n;

	if (s < 0)
		return 1;
	strcpy(h.comm, "h_e2e");
	if (send(s, &h, sizeof(h), 0) != sizeof(h))
		return 1;
	n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
	if (n != sizeof(wl) || wl.magic != VGPU_PROTO_MAGIC) {
		printf("h_e2e: no welcome (%zd bytes)\n", n);
		return 1;
	}
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_type == SCM_RIGHTS)
			nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	wl.message[sizeof(wl.message) - 1] = 0;
	printf("h_e2e: carrier %u id %llu: status %d (%s)%s%s\n", carrier,
	       (unsigned long long)id, wl.status, wl.status ? strerror(-wl.status) : "ok",
	       wl.status ? ": " : "", wl.message);
	if (nfdsp)
		*nfdsp = nfds;
	if (sockp)
		*sockp = s;
	else
		close(s);
	return wl.status;
}

int main(int argc, char **argv)
{
	struct vgpu_setup g = { .sq_entries = 256, .cq_entries = 512, .sqe_size = 64,
				.cqe_size = 32, .arena_bytes = 64 << 20 };
	struct pollfd p;
	int fd, s, nfds, st;
	pid_t pid;

	if (argc != 2) {
		fprintf(stderr, "usage: h_e2e SOCKET\n");
		return 2;
	}
	sock_path = argv[1];
	fd = open("/dev/vgpu", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_OK(ioctl(fd, VGPU_IOC_SETUP, &g));

	/* Another process names our session. */
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		st = hello(VGPU_CARRIER_KMOD, g.session_id, NULL, NULL) == -EPERM ? 0 : 1;
		fflush(stdout);
		_exit(st);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);

	CHECK(hello(VGPU_CARRIER_KMOD, g.session_id + 1000, NULL, NULL) == -ENOENT);
	CHECK(hello(VGPU_CARRIER_KMOD, 0, NULL, NULL) == -ENOENT);
	CHECK(hello(7, g.session_id, NULL, NULL) == -EINVAL);
	CHECK(hello(VGPU_CARRIER_MEMFD, g.session_id, NULL, NULL) == -EINVAL);

	/* Our own: welcomed with three descriptors; once only. */
	CHECK(hello(VGPU_CARRIER_KMOD, g.session_id, &s, &nfds) == 0);
	CHECK(nfds == 3);
	CHECK(hello(VGPU_CARRIER_KMOD, g.session_id, NULL, NULL) == -EBUSY);

	/* Closing the session ends its worker: the socket hangs up. */
	close(fd);
	p = (struct pollfd){ .fd = s, .events = POLLIN | POLLRDHUP };
	CHECK(poll(&p, 1, 10000) == 1);
	CHECK(p.revents & (POLLHUP | POLLRDHUP));
	printf("h_e2e: the closed session's worker is gone\n");
	return 0;
}
