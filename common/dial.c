// SPDX-License-Identifier: MIT
/*
 * Reaching vgpud's sockets: the runtime's session, vgpu's NVML and vgpuctl
 * all dial a Unix SEQPACKET socket by path.
 */
#include "dial.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "vgpu/proto.h"

const char *vgpu_socket_path(void)
{
	const char *p = getenv("VGPU_SOCKET");

	return p && *p ? p : VGPU_DEFAULT_SOCKET;
}

int vgpu_dial(const char *path, int recv_timeout_s)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = recv_timeout_s };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (recv_timeout_s)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}
