// SPDX-License-Identifier: MIT
#include "objects.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void obj_table_init(struct obj_table *t, const char *kind)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
}

void obj_table_free(struct obj_table *t)
{
	free(t->e);
	t->e = NULL;
	t->cap = 0;
}

static int grow(struct obj_table *t, uint32_t id)
{
	uint32_t cap = t->cap ? t->cap : 64;
	struct obj_entry *e;

	while (cap <= id)
		cap *= 2;
	e = realloc(t->e, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	memset(e + t->cap, 0, (cap - t->cap) * sizeof(*e));
	t->e = e;
	t->cap = cap;
	return 0;
}

int obj_insert(struct obj_table *t, uint32_t id, void *obj, uint64_t aux, void *data)
{
	int ret;

	if (!id || id >= OBJ_MAX_ID)
		return -EINVAL;
	if (id >= t->cap) {
		ret = grow(t, id);
		if (ret)
			return ret;
	}
	if (t->e[id].live)
		return -EEXIST;
	t->e[id] = (struct obj_entry){ .obj = obj, .aux = aux, .data = data, .live = 1 };
	return 0;
}

struct obj_entry *obj_get(struct obj_table *t, uint32_t id)
{
	if (!id || id >= t->cap || !t->e[id].live)
		return NULL;
	return &t->e[id];
}

void obj_remove(struct obj_table *t, uint32_t id)
{
	if (id && id < t->cap)
		memset(&t->e[id], 0, sizeof(t->e[id]));
}
