// SPDX-License-Identifier: MIT
/*
 * CUDA arrays and mipmapped arrays: made, destroyed, asked about, and
 * copied to and from. The client names them by ids it issues; a level of
 * a mipmapped array or a plane of an array gets an id of its own when the
 * client first asks for it, and goes with its owner. Every descriptor and
 * copy comes from the client: its fields are bounded here, its arrays
 * must be live ids, its addresses the client's own memory, before the
 * driver sees them.
 */
#include <stdlib.h>
#include <string.h>

#include "array_state.h"
#include "log.h"
#include "vgpu/array_format.h"

#define MAX_DIM		(1u << 20)	/* past every device limit: the driver says the rest */
#define MAX_LEVELS	32

struct array_state *array_state_of(struct worker *w)
{
	if (!w->arrays) {
		w->arrays = calloc(1, sizeof(*w->arrays));
		if (w->arrays)
			obj_table_init(&w->arrays->ids, "array");
	}
	return w->arrays;
}

static struct obj_entry *live(struct worker *w, uint64_t id)
{
	return w->arrays && id <= UINT32_MAX ? obj_get(&w->arrays->ids, (uint32_t)id) : NULL;
}

CUarray array_handle(struct worker *w, uint64_t id)
{
	struct obj_entry *e = live(w, id);

	return e && e->aux != ARR_MIPMAP ? e->obj : NULL;
}

CUmipmappedArray array_mipmap_handle(struct worker *w, uint64_t id)
{
	struct obj_entry *e = live(w, id);

	return e && e->aux == ARR_MIPMAP ? e->obj : NULL;
}

uint32_t array_id_of(struct worker *w, const void *handle)
{
	return w->arrays && handle ? obj_id_of(&w->arrays->ids, handle) : 0;
}

/* ---- creation -------------------------------------------------------------- */

static CUresult desc_of(const struct vgpu_array_desc *d, CUDA_ARRAY3D_DESCRIPTOR *o)
{
	const uint32_t carried = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
		CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE |
		CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;

	if (!d->width || d->width > MAX_DIM || d->height > MAX_DIM || d->depth > MAX_DIM ||
	    d->levels > MAX_LEVELS || !d->channels || d->channels > 4 ||
	    !vgpu_array_format_known(d->format))
		return CUDA_ERROR_INVALID_VALUE;
	/* Sparse and deferred-mapping arrays get their memory from
	 * cuMemMapArrayAsync, whose mappings no checkpoint could rebuild. */
	if (d->flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) {
		vlog_info("a sparse or deferred-mapping CUDA array is refused: not carried");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (d->flags & ~carried)
		return CUDA_ERROR_INVALID_VALUE;
	*o = (CUDA_ARRAY3D_DESCRIPTOR){
		.Width = d->width, .Height = d->height, .Depth = d->depth,
		.Format = (CUarray_format)d->format, .NumChannels = d->channels,
		.Flags = d->flags,
	};
	return CUDA_SUCCESS;
}

/* Makes array (or mipmapped array) @id of @d in the current context. */
CUresult array_make(struct worker *w, uint32_t id, uint32_t ctx, const struct vgpu_array_desc *d)
{
	struct array_state *s = array_state_of(w);
	CUDA_ARRAY3D_DESCRIPTOR cd;
	struct array_rec *rec;
	void *h = NULL;
	CUresult rc;

	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!id || id >= OBJ_MAX_ID || obj_get(&s->ids, id))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = desc_of(d, &cd)))
		return rc;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*rec = (struct array_rec){ .kind = d->levels ? ARR_MIPMAP : ARR_ARRAY, .ctx = ctx,
				   .desc = *d };
	/* The count the driver clamps to, which a checkpoint walks. */
	if (d->levels)
		rec->desc.levels = vgpu_mipmap_levels(d->width, d->height, d->depth, d->flags,
						      d->levels);
	if (d->levels)
		rc = w->B.cuMipmappedArrayCreate((CUmipmappedArray *)&h, &cd, rec->desc.levels);
	else
		rc = w->B.cuArray3DCreate_v2((CUarray *)&h, &cd);
	if (rc) {
		free(rec);
		return rc;
	}
	if (obj_insert(&s->ids, id, h, rec->kind, rec)) {
		if (d->levels)
			w->B.cuMipmappedArrayDestroy(h);
		else
			w->B.cuArrayDestroy(h);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static enum op_status op_create(struct worker *w, struct op_call *call)
{
	struct vgpu_array_desc d;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (call->len == sizeof(d) && call->sqe->arg[0] <= UINT32_MAX) {
		memcpy(&d, call->payload, sizeof(d));
		rc = array_make(w, (uint32_t)call->sqe->arg[0], call->sqe->ctx, &d);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* A level or plane of @parent under @id: the driver's handle, owned by it. */
CUresult array_part(struct worker *w, uint32_t id, uint64_t parent, enum array_kind kind,
		    uint64_t index)
{
	struct array_state *s = array_state_of(w);
	struct obj_entry *p = live(w, parent);
	struct array_rec *rec;
	CUarray h = NULL;
	CUresult rc;

	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!p || index > UINT32_MAX)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!id || id >= OBJ_MAX_ID || obj_get(&s->ids, id))
		return CUDA_ERROR_INVALID_VALUE;
	if (kind == ARR_LEVEL && p->aux != ARR_MIPMAP)
		return CUDA_ERROR_INVALID_HANDLE;
	if (kind == ARR_PLANE && p->aux != ARR_ARRAY)
		return CUDA_ERROR_INVALID_HANDLE;
	if (kind == ARR_LEVEL)
		rc = w->B.cuMipmappedArrayGetLevel(&h, p->obj, (unsigned int)index);
	else
		rc = w->B.cuArrayGetPlane(&h, p->obj, (unsigned int)index);
	if (rc)
		return rc;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*rec = (struct array_rec){ .kind = kind, .ctx = ((struct array_rec *)p->data)->ctx,
				   .parent = (uint32_t)parent, .index = (uint32_t)index };
	/* A plane is the driver's to free; nothing to undo on failure. */
	return obj_insert(&s->ids, id, h, kind, rec) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/* A level or plane made, and its descriptor (the driver's) in the reply. */
static enum op_status part(struct worker *w, struct op_call *call, enum array_kind kind)
{
	const struct vgpu_sqe *q = call->sqe;
	CUDA_ARRAY3D_DESCRIPTOR d;
	struct vgpu_array_desc o;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (q->arg[2] <= UINT32_MAX && q->arg[2] && call->reply)
		rc = array_part(w, (uint32_t)q->arg[2], q->arg[0], kind, q->arg[1]);
	if (!rc) {
		rc = w->B.cuArray3DGetDescriptor_v2(&d, array_handle(w, q->arg[2]));
		if (rc)
			obj_remove(&w->arrays->ids, (uint32_t)q->arg[2]);
	}
	if (!rc) {
		o = (struct vgpu_array_desc){ .width = d.Width, .height = d.Height,
					      .depth = d.Depth, .format = d.Format,
					      .channels = d.NumChannels, .flags = d.Flags };
		memcpy(call->reply, &o, sizeof(o));
		call->cqe->val[2] = sizeof(o);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_level(struct worker *w, struct op_call *call)
{
	return part(w, call, ARR_LEVEL);
}

static enum op_status op_plane(struct worker *w, struct op_call *call)
{
	return part(w, call, ARR_PLANE);
}

/* The ids of the levels or planes of @id go with it. */
static void forget_parts(struct array_state *s, uint32_t id)
{
	struct obj_entry *e;
	uint32_t i;

	obj_for_each(&s->ids, i, e) {
		struct array_rec *r = e->data;

		if ((r->kind == ARR_LEVEL || r->kind == ARR_PLANE) && r->parent == id)
			obj_remove(&s->ids, i);
	}
}

static enum op_status op_destroy(struct worker *w, struct op_call *call)
{
	uint64_t id = call->sqe->arg[0];
	struct obj_entry *e = live(w, id);
	CUresult rc;

	if (!e || (e->aux != ARR_ARRAY && e->aux != ARR_MIPMAP)) {
		call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	if (e->aux == ARR_MIPMAP)
		rc = w->B.cuMipmappedArrayDestroy(e->obj);
	else
		rc = w->B.cuArrayDestroy(e->obj);
	if (!rc) {
		forget_parts(w->arrays, (uint32_t)id);
		obj_remove(&w->arrays->ids, (uint32_t)id);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_memreq(struct worker *w, struct op_call *call)
{
	struct obj_entry *e = live(w, call->sqe->arg[0]);
	CUDA_ARRAY_MEMORY_REQUIREMENTS m = { 0 };
	uint64_t dev = call->sqe->arg[1];
	CUresult rc;

	if (!e || !call->reply)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (dev >= (uint64_t)w->device_count)
		rc = CUDA_ERROR_INVALID_DEVICE;
	else if (e->aux == ARR_MIPMAP)
		rc = w->B.cuMipmappedArrayGetMemoryRequirements(&m, e->obj, w->devices[dev]);
	else
		rc = w->B.cuArrayGetMemoryRequirements(&m, e->obj, w->devices[dev]);
	if (!rc) {
		memcpy(call->reply, &m, sizeof(m));
		call->cqe->val[2] = sizeof(m);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_sparse(struct worker *w, struct op_call *call)
{
	struct obj_entry *e = live(w, call->sqe->arg[0]);
	CUDA_ARRAY_SPARSE_PROPERTIES p = { 0 };
	CUresult rc;

	if (!e || !call->reply)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (e->aux == ARR_MIPMAP)
		rc = w->B.cuMipmappedArrayGetSparseProperties(&p, e->obj);
	else
		rc = w->B.cuArrayGetSparseProperties(&p, e->obj);
	if (!rc) {
		memcpy(call->reply, &p, sizeof(p));
		call->cqe->val[2] = sizeof(p);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- copies ------------------------------------------------------------------ */

/* An address end: every byte the copy touches is the client's. */
static bool addr_ok(struct worker *w, const struct vgpu_copy_end *e, uint64_t wd, uint64_t h,
		    uint64_t d)
{
	uint64_t first, span, t;

	if ((h > 1 || d > 1) && e->pitch < wd)
		return false;
	if (d > 1 && e->height < h)
		return false;
	if (__builtin_mul_overflow(e->z, e->height, &t) || __builtin_add_overflow(t, e->y, &t) ||
	    __builtin_mul_overflow(t, e->pitch, &t) || __builtin_add_overflow(t, e->x, &t) ||
	    __builtin_add_overflow(e->ref, t, &first))
		return false;
	if (__builtin_mul_overflow(e->pitch, e->height, &t) ||
	    __builtin_mul_overflow(t, d - 1, &span) ||
	    __builtin_mul_overflow(e->pitch, h - 1, &t) || __builtin_add_overflow(span, t, &span) ||
	    __builtin_add_overflow(span, wd, &span))
		return false;
	return worker_addr_ok(w, first, span);
}

static CUresult end_set(struct worker *w, const struct vgpu_copy_end *e,
			const struct vgpu_array_copy *c, bool dst, CUDA_MEMCPY3D *m)
{
	CUmemorytype t = CU_MEMORYTYPE_UNIFIED;
	CUarray a = NULL;

	if (e->reserved)
		return CUDA_ERROR_INVALID_VALUE;
	if (e->kind == VGPU_COPY_END_ARRAY) {
		a = array_handle(w, e->ref);
		if (!a)
			return CUDA_ERROR_INVALID_HANDLE;
		t = CU_MEMORYTYPE_ARRAY;
	} else if (e->kind != VGPU_COPY_END_ADDR || !addr_ok(w, e, c->width, c->height, c->depth)) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (dst) {
		m->dstMemoryType = t;
		m->dstArray = a;
		m->dstDevice = a ? 0 : e->ref;
		m->dstXInBytes = e->x;
		m->dstY = e->y;
		m->dstZ = e->z;
		m->dstPitch = a ? 0 : e->pitch;
		m->dstHeight = a ? 0 : e->height;
	} else {
		m->srcMemoryType = t;
		m->srcArray = a;
		m->srcDevice = a ? 0 : e->ref;
		m->srcXInBytes = e->x;
		m->srcY = e->y;
		m->srcZ = e->z;
		m->srcPitch = a ? 0 : e->pitch;
		m->srcHeight = a ? 0 : e->height;
	}
	return CUDA_SUCCESS;
}

CUresult array_copy_params(struct worker *w, const struct vgpu_array_copy *c, CUDA_MEMCPY3D *m)
{
	CUresult rc;

	memset(m, 0, sizeof(*m));
	if (!c->width || !c->height || !c->depth)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = end_set(w, &c->src, c, false, m)) || (rc = end_set(w, &c->dst, c, true, m)))
		return rc;
	m->WidthInBytes = c->width;
	m->Height = c->height;
	m->Depth = c->depth;
	return CUDA_SUCCESS;
}

static enum op_status op_copy(struct worker *w, struct op_call *call)
{
	struct vgpu_array_copy c;
	CUDA_MEMCPY3D m = { 0 };
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (!rc && (call->len != sizeof(c) || call->sqe->arg[0] & ~(uint64_t)VGPU_ARRAY_COPY_STAGED))
		rc = CUDA_ERROR_INVALID_VALUE;
	/* A graph would read the staging block when it runs, long reused. */
	if (!rc && (call->sqe->arg[0] & VGPU_ARRAY_COPY_STAGED) && worker_capturing(w, st))
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (!rc) {
		memcpy(&c, call->payload, sizeof(c));
		if (!c.width || !c.height || !c.depth)
			goto done;	/* nothing to copy, as the driver answers */
		rc = end_set(w, &c.src, &c, false, &m);
	}
	if (!rc)
		rc = end_set(w, &c.dst, &c, true, &m);
	if (!rc) {
		m.WidthInBytes = c.width;
		m.Height = c.height;
		m.Depth = c.depth;
		rc = w->B.cuMemcpy3DAsync_v2(&m, st);
	}
	if (!rc && call->sqe->tag)
		return reply_after_stream(w, call, st);
done:
	call->cqe->result = rc;
	return OP_DONE;
}

const struct op_desc exec_array_ops[] = {
	OP(ARRAY_CREATE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_create),
	OP(ARRAY_DESTROY, OPF_NEEDS_CTX, op_destroy),
	OP(ARRAY_LEVEL, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_level),
	OP(ARRAY_PLANE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_plane),
	OP(ARRAY_COPY, OPF_NEEDS_CTX, op_copy),
	OP(ARRAY_MEMREQ, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_memreq),
	OP(ARRAY_SPARSE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_sparse),
	{ 0 },
};

/* ---- teardown --------------------------------------------------------------- */

void worker_array_destroy(struct worker *w)
{
	struct array_state *s = w->arrays;
	struct obj_entry *e;
	uint32_t i;

	if (!s)
		return;
	for (size_t k = 0; k < s->ntex; k++) {
		if (s->tex[k].surface)
			w->B.cuSurfObjectDestroy(s->tex[k].value);
		else
			w->B.cuTexObjectDestroy(s->tex[k].value);
	}
	obj_for_each(&s->ids, i, e) {
		if (e->aux == ARR_MIPMAP)
			w->B.cuMipmappedArrayDestroy(e->obj);
		else if (e->aux == ARR_ARRAY)
			w->B.cuArrayDestroy(e->obj);
	}
	obj_table_free(&s->ids);
	free(s->tex);
	free(s);
	w->arrays = NULL;
}
