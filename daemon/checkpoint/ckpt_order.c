// SPDX-License-Identifier: MIT
/*
 * The files a checkpoint order brings (checkpoint.h): the order goes to the
 * worker's control socket, its file and the parent's descriptors in the
 * message after it; the worker takes them, or drops them, and closes them
 * once the order is done.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "checkpoint.h"
#include "ckpt.h"
#include "fdpass.h"
#include "log.h"

int ckpt_order_send(int sock, const struct ckpt_order *o, int fd, const int *parent,
		    unsigned nparent)
{
	int fds[VGPU_MAX_FDS];
	struct ckpt_order_fds m = { .nfds = 1 + nparent };

	if (fd < 0 || nparent > VGPU_CKPT_MAX_CHAIN)
		return -EINVAL;
	if (send(sock, o, sizeof(*o), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(*o))
		return -errno;
	fds[0] = fd;
	memcpy(fds + 1, parent, nparent * sizeof(int));
	/* Right after the order, which the worker reads only once it is told
	 * (order_pending); it then waits for this one a while. Should this
	 * one not go, the order is out all the same: the worker's answer (an
	 * error, once it gave up waiting) is what the asker gets. */
	if (vgpu_send_fds(sock, &m, sizeof(m), fds, 1 + nparent) != sizeof(m))
		vlog_warn("an order's files could not follow it: %s", strerror(errno));
	return 0;
}

/* The message after an order: its descriptors into fds (room VGPU_MAX_FDS). */
static int order_fds(int sock, int *fds, unsigned *n)
{
	struct ckpt_order_fds m;
	struct pollfd p = { .fd = sock, .events = POLLIN };
	int ret;

	*n = 0;
	if (poll(&p, 1, 10000) != 1)
		return -ETIMEDOUT;
	*n = VGPU_MAX_FDS;
	ret = vgpu_recv_fds_exact(sock, &m, sizeof(m), fds, n);
	if (ret != sizeof(m) || m.nfds != *n || !*n) {
		vgpu_fds_close(fds, *n);
		*n = 0;
		return ret < 0 ? ret : -EBADMSG;
	}
	return 0;
}

int ckpt_order_recv_fds(int sock, struct ckpt_order *o)
{
	int fds[VGPU_MAX_FDS];
	unsigned n;
	int ret = order_fds(sock, fds, &n);

	o->fd = -1;
	o->nparent = 0;
	if (ret)
		return ret;
	o->fd = fds[0];
	o->nparent = n - 1;
	memcpy(o->parent_fds, fds + 1, (n - 1) * sizeof(int));
	return 0;
}

void ckpt_order_drop_fds(int sock)
{
	int fds[VGPU_MAX_FDS];
	unsigned n;

	if (!order_fds(sock, fds, &n))
		vgpu_fds_close(fds, n);
}

void ckpt_order_close(struct ckpt_order *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	vgpu_fds_close(o->parent_fds, o->nparent);
	o->nparent = 0;
}
