// SPDX-License-Identifier: MIT
/*
 * TEMPORARY (issue 10): vgpu_ckpt_reader_open_fd and
 * vgpu_ckpt_open_chain_fds until the checkpoint-reader branch, which
 * builds them into common/ckpt_read.c and ckpt_chain.c, is merged; then
 * delete this file and ckpt_fd_shim.h. Only a regular file is opened again,
 * through /proc/self/fd (a FIFO or a socket is refused before that).
 */
#include "ckpt_fd_shim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int vgpu_ckpt_reader_open_fd(struct vgpu_ckpt_reader **out, int fd, const char *name,
			     const struct vgpu_ckpt_expect *ex, unsigned flags, char *err)
{
	char proc[40], why[VGPU_CKPT_MSG];
	struct stat st;
	size_t n;
	int ret;

	*out = NULL;
	name = name ? name : "checkpoint";
	if (fstat(fd, &st) < 0) {
		snprintf(err, VGPU_CKPT_MSG, "%.300s: %s", name, strerror(errno));
		return -EBADF;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, VGPU_CKPT_MSG, "%.300s: not a regular file", name);
		return -EINVAL;
	}
	n = (size_t)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ret = vgpu_ckpt_reader_open(out, proc, ex, flags, why);
	if (ret) {
		/* The message names the file as the caller knows it. */
		const char *rest = strncmp(why, proc, n) ? why : why + n;

		snprintf(err, VGPU_CKPT_MSG, "%.300s%s%.200s", name,
			 rest == why ? ": " : "", rest);
		/* The reader of today quotes the first bytes: not to a caller. */
		if (ret == -ENOEXEC)
			snprintf(err, VGPU_CKPT_MSG, "%.300s: not a vgpu checkpoint", name);
	}
	return ret;
}

int vgpu_ckpt_open_chain_fds(struct vgpu_ckpt_reader **out, const int *fds, unsigned nfds,
			     const char *name, const struct vgpu_ckpt_expect *ex, unsigned flags,
			     char *err)
{
	struct vgpu_ckpt_reader *head = NULL, *child = NULL;
	unsigned k;
	int ret;

	*out = NULL;
	if (!nfds || nfds > VGPU_CKPT_MAX_CHAIN) {
		snprintf(err, VGPU_CKPT_MSG, "%u files for a chain of checkpoints (1..%u)", nfds,
			 VGPU_CKPT_MAX_CHAIN);
		return -EINVAL;
	}
	for (k = 0; k < nfds; k++) {
		struct vgpu_ckpt_reader *r;

		if (child && !(vgpu_ckpt_header(child)->flags & VGPU_CKPT_F_INCREMENTAL)) {
			snprintf(err, VGPU_CKPT_MSG, "%.300s: more files than its chain of parents",
				 name);
			ret = -EINVAL;
			goto fail;
		}
		ret = vgpu_ckpt_reader_open_fd(&r, fds[k], k ? "its parent" : name, ex, flags, err);
		if (ret)
			goto fail;
		if (child && (ret = vgpu_ckpt_adopt_parent(child, r))) {
			snprintf(err, VGPU_CKPT_MSG, "%s", vgpu_ckpt_reader_error(child));
			vgpu_ckpt_reader_close(r);
			goto fail;
		}
		if (!head)
			head = r;
		child = r;
	}
	if (vgpu_ckpt_header(child)->flags & VGPU_CKPT_F_INCREMENTAL) {
		snprintf(err, VGPU_CKPT_MSG, "%.300s: the checkpoint it builds on is missing", name);
		ret = -ENOENT;
		goto fail;
	}
	*out = head;
	return 0;
fail:
	vgpu_ckpt_reader_close(head);
	return ret;
}
