// SPDX-License-Identifier: MIT
/*
 * CUDA arrays and mipmapped arrays. The runtime issues their handles; the
 * worker makes the driver's arrays under their ids (synchronously: the
 * driver checks the descriptor, and its error is the program's answer).
 * Descriptors are answered here: an array's is what made it, a level's or
 * a plane's is the driver's, brought back when the level or plane is first
 * asked for (a mipmapped array hands out one handle per level, as the
 * driver does, owned by it and freed with it).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "calls_hand_gen.h"
#include "driver.h"
#include "entry.h"
#include "forward.h"
#include "init.h"
#include "log.h"
#include "vgpu/array_format.h"

/* Guards the parts of every array and the id table. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct vgpu_array **by_id;
static uint32_t by_id_cap;

static CUresult remember(struct vgpu_array *a)
{
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&lock);
	if (a->id >= by_id_cap) {
		uint32_t cap = by_id_cap ? by_id_cap : 64;
		struct vgpu_array **n;

		while (cap <= a->id)
			cap *= 2;
		n = realloc(by_id, cap * sizeof(*n));
		if (!n) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		memset(n + by_id_cap, 0, (cap - by_id_cap) * sizeof(*n));
		by_id = n;
		by_id_cap = cap;
	}
	by_id[a->id] = a;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

struct vgpu_array *vgpu_array_by_id(uint64_t id)
{
	struct vgpu_array *a = NULL;

	pthread_mutex_lock(&lock);
	if (id < by_id_cap)
		a = by_id[id];
	pthread_mutex_unlock(&lock);
	return a;
}

/* Frees @a and its parts; the worker has dropped them. */
static void array_free(struct vgpu_array *a)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < VGPU_ARRAY_MAX_PARTS; i++) {
		struct vgpu_array *p = a->part[i];

		if (!p)
			continue;
		by_id[p->id] = NULL;
		p->magic = 0;
		vgpu_id_free(VGPU_K_ARRAY, p->id);
		free(p);
	}
	if (a->id < by_id_cap)
		by_id[a->id] = NULL;
	pthread_mutex_unlock(&lock);
	a->magic = 0;
	vgpu_id_free(VGPU_K_ARRAY, a->id);
	free(a);
}

CUresult vgpu_array_resolve(CUarray h, struct vgpu_array **out)
{
	struct vgpu_array *a = (struct vgpu_array *)h;

	if (!a || a->magic != VGPU_ARRAY_MAGIC || a->kind == VGPU_ARR_MIPMAP)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = a;
	return CUDA_SUCCESS;
}

CUresult vgpu_mipmap_resolve(CUmipmappedArray h, struct vgpu_array **out)
{
	struct vgpu_array *a = (struct vgpu_array *)h;

	if (!a || a->magic != VGPU_ARRAY_MAGIC || a->kind != VGPU_ARR_MIPMAP)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = a;
	return CUDA_SUCCESS;
}

/* ---- creation ------------------------------------------------------------- */

static CUresult create(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels,
		       struct vgpu_array **out)
{
	struct vgpu_array_desc q;
	struct vgpu_array *a;
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_ctx_current(&ctx);

	if (rc)
		return rc;
	q = (struct vgpu_array_desc){ .width = d->Width, .height = d->Height, .depth = d->Depth,
				      .format = d->Format, .channels = d->NumChannels,
				      .flags = d->Flags, .levels = levels };
	a = vgpu_obj_new(sizeof(*a), offsetof(struct vgpu_array, id), VGPU_K_ARRAY);
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->kind = levels ? VGPU_ARR_MIPMAP : VGPU_ARR_ARRAY;
	a->ctx = ctx;
	a->desc = *d;
	a->levels = levels;
	rc = remember(a);
	if (!rc) {
		struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_ARRAY_CREATE, .ctx = ctx->id,
					       .arg = { a->id } },
				      .payload = &q, .payload_len = sizeof(q) };

		rc = vgpu_call(&r);
	}
	if (rc) {
		array_free(a);
		return rc;
	}
	a->magic = VGPU_ARRAY_MAGIC;
	*out = a;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuArray3DCreate(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR_v2 *d)
{
	struct vgpu_array *a;
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc && !d)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = create(d, 0, &a);
	if (!rc)
		*out = (CUarray)a;
	return rc;
}

CUresult vgpu_hand_cuArrayCreate(CUarray *out, const CUDA_ARRAY_DESCRIPTOR_v2 *d)
{
	CUDA_ARRAY3D_DESCRIPTOR d3;

	ENTER();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	d3 = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = d->Width, .Height = d->Height,
					.Format = d->Format, .NumChannels = d->NumChannels };
	return vgpu_hand_cuArray3DCreate(out, &d3);
}

CUresult vgpu_hand_cuMipmappedArrayCreate(CUmipmappedArray *out,
					  const CUDA_ARRAY3D_DESCRIPTOR_v2 *d, unsigned int levels)
{
	struct vgpu_array *a;
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc && !d)
		rc = CUDA_ERROR_INVALID_VALUE;
	/* The driver clamps the count; so does the worker, to the same. */
	if (!rc)
		rc = create(d, vgpu_mipmap_levels(d->Width, d->Height, d->Depth, d->Flags, levels),
			    &a);
	if (!rc)
		*out = (CUmipmappedArray)a;
	return rc;
}

static CUresult destroy(struct vgpu_array *a)
{
	CUresult rc = vgpu_call5(VGPU_OP_ARRAY_DESTROY, a->ctx->id, 0, a->id, 0, 0, 0, 0, NULL);

	if (!rc)
		array_free(a);
	return rc;
}

CUresult vgpu_hand_cuArrayDestroy(CUarray h)
{
	struct vgpu_array *a;
	CUresult rc;

	ENTER();
	rc = vgpu_array_resolve(h, &a);
	if (!rc && a->kind != VGPU_ARR_ARRAY)
		rc = CUDA_ERROR_INVALID_HANDLE;	/* a level or plane is its owner's */
	return rc ? rc : destroy(a);
}

CUresult vgpu_hand_cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	struct vgpu_array *a;
	CUresult rc;

	ENTER();
	rc = vgpu_mipmap_resolve(h, &a);
	return rc ? rc : destroy(a);
}

/* ---- levels and planes ------------------------------------------------------- */

/* Part @i of @owner, made on first use (one handle per part, as the
 * driver's). One part is made at a time: a second asker waits for it. */
static CUresult part(struct vgpu_array *owner, enum vgpu_array_kind kind, unsigned int i,
		     CUarray *out)
{
	static pthread_mutex_t making = PTHREAD_MUTEX_INITIALIZER;
	uint16_t op = kind == VGPU_ARR_LEVEL ? VGPU_OP_ARRAY_LEVEL : VGPU_OP_ARRAY_PLANE;
	struct vgpu_array_desc d;
	struct vgpu_array *p;
	CUresult rc = CUDA_SUCCESS;

	if (i >= VGPU_ARRAY_MAX_PARTS)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&making);
	p = owner->part[i];
	if (p)
		goto out;
	p = vgpu_obj_new(sizeof(*p), offsetof(struct vgpu_array, id), VGPU_K_ARRAY);
	if (!p) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	{
		struct vgpu_req r = { .sqe = { .opcode = op, .ctx = owner->ctx->id,
					       .arg = { owner->id, i, p->id } } };

		rc = vgpu_call_exact(&r, &d, sizeof(d));
	}
	if (rc) {
		vgpu_id_free(VGPU_K_ARRAY, p->id);
		free(p);
		goto out;
	}
	p->kind = kind;
	p->ctx = owner->ctx;
	p->desc = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = d.width, .Height = d.height,
					     .Depth = d.depth, .Format = (CUarray_format)d.format,
					     .NumChannels = d.channels, .Flags = d.flags };
	p->magic = VGPU_ARRAY_MAGIC;
	if (remember(p))
		vlog_warn("array part %u: no room to name it (texture read-backs miss it)", p->id);
	pthread_mutex_lock(&lock);
	owner->part[i] = p;
	pthread_mutex_unlock(&lock);
out:
	pthread_mutex_unlock(&making);
	if (!rc)
		*out = (CUarray)p;
	return rc;
}

CUresult vgpu_hand_cuMipmappedArrayGetLevel(CUarray *out, CUmipmappedArray h, unsigned int level)
{
	struct vgpu_array *a;
	CUresult rc;

	ENTER();
	rc = vgpu_need_out(vgpu_mipmap_resolve(h, &a), out);
	if (!rc && level >= a->levels)
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc ? rc : part(a, VGPU_ARR_LEVEL, level, out);
}

CUresult vgpu_hand_cuArrayGetPlane(CUarray *out, CUarray h, unsigned int plane)
{
	struct vgpu_array *a;
	CUresult rc;

	ENTER();
	rc = vgpu_need_out(vgpu_array_resolve(h, &a), out);
	if (!rc && a->kind != VGPU_ARR_ARRAY)
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc ? rc : part(a, VGPU_ARR_PLANE, plane, out);
}

/* ---- descriptors and queries ------------------------------------------------- */

CUresult vgpu_hand_cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR_v2 *d, CUarray h)
{
	struct vgpu_array *a;
	CUresult rc;

	ENTER();
	rc = vgpu_need_out(vgpu_array_resolve(h, &a), d);
	if (!rc)
		*d = a->desc;
	return rc;
}

CUresult vgpu_hand_cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v2 *d, CUarray h)
{
	struct vgpu_array *a;
	CUresult rc;

	ENTER();
	rc = vgpu_need_out(vgpu_array_resolve(h, &a), d);
	/* What the 2D descriptor can say of any array (no depth, no flags). */
	if (!rc)
		*d = (CUDA_ARRAY_DESCRIPTOR){ .Width = a->desc.Width, .Height = a->desc.Height,
					      .Format = a->desc.Format,
					      .NumChannels = a->desc.NumChannels };
	return rc;
}

static CUresult ask(uint16_t op, struct vgpu_array *a, uint64_t arg1, void *out, size_t len)
{
	struct vgpu_req r = { .sqe = { .opcode = op, .ctx = a->ctx->id, .arg = { a->id, arg1 } } };

	return vgpu_call_exact(&r, out, len);
}

/* An array's or a mipmapped array's memory requirements on @dev, once
 * @resolved (the handle's lookup) succeeded. */
static CUresult memory_requirements(CUresult resolved, struct vgpu_array *a,
				    CUDA_ARRAY_MEMORY_REQUIREMENTS_v1 *m, CUdevice dev)
{
	int32_t d;
	CUresult rc = vgpu_need_out(resolved, m);

	if (!rc)
		rc = vgpu_fwd_dev(dev, &d);
	return rc ? rc : ask(VGPU_OP_ARRAY_MEMREQ, a, (uint32_t)d, m, sizeof(*m));
}

CUresult vgpu_hand_cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS_v1 *m, CUarray h,
						CUdevice dev)
{
	struct vgpu_array *a = NULL;
	CUresult rc;

	ENTER();
	rc = vgpu_array_resolve(h, &a);
	return memory_requirements(rc, a, m, dev);
}

CUresult vgpu_hand_cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS_v1 *m,
							 CUmipmappedArray h, CUdevice dev)
{
	struct vgpu_array *a = NULL;
	CUresult rc;

	ENTER();
	rc = vgpu_mipmap_resolve(h, &a);
	return memory_requirements(rc, a, m, dev);
}

/* The same for sparse properties. */
static CUresult sparse_properties(CUresult resolved, struct vgpu_array *a,
				  CUDA_ARRAY_SPARSE_PROPERTIES_v1 *p)
{
	CUresult rc = vgpu_need_out(resolved, p);

	return rc ? rc : ask(VGPU_OP_ARRAY_SPARSE, a, 0, p, sizeof(*p));
}

CUresult vgpu_hand_cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES_v1 *p, CUarray h)
{
	struct vgpu_array *a = NULL;
	CUresult rc;

	ENTER();
	rc = vgpu_array_resolve(h, &a);
	return sparse_properties(rc, a, p);
}

CUresult vgpu_hand_cuMipmappedArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES_v1 *p,
						       CUmipmappedArray h)
{
	struct vgpu_array *a = NULL;
	CUresult rc;

	ENTER();
	rc = vgpu_mipmap_resolve(h, &a);
	return sparse_properties(rc, a, p);
}

/* ---- the CUDA 2.x forms: 32-bit descriptors ------------------------------------- */

VGPU_EXPORT CUresult cuArrayCreate(CUarray *out, const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
	CUDA_ARRAY3D_DESCRIPTOR d3;

	ENTER();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	d3 = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = d->Width, .Height = d->Height,
					.Format = d->Format, .NumChannels = d->NumChannels };
	return vgpu_hand_cuArray3DCreate(out, &d3);
}

VGPU_EXPORT CUresult cuArray3DCreate(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
	CUDA_ARRAY3D_DESCRIPTOR d3;

	ENTER();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	d3 = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = d->Width, .Height = d->Height, .Depth = d->Depth,
					.Format = d->Format, .NumChannels = d->NumChannels,
					.Flags = d->Flags };
	return vgpu_hand_cuArray3DCreate(out, &d3);
}

/* A size the 32-bit descriptor cannot hold is refused, not cut. */
static bool fits32(size_t v)
{
	return v <= UINT32_MAX;
}

VGPU_EXPORT CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1 *d, CUarray h)
{
	CUDA_ARRAY_DESCRIPTOR d2;
	CUresult rc;

	ENTER();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_hand_cuArrayGetDescriptor(&d2, h);
	if (!rc && (!fits32(d2.Width) || !fits32(d2.Height)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		*d = (CUDA_ARRAY_DESCRIPTOR_v1){ .Width = (unsigned)d2.Width,
						 .Height = (unsigned)d2.Height,
						 .Format = d2.Format, .NumChannels = d2.NumChannels };
	return rc;
}

VGPU_EXPORT CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR_v1 *d, CUarray h)
{
	CUDA_ARRAY3D_DESCRIPTOR d3;
	CUresult rc;

	ENTER();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_hand_cuArray3DGetDescriptor(&d3, h);
	if (!rc && (!fits32(d3.Width) || !fits32(d3.Height) || !fits32(d3.Depth)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		*d = (CUDA_ARRAY3D_DESCRIPTOR_v1){ .Width = (unsigned)d3.Width,
						   .Height = (unsigned)d3.Height,
						   .Depth = (unsigned)d3.Depth, .Format = d3.Format,
						   .NumChannels = d3.NumChannels,
						   .Flags = d3.Flags };
	return rc;
}
