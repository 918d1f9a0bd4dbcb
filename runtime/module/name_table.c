// SPDX-License-Identifier: MIT
/*
 * Name → object tables (name_table.h): FNV-1a hashes, linear probing,
 * doubled at half full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "name_table.h"

uint32_t vgpu_name_hash(const char *s)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

void *vgpu_ntab_get(const struct ntab *t, const char *name, uint32_t h)
{
	for (uint32_t i = h; t->cap; i++) {
		const struct nent *e = &t->e[i & (t->cap - 1)];

		if (!e->name)
			return NULL;
		if (e->hash == h && !strcmp(e->name, name))
			return e->obj;
	}
	return NULL;
}

static void ntab_place(struct nent *e, uint32_t cap, const struct nent *x)
{
	uint32_t i = x->hash;

	while (e[i & (cap - 1)].name)
		i++;
	e[i & (cap - 1)] = *x;
}

int vgpu_ntab_put(struct ntab *t, const char *name, uint32_t h, void *obj)
{
	struct nent x = { h, name, obj };

	if (2 * (t->n + 1) > t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 16;
		struct nent *e = calloc(cap, sizeof(*e));

		if (!e)
			return -ENOMEM;
		for (uint32_t i = 0; i < t->cap; i++)
			if (t->e[i].name)
				ntab_place(e, cap, &t->e[i]);
		free(t->e);
		t->e = e;
		t->cap = cap;
	}
	ntab_place(t->e, t->cap, &x);
	t->n++;
	return 0;
}
