/* SPDX-License-Identifier: MIT */
/*
 * The parent of an incremental checkpoint: the session's previous
 * checkpoint file, opened with its own parents, and what the new one
 * compares against: each allocation's content digest and each module
 * image's hash when the parent was written.
 */
#ifndef VGPU_CKPT_PARENT_H
#define VGPU_CKPT_PARENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt.h"
#include "content_digest.h"

struct ckpt_parent {
	struct vgpu_ckpt_reader *r;	/* the chain; NULL: none */
	char path[4096];
	struct vgpu_ckpt_digest *dg;
	size_t ndg;
	struct vgpu_ckpt_module *mod;
	size_t nmod;
};

/*
 * The chain in @fds (@nfds: the parent, then its own parents; the
 * supervisor kept them from the session's last checkpoint), named @path,
 * as the parent of a checkpoint of @session to be written at @child.
 * Refused (-errno, why): a chain that is incomplete or damaged, of another
 * session, without digests, or one that naming the new file @child would
 * replace (the parent's name or one its ancestors are recorded under).
 */
int ckpt_parent_open(struct ckpt_parent *p, const int *fds, unsigned nfds, const char *path,
		     uint64_t session, const char *child, char *why, size_t why_len);
void ckpt_parent_close(struct ckpt_parent *p);

/* Whether the parent holds these very bytes at that allocation. */
bool ckpt_parent_has_alloc(const struct ckpt_parent *p, uint64_t data_id, uint64_t size,
			   const struct content_digest *d);
/* Whether the parent holds module @handle's image with this hash. */
bool ckpt_parent_has_module(const struct ckpt_parent *p, uint64_t handle, const uint8_t hash[32]);

#endif
