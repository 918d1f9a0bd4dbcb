// SPDX-License-Identifier: MIT
#include "ckpt_sink.h"

#include "ckpt_bulk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A kept piece of a section: in the snapshot buffer or on the heap. */
struct piece {
	const void *p;
	size_t len;
	bool heap;
};

struct section {
	uint32_t type;
	uint64_t id, aux;
	size_t first, n;	/* its pieces */
	bool parent;		/* no pieces: the parent file has its bytes */
};

struct ckpt_sink {
	const struct vgpu_backend *B;
	struct vgpu_ckpt_writer *wr;	/* stream */
	bool bulk;			/* device sections reserved, then copied in parallel */
	uint64_t *progress;		/* device bytes copied are added here */
	const struct ckpt_landing *land;
	struct ckpt_pieces ps;
	struct ckpt_span *res;		/* reserved sections, their bytes to come */
	size_t nres, capres;
	uint8_t *buf;			/* snapshot: pinned buffer */
	size_t cap, used;
	struct section *sec;
	size_t nsec, capsec;
	struct piece *pc;
	size_t npc, cappc;
	char err[VGPU_CKPT_MSG];
};

static struct ckpt_sink *sink_new(const struct vgpu_backend *B)
{
	struct ckpt_sink *s = calloc(1, sizeof(*s));

	if (s)
		s->B = B;
	return s;
}

struct ckpt_sink *ckpt_sink_stream(const struct vgpu_backend *B, struct vgpu_ckpt_writer *wr,
				   bool bulk)
{
	struct ckpt_sink *s = sink_new(B);

	if (s) {
		s->wr = wr;
		s->bulk = bulk;
	}
	return s;
}

struct ckpt_sink *ckpt_sink_snapshot(const struct vgpu_backend *B, void *buf, size_t cap)
{
	struct ckpt_sink *s = sink_new(B);

	if (s) {
		s->buf = buf;
		s->cap = cap;
	}
	return s;
}

__attribute__((format(printf, 3, 4)))
static int fail(struct ckpt_sink *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return err;
}

static int writer_failed(struct ckpt_sink *s, int ret)
{
	return fail(s, ret, "%s", vgpu_ckpt_writer_error(s->wr));
}

void ckpt_sink_landing(struct ckpt_sink *s, const struct ckpt_landing *land)
{
	s->land = land;
}

void ckpt_sink_progress(struct ckpt_sink *s, uint64_t *progress)
{
	s->progress = progress;
}

const char *ckpt_sink_error(const struct ckpt_sink *s)
{
	return s->err;
}

int ckpt_sink_table(struct ckpt_sink *s, uint32_t type, const void *rec, size_t n, size_t size)
{
	int ret = ckpt_sink_begin(s, type, 0, n);

	if (!ret && n)
		ret = ckpt_sink_write(s, rec, n * size);
	if (!ret)
		ret = ckpt_sink_end(s);
	return ret;
}

int ckpt_say(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return err;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : 64;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

int ckpt_sink_begin(struct ckpt_sink *s, uint32_t type, uint64_t id, uint64_t aux)
{
	int ret;

	if (s->wr) {
		ret = vgpu_ckpt_begin(s->wr, type, id, aux, 0);
		return ret ? writer_failed(s, ret) : 0;
	}
	if (grow((void **)&s->sec, &s->capsec, s->nsec, sizeof(*s->sec)))
		return fail(s, -ENOMEM, "out of memory keeping the checkpoint");
	s->sec[s->nsec++] = (struct section){ type, id, aux, s->npc, 0, false };
	return 0;
}

int ckpt_sink_ref_parent(struct ckpt_sink *s, uint32_t type, uint64_t id)
{
	int ret;

	if (s->wr) {
		ret = vgpu_ckpt_ref_parent(s->wr, type, id);
		return ret ? writer_failed(s, ret) : 0;
	}
	if (grow((void **)&s->sec, &s->capsec, s->nsec, sizeof(*s->sec)))
		return fail(s, -ENOMEM, "out of memory keeping the checkpoint");
	s->sec[s->nsec++] = (struct section){ type, id, 0, s->npc, 0, true };
	return 0;
}

static int keep(struct ckpt_sink *s, const void *p, size_t len, bool heap)
{
	if (grow((void **)&s->pc, &s->cappc, s->npc, sizeof(*s->pc)))
		return fail(s, -ENOMEM, "out of memory keeping the checkpoint");
	s->pc[s->npc++] = (struct piece){ p, len, heap };
	s->sec[s->nsec - 1].n++;
	return 0;
}

int ckpt_sink_write(struct ckpt_sink *s, const void *p, size_t len)
{
	void *copy;
	int ret;

	if (s->wr) {
		ret = vgpu_ckpt_write(s->wr, p, len);
		return ret ? writer_failed(s, ret) : 0;
	}
	if (!len)
		return 0;
	copy = malloc(len);
	if (!copy)
		return fail(s, -ENOMEM, "out of memory keeping %zu bytes of the checkpoint", len);
	memcpy(copy, p, len);
	ret = keep(s, copy, len, true);
	if (ret)
		free(copy);
	return ret;
}

static int read_device(struct ckpt_sink *s, void *dst, uint64_t p, size_t len)
{
	CUresult rc = s->B->cuMemcpyDtoHAsync_v2(dst, p, len, NULL);

	if (!rc)
		rc = s->B->cuStreamSynchronize(NULL);
	return rc ? fail(s, -EIO, "reading device memory at %#llx failed (CUDA error %d)",
			 (unsigned long long)p, rc) : 0;
}

/* Stream: through the writer's (registered) staging buffers. */
static int device_stream(struct ckpt_sink *s, uint64_t p, uint64_t len)
{
	while (len) {
		void *buf;
		size_t cap, n;
		int ret = vgpu_ckpt_buf_get(s->wr, &buf, &cap);

		if (ret)
			return writer_failed(s, ret);
		n = len < cap ? len : cap;
		ret = read_device(s, buf, p, n);
		if (ret) {
			vgpu_ckpt_buf_put(s->wr, 0);
			return ret;
		}
		ret = vgpu_ckpt_buf_put(s->wr, n);
		if (ret)
			return writer_failed(s, ret);
		ckpt_progress(s->progress, n);
		p += n;
		len -= n;
	}
	return 0;
}

int ckpt_sink_device(struct ckpt_sink *s, uint64_t p, uint64_t len)
{
	uint8_t *dst;
	bool heap;
	int ret;

	if (s->wr)
		return device_stream(s, p, len);
	if (!len)
		return 0;
	heap = len > s->cap - s->used;
	dst = heap ? malloc(len) : s->buf + s->used;
	if (!dst)
		return fail(s, -ENOMEM, "out of memory keeping %llu bytes of device memory",
			    (unsigned long long)len);
	ret = read_device(s, dst, p, len);
	if (!ret)
		ret = keep(s, dst, len, heap);
	if (!ret)
		ckpt_progress(s->progress, len);
	if (ret && heap)
		free(dst);
	if (!ret && !heap)
		s->used += len;
	return ret;
}

int ckpt_sink_device_section(struct ckpt_sink *s, uint32_t type, uint64_t id, uint64_t p,
			     uint64_t len)
{
	uint64_t off;
	unsigned index;
	int ret;

	if (!s->bulk) {
		ret = ckpt_sink_begin(s, type, id, 0);
		if (!ret)
			ret = ckpt_sink_device(s, p, len);
		return ret ? ret : ckpt_sink_end(s);
	}
	ret = vgpu_ckpt_reserve(s->wr, type, id, 0, len, &off, &index);
	if (ret)
		return writer_failed(s, ret);
	if (grow((void **)&s->res, &s->capres, s->nres, sizeof(*s->res)))
		return fail(s, -ENOMEM, "out of memory keeping the checkpoint");
	if (ckpt_pieces_add(&s->ps, index, -1, off, p, len, &s->res[s->nres++]))
		return fail(s, -ENOMEM, "out of memory keeping the checkpoint");
	return 0;
}

int ckpt_sink_device_flush(struct ckpt_sink *s)
{
	CUcontext ctx = NULL;
	char why[160];
	int ret;

	if (!s->nres)
		return 0;
	if (s->B->cuCtxGetCurrent(&ctx) || !ctx)
		return fail(s, -EIO, "device memory cannot be read: no context");
	ret = ckpt_bulk_run(s->B, ctx, vgpu_ckpt_writer_fd(s->wr), CKPT_BULK_SAVE, &s->ps, s->land,
			    s->progress, why, sizeof(why));
	if (ret)
		return fail(s, ret, "%s", why);
	for (size_t i = 0; i < s->nres; i++) {
		const struct ckpt_span *r = &s->res[i];

		ret = vgpu_ckpt_filled(s->wr, r->section, ckpt_span_crc(&s->ps, r));
		if (ret)
			return writer_failed(s, ret);
	}
	s->nres = 0;
	ckpt_pieces_free(&s->ps);
	return 0;
}

int ckpt_sink_end(struct ckpt_sink *s)
{
	int ret;

	if (!s->wr)
		return 0;
	ret = vgpu_ckpt_end(s->wr);
	return ret ? writer_failed(s, ret) : 0;
}

int ckpt_sink_flush(struct ckpt_sink *s, struct vgpu_ckpt_writer *wr)
{
	for (size_t i = 0; i < s->nsec; i++) {
		const struct section *sec = &s->sec[i];
		int ret;

		if (sec->parent) {
			ret = vgpu_ckpt_ref_parent(wr, sec->type, sec->id);
			if (ret)
				return fail(s, ret, "%s", vgpu_ckpt_writer_error(wr));
			continue;
		}
		ret = vgpu_ckpt_begin(wr, sec->type, sec->id, sec->aux, 0);
		for (size_t k = 0; !ret && k < sec->n; k++)
			ret = vgpu_ckpt_write(wr, s->pc[sec->first + k].p, s->pc[sec->first + k].len);
		if (!ret)
			ret = vgpu_ckpt_end(wr);
		if (ret)
			return fail(s, ret, "%s", vgpu_ckpt_writer_error(wr));
	}
	return 0;
}

void ckpt_sink_free(struct ckpt_sink *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->npc; i++)
		if (s->pc[i].heap)
			free((void *)s->pc[i].p);
	free(s->pc);
	free(s->sec);
	free(s->res);
	ckpt_pieces_free(&s->ps);
	free(s);
}
