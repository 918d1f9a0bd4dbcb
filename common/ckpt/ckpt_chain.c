// SPDX-License-Identifier: MIT
/* An incremental checkpoint with the parents it refers to (common/ckpt/ckpt.h). */
#include "ckpt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The PARENT section's path, NUL-terminated, into buf (PATH_MAX bytes); err names r. */
static int parent_path(struct vgpu_ckpt_reader *r, char *buf, char *err)
{
	int i = vgpu_ckpt_find(r, VGPU_CKPT_SEC_PARENT, 0), ret;
	char *text;
	size_t len;

	if (i < 0) {
		snprintf(err, VGPU_CKPT_MSG, "%s: incremental, but it does not say where its "
			 "parent is (no parent path section)", vgpu_ckpt_reader_name(r));
		return -EBADMSG;
	}
	ret = vgpu_ckpt_read_whole(r, (unsigned)i, PATH_MAX - 1, (void **)&text, &len);
	if (ret) {
		snprintf(err, VGPU_CKPT_MSG, "%s", vgpu_ckpt_reader_error(r));
		return ret;
	}
	if (!len || strlen(text) != len) {
		free(text);
		snprintf(err, VGPU_CKPT_MSG, "%s: its parent path section is malformed",
			 vgpu_ckpt_reader_name(r));
		return -EBADMSG;
	}
	memcpy(buf, text, len + 1);
	free(text);
	return 0;
}

/*
 * Where the chain's files come from: by path (each parent looked for where
 * its child says, else beside it), or the caller's descriptors in order.
 */
struct chain_src {
	const char *name;	/* the first file: its path, or a name for messages */
	const int *fds;		/* NULL: by path */
	unsigned nfds;
	char *cur;		/* by path: the file opened last (malloc'd) */
};

/* The parent's path as written, else its name in the child's folder (malloc'd). */
static char *find_parent(const char *child, const char *written)
{
	const char *slash = strrchr(child, '/'), *base = strrchr(written, '/');
	char *alt;

	if (!access(written, F_OK))
		return strdup(written);
	base = base ? base + 1 : written;
	if (!slash)
		alt = strdup(base);
	else if (asprintf(&alt, "%.*s/%s", (int)(slash - child), child, base) < 0)
		alt = NULL;
	if (alt && access(alt, F_OK)) {
		free(alt);
		return strdup(written);
	}
	return alt;
}

/* File k of the chain (k > 0: the parent its child names written). */
static int open_link(struct chain_src *c, unsigned k, const char *written,
		     struct vgpu_ckpt_reader **r, const struct vgpu_ckpt_expect *ex,
		     unsigned flags, char *why)
{
	char shown[VGPU_CKPT_NAME], nm[VGPU_CKPT_NAME + 32];

	if (c->fds) {
		if (k >= c->nfds) {
			snprintf(why, VGPU_CKPT_MSG, "the checkpoint it builds on, %s, was not given",
				 vgpu_ckpt_show(written, shown));
			return -ENOENT;
		}
		if (k)
			snprintf(nm, sizeof(nm), "%s (parent %u)", vgpu_ckpt_show(c->name, shown), k);
		return vgpu_ckpt_reader_open_fd(r, c->fds[k], k ? nm : c->name, ex, flags, why);
	}
	if (k) {
		char *next = find_parent(c->cur, written);

		if (!next) {
			snprintf(why, VGPU_CKPT_MSG, "out of memory");
			return -ENOMEM;
		}
		free(c->cur);
		c->cur = next;
	}
	return vgpu_ckpt_reader_open(r, c->cur, ex, flags, why);
}

/* Why file k (k > 0) failed, said from its child's side; why is the reader's. */
static void link_error(const struct chain_src *c, int ret, const char *why, char *err)
{
	char shown[VGPU_CKPT_NAME], nm[VGPU_CKPT_NAME];
	const char *base;
	size_t n;

	if (c->fds) {
		/* "... was not given", or the reader's, naming "NAME (parent k)". */
		snprintf(err, VGPU_CKPT_MSG, "%s", why);
		return;
	}
	vgpu_ckpt_show(c->cur, shown);
	if (ret == -ENOENT) {
		/* Short: a daemon's reply carries 111 bytes of it. */
		snprintf(err, VGPU_CKPT_MSG, "the checkpoint it builds on, %s, is missing", shown);
		return;
	}
	/* why begins with the file's name: say it once, by its base name. */
	n = strlen(shown);
	if (!strncmp(why, shown, n) && !strncmp(why + n, ": ", 2))
		why += n + 2;
	base = strrchr(c->cur, '/');
	/* 360: the message fits whole, the end of why is the least of it. */
	snprintf(err, VGPU_CKPT_MSG, "it builds on %s: %.360s",
		 vgpu_ckpt_show(base ? base + 1 : c->cur, nm), why);
}

static int open_chain(struct vgpu_ckpt_reader **out, struct chain_src *c,
		      const struct vgpu_ckpt_expect *ex, unsigned flags, char *err)
{
	struct vgpu_ckpt_reader *head = NULL, *child = NULL;
	char *written = malloc(PATH_MAX), shown[VGPU_CKPT_NAME];
	unsigned depth = 0;
	int ret = -ENOMEM;

	*out = NULL;
	if (!written) {
		snprintf(err, VGPU_CKPT_MSG, "out of memory");
		goto out;
	}
	for (;;) {
		struct vgpu_ckpt_reader *r;
		char why[VGPU_CKPT_MSG];

		ret = open_link(c, depth, written, &r, ex, flags, why);
		if (ret) {
			if (!child)
				snprintf(err, VGPU_CKPT_MSG, "%s", why);
			else
				link_error(c, ret, why, err);
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
				 "parents", vgpu_ckpt_show(c->name, shown), VGPU_CKPT_MAX_CHAIN);
			ret = -ELOOP;
			goto out;
		}
		ret = parent_path(r, written, err);
		if (ret)
			goto out;
	}
	if (c->fds && depth + 1 < c->nfds) {
		snprintf(err, VGPU_CKPT_MSG, "%s: descriptor %u is no parent of descriptor %u, "
			 "which is a full checkpoint: %u given for a chain of %u",
			 vgpu_ckpt_show(c->name, shown), depth + 1, depth, c->nfds, depth + 1);
		ret = -EINVAL;
		goto out;
	}
	*out = head;
	head = NULL;
	ret = 0;
out:
	vgpu_ckpt_reader_close(head);
	free(written);
	return ret;
}

int vgpu_ckpt_open_chain(struct vgpu_ckpt_reader **out, const char *path,
			 const struct vgpu_ckpt_expect *ex, unsigned flags, char *err)
{
	struct chain_src c = { .name = path, .cur = strdup(path) };
	int ret;

	if (!c.cur) {
		*out = NULL;
		snprintf(err, VGPU_CKPT_MSG, "out of memory");
		return -ENOMEM;
	}
	ret = open_chain(out, &c, ex, flags, err);
	free(c.cur);
	return ret;
}

int vgpu_ckpt_open_chain_fds(struct vgpu_ckpt_reader **out, const int *fds, unsigned nfds,
			     const char *name, const struct vgpu_ckpt_expect *ex, unsigned flags,
			     char *err)
{
	struct chain_src c = { .name = name ? name : "checkpoint", .fds = fds, .nfds = nfds };
	char shown[VGPU_CKPT_NAME];

	*out = NULL;
	if (!nfds || nfds > VGPU_CKPT_MAX_CHAIN) {
		snprintf(err, VGPU_CKPT_MSG, "%s: %u descriptors for its chain (1 to %u)",
			 vgpu_ckpt_show(c.name, shown), nfds, VGPU_CKPT_MAX_CHAIN);
		return -EINVAL;
	}
	return open_chain(out, &c, ex, flags, err);
}

unsigned vgpu_ckpt_chain_length(const struct vgpu_ckpt_reader *r)
{
	unsigned n = 0;

	for (; r; r = vgpu_ckpt_parent(r))
		n++;
	return n;
}
