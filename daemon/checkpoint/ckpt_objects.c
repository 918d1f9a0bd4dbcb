// SPDX-License-Identifier: MIT
/*
 * A checkpoint's object sections: module images, functions, globals with
 * their values, streams (with their launch attributes) and events,
 * contexts, and memory pools, each as the worker's tables hold them; and
 * the generated calls a restore runs again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "ckpt_calls.h"
#include "ckpt_crc.h"
#include "ckpt_run.h"
#include "log.h"
#include "retained.h"
#include "worker.h"

int ckpt_write_modules(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct vgpu_ckpt_module *m = NULL;
	struct obj_entry *e;
	size_t n = 0;
	uint32_t i;
	int ret = 0;

	obj_for_each(&w->modules, i, e)
		n++;
	if (n && !(m = calloc(n, sizeof(*m))))
		return ckpt_run_fail(r, -ENOMEM, "out of memory listing modules");
	n = 0;
	obj_for_each(&w->modules, i, e) {
		const struct retained_image *img = e->data;
		uint64_t len = img->len;
		uint32_t crc = vgpu_crc32c(0, img->bytes, img->len);

		m[n] = (struct vgpu_ckpt_module){ .handle = i, .image_id = i, .kind = 1 };
		/* The cache key: the image's CRC32C and length (not a digest). */
		memcpy(m[n].hash, &crc, sizeof(crc));
		memcpy(m[n].hash + 8, &len, sizeof(len));
		n++;
	}
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_MODULES, 0, m, n, sizeof(*m), NULL, 0);
	n = 0;
	obj_for_each(&w->modules, i, e) {
		const struct retained_image *img = e->data;

		if (ret)
			break;
		if (r->parent && ckpt_parent_has_module(r->parent, i, m[n].hash)) {
			ret = ckpt_sink_ref_parent(r->sink, VGPU_CKPT_SEC_MODULE_IMAGE, i);
			if (ret)
				ret = ckpt_run_sink_failed(r, ret);
		} else {
			ret = ckpt_run_table(r, VGPU_CKPT_SEC_MODULE_IMAGE, i, NULL, 0, 0, img->bytes,
					     img->len);
		}
		n++;
	}
	free(m);
	r->a->result.modules = (uint32_t)n;
	return ret;
}

int ckpt_write_functions(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct vgpu_ckpt_function *f = NULL;
	char *blob = NULL;
	size_t n = 0, blen = 0, at = 0;
	struct obj_entry *e;
	uint32_t i;
	int ret;

	obj_for_each(&w->funcs, i, e) {
		n++;
		blen += strlen(e->data);
	}
	if (n && (!(f = calloc(n, sizeof(*f))) || !(blob = malloc(blen + 1)))) {
		free(f);
		return ckpt_run_fail(r, -ENOMEM, "out of memory listing functions");
	}
	n = 0;
	obj_for_each(&w->funcs, i, e) {
		size_t len = strlen(e->data);

		f[n++] = (struct vgpu_ckpt_function){ .handle = i, .module = e->aux,
						      .name_off = (uint32_t)at,
						      .name_len = (uint32_t)len, .kind = 1 };
		memcpy(blob + at, e->data, len);
		at += len;
	}
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_FUNCTIONS, 0, f, n, sizeof(*f), blob, blen);
	free(f);
	free(blob);
	return ret;
}

int ckpt_write_globals(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct vgpu_ckpt_global *g = NULL;
	uint8_t *blob = NULL;
	size_t blen = 0, at = 0;
	int ret;

	for (size_t k = 0; k < w->nglobals; k++)
		blen += w->globals[k].size + strlen(w->globals[k].name);
	if (w->nglobals && (!(g = calloc(w->nglobals, sizeof(*g))) || !(blob = malloc(blen + 1)))) {
		free(g);
		return ckpt_run_fail(r, -ENOMEM, "out of memory reading globals");
	}
	for (size_t k = 0; k < w->nglobals; k++) {
		const struct global_range *gr = &w->globals[k];
		CUresult rc = w->B.cuMemcpyDtoHAsync_v2(blob + at, gr->addr, gr->size, NULL);

		if (!rc)
			rc = w->B.cuStreamSynchronize(NULL);
		if (rc) {
			free(g);
			free(blob);
			return ckpt_run_fail(r, -EIO, "reading a global at %#llx failed (CUDA error %d)",
					     (unsigned long long)gr->addr, rc);
		}
		g[k] = (struct vgpu_ckpt_global){ .module = gr->module, .addr = gr->addr,
						  .size = gr->size, .value_off = at };
		at += gr->size;
		g[k].name_off = (uint32_t)at;
		g[k].name_len = (uint32_t)strlen(gr->name);
		memcpy(blob + at, gr->name, g[k].name_len);
		at += g[k].name_len;
	}
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_GLOBALS, 0, g, w->nglobals, sizeof(*g), blob, blen);
	free(g);
	free(blob);
	return ret;
}

/* What a restore sets again on each stream, where it differs from what the
 * new stream holds; ids as CUstreamAttrID. The priority is for the NULL
 * streams (the driver takes one for them too): a stream is created again
 * with its own (the stream record's). */
static const uint32_t saved_stream_attrs[] = {
	CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
	CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
	CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
	CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
	CU_LAUNCH_ATTRIBUTE_PRIORITY,
};
#define NSAVED (sizeof(saved_stream_attrs) / sizeof(saved_stream_attrs[0]))

/* The saved attributes of stream st (NULL: the current context's NULL
 * stream) into a[*n...]. */
static void stream_attrs_of(struct worker *w, CUstream st, uint32_t handle, uint32_t ctx,
			    struct vgpu_ckpt_stream_attr *a, size_t *n)
{
	for (size_t k = 0; k < NSAVED; k++) {
		CUstreamAttrValue v;

		memset(&v, 0, sizeof(v));	/* the driver fills one member */
		if (w->B.cuStreamGetAttribute(st, (CUstreamAttrID)saved_stream_attrs[k], &v))
			continue;	/* one this driver does not keep */
		a[*n] = (struct vgpu_ckpt_stream_attr){ .handle = handle, .ctx = ctx,
							.attr = saved_stream_attrs[k] };
		memcpy(a[(*n)++].value, &v, sizeof(a->value));
	}
}

/* Each stream's attributes and each NULL stream's, as the driver holds
 * them (streamops). */
int ckpt_write_stream_attrs(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct vgpu_ckpt_stream_attr *a;
	struct obj_entry *e;
	size_t n = 0;
	uint32_t i;
	int ret;

	obj_for_each(&w->streams, i, e)
		n++;
	obj_for_each(&w->ctxs, i, e)
		n++;
	a = calloc(n * NSAVED + 1, sizeof(*a));
	if (!a)
		return ckpt_run_fail(r, -ENOMEM, "out of memory listing stream attributes");
	n = 0;
	obj_for_each(&w->streams, i, e)
		stream_attrs_of(w, e->obj, i, 0, a, &n);
	obj_for_each(&w->ctxs, i, e)
		if (!w->B.cuCtxSetCurrent(e->obj))
			stream_attrs_of(w, NULL, 0, i, a, &n);
	w->cur_ctx = 0;		/* the next entry sets its own context again */
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_STREAM_ATTRS, 0, a, n, sizeof(*a), NULL, 0);
	free(a);
	return ret;
}

/* Streams and events, and which context each handle belongs to. */
int ckpt_write_streams_events(struct ckpt_run *r)
{
	struct worker *w = r->w;
	size_t ns = 0, nev = 0, nh = 0;
	struct vgpu_ckpt_stream *s = NULL;
	struct vgpu_ckpt_event *ev = NULL;
	struct vgpu_ckpt_handle *h = NULL;
	struct obj_entry *e;
	uint32_t i;
	int ret = -ENOMEM;

	obj_for_each(&w->streams, i, e)
		ns++;
	obj_for_each(&w->events, i, e)
		nev++;
	obj_for_each(&w->modules, i, e)
		nh++;
	nh += ns;
	s = calloc(ns + 1, sizeof(*s));
	ev = calloc(nev + 1, sizeof(*ev));
	h = calloc(nh + 1, sizeof(*h));
	if (!s || !ev || !h)
		goto out;
	ns = nev = nh = 0;
	obj_for_each(&w->streams, i, e) {
		const struct retained_stream *info = e->data;

		s[ns++] = (struct vgpu_ckpt_stream){ .handle = i, .flags = info->flags,
						     .priority = info->priority };
		h[nh++] = (struct vgpu_ckpt_handle){ .client = i, .kind = VGPU_CKPT_HANDLE_STREAM,
						     .object = e->aux };
	}
	obj_for_each(&w->events, i, e)
		ev[nev++] = (struct vgpu_ckpt_event){ .handle = i, .flags = (uint32_t)e->aux };
	obj_for_each(&w->modules, i, e)
		h[nh++] = (struct vgpu_ckpt_handle){ .client = i, .kind = VGPU_CKPT_HANDLE_MODULE,
						     .object = e->aux };
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_STREAMS, 0, s, ns, sizeof(*s), NULL, 0);
	if (!ret)
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_EVENTS, 0, ev, nev, sizeof(*ev), NULL, 0);
	if (!ret)
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_HANDLES, 0, h, nh, sizeof(*h), NULL, 0);
out:
	if (ret == -ENOMEM)
		ckpt_run_fail(r, -ENOMEM, "out of memory listing streams and events");
	free(s);
	free(ev);
	free(h);
	return ret;
}

/* One CONTEXT section per context (id: its handle): its flags and limits. */
int ckpt_write_contexts(struct ckpt_run *r)
{
	static const CUlimit limits[] = {
		CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE,
		CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, CU_LIMIT_MAX_L2_FETCH_GRANULARITY,
		CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
	};
	struct vgpu_ckpt_setting set[1 + sizeof(limits) / sizeof(limits[0])];
	struct worker *w = r->w;
	struct obj_entry *e;
	uint32_t i;
	int ret = 0;

	obj_for_each(&w->ctxs, i, e) {
		size_t n = 0;

		set[n++] = (struct vgpu_ckpt_setting){ .key = VGPU_CKPT_CTX_FLAGS << 16,
						       .value = e->aux };
		if (!w->B.cuCtxSetCurrent(e->obj))
			for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
				size_t v;

				if (!w->B.cuCtxGetLimit(&v, limits[k]))
					set[n++] = (struct vgpu_ckpt_setting){
						.key = VGPU_CKPT_CTX_LIMIT << 16 | limits[k],
						.value = v };
			}
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_CONTEXT, i, set, n, sizeof(set[0]), NULL, 0);
		if (ret)
			break;
	}
	w->cur_ctx = 0;
	return ret;
}

/* The pools and the blocks they hold (their bytes are in ALLOCS). */
int ckpt_write_pools(struct ckpt_run *r)
{
	struct vgpu_ckpt_pool *p;
	struct vgpu_ckpt_pool_block *b;
	size_t np, nb;
	int ret = pools_save(r->w, &p, &np, &b, &nb);

	if (ret)
		return ckpt_run_fail(r, ret, "out of memory");
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_POOLS, 0, p, np, sizeof(*p), NULL, 0);
	if (!ret)
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_POOL_BLOCKS, 0, b, nb, sizeof(*b), NULL, 0);
	free(p);
	free(b);
	return ret;
}

/* The generated calls a restore runs again (ckpt_calls.h): last, as they
 * name everything else. */
int ckpt_write_calls(struct ckpt_run *r)
{
	size_t n = calls_log_records(r->w, NULL, NULL), bytes = calls_log_bytes(r->w);
	struct vgpu_ckpt_call *c;
	uint8_t *blob;
	int ret;

	if (!n)
		return 0;
	c = calloc(n, sizeof(*c));
	blob = malloc(bytes ? bytes : 1);
	if (!c || !blob) {
		free(c);
		free(blob);
		return ckpt_run_fail(r, -ENOMEM, "out of memory listing the generated calls");
	}
	calls_log_records(r->w, c, blob);
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_CALLS, 0, c, n, sizeof(*c), blob, bytes);
	free(c);
	free(blob);
	return ret;
}

/* Graphs and their instances (daemon/worker/graph/graph_ckpt.c). */
int ckpt_write_graphs(struct ckpt_run *r)
{
	struct vgpu_ckpt_graph *g = NULL;
	struct vgpu_ckpt_graph_exec *x = NULL;
	uint8_t *gb = NULL, *xb = NULL;
	size_t ng = 0, nx = 0, gl = 0, xl = 0;
	char why[sizeof(r->a->message)];
	int ret = graph_ckpt_save(r->w, &g, &ng, &gb, &gl, &x, &nx, &xb, &xl, why, sizeof(why));

	if (ret)
		return ckpt_run_fail(r, ret, "%s", why);
	if (ng)
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_GRAPHS, 0, g, ng, sizeof(*g), gb, gl);
	if (!ret && nx)
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_GRAPH_EXECS, 0, x, nx, sizeof(*x), xb, xl);
	free(g);
	free(x);
	free(gb);
	free(xb);
	return ret;
}
