/* SPDX-License-Identifier: MIT */
/*
 * The objects behind CUmodule/CUlibrary and CUfunction/CUkernel, shared by
 * module.c (loading, unloading, the module and library handles),
 * function.c (lookup and enumeration), func_attr.c (attributes),
 * global.c and occupancy.c.
 *
 * A CUmodule and a CUlibrary are the same object (struct vgpu_module,
 * is_library telling which call made it), and so are a CUfunction and a
 * CUkernel (struct vgpu_func): cuLibraryGetModule and cuKernelGetFunction
 * return their argument.
 *
 * Locking: one mutex per module guards its tables, its functions'
 * occupancy caches and their attribute updates, and is held across the
 * lookup round trip so a name is never looked up twice. Launches read the
 * cached attributes without it (atomically, for the settable ones).
 */
#ifndef VGPU_RUNTIME_MODULE_H
#define VGPU_RUNTIME_MODULE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "handles.h"
#include "name_table.h"

struct module {
	struct vgpu_module m;	/* the handle points here */
	pthread_mutex_t lock;
	void *pending;		/* a library's image until its first use */
	uint64_t pending_size;
	struct ntab funcs;	/* struct func */
	struct ntab globals;	/* struct global */
};

#define OCC_SLOTS 16

struct occ {
	int block;
	unsigned int flags;
	size_t smem;
	int blocks;		/* the answer; valid when block > 0 */
};

/* CUfunction_attribute values past the cached vgpu_func_info.attr[]. */
#define EXT_ATTRS (CU_FUNC_ATTRIBUTE_MAX - VGPU_FUNC_ATTRS)

struct func {
	struct occ occ[OCC_SLOTS];	/* under the module's lock */
	int ext[EXT_ATTRS];		/* cluster attributes as set here */
	struct vgpu_func f;		/* the handle points here; last: ends in name[] */
};

struct global {
	uint64_t addr, size;
	char name[];
};

static inline struct module *mod_of(struct vgpu_module *m)
{
	return (struct module *)m;
}

static inline struct func *func_of(struct vgpu_func *f)
{
	return (struct func *)((char *)f - offsetof(struct func, f));
}

/* module.c: entry check and handle check for CUmodule and CUlibrary alike. */
VGPU_HIDDEN CUresult vgpu_module_lookup(void *h, struct module **out);
/* module.c: as vgpu_module_lookup, and a library is bound (loaded) by now. */
VGPU_HIDDEN CUresult vgpu_module_resolve(void *h, struct module **out);
/* module.c: the object named @name (@len bytes with its NUL) in table @t
 * of @m, asked of the worker by @fetch (m->lock held; it adds it to @t)
 * the first time. */
typedef CUresult (*vgpu_module_fetch)(struct module *m, const char *name, size_t len,
				      uint32_t h, void **out);
VGPU_HIDDEN CUresult vgpu_module_named(struct module *m, struct ntab *t, const char *name,
				       size_t len, vgpu_module_fetch fetch, void **out);
/* module.c: the whole regular file at @path, 1 to @max bytes, read with
 * the program's own rights, in *buf (malloc'd; a NUL follows the bytes, for
 * PTX text) and its length in *len. @bad when it is not a regular file, is
 * empty or is over @max; CUDA_ERROR_FILE_NOT_FOUND when it cannot be opened
 * or read whole. */
VGPU_HIDDEN CUresult vgpu_module_read_file(const char *path, uint64_t max, CUresult bad,
					   uint8_t **buf, size_t *len);
/* module.c: loads a library not yet bound into the current context. */
VGPU_HIDDEN CUresult vgpu_library_bind(struct module *m);

/* function.c: entry check and handle check, for CUfunction and CUkernel alike. */
VGPU_HIDDEN CUresult vgpu_func_get(void *h, struct vgpu_func **out);

/* func_attr.c: a CUfunction_attribute as cached or set here. */
VGPU_HIDDEN int vgpu_func_attr_read(const struct vgpu_func *f, CUfunction_attribute a);

#endif
