// SPDX-License-Identifier: MIT
/* An incremental checkpoint with the parents it refers to (common/ckpt.h). */
#include "ckpt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The PARENT section's path, NUL-terminated, into buf (PATH_MAX bytes). */
static int parent_path(struct vgpu_ckpt_reader *r, char *buf, char *err)
{
	int i = vgpu_ckpt_find(r, VGPU_CKPT_SEC_PARENT, 0), ret;
	char *text;
	size_t len;

	if (i < 0) {
		snprintf(err, VGPU_CKPT_MSG, "incremental, but it does not say where its parent "
			 "is (no parent path section)");
		return -EBADMSG;
	}
	ret = vgpu_ckpt_read_whole(r, (unsigned)i, PATH_MAX - 1, (void **)&text, &len);
	if (ret) {
		snprintf(err, VGPU_CKPT_MSG, "%s", vgpu_ckpt_reader_error(r));
		return ret;
	}
	if (!len || strlen(text) != len) {
		free(text);
		snprintf(err, VGPU_CKPT_MSG, "its parent path section is malformed");
		return -EBADMSG;
	}
	memcpy(buf, text, len + 1);
	free(text);
	return 0;
}

/* The parent's path as written, else its name in the child's folder. */
static const char *find_parent(const char *child, const char *written, char *buf, size_t len)
{
	const char *slash = strrchr(child, '/'), *base = strrchr(written, '/');

	if (!access(written, F_OK))
		return written;
	base = base ? base + 1 : written;
	if (slash)
		snprintf(buf, len, "%.*s/%s", (int)(slash - child), child, base);
	else
		snprintf(buf, len, "%s", base);
	return access(buf, F_OK) ? written : buf;
}

int vgpu_ckpt_open_chain(struct vgpu_ckpt_reader **out, const char *path,
			 const struct vgpu_ckpt_expect *ex, unsigned flags, char *err)
{
	struct vgpu_ckpt_reader *head = NULL, *child = NULL;
	char *written = malloc(PATH_MAX), *alt = malloc(PATH_MAX), *cur = malloc(PATH_MAX);
	unsigned depth = 0;
	int ret = -ENOMEM;

	*out = NULL;
	if (!written || !alt || !cur) {
		snprintf(err, VGPU_CKPT_MSG, "out of memory");
		goto out;
	}
	snprintf(cur, PATH_MAX, "%s", path);
	for (;;) {
		struct vgpu_ckpt_reader *r;
		char why[VGPU_CKPT_MSG];

		ret = vgpu_ckpt_reader_open(&r, cur, ex, flags, why);
		if (ret) {
			/* Short: a daemon's reply carries 111 bytes of it. */
			size_t n = strlen(cur);
			const char *base = strrchr(cur, '/');

			if (!child)
				snprintf(err, VGPU_CKPT_MSG, "%s", why);
			else if (ret == -ENOENT)
				snprintf(err, VGPU_CKPT_MSG, "the checkpoint it builds on, %.400s, is "
					 "missing", cur);
			else
				snprintf(err, VGPU_CKPT_MSG, "it builds on %.200s: %.280s",
					 base ? base + 1 : cur,
					 strncmp(why, cur, n) || strncmp(why + n, ": ", 2) ? why
											    : why + n + 2);
			goto out;
		}
		if (child && (ret = vgpu_ckpt_adopt_parent(child, r))) {
			snprintf(err, VGPU_CKPT_MSG, "%s", vgpu_ckpt_reader_error(child));
			vgpu_ckpt_reader_close(r);
			goto out;
		}
		if (!head)
			head = r;
		child = r;
		if (!(vgpu_ckpt_header(r)->flags & VGPU_CKPT_F_INCREMENTAL))
			break;
		if (++depth >= VGPU_CKPT_MAX_CHAIN) {
			snprintf(err, VGPU_CKPT_MSG, "%s: more than %u checkpoints in its chain of "
				 "parents", path, VGPU_CKPT_MAX_CHAIN);
			ret = -ELOOP;
			goto out;
		}
		ret = parent_path(r, written, why);
		if (ret) {
			snprintf(err, VGPU_CKPT_MSG, "%.200s: %.300s", cur, why);
			goto out;
		}
		snprintf(cur, PATH_MAX, "%s", find_parent(cur, written, alt, PATH_MAX));
	}
	*out = head;
	head = NULL;
	ret = 0;
out:
	vgpu_ckpt_reader_close(head);
	free(written);
	free(alt);
	free(cur);
	return ret;
}

unsigned vgpu_ckpt_chain_length(const struct vgpu_ckpt_reader *r)
{
	unsigned n = 0;

	for (; r; r = vgpu_ckpt_parent(r))
		n++;
	return n;
}
