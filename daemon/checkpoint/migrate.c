// SPDX-License-Identifier: MIT
/*
 * The new worker's end of a session's move (migrate.h): the rebuild from
 * the checkpoint file, every object under the id the client knows and
 * every allocation at its address. The old worker's hand-over is in
 * move_out.c.
 */
#include "ckpt_calls.h"
#include "migrate.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "array_state.h"
#include "barrier.h"
#include "ckpt.h"
#include "ckpt_bulk.h"
#include "clock.h"
#include "fdpass.h"
#include "host_image.h"
#include "ipc.h"
#include "log.h"
#include "retained.h"
#include "worker.h"

#define BOUNCE (8u << 20)	/* device bytes go through this, pinned */

void migrate_say(struct worker *w, struct ckpt_answer *a)
{
	if (send(w->ctl, a, sizeof(*a), MSG_NOSIGNAL) != sizeof(*a))
		vlog_warn("session %llu: cannot answer the supervisor: %s",
			  (unsigned long long)w->session_id, strerror(errno));
}

/* ---- the new worker ------------------------------------------------------ */

struct rebuild {
	struct worker *w;
	uint64_t *progress;		/* bytes of the state in place */
	struct vgpu_ckpt_reader *r;
	void *bounce;			/* two halves of BOUNCE bytes, pinned */
	CUevent ev[2];			/* the copy out of each half */
	bool ev_live[2];
	struct vgpu_ckpt_handle *h;	/* which context owns which handle */
	size_t nh;
	char *why;
	size_t why_len;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct rebuild *b, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->why, b->why_len, fmt, ap);
	va_end(ap);
	return err;
}

/* Section i whole into a fresh buffer of at most @cap bytes. */
static int read_all(struct rebuild *b, int i, void **out, size_t *len, size_t cap)
{
	int ret;

	if (i < 0)
		return fail(b, -EBADMSG, "the checkpoint lacks a section it refers to");
	ret = vgpu_ckpt_read_whole(b->r, (unsigned)i, cap, out, len);
	return ret ? fail(b, ret == -ENOMEM ? ret : -EBADMSG, "%s",
			  vgpu_ckpt_reader_error(b->r)) : 0;
}

/* A table section: its records (n of @size), where the blob behind them
 * starts and (if blob_len) how long it is. */
static int read_table(struct rebuild *b, uint32_t type, uint64_t id, size_t size, void **rec,
		      size_t *n, size_t *blob_off, size_t *blob_len)
{
	size_t len;
	int ret = vgpu_ckpt_read_records(b->r, type, id, size, 1ull << 30, rec, n, &len);

	if (ret)
		return fail(b, ret == -ENOMEM ? ret : -EBADMSG, "%s", vgpu_ckpt_reader_error(b->r));
	*blob_off = *n * size;
	if (blob_len)
		*blob_len = len - *blob_off;
	return 0;
}

static uint64_t owner_of(struct rebuild *b, uint32_t kind, uint64_t handle)
{
	for (size_t i = 0; i < b->nh; i++)
		if (b->h[i].kind == kind && b->h[i].client == handle)
			return b->h[i].object;
	return 0;
}

static int use_ctx(struct rebuild *b, uint64_t ctx)
{
	CUresult rc = worker_use_ctx(b->w, (uint32_t)ctx);

	return rc ? fail(b, -EIO, "context %llu cannot be made current (CUDA error %d)",
			 (unsigned long long)ctx, rc) : 0;
}

static int contexts(struct rebuild *b)
{
	struct worker *w = b->w;

	for (unsigned i = 0; i < vgpu_ckpt_count(b->r); i++) {
		const struct vgpu_ckpt_section *s = vgpu_ckpt_section_at(b->r, i);
		struct vgpu_ckpt_setting *set;
		uint32_t id = (uint32_t)s->id, dev;
		size_t n, len;
		CUcontext c;
		int ret;

		if (s->type != VGPU_CKPT_SEC_CONTEXT)
			continue;
		ret = read_all(b, (int)i, (void **)&set, &len, 1 << 20);
		if (ret)
			return ret;
		n = s->aux <= len / sizeof(*set) ? s->aux : 0;
		if (!n || set[0].key != VGPU_CKPT_CTX_FLAGS << 16 ||
		    (dev = (uint32_t)set[0].value) >= (uint32_t)w->device_count) {
			free(set);
			return fail(b, -EBADMSG, "context %u of the checkpoint is malformed", id);
		}
		if (set[0].value >> 32 & 1) {
			c = w->primary[dev];
			w->primary_refs[dev]++;
		} else if (w->B.cuCtxCreate_v4(&c, NULL, 0, w->devices[dev])) {
			free(set);
			return fail(b, -EIO, "context %u cannot be created again", id);
		}
		if (obj_insert(&w->ctxs, id, c, set[0].value, NULL)) {
			free(set);
			return fail(b, -EBADMSG, "context %u appears twice", id);
		}
		ret = use_ctx(b, id);
		/* Only the limits the program changed: setting one (even to its
		 * value) can allocate device memory, and module globals must land
		 * where they were. */
		for (size_t k = 1; !ret && k < n; k++) {
			CUlimit lim = (CUlimit)(set[k].key & 0xffff);
			size_t now;

			if (set[k].key >> 16 == VGPU_CKPT_CTX_LIMIT &&
			    (w->B.cuCtxGetLimit(&now, lim) || now != set[k].value))
				w->B.cuCtxSetLimit(lim, set[k].value);
		}
		free(set);
		if (ret)
			return ret;
	}
	return 0;
}

/* One allocation's bytes through the reader, in order (compressed, or in
 * the parent): the file is read into one half of the bounce buffer while
 * the other is copied. */
static int load_in_order(struct rebuild *b, unsigned k, uint64_t at)
{
	struct worker *w = b->w;
	CUresult rc = CUDA_SUCCESS;
	ssize_t got = 0;

	if (vgpu_ckpt_read_begin(b->r, k))
		return fail(b, -EBADMSG, "%s", vgpu_ckpt_reader_error(b->r));
	for (int h = 0;; h ^= 1) {
		uint8_t *half = (uint8_t *)b->bounce + (size_t)h * BOUNCE;

		if (b->ev_live[h] && (rc = w->B.cuEventSynchronize(b->ev[h])))
			break;
		b->ev_live[h] = false;
		got = vgpu_ckpt_read(b->r, half, BOUNCE);
		if (got <= 0)
			break;
		rc = w->B.cuMemcpyHtoDAsync_v2(at, half, (size_t)got, NULL);
		if (!rc)
			rc = w->B.cuEventRecordWithFlags(b->ev[h], NULL, 0);
		if (rc)
			break;
		b->ev_live[h] = true;
		at += (uint64_t)got;
		ckpt_progress(b->progress, (uint64_t)got);
	}
	if (!rc)
		rc = w->B.cuStreamSynchronize(NULL);
	b->ev_live[0] = b->ev_live[1] = false;
	if (rc)
		return fail(b, -EIO, "writing device memory at %#llx failed (CUDA error %d)",
			    (unsigned long long)at, rc);
	return got < 0 ? fail(b, -EBADMSG, "%s", vgpu_ckpt_reader_error(b->r)) : 0;
}

/* Plain sections' pieces, read by several threads (ckpt_bulk.h). */
static int load_plain(struct rebuild *b, struct ckpt_pieces *ps, const struct ckpt_span *pl,
		      struct vgpu_ckpt_reader *const *plr, size_t npl)
{
	CUcontext ctx = NULL;
	char why[160];
	int ret;

	if (!ps->n)
		return 0;
	if (b->w->B.cuCtxGetCurrent(&ctx) || !ctx)
		return fail(b, -EIO, "device memory cannot be written: no context");
	ret = ckpt_bulk_run(&b->w->B, ctx, vgpu_ckpt_reader_fd(b->r), CKPT_BULK_LOAD, ps, NULL,
			    b->progress, why, sizeof(why));
	if (ret)
		return fail(b, ret, "%s", why);
	for (size_t i = 0; i < npl; i++)
		if (vgpu_ckpt_check_crc(plr[i], pl[i].section, ckpt_span_crc(ps, &pl[i])))
			return fail(b, -EBADMSG, "%s", vgpu_ckpt_reader_error(plr[i]));
	return 0;
}

/* Device allocations at their addresses with their bytes; the pool's
 * blocks registered (their bytes are in the pool itself, shared). */
static int memory(struct rebuild *b, int pool_fd)
{
	struct worker *w = b->w;
	struct vgpu_ckpt_alloc *a;
	struct ckpt_pieces ps = { 0 };
	struct ckpt_span *pl = NULL;
	struct vgpu_ckpt_reader **plr = NULL;	/* the file each span is in */
	uint64_t *haddr = NULL, *hsize = NULL;
	size_t n, off, nh = 0, npl = 0;
	int ret = read_table(b, VGPU_CKPT_SEC_ALLOCS, 0, sizeof(*a), (void **)&a, &n, &off, NULL);

	if (ret)
		return ret;
	haddr = calloc(n + 1, sizeof(*haddr));
	hsize = calloc(n + 1, sizeof(*hsize));
	pl = calloc(n + 1, sizeof(*pl));
	plr = calloc(n + 1, sizeof(*plr));
	if (!haddr || !hsize || !pl || !plr)
		ret = fail(b, -ENOMEM, "out of memory");
	else {
		uint64_t total = 0;

		for (size_t i = 0; i < n; i++)
			total += a[i].size;
		b->progress = worker_progress_begin(w, total);
	}
	for (size_t i = 0; !ret && i < n; i++) {
		const struct vgpu_ckpt_section *s;
		CUresult rc;
		unsigned ri = 0;
		int k;

		if (a[i].kind == VGPU_CKPT_MEM_HOST) {
			haddr[nh] = a[i].addr;
			hsize[nh++] = a[i].size;
			ckpt_progress(b->progress, a[i].size);	/* shared: already there */
			continue;
		}
		rc = vmem_alloc_at(&w->vmem, w->devices[0], a[i].addr, a[i].size);
		if (rc) {
			ret = fail(b, -EIO, "device memory at %#llx (%llu bytes) cannot be had again "
				   "at that address (CUDA error %d)",
				   (unsigned long long)a[i].addr, (unsigned long long)a[i].size, rc);
			break;
		}
		k = vgpu_ckpt_find(b->r, VGPU_CKPT_SEC_ALLOC_DATA, a[i].data_id);
		s = k < 0 ? NULL : vgpu_ckpt_section_at(b->r, (unsigned)k);
		if (s)		/* the file that stores them: this one or a parent */
			vgpu_ckpt_resolve(b->r, (unsigned)k, &plr[npl], &ri);
		if (!s || s->raw_len != a[i].size) {
			ret = fail(b, -EBADMSG, "the bytes of the allocation at %#llx are missing",
				   (unsigned long long)a[i].addr);
		} else if ((s = vgpu_ckpt_section_at(plr[npl], ri))->compression ==
			   VGPU_CKPT_COMP_NONE && !(s->flags & VGPU_CKPT_SF_PARENT)) {
			if (ckpt_pieces_add(&ps, ri, vgpu_ckpt_reader_fd(plr[npl]), s->offset,
					    a[i].addr, s->stored_len, &pl[npl]))
				ret = fail(b, -ENOMEM, "out of memory");
			npl++;
		} else {
			ret = load_in_order(b, (unsigned)k, a[i].addr);
		}
	}
	if (!ret)
		ret = load_plain(b, &ps, pl, plr, npl);
	if (!ret && (ret = hostpool_adopt(&w->pool, pool_fd, haddr, hsize, nh)))
		fail(b, ret, "the pinned host pool cannot be taken over: %s", strerror(-ret));
	ckpt_pieces_free(&ps);
	free(pl);
	free(plr);
	free(haddr);
	free(hsize);
	free(a);
	return ret;
}

static int modules(struct rebuild *b)
{
	struct worker *w = b->w;
	struct vgpu_ckpt_module *m;
	size_t n, off;
	int ret = read_table(b, VGPU_CKPT_SEC_MODULES, 0, sizeof(*m), (void **)&m, &n, &off, NULL);

	for (size_t i = 0; !ret && i < n; i++) {
		struct retained_image *img;
		uint64_t ctx = owner_of(b, VGPU_CKPT_HANDLE_MODULE, m[i].handle);
		void *bytes;
		size_t len;
		CUmodule mod;

		ret = read_all(b, vgpu_ckpt_find(b->r, VGPU_CKPT_SEC_MODULE_IMAGE, m[i].image_id),
			       &bytes, &len, 4ull << 30);
		/* A checkpoint file is the tenant's: its images as untrusted as MODULE_LOAD's. */
		if (!ret && vgpu_image_check(bytes, len, &(size_t){ 0 })) {
			free(bytes);
			ret = fail(b, -EBADMSG, "module %llu: its image reaches past its own bytes",
				   (unsigned long long)m[i].handle);
		}
		if (!ret)
			ret = use_ctx(b, ctx);
		if (ret)
			break;
		img = malloc(sizeof(*img) + len);
		if (!img || w->B.cuModuleLoadData(&mod, bytes)) {
			free(img);
			free(bytes);
			ret = fail(b, -EIO, "module %llu cannot be loaded again",
				   (unsigned long long)m[i].handle);
			break;
		}
		img->len = len;
		memcpy(img->bytes, bytes, len);
		free(bytes);
		if (obj_insert(&w->modules, (uint32_t)m[i].handle, mod, ctx, img))
			ret = fail(b, -EBADMSG, "module %llu appears twice",
				   (unsigned long long)m[i].handle);
	}
	free(m);
	return ret;
}

/* A name from a table's blob, NUL-terminated in @buf. */
static const char *name_at(const uint8_t *blob, size_t blob_len, uint32_t off, uint32_t len,
			   char *buf, size_t cap)
{
	if (off > blob_len || len > blob_len - off || len >= cap || !len)
		return NULL;
	memcpy(buf, blob + off, len);
	buf[len] = 0;
	return buf;
}

static int functions(struct rebuild *b)
{
	struct worker *w = b->w;
	struct vgpu_ckpt_function *f;
	size_t n, off, blob_len;
	int ret = read_table(b, VGPU_CKPT_SEC_FUNCTIONS, 0, sizeof(*f), (void **)&f, &n, &off,
			     &blob_len);

	for (size_t k = 0; !ret && k < n; k++) {
		struct obj_entry *m = obj_get(&w->modules, (uint32_t)f[k].module);
		char name[VGPU_MAX_NAME + 1];
		const char *nm = name_at((uint8_t *)f + off, blob_len, f[k].name_off,
					 f[k].name_len, name, sizeof(name));
		CUfunction fn;
		char *kept;

		if (!m || !nm) {
			ret = fail(b, -EBADMSG, "function %llu of the checkpoint is malformed",
				   (unsigned long long)f[k].handle);
			break;
		}
		ret = use_ctx(b, m->aux);
		if (ret)
			break;
		if (w->B.cuModuleGetFunction(&fn, m->obj, nm) || !(kept = strdup(nm))) {
			ret = fail(b, -EIO, "function %s cannot be found again", nm);
			break;
		}
		if (obj_insert(&w->funcs, (uint32_t)f[k].handle, fn, f[k].module, kept))
			ret = fail(b, -EBADMSG, "function %llu appears twice",
				   (unsigned long long)f[k].handle);
	}
	free(f);
	return ret;
}

/* Globals: found again by name, where they were, with their values. */
static int globals(struct rebuild *b)
{
	struct worker *w = b->w;
	struct vgpu_ckpt_global *g;
	size_t n, off, blob_len;
	int ret = read_table(b, VGPU_CKPT_SEC_GLOBALS, 0, sizeof(*g), (void **)&g, &n, &off,
			     &blob_len);

	for (size_t k = 0; !ret && k < n; k++) {
		const uint8_t *blob = (uint8_t *)g + off;
		struct obj_entry *m = obj_get(&w->modules, (uint32_t)g[k].module);
		char name[VGPU_MAX_NAME + 1];
		const char *nm = name_at(blob, blob_len, g[k].name_off, g[k].name_len, name,
					 sizeof(name));
		CUdeviceptr p;
		size_t size;

		if (!m || !nm || g[k].value_off > blob_len || g[k].size > blob_len - g[k].value_off) {
			ret = fail(b, -EBADMSG, "a global of the checkpoint is malformed");
			break;
		}
		ret = use_ctx(b, m->aux);
		if (ret)
			break;
		if (w->B.cuModuleGetGlobal_v2(&p, &size, m->obj, nm) || p != g[k].addr ||
		    size != g[k].size) {
			ret = fail(b, -EIO, "the driver put global %s elsewhere (%#llx, was %#llx): "
				   "the program holds its old address", nm, (unsigned long long)p,
				   (unsigned long long)g[k].addr);
			break;
		}
		if (w->B.cuMemcpyHtoDAsync_v2(p, blob + g[k].value_off, size, NULL) ||
		    w->B.cuStreamSynchronize(NULL)) {
			ret = fail(b, -EIO, "global %s cannot be written", nm);
			break;
		}
		worker_remember_global(w, p, size, (uint32_t)g[k].module, nm);
	}
	free(g);
	return ret;
}

static int streams_events(struct rebuild *b)
{
	struct worker *w = b->w;
	struct vgpu_ckpt_stream *s = NULL;
	struct vgpu_ckpt_event *e = NULL;
	size_t ns, ne, off;
	int ret = read_table(b, VGPU_CKPT_SEC_STREAMS, 0, sizeof(*s), (void **)&s, &ns, &off, NULL);

	for (size_t k = 0; !ret && k < ns; k++) {
		uint64_t ctx = owner_of(b, VGPU_CKPT_HANDLE_STREAM, s[k].handle);
		struct retained_stream *info = malloc(sizeof(*info));
		CUstream st;

		ret = info ? use_ctx(b, ctx) : fail(b, -ENOMEM, "out of memory");
		if (ret) {
			free(info);
			break;
		}
		*info = (struct retained_stream){ s[k].flags, s[k].priority };
		if (w->B.cuStreamCreateWithPriority(&st, s[k].flags, s[k].priority)) {
			free(info);
			ret = fail(b, -EIO, "stream %llu cannot be created again",
				   (unsigned long long)s[k].handle);
		} else if (obj_insert(&w->streams, (uint32_t)s[k].handle, st, ctx, info)) {
			ret = fail(b, -EBADMSG, "stream %llu appears twice",
				   (unsigned long long)s[k].handle);
		}
	}
	if (!ret)
		ret = read_table(b, VGPU_CKPT_SEC_EVENTS, 0, sizeof(*e), (void **)&e, &ne, &off, NULL);
	for (size_t k = 0; !ret && k < ne; k++) {
		CUevent ev;

		if (w->B.cuEventCreate(&ev, e[k].flags))
			ret = fail(b, -EIO, "event %llu cannot be created again",
				   (unsigned long long)e[k].handle);
		else if (obj_insert(&w->events, (uint32_t)e[k].handle, ev, e[k].flags, NULL))
			ret = fail(b, -EBADMSG, "event %llu appears twice",
				   (unsigned long long)e[k].handle);
	}
	free(s);
	free(e);
	return ret;
}

/* Each stream's attributes again, where the file has them (streamops). */
static int stream_attrs(struct rebuild *b)
{
	struct worker *w = b->w;
	struct vgpu_ckpt_stream_attr *a = NULL;
	size_t n, off;
	int ret;

	if (vgpu_ckpt_find(b->r, VGPU_CKPT_SEC_STREAM_ATTRS, 0) < 0)
		return 0;	/* written before streams kept attributes */
	ret = read_table(b, VGPU_CKPT_SEC_STREAM_ATTRS, 0, sizeof(*a), (void **)&a, &n, &off, NULL);
	for (size_t k = 0; !ret && k < n; k++) {
		struct obj_entry *e = a[k].handle && a[k].handle <= UINT32_MAX
					      ? obj_get(&w->streams, (uint32_t)a[k].handle) : NULL;
		CUstream st = e ? e->obj : NULL;
		CUstreamAttrValue v, now;
		CUresult rc;

		if ((a[k].handle && !e) || a[k].attr > INT32_MAX) {
			ret = fail(b, -EBADMSG, "attribute %u of stream %llu: no such stream",
				   a[k].attr, (unsigned long long)a[k].handle);
			break;
		}
		ret = use_ctx(b, e ? e->aux : a[k].ctx);
		if (ret)
			break;
		memcpy(&v, a[k].value, sizeof(v));
		memset(&now, 0, sizeof(now));	/* as the checkpoint read it */
		/* Set only where the program changed it: what the driver holds
		 * unset (a sync policy of -1) cannot be set again. */
		if (!w->B.cuStreamGetAttribute(st, (CUstreamAttrID)a[k].attr, &now) &&
		    !memcmp(&now, &v, sizeof(v)))
			continue;
		rc = w->B.cuStreamSetAttribute(st, (CUstreamAttrID)a[k].attr, &v);
		if (rc)
			ret = fail(b, -EIO, "attribute %u of stream %llu cannot be set again "
				   "(CUDA error %d)", a[k].attr, (unsigned long long)a[k].handle, rc);
	}
	free(a);
	return ret;
}

/* The generated calls recorded, run again now that all they name is back. */
static int calls(struct rebuild *b)
{
	struct vgpu_ckpt_call *c = NULL;
	size_t n = 0, off, len = 0;
	int ret;

	if (vgpu_ckpt_find(b->r, VGPU_CKPT_SEC_CALLS, 0) < 0)
		return 0;
	ret = read_table(b, VGPU_CKPT_SEC_CALLS, 0, sizeof(*c), (void **)&c, &n, &off, &len);
	if (!ret)
		ret = calls_log_replay(b->w, c, n, (const uint8_t *)c + off, len, b->why, b->why_len);
	free(c);
	return ret;
}

/* The ring as the old worker left it: everything it took was released. */
/* The pools around blocks memory() brought back; files without them had none. */
static int pools(struct rebuild *b)
{
	struct vgpu_ckpt_pool *p = NULL;
	struct vgpu_ckpt_pool_block *blk = NULL;
	const char *why = NULL;
	size_t np = 0, nb = 0, off;
	int ret = 0;

	if (vgpu_ckpt_find(b->r, VGPU_CKPT_SEC_POOLS, 0) < 0)
		return 0;
	ret = read_table(b, VGPU_CKPT_SEC_POOLS, 0, sizeof(*p), (void **)&p, &np, &off, NULL);
	if (!ret)
		ret = read_table(b, VGPU_CKPT_SEC_POOL_BLOCKS, 0, sizeof(*blk), (void **)&blk, &nb,
				 &off, NULL);
	if (!ret && (ret = pools_load(b->w, p, np, blk, nb, &why)))
		fail(b, ret, "memory pools: %s", why);
	free(p);
	free(blk);
	return ret;
}

/* Graphs and their instances, after everything their nodes name. */
static int graphs(struct rebuild *b)
{
	struct vgpu_ckpt_graph *g = NULL;
	struct vgpu_ckpt_graph_exec *x = NULL;
	size_t ng = 0, nx = 0, goff = 0, xoff = 0, glen = 0, xlen = 0;
	int ret = 0;

	if (vgpu_ckpt_find(b->r, VGPU_CKPT_SEC_GRAPHS, 0) >= 0)
		ret = read_table(b, VGPU_CKPT_SEC_GRAPHS, 0, sizeof(*g), (void **)&g, &ng, &goff,
				 &glen);
	if (!ret && vgpu_ckpt_find(b->r, VGPU_CKPT_SEC_GRAPH_EXECS, 0) >= 0)
		ret = read_table(b, VGPU_CKPT_SEC_GRAPH_EXECS, 0, sizeof(*x), (void **)&x, &nx,
				 &xoff, &xlen);
	if (!ret && (ng || nx))
		ret = graph_ckpt_load(b->w, g, ng, (const uint8_t *)g + goff, glen, x, nx,
				      (const uint8_t *)x + xoff, xlen, b->why, b->why_len);
	free(g);
	free(x);
	return ret;
}

/*
 * The session's state from @path into this fresh worker, serving the rings
 * in @fds (socket, region, doorbell, pool, the client's stdout or -1, the
 * /dev/vgpu worker fd or -1) laid out as @layout says. 0, or -errno and
 * why in a->message.
 */
int worker_take_up(struct worker *w, const struct vgpu_welcome *layout, const int *fds,
		   const int *ckpt, unsigned nckpt, const char *path, int onto,
		   struct ckpt_answer *a)
{
	struct rebuild b = { .w = w, .why = a->message, .why_len = sizeof(a->message) };
	struct migrate_state st = { .wl = *layout,
				    .carrier = fds[5] >= 0 ? VGPU_CARRIER_KMOD : VGPU_CARRIER_MEMFD };
	struct vgpu_welcome wl = *layout;
	struct vgpu_ckpt_expect ex = { 0 };
	struct vgpu_ckpt_gpu gpu;
	char err[VGPU_CKPT_MSG];
	uint64_t t0 = vgpu_now_ns();
	uint32_t driver;
	size_t off;
	int ret;

	w->sock = fds[0];
	if (fds[4] >= 0)
		worker_print_to(w, fds[4]);
	w->wl = wl;
	ret = worker_place(w, onto);
	if (ret) {
		snprintf(a->message, sizeof(a->message), "no GPU %d here: this worker sees %d",
			 onto, w->device_count);
		goto out;
	}
	ret = waiter_start(w);
	if (!ret && (ret = migrate_take_ring(w, &st, fds)))
		snprintf(a->message, sizeof(a->message), "the session's rings cannot be mapped");
	if (!ret && (ret = worker_build_memory(w, &wl)))
		snprintf(a->message, sizeof(a->message), "the session's memory cannot be set up");
	if (!ret && (wl.dev_window_base != layout->dev_window_base ||
		     wl.host_pool_base != layout->host_pool_base)) {
		ret = -EADDRNOTAVAIL;
		snprintf(a->message, sizeof(a->message), "the session's address windows are taken");
	}
	if (ret)
		goto out;
	worker_gpu_identity(w, &gpu, &driver);
	ex.gpu = &gpu;
	ex.driver_version = driver;
	/* No checksum pass first: each section's is checked as it is read, and
	 * a failed rebuild leaves the session as it was. */
	ret = vgpu_ckpt_open_chain_fds(&b.r, ckpt, nckpt, path, &ex, 0, err);
	if (ret) {
		memcpy(a->message, err, sizeof(a->message) - 1);	/* cut to fit */
		goto out;
	}
	/* Modules first, right after their contexts, as in the program: the
	 * driver places their globals by what it allocated before (the copy
	 * threads' streams and events would push them elsewhere). */
	ret = read_table(&b, VGPU_CKPT_SEC_HANDLES, 0, sizeof(*b.h), (void **)&b.h, &b.nh, &off, NULL);
	if (!ret)
		ret = contexts(&b);
	if (!ret)
		ret = modules(&b);
	if (!ret && (!(b.bounce = malloc(2 * BOUNCE)) ||
		     w->B.cuEventCreate(&b.ev[0], CU_EVENT_DISABLE_TIMING) ||
		     w->B.cuEventCreate(&b.ev[1], CU_EVENT_DISABLE_TIMING)))
		ret = fail(&b, -ENOMEM, "out of memory");
	else if (!ret && w->B.cuMemHostRegister_v2(b.bounce, 2 * BOUNCE, 0))
		vlog_warn("worker: restore buffer not pinned; the restore will be slower");
	if (!ret)
		ret = memory(&b, fds[3]);
	if (!ret && (ret = worker_vmm_restore(w, b.r, b.why, b.why_len)))
		vlog_debug("worker: the VMM state was not taken up");
	if (!ret)
		ret = functions(&b);
	if (!ret)
		ret = globals(&b);
	if (!ret)
		ret = streams_events(&b);
	if (!ret)
		ret = stream_attrs(&b);
	if (!ret)
		ret = pools(&b);
	if (!ret)
		ret = worker_array_restore(w, b.r, b.why, b.why_len);
	if (!ret)
		ret = graphs(&b);
	if (!ret)
		ret = calls(&b);
	if (b.bounce) {
		w->B.cuMemHostUnregister(b.bounce);
		free(b.bounce);
	}
	for (int h = 0; h < 2; h++)
		if (b.ev[h])
			w->B.cuEventDestroy_v2(b.ev[h]);
	free(b.h);
	vgpu_ckpt_reader_close(b.r);
	w->cur_ctx = 0;
out:
	worker_progress_end(w);
	a->status = ret;
	a->result.stall_ns = a->result.total_ns = vgpu_now_ns() - t0;
	a->result.device_bytes = w->vmem.in_use + w->vmem.created;
	a->result.host_bytes = w->pool.in_use;
	if (ret) {
		vlog_warn("session %llu: cannot take the session up: %s",
			  (unsigned long long)w->session_id, a->message);
		return ret;
	}
	if (w->stats) {
		memcpy(w->stats->comm, w->comm, sizeof(w->stats->comm) - 1);
		strcpy(w->stats->carrier, st.carrier == VGPU_CARRIER_KMOD ? "kmod" : "memfd");
	}
	vlog_info("session %llu: taken up from %s in %.3f s%s", (unsigned long long)w->session_id,
		  path, a->result.total_ns / 1e9,
		  st.carrier == VGPU_CARRIER_KMOD ? " (over /dev/vgpu)" : "");
	return 0;
}

int worker_resume(struct worker *w, const struct worker_handoff *h, const int *fds, int nfds,
		  int ctl)
{
	struct ckpt_answer a = { .type = WMSG_CHECKPOINTED };

	w->ctl = ctl;
	w->session_id = h->session_id;
	w->client_pid = h->pid;
	w->client_uid = h->uid;
	memcpy(w->comm, h->st.comm, sizeof(w->comm) - 1);
	w->deferred = h->st.deferred;
	w->locked = h->flags & HANDOFF_F_LOCKED;	/* a process restore: held */
	if (nfds < 1 || (unsigned)nfds != migrate_session_fds(&h->st) + 1) {
		a.status = -EINVAL;
		snprintf(a.message, sizeof(a.message), "the session came without its descriptors");
	} else {
		int take[MIGRATE_KMOD_FDS];

		memcpy(take, fds, MIGRATE_SESSION_FDS * sizeof(int));
		take[5] = h->st.carrier == VGPU_CARRIER_KMOD ? fds[5] : -1;
		worker_take_up(w, &h->st.wl, take, &fds[nfds - 1], 1, h->path, h->gpu, &a);
		close(fds[nfds - 1]);	/* the move's file: read */
	}
	migrate_say(w, &a);
	if (a.status)
		return a.status;
	return worker_loop(w);
}

int worker_resume_client(struct worker *w, const struct vgpu_hello *h, int *fds, int nfds)
{
	struct worker_msg m = { .type = WMSG_RESUME, .kmod_session = h->resume_session };
	struct ckpt_answer a = { .type = WMSG_CHECKPOINTED };
	struct resume_reply *rep = calloc(1, sizeof(*rep));
	struct vgpu_welcome wl = { 0 }, ok = { .magic = VGPU_PROTO_MAGIC,
					       .version = VGPU_PROTO_VERSION,
					       .carrier = VGPU_CARRIER_MEMFD };
	int take[MIGRATE_KMOD_FDS], zero = 0, chain[VGPU_MAX_FDS];
	const char *why = NULL;
	unsigned nchain = 0;
	int ret = -EINVAL;

	if (!rep)
		why = "out of memory";
	else if (nfds < 3)
		why = "a resume must bring the session's region, doorbell and pool";
	else if (vgpu_recv_fds(w->sock, &wl, sizeof(wl), NULL, &zero) != sizeof(wl) ||
		 wl.magic != VGPU_PROTO_MAGIC || wl.session_id != h->resume_session)
		why = "a resume must bring the session's layout";
	else if (write(w->ctl, &m, sizeof(m)) != sizeof(m) ||
		 (nchain = VGPU_MAX_FDS, vgpu_recv_fds_exact(w->ctl, rep, sizeof(*rep), chain, &nchain)) !=
		 sizeof(*rep) || !memchr(rep->path, 0, sizeof(rep->path)))
		why = "the daemon's supervisor did not answer";
	else if ((ret = rep->status))
		why = ret == -EPERM ? "that suspended session belongs to another process"
				    : "no suspended session of that number here";
	else if (!nchain || nchain != rep->nfds)
		why = "the daemon's supervisor sent no checkpoint";
	if (why) {
		vgpu_fds_close(chain, nchain);
		worker_refuse(w->sock, ret ? -ret : EINVAL, why);
		free(rep);
		return ret ? ret : -EINVAL;
	}
	w->session_id = h->resume_session;
	memcpy(w->comm, h->comm, sizeof(w->comm) - 1);
	take[5] = -1;
	if (h->carrier == VGPU_CARRIER_KMOD) {	/* the module's rings, attached again */
		take[5] = worker_attach_kmod(w, h->kmod_session, &why);
		if (take[5] < 0) {
			ret = take[5];
			vgpu_fds_close(chain, nchain);
			worker_refuse(w->sock, -ret, why);
			free(rep);
			return ret;
		}
	}
	take[0] = w->sock;
	take[1] = fds[0];
	take[2] = fds[1];
	take[3] = fds[2];
	take[4] = nfds > 3 ? fds[3] : -1;
	ret = worker_take_up(w, &wl, take, chain, nchain, rep->path, rep->gpu, &a);
	vgpu_fds_close(chain, nchain);
	if (ret) {
		worker_refuse(w->sock, -ret, a.message);
		free(rep);
		return ret;
	}
	free(rep);
	write_once(&w->ring.sh->state, VGPU_WORKER_RUNNING);
	ok.carrier = h->carrier;
	ok.session_id = w->session_id;
	if (vgpu_send_fds(w->sock, &ok, sizeof(ok), NULL, 0) != sizeof(ok))
		return -EPIPE;
	return worker_loop(w);
}
