/* SPDX-License-Identifier: MIT */
/*
 * Name → object tables, open addressing: a module's functions and globals
 * (module.h), so that a second lookup of a name needs no round trip. The
 * name is the object's own copy. No locking: the owner's lock guards it.
 */
#ifndef VGPU_RUNTIME_NAME_TABLE_H
#define VGPU_RUNTIME_NAME_TABLE_H

#include <stdint.h>

#define VGPU_HIDDEN __attribute__((visibility("hidden")))

struct nent {
	uint32_t hash;
	const char *name;
	void *obj;
};

struct ntab {
	struct nent *e;
	uint32_t cap, n;	/* cap: 0 or a power of two */
};

VGPU_HIDDEN uint32_t vgpu_name_hash(const char *s);
/* The object named @name (hash @h), or NULL. */
VGPU_HIDDEN void *vgpu_ntab_get(const struct ntab *t, const char *name, uint32_t h);
/* Adds @obj under @name, which must stay valid; -ENOMEM leaves @t as it was. */
VGPU_HIDDEN int vgpu_ntab_put(struct ntab *t, const char *name, uint32_t h, void *obj);

#endif
