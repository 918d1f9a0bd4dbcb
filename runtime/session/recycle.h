/* SPDX-License-Identifier: MIT */
/*
 * Objects that are recycled, never freed (created and green contexts): a
 * stale handle still points at an object of its kind, whose magic says
 * dead, so checking one never touches freed memory. Every object ever
 * made stays on the recycler's `all` list, which handle checks walk;
 * recycled ones also wait on its `free` list to be used again.
 *
 * The object embeds a struct vgpu_recycle_link anywhere; the recycler knows
 * where (VGPU_RECYCLER_INIT). Its lock guards both lists, and owners take it
 * for their magic transitions too, so a check and a recycle never cross.
 */
#ifndef VGPU_RUNTIME_RECYCLE_H
#define VGPU_RUNTIME_RECYCLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

struct vgpu_recycle_link {
	void *next_all;		/* every object ever made */
	void *next_free;	/* recycled objects */
};

struct vgpu_recycler {
	pthread_mutex_t lock;
	size_t size;		/* of an object */
	size_t link;		/* where in it its struct vgpu_recycle_link is */
	void *all, *free;
};

#define VGPU_RECYCLER_INIT(type, member) \
	{ PTHREAD_MUTEX_INITIALIZER, sizeof(type), offsetof(type, member), NULL, NULL }

static inline struct vgpu_recycle_link *vgpu_recycle_link(const struct vgpu_recycler *r, void *o)
{
	return (struct vgpu_recycle_link *)((char *)o + r->link);
}

/* A recycled object as its last user left it, or a new zeroed one; NULL
 * when out of memory. */
static inline void *vgpu_recycle_get(struct vgpu_recycler *r)
{
	void *o;

	pthread_mutex_lock(&r->lock);
	o = r->free;
	if (o)
		r->free = vgpu_recycle_link(r, o)->next_free;
	pthread_mutex_unlock(&r->lock);
	if (o)
		return o;
	o = calloc(1, r->size);
	if (!o)
		return NULL;
	pthread_mutex_lock(&r->lock);
	vgpu_recycle_link(r, o)->next_all = r->all;
	r->all = o;
	pthread_mutex_unlock(&r->lock);
	return o;
}

/* With r->lock held (the owner marks @o dead under it): @o for reuse. */
static inline void vgpu_recycle_put_locked(struct vgpu_recycler *r, void *o)
{
	vgpu_recycle_link(r, o)->next_free = r->free;
	r->free = o;
}

/* With r->lock held: the object handle @h points at, or NULL when it is
 * none of them (its magic is the owner's to check). */
static inline void *vgpu_recycle_find_locked(struct vgpu_recycler *r, const void *h)
{
	void *o;

	for (o = r->all; o; o = vgpu_recycle_link(r, o)->next_all)
		if (o == h)
			break;
	return o;
}

#endif
