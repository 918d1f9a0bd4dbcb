// SPDX-License-Identifier: MIT
/*
 * CUDA arrays and texture objects to a checkpoint and back. Arrays keep
 * their ids and descriptors; their bytes (every level of a mipmapped
 * array) are copied out row by row through a host buffer with 3D copies,
 * and in again on restore. Texture and surface objects are made again from
 * their descriptors. A kernel holds an object by value, so it must come
 * back with the same value: objects are made again in ascending value
 * order, and the driver's value gaps (objects destroyed before) are filled
 * by objects made and destroyed again at the end; a value that still comes
 * back different fails the restore, saying so, rather than let kernels
 * read another object.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_state.h"
#include "ckpt.h"
#include "ckpt_sink.h"
#include "log.h"
#include "vgpu/array_format.h"
#include "vgpu/ckpt.h"
#include "vgpu/ckpt_array.h"

#define BUF_SIZE	(8u << 20)	/* > one row of any array (2 MiB) */
#define MAX_FILLERS	4096		/* value gaps a restore fills at most */

/* Bytes per row, rows per slice and slices of a driver array. */
static CUresult geometry(struct worker *w, CUarray h, uint64_t *row, uint64_t *rows,
			 uint64_t *slices)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	CUresult rc = w->B.cuArray3DGetDescriptor_v2(&d, h);
	uint32_t e;

	if (rc)
		return rc;
	e = vgpu_array_elem_bytes(d.Format, d.NumChannels);
	if (!e)
		return CUDA_ERROR_NOT_SUPPORTED;
	*row = d.Width * e;
	*rows = d.Height ? d.Height : 1;
	*slices = d.Depth ? d.Depth : 1;
	return CUDA_SUCCESS;
}

/* @n rows at (0, y, z) of @h between it and @buf, packed. */
static CUresult rows_move(struct worker *w, CUarray h, uint8_t *buf, uint64_t row, uint64_t y,
			  uint64_t z, uint64_t n, bool in)
{
	CUDA_MEMCPY3D m = { .WidthInBytes = row, .Height = n, .Depth = 1 };
	CUresult rc;

	if (in) {
		m.srcMemoryType = CU_MEMORYTYPE_HOST;
		m.srcHost = buf;
		m.srcPitch = row;
		m.srcHeight = n;
		m.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		m.dstArray = h;
		m.dstY = y;
		m.dstZ = z;
	} else {
		m.dstMemoryType = CU_MEMORYTYPE_HOST;
		m.dstHost = buf;
		m.dstPitch = row;
		m.dstHeight = n;
		m.srcMemoryType = CU_MEMORYTYPE_ARRAY;
		m.srcArray = h;
		m.srcY = y;
		m.srcZ = z;
	}
	rc = w->B.cuMemcpy3DAsync_v2(&m, NULL);
	return rc ? rc : w->B.cuStreamSynchronize(NULL);
}

/* ---- checkpoint -------------------------------------------------------------- */

static int array_out(struct worker *w, struct ckpt_sink *sink, CUarray h, uint64_t key,
		     uint8_t *buf, char *why, size_t len)
{
	uint64_t row, rows, slices, n;
	CUresult rc = geometry(w, h, &row, &rows, &slices);
	int ret;

	if (rc == CUDA_ERROR_NOT_SUPPORTED)
		return ckpt_say(why, len, -EOPNOTSUPP, "CUDA array %llu has a format laid out by the "
				"driver alone (block-compressed or YUV): checkpoints do not carry it",
				(unsigned long long)(key >> 32));
	if (rc)
		return ckpt_say(why, len, -EIO, "CUDA array %llu cannot be read (CUDA error %d)",
				(unsigned long long)(key >> 32), rc);
	ret = ckpt_sink_begin(sink, VGPU_CKPT_SEC_ARRAY_DATA, key, 0);
	for (uint64_t z = 0; !ret && z < slices; z++)
		for (uint64_t y = 0; !ret && y < rows; y += n) {
			n = BUF_SIZE / row < rows - y ? BUF_SIZE / row : rows - y;
			rc = rows_move(w, h, buf, row, y, z, n, false);
			if (rc)
				return ckpt_say(why, len, -EIO, "CUDA array %llu cannot be read (CUDA "
						"error %d)", (unsigned long long)(key >> 32), rc);
			ret = ckpt_sink_write(sink, buf, row * n);
		}
	if (!ret)
		ret = ckpt_sink_end(sink);
	return ret ? ckpt_say(why, len, ret, "%s", ckpt_sink_error(sink)) : 0;
}

static int contents_out(struct worker *w, struct ckpt_sink *sink, char *why, size_t len)
{
	struct array_state *s = w->arrays;
	uint8_t *buf = malloc(BUF_SIZE);
	struct obj_entry *e;
	uint32_t i;
	int ret = 0;

	if (!buf)
		return ckpt_say(why, len, -ENOMEM, "out of memory");
	obj_for_each(&s->ids, i, e) {
		struct array_rec *rec = e->data;

		if (rec->kind != ARR_ARRAY && rec->kind != ARR_MIPMAP)
			continue;	/* a level's bytes go with its mipmapped array */
		if (worker_use_ctx(w, rec->ctx)) {
			ret = ckpt_say(why, len, -EIO, "the context of CUDA array %u is gone", i);
			break;
		}
		if (rec->kind == ARR_ARRAY) {
			ret = array_out(w, sink, e->obj, (uint64_t)i << 32, buf, why, len);
		} else {
			for (uint32_t l = 0; !ret && l < rec->desc.levels; l++) {
				CUarray h;
				CUresult rc = w->B.cuMipmappedArrayGetLevel(&h, e->obj, l);

				ret = rc ? ckpt_say(why, len, -EIO, "level %u of mipmapped array %u cannot "
						    "be had (CUDA error %d)", l, i, rc) :
					   array_out(w, sink, h, (uint64_t)i << 32 | l, buf, why, len);
			}
		}
		if (ret)
			break;
	}
	w->cur_ctx = 0;		/* the next entry sets its own context again */
	free(buf);
	return ret;
}

/*
 * Arrays and objects of a context the program destroyed went with it in
 * the driver: their records go too (the program may not use them again).
 */
static void prune(struct worker *w, struct array_state *s)
{
	struct obj_entry *e;
	uint32_t i;

	obj_for_each(&s->ids, i, e)
		if (!obj_get(&w->ctxs, ((struct array_rec *)e->data)->ctx))
			obj_remove(&s->ids, i);
	for (size_t k = 0; k < s->ntex; k++)
		if (!obj_get(&w->ctxs, s->tex[k].ctx))
			s->tex[k--] = s->tex[--s->ntex];
}

int worker_array_checkpoint(struct worker *w, struct ckpt_sink *sink, char *why, size_t len)
{
	struct array_state *s = w->arrays;
	struct vgpu_ckpt_array *a = NULL;
	struct vgpu_ckpt_texobj *t = NULL;
	struct obj_entry *e;
	size_t n = 0;
	uint32_t i;
	int ret;

	if (!s)
		return 0;
	prune(w, s);
	obj_for_each(&s->ids, i, e)
		n++;
	if (!n && !s->ntex)
		return 0;
	a = calloc(n + 1, sizeof(*a));
	t = calloc(s->ntex + 1, sizeof(*t));
	if (!a || !t) {
		ret = ckpt_say(why, len, -ENOMEM, "out of memory listing CUDA arrays");
		goto out;
	}
	n = 0;
	obj_for_each(&s->ids, i, e) {
		const struct array_rec *r = e->data;

		a[n++] = (struct vgpu_ckpt_array){ .id = i, .kind = r->kind, .ctx = r->ctx,
						   .parent = r->parent, .index = r->index,
						   .desc = r->desc };
	}
	for (size_t k = 0; k < s->ntex; k++)
		t[k] = (struct vgpu_ckpt_texobj){ .value = s->tex[k].value, .ctx = s->tex[k].ctx,
						  .surface = s->tex[k].surface,
						  .req = s->tex[k].req };
	ret = ckpt_sink_table(sink, VGPU_CKPT_SEC_ARRAYS, a, n, sizeof(*a));
	if (!ret)
		ret = ckpt_sink_table(sink, VGPU_CKPT_SEC_TEXOBJS, t, s->ntex, sizeof(*t));
	if (ret) {
		ret = ckpt_say(why, len, ret, "%s", ckpt_sink_error(sink));
		goto out;
	}
	ret = contents_out(w, sink, why, len);
out:
	free(a);
	free(t);
	return ret;
}

/* ---- restore ------------------------------------------------------------------ */

static int array_in(struct worker *w, struct vgpu_ckpt_reader *r, CUarray h, uint64_t key,
		    uint8_t *buf, char *why, size_t len)
{
	int k = vgpu_ckpt_find(r, VGPU_CKPT_SEC_ARRAY_DATA, key);
	const struct vgpu_ckpt_section *sec = k < 0 ? NULL : vgpu_ckpt_section_at(r, (unsigned)k);
	uint64_t row, rows, slices, n, want;
	CUresult rc = geometry(w, h, &row, &rows, &slices);
	ssize_t got;

	if (rc)
		return ckpt_say(why, len, -EIO, "CUDA array %llu cannot be written (CUDA error %d)",
				(unsigned long long)(key >> 32), rc);
	if (!sec || sec->raw_len != row * rows * slices)
		return ckpt_say(why, len, -EBADMSG, "the bytes of CUDA array %llu (level %llu) are "
				"missing", (unsigned long long)(key >> 32),
				(unsigned long long)(key & 0xffffffff));
	if (vgpu_ckpt_read_begin(r, (unsigned)k))
		return ckpt_say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r));
	for (uint64_t z = 0; z < slices; z++)
		for (uint64_t y = 0; y < rows; y += n) {
			n = BUF_SIZE / row < rows - y ? BUF_SIZE / row : rows - y;
			want = row * n;
			for (uint64_t done = 0; done < want; done += (uint64_t)got) {
				got = vgpu_ckpt_read(r, buf + done, want - done);
				if (got <= 0)
					return ckpt_say(why, len, -EBADMSG, "CUDA array %llu: %s",
							(unsigned long long)(key >> 32),
							vgpu_ckpt_reader_error(r));
			}
			rc = rows_move(w, h, buf, row, y, z, n, true);
			if (rc)
				return ckpt_say(why, len, -EIO, "CUDA array %llu cannot be written "
						"(CUDA error %d)", (unsigned long long)(key >> 32), rc);
		}
	return 0;
}

/* Arrays and mipmapped arrays first, then the levels and planes of them. */
static int arrays_in(struct worker *w, struct vgpu_ckpt_reader *r,
		     const struct vgpu_ckpt_array *a, size_t n, uint8_t *buf, char *why,
		     size_t len)
{
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			bool owner = a[i].kind == ARR_ARRAY || a[i].kind == ARR_MIPMAP;
			CUresult rc;

			if (a[i].reserved || a[i].kind < ARR_ARRAY || a[i].kind > ARR_PLANE)
				return ckpt_say(why, len, -EBADMSG, "CUDA array record %zu is not sound", i);
			if (owner != (pass == 0))
				continue;
			rc = worker_use_ctx(w, a[i].ctx);
			if (!rc && owner)
				rc = array_make(w, a[i].id, a[i].ctx, &a[i].desc);
			else if (!rc)
				rc = array_part(w, a[i].id, a[i].parent, (enum array_kind)a[i].kind,
						a[i].index);
			if (rc)
				return ckpt_say(why, len, -EIO, "CUDA array %u cannot be made again (CUDA "
						"error %d)", a[i].id, rc);
		}
	for (size_t i = 0; i < n; i++) {
		struct obj_entry *e = obj_get(&w->arrays->ids, a[i].id);
		int ret = 0;

		if (worker_use_ctx(w, a[i].ctx))
			return ckpt_say(why, len, -EIO, "the context of CUDA array %u is gone", a[i].id);
		if (a[i].kind == ARR_ARRAY)
			ret = array_in(w, r, e->obj, (uint64_t)a[i].id << 32, buf, why, len);
		for (uint32_t l = 0; a[i].kind == ARR_MIPMAP && !ret && l < a[i].desc.levels; l++) {
			CUarray h;
			CUresult rc = w->B.cuMipmappedArrayGetLevel(&h, e->obj, l);

			ret = rc ? ckpt_say(why, len, -EIO, "level %u of mipmapped array %u cannot be "
					    "had (CUDA error %d)", l, a[i].id, rc) :
				   array_in(w, r, h, (uint64_t)a[i].id << 32 | l, buf, why, len);
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* Ascending values, whatever the kind: a driver may hand texture and
 * surface objects out of one space. */
static int by_value(const void *x, const void *y)
{
	const struct vgpu_ckpt_texobj *a = x, *b = y;

	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return a->surface < b->surface ? -1 : a->surface > b->surface;
}

static CUresult obj_make(struct worker *w, const struct vgpu_ckpt_texobj *t,
			 unsigned long long *v)
{
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	CUresult rc = texobj_descs(w, &t->req, t->surface, &res, &tex, &view);

	if (rc)
		return rc;
	if (t->surface)
		return w->B.cuSurfObjectCreate(v, &res);
	return w->B.cuTexObjectCreate(v, &res, &tex, t->req.has_view ? &view : NULL);
}

static void obj_drop(struct worker *w, bool surface, unsigned long long v)
{
	if (surface)
		w->B.cuSurfObjectDestroy(v);
	else
		w->B.cuTexObjectDestroy(v);
}

/* Each object at its value; fillers taken up by value gaps freed at the end. */
static int objects_in(struct worker *w, struct vgpu_ckpt_texobj *t, size_t n, char *why,
		      size_t len)
{
	struct { unsigned long long v; bool surface; } *fill = calloc(MAX_FILLERS, sizeof(*fill));
	size_t nfill = 0;
	int ret = 0;

	if (!fill)
		return ckpt_say(why, len, -ENOMEM, "out of memory");
	qsort(t, n, sizeof(*t), by_value);
	for (size_t i = 0; i < n && !ret; i++) {
		unsigned long long v = 0;
		CUresult rc;

		if (t[i].surface > 1 || (i && !by_value(&t[i - 1], &t[i]))) {
			ret = ckpt_say(why, len, -EBADMSG, "texture object record %zu is not sound", i);
			break;
		}
		if (worker_use_ctx(w, t[i].ctx)) {
			ret = ckpt_say(why, len, -EIO, "the context of texture object %llu is gone",
				       (unsigned long long)t[i].value);
			break;
		}
		while (!(rc = obj_make(w, &t[i], &v)) && v < t[i].value && nfill < MAX_FILLERS) {
			fill[nfill].v = v;
			fill[nfill++].surface = t[i].surface;
		}
		if (rc) {
			ret = ckpt_say(why, len, -EIO, "%s object %llu cannot be made again (CUDA error "
				       "%d)", t[i].surface ? "surface" : "texture",
				       (unsigned long long)t[i].value, rc);
		} else if (v != t[i].value) {
			obj_drop(w, t[i].surface, v);
			ret = ckpt_say(why, len, -EADDRNOTAVAIL, "%s object %llu came back as %llu: the "
				       "program holds the value (kernels take it as a parameter), so the "
				       "session is not restored", t[i].surface ? "surface" : "texture",
				       (unsigned long long)t[i].value, v);
		} else if (texobj_remember(w->arrays, v, t[i].ctx, t[i].surface, &t[i].req)) {
			obj_drop(w, t[i].surface, v);
			ret = ckpt_say(why, len, -ENOMEM, "out of memory");
		}
	}
	for (size_t i = 0; i < nfill; i++)
		obj_drop(w, fill[i].surface, fill[i].v);
	free(fill);
	return ret;
}

int worker_array_restore(struct worker *w, struct vgpu_ckpt_reader *r, char *why, size_t len)
{
	struct vgpu_ckpt_array *a = NULL;
	struct vgpu_ckpt_texobj *t = NULL;
	size_t na = 0, nt = 0, blob;
	uint8_t *buf = NULL;
	int ret;

	if (vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_ARRAYS, 0, sizeof(*a), 1ull << 30,
				   (void **)&a, &na, &blob) ||
	    vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_TEXOBJS, 0, sizeof(*t), 1ull << 30,
				   (void **)&t, &nt, &blob)) {
		ret = ckpt_say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r));
		goto out;
	}
	ret = 0;
	if (!na && !nt)
		goto out;
	if (!array_state_of(w) || !(buf = malloc(BUF_SIZE))) {
		ret = ckpt_say(why, len, -ENOMEM, "out of memory");
		goto out;
	}
	ret = arrays_in(w, r, a, na, buf, why, len);
	if (!ret)
		ret = objects_in(w, t, nt, why, len);
	w->cur_ctx = 0;
out:
	free(buf);
	free(a);
	free(t);
	return ret;
}
