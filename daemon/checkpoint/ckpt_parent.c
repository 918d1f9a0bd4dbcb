// SPDX-License-Identifier: MIT
#include "ckpt_parent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A record table of the parent: n records of @size, or none. */
static int records(struct ckpt_parent *p, uint32_t type, size_t size, void **rec, size_t *n,
		   char *why, size_t why_len)
{
	size_t len;
	int ret = vgpu_ckpt_read_records(p->r, type, 0, size, 256u << 20, rec, n, &len);

	if (ret)
		snprintf(why, why_len, "%s", vgpu_ckpt_reader_error(p->r));
	return ret;
}

/* Whether the name @child would replace a file of the chain: the parent's
 * own name, or the name an ancestor is recorded under by its child. */
static const char *replaces(const struct ckpt_parent *p, const char *child)
{
	if (!strcmp(child, p->path))
		return "the parent itself";
	for (struct vgpu_ckpt_reader *r = p->r; r && vgpu_ckpt_parent(r); r = vgpu_ckpt_parent(r)) {
		int i = vgpu_ckpt_find(r, VGPU_CKPT_SEC_PARENT, 0);
		char *rec;
		size_t len;
		bool same;

		if (i < 0 || vgpu_ckpt_read_whole(r, (unsigned)i, 4095, (void **)&rec, &len))
			continue;
		same = len == strlen(child) && !memcmp(rec, child, len);
		free(rec);
		if (same)
			return "one of the parent's own parents";
	}
	return NULL;
}

static int by_id(const void *a, const void *b)
{
	const struct vgpu_ckpt_digest *x = a, *y = b;

	return x->data_id < y->data_id ? -1 : x->data_id > y->data_id;
}

int ckpt_parent_open(struct ckpt_parent *p, const int *fds, unsigned nfds, const char *path,
		     uint64_t session, const char *child, char *why, size_t why_len)
{
	char err[VGPU_CKPT_MSG];
	const char *what;
	int ret;

	memset(p, 0, sizeof(*p));
	snprintf(p->path, sizeof(p->path), "%s", path);
	ret = vgpu_ckpt_open_chain_fds(&p->r, fds, nfds, path, NULL, 0, err);
	if (ret) {
		snprintf(why, why_len, "%s", err);
		return ret;
	}
	if (vgpu_ckpt_header(p->r)->session_id != session) {
		snprintf(why, why_len, "%.200s is a checkpoint of session %llu", path,
			 (unsigned long long)vgpu_ckpt_header(p->r)->session_id);
		ret = -EXDEV;
	} else if ((what = replaces(p, child))) {
		snprintf(why, why_len, "%.200s is %s: an incremental checkpoint needs it", child,
			 what);
		ret = -EEXIST;
	} else {
		ret = records(p, VGPU_CKPT_SEC_DIGESTS, sizeof(*p->dg), (void **)&p->dg, &p->ndg,
			      why, why_len);
		if (!ret)
			ret = records(p, VGPU_CKPT_SEC_MODULES, sizeof(*p->mod), (void **)&p->mod,
				      &p->nmod, why, why_len);
	}
	if (ret) {
		ckpt_parent_close(p);
		return ret;
	}
	qsort(p->dg, p->ndg, sizeof(*p->dg), by_id);
	return 0;
}

void ckpt_parent_close(struct ckpt_parent *p)
{
	vgpu_ckpt_reader_close(p->r);
	free(p->dg);
	free(p->mod);
	memset(p, 0, sizeof(*p));
}

bool ckpt_parent_has_alloc(const struct ckpt_parent *p, uint64_t data_id, uint64_t size,
			   const struct content_digest *d)
{
	struct vgpu_ckpt_digest key = { .data_id = data_id };
	const struct vgpu_ckpt_digest *g;

	if (!p->r || !(g = bsearch(&key, p->dg, p->ndg, sizeof(*p->dg), by_id)))
		return false;
	return g->kind == VGPU_CKPT_DIGEST && g->size == size && g->a == d->a && g->b == d->b &&
	       vgpu_ckpt_find(p->r, VGPU_CKPT_SEC_ALLOC_DATA, data_id) >= 0;
}

bool ckpt_parent_has_module(const struct ckpt_parent *p, uint64_t handle, const uint8_t hash[32])
{
	if (!p->r)
		return false;
	for (size_t i = 0; i < p->nmod; i++)
		if (p->mod[i].handle == handle)
			return p->mod[i].image_id == handle && !memcmp(p->mod[i].hash, hash, 32) &&
			       vgpu_ckpt_find(p->r, VGPU_CKPT_SEC_MODULE_IMAGE,
					      p->mod[i].image_id) >= 0;
	return false;
}
