// SPDX-License-Identifier: MIT
/*
 * Checkpoint files the supervisor holds as descriptors (struct chain in
 * supervisor_state.h): it never opens a caller's file, so what a later
 * order needs is kept open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fdpass.h"
#include "supervisor_state.h"

void chain_close(struct chain *c)
{
	vgpu_fds_close(c->fd, c->n);
	c->n = 0;
	free(c->path);
	c->path = NULL;
}

/* @c: duplicates of @n descriptors of @fds, named @path. 0 or -errno. */
int chain_dup(struct chain *c, const int *fds, unsigned n, const char *path)
{
	memset(c, 0, sizeof(*c));
	if (n > VGPU_CKPT_MAX_CHAIN)
		return -E2BIG;
	for (; c->n < n; c->n++) {
		c->fd[c->n] = fcntl(fds[c->n], F_DUPFD_CLOEXEC, 3);
		if (c->fd[c->n] < 0) {
			int err = -errno;

			chain_close(c);
			return err;
		}
	}
	if (path && !(c->path = strdup(path))) {
		chain_close(c);
		return -ENOMEM;
	}
	return 0;
}
