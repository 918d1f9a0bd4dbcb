// SPDX-License-Identifier: MIT
/*
 * CONTEXT_LOCAL_STORAGE_INTERFACE_V0301 {c693336e-1121-df11-a8c3-68f355d89593}.
 *
 * This is where the CUDA runtime keeps its per-context state: every copy of
 * the static runtime (the program's, cuBLAS's, cuDNN's, ...) puts one value
 * under its own key into each context it uses, with a destructor that the
 * driver must run when the context goes away (cuCtxDestroy, primary context
 * reset or released to zero), so that the runtime forgets the state before
 * a new context can reuse the handle.
 *
 * The table has no size header; slot 0 is a function:
 *   [0] put(ctx, key, value, dtor)      dtor(ctx, key, value) or NULL
 *   [1] delete(ctx, key)                drops the entry, dtor not called
 *   [2] get(&value, ctx, key)           CUDA_ERROR_INVALID_HANDLE if absent
 *   [3] unknown
 * ctx NULL (and (CUcontext)-1, seen from some callers) means the calling
 * thread's current context.
 */
#include "dark_api.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct cls_entry {
	CUcontext ctx;
	void *key;
	void *value;
	vgpu_cls_dtor dtor;
};

static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cls_entry *cls_entries; /* in registration order */
static size_t cls_count, cls_cap;

static CUresult cls_resolve(CUcontext *ctx)
{
	CUresult rc;

	if (*ctx && *ctx != (CUcontext)(intptr_t)-1)
		return CUDA_SUCCESS;
	rc = cuCtxGetCurrent(ctx);
	if (rc != CUDA_SUCCESS)
		return rc;
	return *ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Under cls_lock. */
static struct cls_entry *cls_find(CUcontext ctx, void *key)
{
	for (size_t i = 0; i < cls_count; i++)
		if (cls_entries[i].ctx == ctx && cls_entries[i].key == key)
			return &cls_entries[i];
	return NULL;
}

/* How every slot opens: *ctx resolved, then, holding cls_lock from here
 * (on success only), *e the entry for (*ctx, key), NULL if none. */
static CUresult cls_lock_find(CUcontext *ctx, void *key, struct cls_entry **e)
{
	CUresult rc = cls_resolve(ctx);

	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&cls_lock);
	*e = cls_find(*ctx, key);
	return CUDA_SUCCESS;
}

/* Under cls_lock: a new entry at the end; NULL when out of memory. */
static struct cls_entry *cls_add(CUcontext ctx, void *key)
{
	struct cls_entry *e;

	if (cls_count == cls_cap) {
		size_t cap = cls_cap ? cls_cap * 2 : 16;
		struct cls_entry *n = realloc(cls_entries, cap * sizeof(*n));

		if (!n)
			return NULL;
		cls_entries = n;
		cls_cap = cap;
	}
	e = &cls_entries[cls_count++];
	e->ctx = ctx;
	e->key = key;
	return e;
}

/* Under cls_lock: drops @e, the others kept in registration order. */
static void cls_drop(struct cls_entry *e)
{
	size_t i = (size_t)(e - cls_entries);

	memmove(e, e + 1, (cls_count - i - 1) * sizeof(*e));
	cls_count--;
}

CUresult vgpu_cls_put(CUcontext ctx, void *key, void *value, vgpu_cls_dtor dtor)
{
	struct cls_entry *e;
	CUresult rc = cls_lock_find(&ctx, key, &e);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!e)
		e = cls_add(ctx, key);
	if (e) {
		e->value = value;
		e->dtor = dtor;
	}
	pthread_mutex_unlock(&cls_lock);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	vlog_debug("dark API: CLS put ctx %p key %p value %p dtor %p", (void *)ctx, key,
		   value, (void *)(uintptr_t)dtor);
	return CUDA_SUCCESS;
}

CUresult vgpu_cls_delete(CUcontext ctx, void *key)
{
	struct cls_entry *e;
	CUresult rc = cls_lock_find(&ctx, key, &e);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (e)
		cls_drop(e);
	pthread_mutex_unlock(&cls_lock);
	rc = e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	vlog_debug("dark API: CLS delete ctx %p key %p: %d", (void *)ctx, key, (int)rc);
	return rc;
}

CUresult vgpu_cls_get(void **value, CUcontext ctx, void *key)
{
	struct cls_entry *e;
	CUresult rc;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	rc = cls_lock_find(&ctx, key, &e);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (e)
		*value = e->value;
	pthread_mutex_unlock(&cls_lock);
	vlog_debug("dark API: CLS get ctx %p key %p: %s", (void *)ctx, key, e ? "found" : "absent");
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Under cls_lock: takes out the first entry of ctx, in registration order. */
static int cls_take_first(CUcontext ctx, struct cls_entry *out)
{
	for (size_t i = 0; i < cls_count; i++) {
		if (cls_entries[i].ctx != ctx)
			continue;
		*out = cls_entries[i];
		cls_drop(&cls_entries[i]);
		return 1;
	}
	return 0;
}

void vgpu_cls_context_destroyed(CUcontext ctx)
{
	size_t pending = 0;

	if (!ctx)
		return;
	pthread_mutex_lock(&cls_lock);
	for (size_t i = 0; i < cls_count; i++)
		if (cls_entries[i].ctx == ctx)
			pending++;
	pthread_mutex_unlock(&cls_lock);

	/*
	 * One entry at a time, the destructor outside the lock: it may use the
	 * table itself. Only the entries present on entry are destroyed, so a
	 * destructor that stores into the dying context cannot loop forever.
	 */
	while (pending--) {
		struct cls_entry e;
		int found;

		pthread_mutex_lock(&cls_lock);
		found = cls_take_first(ctx, &e);
		pthread_mutex_unlock(&cls_lock);
		if (!found)
			break;
		vlog_debug("dark API: CLS destructor for ctx %p key %p", (void *)ctx, e.key);
		if (e.dtor)
			e.dtor(ctx, e.key, e.value);
	}
}

VGPU_DARK_DEFINE_STUBS(CONTEXT_LOCAL_STORAGE)

const void *vgpu_dark_table_CONTEXT_LOCAL_STORAGE[VGPU_DARK_CONTEXT_LOCAL_STORAGE_SLOTS] = {
	[0] = (const void *)vgpu_cls_put,
	[1] = (const void *)vgpu_cls_delete,
	[2] = (const void *)vgpu_cls_get,
};
