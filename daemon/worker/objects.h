/* SPDX-License-Identifier: MIT */
/*
 * Client-issued ids mapped to the worker's real objects. Ids are small
 * integers the runtime hands out; the table checks every id it is given,
 * so a forged or stale id is an error, never a wild pointer.
 */
#ifndef VGPU_OBJECTS_H
#define VGPU_OBJECTS_H

#include <stdint.h>

#define OBJ_MAX_ID (1u << 22)

struct obj_entry {
	void *obj;		/* the real handle (CUstream, CUevent, ...) */
	uint64_t aux;		/* per-kind extra (owner ctx, flags, ...) */
	void *data;		/* per-kind heap data (malloc), freed with the entry */
	uint8_t live;
};

struct obj_table {
	const char *kind;
	struct obj_entry *e;
	uint32_t cap;
};

void obj_table_init(struct obj_table *t, const char *kind);
void obj_table_free(struct obj_table *t);
/* -EEXIST if live, -EINVAL if id is 0 or too large, -ENOMEM. The table
 * owns data from then on, also on failure (it is freed). */
int obj_insert(struct obj_table *t, uint32_t id, void *obj, uint64_t aux, void *data);
/* NULL when id is not live. */
struct obj_entry *obj_get(struct obj_table *t, uint32_t id);
void obj_remove(struct obj_table *t, uint32_t id);
/* The id @obj is live under; 0 if none (a walk of the table). */
uint32_t obj_id_of(struct obj_table *t, const void *obj);

#define obj_for_each(t, i, ent) \
	for ((i) = 1; (i) < (t)->cap; (i)++) \
		if (((ent) = &(t)->e[i])->live)

#endif
