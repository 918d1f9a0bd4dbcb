// SPDX-License-Identifier: MIT
/*
 * Texture and surface objects. A kernel takes one by value, so its value
 * must be the driver's own: creation is one synchronous round trip that
 * answers it. The descriptors travel with arrays as ids; reading them back
 * asks the worker, whose driver answers, and turns ids into handles again.
 * Texture references (a generated kind, calls.def) bound to arrays too.
 */
#include <string.h>

#include "array.h"
#include "calls_hand_gen.h"
#include "driver.h"
#include "entry.h"
#include "forward.h"
#include "init.h"

static CUresult res_to_wire(const CUDA_RESOURCE_DESC *r, bool surface, struct vgpu_res_desc *q)
{
	struct vgpu_array *a;
	CUresult rc;

	memset(q, 0, sizeof(*q));
	q->type = r->resType;
	q->flags = r->flags;
	switch (r->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		rc = vgpu_array_resolve(r->res.array.hArray, &a);
		if (!rc)
			q->ref = a->id;
		return rc;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		rc = vgpu_mipmap_resolve(r->res.mipmap.hMipmappedArray, &a);
		if (!rc)
			q->ref = a->id;
		return surface ? CUDA_ERROR_INVALID_VALUE : rc;
	case CU_RESOURCE_TYPE_LINEAR:
		q->ref = r->res.linear.devPtr;
		q->format = r->res.linear.format;
		q->channels = r->res.linear.numChannels;
		q->size = r->res.linear.sizeInBytes;
		return surface ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_PITCH2D:
		q->ref = r->res.pitch2D.devPtr;
		q->format = r->res.pitch2D.format;
		q->channels = r->res.pitch2D.numChannels;
		q->width = r->res.pitch2D.width;
		q->height = r->res.pitch2D.height;
		q->pitch = r->res.pitch2D.pitchInBytes;
		return surface ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static void tex_to_wire(const CUDA_TEXTURE_DESC *t, struct vgpu_tex_desc *q)
{
	for (int i = 0; i < 3; i++)
		q->address_mode[i] = t->addressMode[i];
	q->filter_mode = t->filterMode;
	q->flags = t->flags;
	q->max_anisotropy = t->maxAnisotropy;
	q->mipmap_filter_mode = t->mipmapFilterMode;
	q->mipmap_level_bias = t->mipmapLevelBias;
	q->min_mipmap_level_clamp = t->minMipmapLevelClamp;
	q->max_mipmap_level_clamp = t->maxMipmapLevelClamp;
	memcpy(q->border_color, t->borderColor, sizeof(q->border_color));
}

static void view_to_wire(const CUDA_RESOURCE_VIEW_DESC *v, struct vgpu_view_desc *q)
{
	q->format = v->format;
	q->width = v->width;
	q->height = v->height;
	q->depth = v->depth;
	q->first_level = v->firstMipmapLevel;
	q->last_level = v->lastMipmapLevel;
	q->first_layer = v->firstLayer;
	q->last_layer = v->lastLayer;
}

static CUresult create(uint16_t op, unsigned long long *out, const struct vgpu_texobj_req *q)
{
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_ctx_current(&ctx);
	struct vgpu_req r = { .sqe = { .opcode = op }, .payload = q, .payload_len = sizeof(*q) };

	if (rc)
		return rc;
	r.sqe.ctx = ctx->id;
	rc = vgpu_call(&r);
	if (!rc)
		*out = r.cqe.val[0];
	return rc;
}

CUresult vgpu_hand_cuTexObjectCreate(CUtexObject *out, const CUDA_RESOURCE_DESC *res,
				     const CUDA_TEXTURE_DESC *tex,
				     const CUDA_RESOURCE_VIEW_DESC *view)
{
	struct vgpu_texobj_req q = { 0 };
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc && (!res || !tex))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = res_to_wire(res, false, &q.res);
	if (rc)
		return rc;
	tex_to_wire(tex, &q.tex);
	if (view) {
		view_to_wire(view, &q.view);
		q.has_view = 1;
	}
	return create(VGPU_OP_TEXOBJ_CREATE, out, &q);
}

CUresult vgpu_hand_cuSurfObjectCreate(CUsurfObject *out, const CUDA_RESOURCE_DESC *res)
{
	struct vgpu_texobj_req q = { 0 };
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc && !res)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = res_to_wire(res, true, &q.res);
	return rc ? rc : create(VGPU_OP_SURFOBJ_CREATE, out, &q);
}

static CUresult destroy(uint16_t op, unsigned long long v)
{
	struct vgpu_ctx *ctx;
	CUresult rc;

	ENTER();
	rc = vgpu_ctx_current(&ctx);
	return rc ? rc : vgpu_call5(op, ctx->id, 0, v, 0, 0, 0, 0, NULL);
}

CUresult vgpu_hand_cuTexObjectDestroy(CUtexObject v)
{
	return destroy(VGPU_OP_TEXOBJ_DESTROY, v);
}

CUresult vgpu_hand_cuSurfObjectDestroy(CUsurfObject v)
{
	return destroy(VGPU_OP_SURFOBJ_DESTROY, v);
}

/* ---- reading back ----------------------------------------------------------------- */

static CUresult get(unsigned long long v, bool surface, uint32_t what, void *out, size_t len)
{
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_ctx_current(&ctx);
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_TEXOBJ_GET,
				       .arg = { v, surface, what } } };

	if (rc)
		return rc;
	r.sqe.ctx = ctx->id;
	return vgpu_call_exact(&r, out, len);
}

static CUresult res_get(unsigned long long v, bool surface, CUDA_RESOURCE_DESC *out)
{
	struct vgpu_res_desc q;
	struct vgpu_array *a = NULL;
	CUDA_RESOURCE_DESC r = { 0 };
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc)
		rc = get(v, surface, VGPU_TEXOBJ_GET_RES, &q, sizeof(q));
	if (rc)
		return rc;
	r.resType = (CUresourcetype)q.type;
	r.flags = q.flags;
	switch (q.type) {
	case CU_RESOURCE_TYPE_ARRAY:
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		a = vgpu_array_by_id(q.ref);
		if (!a)
			return CUDA_ERROR_UNKNOWN;	/* the worker named none we hold */
		if (q.type == CU_RESOURCE_TYPE_ARRAY)
			r.res.array.hArray = (CUarray)a;
		else
			r.res.mipmap.hMipmappedArray = (CUmipmappedArray)a;
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		r.res.linear.devPtr = q.ref;
		r.res.linear.format = (CUarray_format)q.format;
		r.res.linear.numChannels = q.channels;
		r.res.linear.sizeInBytes = q.size;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		r.res.pitch2D.devPtr = q.ref;
		r.res.pitch2D.format = (CUarray_format)q.format;
		r.res.pitch2D.numChannels = q.channels;
		r.res.pitch2D.width = q.width;
		r.res.pitch2D.height = q.height;
		r.res.pitch2D.pitchInBytes = q.pitch;
		break;
	default:
		return CUDA_ERROR_UNKNOWN;
	}
	*out = r;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *out, CUtexObject v)
{
	return res_get(v, false, out);
}

CUresult vgpu_hand_cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *out, CUsurfObject v)
{
	return res_get(v, true, out);
}

CUresult vgpu_hand_cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *out, CUtexObject v)
{
	struct vgpu_tex_desc q;
	CUDA_TEXTURE_DESC t = { 0 };
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc)
		rc = get(v, false, VGPU_TEXOBJ_GET_TEX, &q, sizeof(q));
	if (rc)
		return rc;
	for (int i = 0; i < 3; i++)
		t.addressMode[i] = (CUaddress_mode)q.address_mode[i];
	t.filterMode = (CUfilter_mode)q.filter_mode;
	t.flags = q.flags;
	t.maxAnisotropy = q.max_anisotropy;
	t.mipmapFilterMode = (CUfilter_mode)q.mipmap_filter_mode;
	t.mipmapLevelBias = q.mipmap_level_bias;
	t.minMipmapLevelClamp = q.min_mipmap_level_clamp;
	t.maxMipmapLevelClamp = q.max_mipmap_level_clamp;
	memcpy(t.borderColor, q.border_color, sizeof(t.borderColor));
	*out = t;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *out, CUtexObject v)
{
	struct vgpu_view_desc q;
	CUDA_RESOURCE_VIEW_DESC r = { 0 };
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc)
		rc = get(v, false, VGPU_TEXOBJ_GET_VIEW, &q, sizeof(q));
	if (rc)
		return rc;
	r.format = (CUresourceViewFormat)q.format;
	r.width = q.width;
	r.height = q.height;
	r.depth = q.depth;
	r.firstMipmapLevel = q.first_level;
	r.lastMipmapLevel = q.last_level;
	r.firstLayer = q.first_layer;
	r.lastLayer = q.last_layer;
	*out = r;
	return CUDA_SUCCESS;
}

/* ---- texture references bound to arrays ------------------------------------------- */

static CUresult texref_bind(CUtexref h, uint64_t id, unsigned int flags, bool mipmapped)
{
	struct vgpu_fwd f = { 0 };
	uint32_t ref;
	CUresult rc = vgpu_fwd_gen(&f, h, VGPU_GEN_KIND_TEXREF, &ref);

	if (!rc)
		rc = vgpu_fwd_ctx_default(&f);
	return rc ? rc : vgpu_call5(VGPU_OP_TEXREF_ARRAY, f.ctx->id, 0, ref, id, flags,
				    mipmapped, 0, NULL);
}

static CUresult texref_get(CUtexref h, bool mipmapped, struct vgpu_array **out)
{
	struct vgpu_fwd f = { 0 };
	struct vgpu_cqe c = { 0 };
	uint32_t ref;
	CUresult rc = vgpu_fwd_gen(&f, h, VGPU_GEN_KIND_TEXREF, &ref);

	if (!rc)
		rc = vgpu_fwd_ctx_default(&f);
	if (!rc)
		rc = vgpu_call5(VGPU_OP_TEXREF_GET_ARRAY, f.ctx->id, 0, ref, mipmapped, 0, 0, 0,
				&c);
	if (!rc && !(*out = vgpu_array_by_id(c.val[0])))
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

VGPU_EXPORT CUresult cuTexRefSetArray(CUtexref h, CUarray a, unsigned int flags)
{
	struct vgpu_array *arr;
	CUresult rc;

	ENTER();
	rc = vgpu_array_resolve(a, &arr);
	return rc ? rc : texref_bind(h, arr->id, flags, false);
}

VGPU_EXPORT CUresult cuTexRefSetMipmappedArray(CUtexref h, CUmipmappedArray m, unsigned int flags)
{
	struct vgpu_array *arr;
	CUresult rc;

	ENTER();
	rc = vgpu_mipmap_resolve(m, &arr);
	return rc ? rc : texref_bind(h, arr->id, flags, true);
}

VGPU_EXPORT CUresult cuTexRefGetArray(CUarray *out, CUtexref h)
{
	struct vgpu_array *a;
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc)
		rc = texref_get(h, false, &a);
	if (!rc)
		*out = (CUarray)a;
	return rc;
}

VGPU_EXPORT CUresult cuTexRefGetMipmappedArray(CUmipmappedArray *out, CUtexref h)
{
	struct vgpu_array *a;
	CUresult rc = vgpu_enter_nonnull(out);

	if (!rc)
		rc = texref_get(h, true, &a);
	if (!rc)
		*out = (CUmipmappedArray)a;
	return rc;
}
