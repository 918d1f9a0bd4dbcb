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
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->e[i].live)
			free(t->e[i].data);
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
	int ret = 0;

	if (!id || id >= OBJ_MAX_ID)
		ret = -EINVAL;
	else if (id >= t->cap)
		ret = grow(t, id);
	if (!ret && t->e[id].live)
		ret = -EEXIST;
	if (ret) {
		free(data);
		return ret;
	}
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
	if (id && id < t->cap) {
		free(t->e[id].data);
		memset(&t->e[id], 0, sizeof(t->e[id]));
	}
}

uint32_t obj_id_of(struct obj_table *t, const void *obj)
{
	struct obj_entry *e;
	uint32_t i;

	obj_for_each(t, i, e)
		if (e->obj == obj)
			return i;
	return 0;
}
