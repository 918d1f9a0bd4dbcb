// SPDX-License-Identifier: MIT
/*
 * Texture and surface objects. A kernel takes one as a 64-bit value, so
 * the client gets the driver's own value back and the worker keys the
 * objects by it. The descriptors come from the client with arrays named by
 * ids: every field is bounded here, arrays must be live ids, linear and
 * pitched memory the client's own, before the driver checks the rest. The
 * request is kept, so a checkpoint can make the object again.
 */
#include <stdlib.h>
#include <string.h>

#include "array_state.h"
#include "exec_forward.h"
#include "vgpu/array_format.h"

static CUresult res_of(struct worker *w, const struct vgpu_res_desc *q, bool surface,
		       CUDA_RESOURCE_DESC *r)
{
	uint32_t e;
	uint64_t span;

	memset(r, 0, sizeof(*r));
	if (q->flags)
		return CUDA_ERROR_INVALID_VALUE;
	r->resType = (CUresourcetype)q->type;
	switch (q->type) {
	case CU_RESOURCE_TYPE_ARRAY:
		r->res.array.hArray = array_handle(w, q->ref);
		return r->res.array.hArray ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		r->res.mipmap.hMipmappedArray = array_mipmap_handle(w, q->ref);
		return r->res.mipmap.hMipmappedArray ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	case CU_RESOURCE_TYPE_LINEAR:
		if (surface || !worker_addr_ok(w, q->ref, q->size))
			return CUDA_ERROR_INVALID_VALUE;
		r->res.linear.devPtr = q->ref;
		r->res.linear.format = (CUarray_format)q->format;
		r->res.linear.numChannels = q->channels;
		r->res.linear.sizeInBytes = q->size;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_PITCH2D:
		e = vgpu_array_elem_bytes(q->format, q->channels);
		if (surface || !e || !q->width || !q->height || q->pitch < q->width ||
		    __builtin_mul_overflow(q->pitch, q->height - 1, &span) ||
		    q->width > UINT64_MAX / e || __builtin_add_overflow(span, q->width * e, &span) ||
		    !worker_addr_ok(w, q->ref, span))
			return CUDA_ERROR_INVALID_VALUE;
		r->res.pitch2D.devPtr = q->ref;
		r->res.pitch2D.format = (CUarray_format)q->format;
		r->res.pitch2D.numChannels = q->channels;
		r->res.pitch2D.width = q->width;
		r->res.pitch2D.height = q->height;
		r->res.pitch2D.pitchInBytes = q->pitch;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static void tex_of(const struct vgpu_tex_desc *q, CUDA_TEXTURE_DESC *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < 3; i++)
		t->addressMode[i] = (CUaddress_mode)q->address_mode[i];
	t->filterMode = (CUfilter_mode)q->filter_mode;
	t->flags = q->flags;
	t->maxAnisotropy = q->max_anisotropy;
	t->mipmapFilterMode = (CUfilter_mode)q->mipmap_filter_mode;
	t->mipmapLevelBias = q->mipmap_level_bias;
	t->minMipmapLevelClamp = q->min_mipmap_level_clamp;
	t->maxMipmapLevelClamp = q->max_mipmap_level_clamp;
	memcpy(t->borderColor, q->border_color, sizeof(t->borderColor));
}

static void view_of(const struct vgpu_view_desc *q, CUDA_RESOURCE_VIEW_DESC *v)
{
	memset(v, 0, sizeof(*v));
	v->format = (CUresourceViewFormat)q->format;
	v->width = q->width;
	v->height = q->height;
	v->depth = q->depth;
	v->firstMipmapLevel = q->first_level;
	v->lastMipmapLevel = q->last_level;
	v->firstLayer = q->first_layer;
	v->lastLayer = q->last_layer;
}

/* Every enum and flag in range, as the driver's own checks want them. */
static bool tex_ok(const struct vgpu_tex_desc *t)
{
	const uint32_t flags = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
		CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP;

	for (int i = 0; i < 3; i++)
		if (t->address_mode[i] > CU_TR_ADDRESS_MODE_BORDER)
			return false;
	return t->filter_mode <= CU_TR_FILTER_MODE_LINEAR &&
	       t->mipmap_filter_mode <= CU_TR_FILTER_MODE_LINEAR && !(t->flags & ~flags);
}

static bool linear_ok(const struct vgpu_res_desc *r)
{
	if (r->type != CU_RESOURCE_TYPE_LINEAR && r->type != CU_RESOURCE_TYPE_PITCH2D)
		return true;
	return vgpu_array_format_known(r->format) &&
	       (r->channels == 1 || r->channels == 2 || r->channels == 4);
}

CUresult texobj_descs(struct worker *w, const struct vgpu_texobj_req *q, bool surface,
		      CUDA_RESOURCE_DESC *res, CUDA_TEXTURE_DESC *tex, CUDA_RESOURCE_VIEW_DESC *view)
{
	if (q->reserved || q->view.reserved || q->has_view > 1 || (surface && q->has_view))
		return CUDA_ERROR_INVALID_VALUE;
	if ((!surface && !tex_ok(&q->tex)) || !linear_ok(&q->res) ||
	    (q->has_view && q->view.format > CU_RES_VIEW_FORMAT_UNSIGNED_BC7))
		return CUDA_ERROR_INVALID_VALUE;
	tex_of(&q->tex, tex);
	view_of(&q->view, view);
	return res_of(w, &q->res, surface, res);
}

int texobj_remember(struct array_state *s, uint64_t value, uint32_t ctx, bool surface,
		    const struct vgpu_texobj_req *q)
{
	if (s->ntex == s->cap_tex) {
		size_t cap = s->cap_tex ? 2 * s->cap_tex : 16;
		struct texobj_rec *n = realloc(s->tex, cap * sizeof(*n));

		if (!n)
			return -1;
		s->tex = n;
		s->cap_tex = cap;
	}
	s->tex[s->ntex++] = (struct texobj_rec){ .value = value, .ctx = ctx, .surface = surface,
						 .req = *q };
	return 0;
}

static struct texobj_rec *find(struct worker *w, uint64_t value, bool surface)
{
	struct array_state *s = w->arrays;

	for (size_t i = 0; s && i < s->ntex; i++)
		if (s->tex[i].value == value && s->tex[i].surface == surface)
			return &s->tex[i];
	return NULL;
}

static enum op_status create(struct worker *w, struct op_call *call, bool surface)
{
	struct array_state *s = array_state_of(w);
	struct vgpu_texobj_req q;
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	unsigned long long v = 0;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (!s) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (call->len != sizeof(q))
		goto out;
	memcpy(&q, call->payload, sizeof(q));
	rc = texobj_descs(w, &q, surface, &res, &tex, &view);
	if (rc)
		goto out;
	if (surface)
		rc = w->B.cuSurfObjectCreate(&v, &res);
	else
		rc = w->B.cuTexObjectCreate(&v, &res, &tex, q.has_view ? &view : NULL);
	if (!rc && texobj_remember(s, v, call->sqe->ctx, surface, &q)) {
		if (surface)
			w->B.cuSurfObjectDestroy(v);
		else
			w->B.cuTexObjectDestroy(v);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	call->cqe->val[0] = rc ? 0 : v;
out:
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_tex_create(struct worker *w, struct op_call *call)
{
	return create(w, call, false);
}

static enum op_status op_surf_create(struct worker *w, struct op_call *call)
{
	return create(w, call, true);
}

static enum op_status destroy(struct worker *w, struct op_call *call, bool surface)
{
	struct texobj_rec *t = find(w, call->sqe->arg[0], surface);
	CUresult rc;

	if (!t) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	rc = surface ? w->B.cuSurfObjectDestroy(t->value) : w->B.cuTexObjectDestroy(t->value);
	if (!rc)
		*t = w->arrays->tex[--w->arrays->ntex];
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_tex_destroy(struct worker *w, struct op_call *call)
{
	return destroy(w, call, false);
}

static enum op_status op_surf_destroy(struct worker *w, struct op_call *call)
{
	return destroy(w, call, true);
}

/* ---- reading back: the driver's answer, arrays as the client's ids ---------------- */

static CUresult res_back(struct worker *w, const CUDA_RESOURCE_DESC *r, struct vgpu_res_desc *q)
{
	memset(q, 0, sizeof(*q));
	q->type = r->resType;
	q->flags = r->flags;
	switch (r->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		q->ref = array_id_of(w, r->res.array.hArray);
		break;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		q->ref = array_id_of(w, r->res.mipmap.hMipmappedArray);
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		q->ref = r->res.linear.devPtr;
		q->format = r->res.linear.format;
		q->channels = r->res.linear.numChannels;
		q->size = r->res.linear.sizeInBytes;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_PITCH2D:
		q->ref = r->res.pitch2D.devPtr;
		q->format = r->res.pitch2D.format;
		q->channels = r->res.pitch2D.numChannels;
		q->width = r->res.pitch2D.width;
		q->height = r->res.pitch2D.height;
		q->pitch = r->res.pitch2D.pitchInBytes;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_UNKNOWN;
	}
	return q->ref ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;	/* an array the client never named */
}

static enum op_status op_get(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	bool surface = s->arg[1] == 1;
	union {
		struct vgpu_res_desc res;
		struct vgpu_tex_desc tex;
		struct vgpu_view_desc view;
	} out;
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	uint32_t n = 0;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (!call->reply || s->arg[1] > 1 || !find(w, s->arg[0], surface))
		goto out;
	memset(&out, 0, sizeof(out));
	switch (s->arg[2]) {
	case VGPU_TEXOBJ_GET_RES:
		rc = surface ? w->B.cuSurfObjectGetResourceDesc(&res, s->arg[0]) :
			       w->B.cuTexObjectGetResourceDesc(&res, s->arg[0]);
		if (!rc)
			rc = res_back(w, &res, &out.res);
		n = sizeof(out.res);
		break;
	case VGPU_TEXOBJ_GET_TEX:
		if (surface)
			break;
		rc = w->B.cuTexObjectGetTextureDesc(&tex, s->arg[0]);
		for (int i = 0; i < 3; i++)
			out.tex.address_mode[i] = tex.addressMode[i];
		out.tex.filter_mode = tex.filterMode;
		out.tex.flags = tex.flags;
		out.tex.max_anisotropy = tex.maxAnisotropy;
		out.tex.mipmap_filter_mode = tex.mipmapFilterMode;
		out.tex.mipmap_level_bias = tex.mipmapLevelBias;
		out.tex.min_mipmap_level_clamp = tex.minMipmapLevelClamp;
		out.tex.max_mipmap_level_clamp = tex.maxMipmapLevelClamp;
		memcpy(out.tex.border_color, tex.borderColor, sizeof(tex.borderColor));
		n = sizeof(out.tex);
		break;
	case VGPU_TEXOBJ_GET_VIEW:
		if (surface)
			break;
		rc = w->B.cuTexObjectGetResourceViewDesc(&view, s->arg[0]);
		out.view.format = view.format;
		out.view.width = view.width;
		out.view.height = view.height;
		out.view.depth = view.depth;
		out.view.first_level = view.firstMipmapLevel;
		out.view.last_level = view.lastMipmapLevel;
		out.view.first_layer = view.firstLayer;
		out.view.last_layer = view.lastLayer;
		n = sizeof(out.view);
		break;
	}
	if (!rc) {
		memcpy(call->reply, &out, n);
		call->cqe->val[2] = n;
	}
out:
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- texture references bound to arrays ----------------------------------------- */

/* Binding a texture reference (a generated kind) to an array or a
 * mipmapped array: recorded, so a restore binds it again once the arrays
 * are back. */
static enum op_status op_texref_array(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	void *ref = NULL, *a;
	CUresult rc = q->arg[0] > UINT32_MAX || q->arg[3] > 1 || q->arg[2] > UINT32_MAX ?
		CUDA_ERROR_INVALID_VALUE :
		fwd_gen(w, call, (uint32_t)q->arg[0], VGPU_GEN_KIND_TEXREF, &ref);

	if (!rc) {
		a = q->arg[3] ? (void *)array_mipmap_handle(w, q->arg[1]) :
				(void *)array_handle(w, q->arg[1]);
		if (!a)
			rc = CUDA_ERROR_INVALID_HANDLE;
		else if (q->arg[3])
			rc = w->B.cuTexRefSetMipmappedArray(ref, a, (unsigned int)q->arg[2]);
		else
			rc = w->B.cuTexRefSetArray(ref, a, (unsigned int)q->arg[2]);
	}
	if (!rc)
		calls_log_record(w, call, (uint32_t)q->arg[0]);
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_texref_get_array(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	void *ref = NULL, *a = NULL;
	CUresult rc = q->arg[0] > UINT32_MAX || q->arg[1] > 1 ? CUDA_ERROR_INVALID_VALUE :
		fwd_gen(w, call, (uint32_t)q->arg[0], VGPU_GEN_KIND_TEXREF, &ref);

	if (!rc)
		rc = q->arg[1] ? w->B.cuTexRefGetMipmappedArray((CUmipmappedArray *)&a, ref) :
				 w->B.cuTexRefGetArray((CUarray *)&a, ref);
	if (!rc && !(call->cqe->val[0] = array_id_of(w, a)))
		rc = CUDA_ERROR_INVALID_VALUE;	/* none the client named */
	call->cqe->result = rc;
	return OP_DONE;
}

const struct op_desc exec_texobj_ops[] = {
	OP(TEXOBJ_CREATE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_tex_create),
	OP(TEXOBJ_DESTROY, OPF_NEEDS_CTX, op_tex_destroy),
	OP(SURFOBJ_CREATE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_surf_create),
	OP(SURFOBJ_DESTROY, OPF_NEEDS_CTX, op_surf_destroy),
	OP(TEXOBJ_GET, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_get),
	OP(TEXREF_ARRAY, OPF_NEEDS_CTX | OPF_SYNC_ONLY | OPF_LOGGED, op_texref_array),
	OP(TEXREF_GET_ARRAY, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_texref_get_array),
	{ 0 },
};
