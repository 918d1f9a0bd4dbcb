// SPDX-License-Identifier: MIT
/*
 * A session's checkpoint, written by its worker between two ring entries
 * (the client's next call waits until the file is complete). The order of
 * the file: VA window, contexts, allocations (records, then each one's
 * bytes), module images, functions, globals with their values, streams,
 * events, and the handle map (which context owns which handle).
 *
 * Device bytes of an uncompressed file are reserved in it and copied by
 * several threads at once (ckpt_bulk.h). Compressed, they go GPU -> the
 * writer's staging buffers (registered with the GPU once, so the copies
 * are DMA) -> zstd -> file, the io_uring writes of one buffer overlapping
 * the copy into the next.
 */
#include "checkpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "barrier.h"
#include "ckpt.h"
#include "ckpt_bulk.h"
#include "ckpt_crc.h"
#include "ckpt_parent.h"
#include "ckpt_sink.h"
#include "clock.h"
#include "gpu_digest.h"
#include "fdpass.h"
#include "log.h"
#include "migrate.h"
#include "retained.h"
#include "worker.h"

struct ckpt_run {
	struct worker *w;
	struct ckpt_sink *sink;
	struct ckpt_answer *a;
	struct vgpu_ckpt_alloc *alloc;	/* records, grown as they come */
	size_t nalloc, cap;
	struct content_digest *dg;	/* each allocation's; NULL: none */
	bool digests;			/* wanted (not for a move) */
	const struct ckpt_parent *parent;	/* incremental: the one to refer to */
};

__attribute__((format(printf, 3, 4)))
static int fail(struct ckpt_run *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->a->status)
		return r->a->status;	/* the first failure says why */
	va_start(ap, fmt);
	vsnprintf(r->a->message, sizeof(r->a->message), fmt, ap);
	va_end(ap);
	r->a->status = err < 0 ? err : -EIO;
	return r->a->status;
}

/* A sink call failed: its message says why. */
static int sink_failed(struct ckpt_run *r, int ret)
{
	return fail(r, ret, "%s", ckpt_sink_error(r->sink));
}

/* Every context's work done; a broken context stops the checkpoint. */
static int drain(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct obj_entry *e;
	uint32_t i;

	if (w->graphs.cap || w->graph_execs.cap) {
		obj_for_each(&w->graphs, i, e)
			return fail(r, -EOPNOTSUPP, "the session holds CUDA graphs, which "
				    "checkpoints do not carry yet");
		obj_for_each(&w->graph_execs, i, e)
			return fail(r, -EOPNOTSUPP, "the session holds CUDA graphs, which "
				    "checkpoints do not carry yet");
	}
	if (w->captures)
		return fail(r, -EBUSY, "a stream capture is in progress");
	if (pool_ipc_ckpt_refusal(w))
		return fail(r, -EOPNOTSUPP, "%s", pool_ipc_ckpt_refusal(w));
	if (worker_callbacks_stuck(w))
		return fail(r, -ETIMEDOUT, "session %llu is stalled waiting for its program (in a "
			    "host callback); not checkpointed", (unsigned long long)w->session_id);
	if (streamops_gpu_stalled(w))
		return fail(r, -ETIMEDOUT, "session %llu is stalled %s; not checkpointed",
			    (unsigned long long)w->session_id, STREAMOPS_STALLED);
	obj_for_each(&w->ctxs, i, e) {
		CUresult rc = w->B.cuCtxSetCurrent(e->obj);

		if (!rc)
			rc = w->B.cuCtxSynchronize();
		if (rc)
			return fail(r, -EIO, "context %u cannot be drained (CUDA error %d): "
				    "nothing to checkpoint", i, rc);
	}
	w->cur_ctx = 0;		/* the next entry sets its own context again */
	return 0;
}

void worker_gpu_identity(struct worker *w, struct vgpu_ckpt_gpu *g, uint32_t *driver)
{
	CUdevice d = w->devices[0];
	int major = 0, minor = 0, ver = 0;
	size_t total = 0;

	memset(g, 0, sizeof(*g));
	if (w->B.cuDeviceGetName(g->name, sizeof(g->name) - 1, d))
		strcpy(g->name, "unknown");
	w->B.cuDeviceGetUuid_v2((CUuuid *)g->uuid, d);
	w->B.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
	w->B.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
	w->B.cuDeviceTotalMem_v2(&total, d);
	w->B.cuDriverGetVersion(&ver);
	g->cc_major = (uint32_t)major;
	g->cc_minor = (uint32_t)minor;
	g->total_mem = total;
	*driver = (uint32_t)ver;
}

/* A section holding @n records of @size bytes, then @blob. */
static int table(struct ckpt_run *r, uint32_t type, uint64_t id, const void *rec, size_t n,
		 size_t size, const void *blob, size_t blob_len)
{
	int ret = ckpt_sink_begin(r->sink, type, id, n);

	if (!ret && n)
		ret = ckpt_sink_write(r->sink, rec, n * size);
	if (!ret && blob_len)
		ret = ckpt_sink_write(r->sink, blob, blob_len);
	if (!ret)
		ret = ckpt_sink_end(r->sink);
	return ret ? sink_failed(r, ret) : 0;
}

static int add_alloc(struct ckpt_run *r, uint64_t addr, uint64_t size, uint32_t kind)
{
	if (r->nalloc == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct vgpu_ckpt_alloc *a = realloc(r->alloc, cap * sizeof(*a));

		if (!a)
			return fail(r, -ENOMEM, "out of memory listing allocations");
		r->alloc = a;
		r->cap = cap;
	}
	r->alloc[r->nalloc++] = (struct vgpu_ckpt_alloc){
		.addr = addr, .size = size, .kind = kind, .handle = addr, .data_id = addr,
	};
	return 0;
}

static int add_device(void *arg, CUdeviceptr p, size_t bytes)
{
	return add_alloc(arg, p, bytes, VGPU_CKPT_MEM_DEVICE);
}

static int add_host(void *arg, uint64_t addr, size_t size)
{
	return add_alloc(arg, addr, size, VGPU_CKPT_MEM_HOST);
}

void worker_progress_end(struct worker *w)
{
	if (w->stats) {
		__atomic_store_n(&w->stats->state_total, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->stats->state_done, 0, __ATOMIC_RELAXED);
	}
}

uint64_t *worker_progress_begin(struct worker *w, uint64_t total)
{
	if (!w->stats)
		return NULL;
	__atomic_store_n(&w->stats->state_done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->stats->state_total, total, __ATOMIC_RELAXED);
	return &w->stats->state_done;
}

/*
 * Every allocation's content digest into r->dg: device memory on the GPU,
 * the pinned pool here. Without digests the checkpoint is still whole; the
 * next incremental one just writes everything again.
 */
static void digest_allocations(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct digest_range *dr = calloc(r->nalloc + 1, sizeof(*dr));
	struct content_digest *dd = calloc(r->nalloc + 1, sizeof(*dd));
	char why[160];
	size_t nd = 0;

	r->dg = calloc(r->nalloc + 1, sizeof(*r->dg));
	if (!dr || !dd || !r->dg) {
		snprintf(why, sizeof(why), "out of memory");
		goto none;
	}
	for (size_t i = 0; i < r->nalloc; i++)
		if (r->alloc[i].kind == VGPU_CKPT_MEM_DEVICE)
			dr[nd++] = (struct digest_range){ r->alloc[i].addr, r->alloc[i].size };
	if (gpu_digest(&w->B, w->primary[0], dr, nd, dd, why, sizeof(why)))
		goto none;
	nd = 0;
	for (size_t i = 0; i < r->nalloc; i++) {
		const struct vgpu_ckpt_alloc *a = &r->alloc[i];

		if (a->kind == VGPU_CKPT_MEM_DEVICE)
			r->dg[i] = dd[nd++];
		else	/* the pool is mapped at the same address here */
			digest_bytes(&r->dg[i], (const void *)(uintptr_t)a->addr, a->size, 0);
	}
	goto out;
none:
	vlog_warn("session %llu: no content digests in this checkpoint (%s); an incremental "
		  "one after it writes everything", (unsigned long long)w->session_id, why);
	free(r->dg);
	r->dg = NULL;
out:
	free(dr);
	free(dd);
}

static int write_digests(struct ckpt_run *r)
{
	struct vgpu_ckpt_digest *d = calloc(r->nalloc + 1, sizeof(*d));
	int ret;

	if (!d)
		return fail(r, -ENOMEM, "out of memory listing digests");
	for (size_t i = 0; i < r->nalloc; i++)
		d[i] = (struct vgpu_ckpt_digest){ .data_id = r->alloc[i].data_id,
						  .size = r->alloc[i].size, .a = r->dg[i].a,
						  .b = r->dg[i].b, .kind = VGPU_CKPT_DIGEST };
	ret = table(r, VGPU_CKPT_SEC_DIGESTS, 0, d, r->nalloc, sizeof(*d), NULL, 0);
	free(d);
	return ret;
}

/* Allocation i is the same as in the parent: the file refers to it there. */
static bool in_parent(struct ckpt_run *r, size_t i)
{
	const struct vgpu_ckpt_alloc *a = &r->alloc[i];

	return r->parent && r->dg && ckpt_parent_has_alloc(r->parent, a->data_id, a->size,
							   &r->dg[i]);
}

static int write_allocations(struct ckpt_run *r)
{
	struct worker *w = r->w;
	int ret;

	if (vmem_for_each(&w->vmem, add_device, r) || hostpool_for_each(&w->pool, add_host, r))
		return r->a->status;
	if (r->digests)
		digest_allocations(r);
	ret = table(r, VGPU_CKPT_SEC_ALLOCS, 0, r->alloc, r->nalloc, sizeof(*r->alloc), NULL, 0);
	for (size_t i = 0; !ret && i < r->nalloc; i++) {
		const struct vgpu_ckpt_alloc *a = &r->alloc[i];

		if (a->kind == VGPU_CKPT_MEM_DEVICE)
			r->a->result.device_bytes += a->size;
		else
			r->a->result.host_bytes += a->size;
		if (in_parent(r, i)) {
			ret = ckpt_sink_ref_parent(r->sink, VGPU_CKPT_SEC_ALLOC_DATA, a->data_id);
			r->a->result.parent_bytes += a->size;
			r->a->result.parent_allocations++;
			ckpt_progress(w->stats ? &w->stats->state_done : NULL, a->size);
		} else if (a->kind == VGPU_CKPT_MEM_DEVICE) {
			ret = ckpt_sink_device_section(r->sink, VGPU_CKPT_SEC_ALLOC_DATA, a->data_id,
						       a->addr, a->size);
		} else {
			/* The pool is mapped at the same address here as in the client. */
			ret = ckpt_sink_begin(r->sink, VGPU_CKPT_SEC_ALLOC_DATA, a->data_id, 0);
			if (!ret)
				ret = ckpt_sink_write(r->sink, (const void *)(uintptr_t)a->addr,
						      a->size);
			if (!ret)
				ret = ckpt_sink_end(r->sink);
			ckpt_progress(w->stats ? &w->stats->state_done : NULL, a->size);
		}
		if (ret)
			return sink_failed(r, ret);
	}
	ret = ckpt_sink_device_flush(r->sink);
	if (ret)
		return sink_failed(r, ret);
	r->a->result.allocations = (uint32_t)r->nalloc;
	return r->dg ? write_digests(r) : 0;
}

/* The client's virtual memory API state (exec_vmm.c). */
static int write_vmm(struct ckpt_run *r)
{
	char why[160];
	int ret = worker_vmm_checkpoint(r->w, r->sink, why, sizeof(why));

	if (ret)
		return fail(r, ret, "%s", why);
	r->a->result.device_bytes += r->w->vmem.created;
	return 0;
}

static int write_modules(struct ckpt_run *r)
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
		return fail(r, -ENOMEM, "out of memory listing modules");
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
	ret = table(r, VGPU_CKPT_SEC_MODULES, 0, m, n, sizeof(*m), NULL, 0);
	n = 0;
	obj_for_each(&w->modules, i, e) {
		const struct retained_image *img = e->data;

		if (ret)
			break;
		if (r->parent && ckpt_parent_has_module(r->parent, i, m[n].hash)) {
			ret = ckpt_sink_ref_parent(r->sink, VGPU_CKPT_SEC_MODULE_IMAGE, i);
			if (ret)
				ret = sink_failed(r, ret);
		} else {
			ret = table(r, VGPU_CKPT_SEC_MODULE_IMAGE, i, NULL, 0, 0, img->bytes,
				    img->len);
		}
		n++;
	}
	free(m);
	r->a->result.modules = (uint32_t)n;
	return ret;
}

static int write_functions(struct ckpt_run *r)
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
		return fail(r, -ENOMEM, "out of memory listing functions");
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
	ret = table(r, VGPU_CKPT_SEC_FUNCTIONS, 0, f, n, sizeof(*f), blob, blen);
	free(f);
	free(blob);
	return ret;
}

static int write_globals(struct ckpt_run *r)
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
		return fail(r, -ENOMEM, "out of memory reading globals");
	}
	for (size_t k = 0; k < w->nglobals; k++) {
		const struct global_range *gr = &w->globals[k];
		CUresult rc = w->B.cuMemcpyDtoHAsync_v2(blob + at, gr->addr, gr->size, NULL);

		if (!rc)
			rc = w->B.cuStreamSynchronize(NULL);
		if (rc) {
			free(g);
			free(blob);
			return fail(r, -EIO, "reading a global at %#llx failed (CUDA error %d)",
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
	ret = table(r, VGPU_CKPT_SEC_GLOBALS, 0, g, w->nglobals, sizeof(*g), blob, blen);
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
static int write_stream_attrs(struct ckpt_run *r)
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
		return fail(r, -ENOMEM, "out of memory listing stream attributes");
	n = 0;
	obj_for_each(&w->streams, i, e)
		stream_attrs_of(w, e->obj, i, 0, a, &n);
	obj_for_each(&w->ctxs, i, e)
		if (!w->B.cuCtxSetCurrent(e->obj))
			stream_attrs_of(w, NULL, 0, i, a, &n);
	w->cur_ctx = 0;		/* the next entry sets its own context again */
	ret = table(r, VGPU_CKPT_SEC_STREAM_ATTRS, 0, a, n, sizeof(*a), NULL, 0);
	free(a);
	return ret;
}

/* Streams and events, and which context each handle belongs to. */
static int write_streams_events(struct ckpt_run *r)
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
	ret = table(r, VGPU_CKPT_SEC_STREAMS, 0, s, ns, sizeof(*s), NULL, 0);
	if (!ret)
		ret = table(r, VGPU_CKPT_SEC_EVENTS, 0, ev, nev, sizeof(*ev), NULL, 0);
	if (!ret)
		ret = table(r, VGPU_CKPT_SEC_HANDLES, 0, h, nh, sizeof(*h), NULL, 0);
out:
	if (ret == -ENOMEM)
		fail(r, -ENOMEM, "out of memory listing streams and events");
	free(s);
	free(ev);
	free(h);
	return ret;
}

/* One CONTEXT section per context (id: its handle): its flags and limits. */
static int write_contexts(struct ckpt_run *r)
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
		ret = table(r, VGPU_CKPT_SEC_CONTEXT, i, set, n, sizeof(set[0]), NULL, 0);
		if (ret)
			break;
	}
	w->cur_ctx = 0;
	return ret;
}

/* The pools and the blocks they hold (their bytes are in ALLOCS). */
static int write_pools(struct ckpt_run *r)
{
	struct vgpu_ckpt_pool *p;
	struct vgpu_ckpt_pool_block *b;
	size_t np, nb;
	int ret = pools_save(r->w, &p, &np, &b, &nb);

	if (ret)
		return fail(r, ret, "out of memory");
	ret = table(r, VGPU_CKPT_SEC_POOLS, 0, p, np, sizeof(*p), NULL, 0);
	if (!ret)
		ret = table(r, VGPU_CKPT_SEC_POOL_BLOCKS, 0, b, nb, sizeof(*b), NULL, 0);
	free(p);
	free(b);
	return ret;
}

/* Everything of the session into r->sink, in file order. */
static int collect(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct vgpu_ckpt_va va = { .base = w->vmem.base, .size = w->vmem.size,
				   .granularity = w->vmem.gran };
	struct vgpu_ckpt_client who = { .pid = w->client_pid, .uid = w->client_uid };
	int ret;

	memcpy(who.comm, w->comm, sizeof(who.comm) - 1);
	ret = table(r, VGPU_CKPT_SEC_CLIENT, 0, &who, 1, sizeof(who), NULL, 0);
	if (!ret && r->parent)
		ret = table(r, VGPU_CKPT_SEC_PARENT, 0, NULL, 0, 0, r->parent->path,
			    strlen(r->parent->path));
	if (!ret)
		ret = table(r, VGPU_CKPT_SEC_VA, 0, &va, 1, sizeof(va), NULL, 0);
	if (!ret)
		ret = write_contexts(r);
	if (!ret)
		ret = write_allocations(r);
	if (!ret)
		ret = write_vmm(r);
	if (!ret)
		ret = write_modules(r);
	if (!ret)
		ret = write_functions(r);
	if (!ret)
		ret = write_globals(r);
	if (!ret)
		ret = write_streams_events(r);
	if (!ret)
		ret = write_stream_attrs(r);
	if (!ret)
		ret = write_pools(r);
	free(r->alloc);
	free(r->dg);
	r->alloc = NULL;
	r->dg = NULL;
	r->a->result.incremental = r->parent != NULL;
	return ret;
}

/*
 * A checkpoint in flight. Snapshot mode: a thread prepares the pinned
 * buffer while the program runs (prep), the worker's main thread copies
 * everything during the pause (pause), a thread writes the file while the
 * program runs again (flush) and answers the supervisor.
 */
struct ckpt_job {
	struct worker *w;
	struct ckpt_order order;
	struct ckpt_answer a;
	struct vgpu_ckpt_gpu gpu;
	uint32_t driver;
	void *buf;
	size_t cap;
	bool registered;
	int state;			/* JOB_* */
	struct ckpt_sink *sink;
	uint64_t t_ordered;
	struct ckpt_parent parent;	/* incremental: opened with the order */
};

/* ABANDONED: the order was answered while its preparation hung in the
 * driver (behind GPU work that never ends); the thread frees the job. */
enum { JOB_PREPARING, JOB_READY, JOB_NO_BUFFER, JOB_ABANDONED };

/* ---- the files an order brings ------------------------------------------ */

int ckpt_order_send(int sock, const struct ckpt_order *o, int fd, const int *parent,
		    unsigned nparent)
{
	int fds[VGPU_MAX_FDS];
	struct ckpt_order_fds m = { .nfds = 1 + nparent };

	if (fd < 0 || nparent > VGPU_CKPT_MAX_CHAIN)
		return -EINVAL;
	if (send(sock, o, sizeof(*o), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(*o))
		return -errno;
	fds[0] = fd;
	memcpy(fds + 1, parent, nparent * sizeof(int));
	/* Right after the order, which the worker reads only once it is told
	 * (order_pending); it then waits for this one a while. Should this
	 * one not go, the order is out all the same: the worker's answer (an
	 * error, once it gave up waiting) is what the asker gets. */
	if (vgpu_send_fds(sock, &m, sizeof(m), fds, 1 + nparent) != sizeof(m))
		vlog_warn("an order's files could not follow it: %s", strerror(errno));
	return 0;
}

/* The message after an order: its descriptors into fds (room VGPU_MAX_FDS). */
static int order_fds(int sock, int *fds, unsigned *n)
{
	struct ckpt_order_fds m;
	struct pollfd p = { .fd = sock, .events = POLLIN };
	int ret;

	*n = 0;
	if (poll(&p, 1, 10000) != 1)
		return -ETIMEDOUT;
	*n = VGPU_MAX_FDS;
	ret = vgpu_recv_fds_exact(sock, &m, sizeof(m), fds, n);
	if (ret != sizeof(m) || m.nfds != *n || !*n) {
		vgpu_fds_close(fds, *n);
		*n = 0;
		return ret < 0 ? ret : -EBADMSG;
	}
	return 0;
}

int ckpt_order_recv_fds(int sock, struct ckpt_order *o)
{
	int fds[VGPU_MAX_FDS];
	unsigned n;
	int ret = order_fds(sock, fds, &n);

	o->fd = -1;
	o->nparent = 0;
	if (ret)
		return ret;
	o->fd = fds[0];
	o->nparent = n - 1;
	memcpy(o->parent_fds, fds + 1, (n - 1) * sizeof(int));
	return 0;
}

void ckpt_order_drop_fds(int sock)
{
	int fds[VGPU_MAX_FDS];
	unsigned n;

	if (!order_fds(sock, fds, &n))
		vgpu_fds_close(fds, n);
}

void ckpt_order_close(struct ckpt_order *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	vgpu_fds_close(o->parent_fds, o->nparent);
	o->nparent = 0;
}

static void answer(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a)
{
	if (a->status)
		vlog_warn("session %llu: checkpoint to %s failed: %s",
			  (unsigned long long)w->session_id, o->path, a->message);
	else
		vlog_info("session %llu: checkpoint to %s: %llu bytes of device memory, %llu "
			  "of host memory, %u allocations, %u modules; program paused %.3f s",
			  (unsigned long long)w->session_id, o->path,
			  (unsigned long long)a->result.device_bytes,
			  (unsigned long long)a->result.host_bytes, a->result.allocations,
			  a->result.modules, a->result.stall_ns / 1e9);
	if (send(w->ctl, a, sizeof(*a), MSG_NOSIGNAL) != sizeof(*a))
		vlog_warn("session %llu: cannot answer the supervisor: %s",
			  (unsigned long long)w->session_id, strerror(errno));
}

static int writer_open(struct worker *w, const struct ckpt_order *o,
		       const struct vgpu_ckpt_gpu *gpu, uint32_t driver, uint64_t prealloc,
		       const struct ckpt_parent *parent, struct vgpu_ckpt_writer **wr, char *err)
{
	struct vgpu_ckpt_writer_opts opts = { .gpu = gpu, .driver_version = driver,
					      .session_id = w->session_id,
					      .compress = o->flags & VGPU_CTL_F_COMPRESS ? 3 : 0,
					      .prealloc = prealloc,
					      .parent = parent ? parent->r : NULL };

	return vgpu_ckpt_writer_open_fd(wr, o->fd, o->path, &opts, err);
}

static int open_writer(struct ckpt_run *r, const struct ckpt_order *o,
		       const struct vgpu_ckpt_gpu *gpu, uint32_t driver,
		       struct vgpu_ckpt_writer **wr)
{
	char err[VGPU_CKPT_MSG];
	int ret = writer_open(r->w, o, gpu, driver, 0, r->parent, wr, err);

	return ret ? fail(r, ret, "%s", err) : 0;
}

int worker_checkpoint_writer(struct worker *w, const struct ckpt_order *o, uint64_t prealloc,
			     struct vgpu_ckpt_writer **wr, char *err)
{
	struct vgpu_ckpt_gpu gpu;
	uint32_t driver;

	worker_gpu_identity(w, &gpu, &driver);
	return writer_open(w, o, &gpu, driver, prealloc, NULL, wr, err);
}

/*
 * --incremental: the session's last checkpoint, opened as the parent. With
 * none, or one that cannot serve, the checkpoint is a full one and the
 * answer's message says why.
 */
static void open_parent(struct worker *w, const struct ckpt_order *o, struct ckpt_parent *p,
			struct ckpt_answer *a)
{
	char why[VGPU_CKPT_MSG];

	memset(p, 0, sizeof(*p));
	if (!(o->flags & VGPU_CTL_F_INCREMENTAL))
		return;
	if (!o->parent[0]) {
		snprintf(a->message, sizeof(a->message),
			 "no earlier checkpoint of this session: a full one");
	} else if (ckpt_parent_open(p, o->parent_fds, o->nparent, o->parent, w->session_id, o->path,
				    why, sizeof(why))) {
		vlog_warn("session %llu: incremental checkpoint: %s; writing a full one",
			  (unsigned long long)w->session_id, why);
		snprintf(a->message, sizeof(a->message), "full, not incremental: %.88s", why);
	}
}

static void file_size(const struct ckpt_order *o, struct ckpt_answer *a)
{
	struct stat st;

	if (!a->status && !fstat(o->fd, &st))
		a->result.file_bytes = (uint64_t)st.st_size;
}

static int flushing;	/* files being written from memory */

/* Stream mode: the program waits for the whole file. */
static void checkpoint_now(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a)
{
	worker_checkpoint_file(w, o, a, NULL, NULL);
	answer(w, o, a);
	/* --stop: nothing the program does after the file may be lost, so
	 * the session ends here. Its program waits for `vgpuctl restore` of
	 * the file (VGPU_RESUME_TIMEOUT); over /dev/vgpu, where a session
	 * cannot be taken up again yet, its next call fails. */
	if (!a->status && (o->flags & VGPU_CTL_F_STOP)) {
		if (!w->ring.kmod) {
			worker_leave_suspended(w, o->path);
			return;
		}
		vlog_info("session %llu: checkpointed; ending it (--stop)",
			  (unsigned long long)w->session_id);
		write_once(&w->dead, true);
	}
}

int worker_checkpoint_file(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a,
			   struct vgpu_ckpt_writer *wr, const struct ckpt_landing *land)
{
	struct ckpt_run r = { .w = w, .a = a, .digests = o->type != WORDER_MIGRATE };
	struct ckpt_parent parent = { 0 };
	struct vgpu_ckpt_gpu gpu;
	uint64_t t0 = vgpu_now_ns();
	uint32_t driver;
	size_t size;
	void *staging;
	bool registered;
	int ret;

	if (!wr) {
		open_parent(w, o, &parent, a);
		r.parent = parent.r ? &parent : NULL;
	}
	if (drain(&r))
		goto out;
	worker_gpu_identity(w, &gpu, &driver);
	if (!wr && open_writer(&r, o, &gpu, driver, &wr))
		goto out;
	vgpu_ckpt_writer_buffers(wr, &staging, &size);
	/* Pinned staging makes the device copies DMA; without it they still work. */
	registered = !w->B.cuMemHostRegister_v2(staging, size, 0);
	r.sink = ckpt_sink_stream(&w->B, wr, !(o->flags & VGPU_CTL_F_COMPRESS));
	if (r.sink)
		ckpt_sink_landing(r.sink, land);
	if (r.sink)
		ckpt_sink_progress(r.sink, worker_progress_begin(w, w->vmem.in_use + w->vmem.created +
								    w->pool.in_use));
	ret = r.sink ? collect(&r) : fail(&r, -ENOMEM, "out of memory");
	if (!ret && (ret = vgpu_ckpt_finish(wr)))
		fail(&r, ret, "%s", vgpu_ckpt_writer_error(wr));
	if (registered)
		w->B.cuMemHostUnregister(staging);
	ckpt_sink_free(r.sink);
	file_size(o, a);
out:
	worker_progress_end(w);
	vgpu_ckpt_writer_close(wr);	/* not finished: its temporary file goes */
	ckpt_parent_close(&parent);
	a->result.stall_ns = a->result.total_ns = vgpu_now_ns() - t0;
	return a->status;
}

/* /proc/meminfo's MemAvailable, bytes (0 if unknown). */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kb = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

static void job_free(struct ckpt_job *j);

/* The preparation's outcome; an abandoned job is the thread's to free. */
static void prepared(struct ckpt_job *j, int state)
{
	int expect = JOB_PREPARING;

	if (!__atomic_compare_exchange_n(&j->state, &expect, state, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		job_free(j);
}

static void *prepare(void *arg)
{
	struct ckpt_job *j = arg;
	struct worker *w = j->w;
	int state = JOB_NO_BUFFER;
	char why[160];

	if (!j->cap) {		/* incremental: no buffer, the digest kernel only */
		if (gpu_digest_prepare(&w->B, w->primary[0], why, sizeof(why)))
			vlog_warn("session %llu: %s", (unsigned long long)w->session_id, why);
		prepared(j, JOB_READY);
		return NULL;
	}
	j->buf = mmap(NULL, j->cap, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_NORESERVE, -1, 0);
	if (j->buf == MAP_FAILED) {
		j->buf = NULL;
	} else if (!w->B.cuCtxSetCurrent(w->primary[0]) &&
		   !w->B.cuMemHostRegister_v2(j->buf, j->cap, 0)) {
		j->registered = true;
		state = JOB_READY;
		/* The digest kernel compiled now, not while the program waits. */
		if (gpu_digest_prepare(&w->B, w->primary[0], why, sizeof(why)))
			vlog_warn("session %llu: %s", (unsigned long long)w->session_id, why);
	}
	prepared(j, state);
	return NULL;
}

static void job_free(struct ckpt_job *j)
{
	if (j->registered) {
		j->w->B.cuCtxSetCurrent(j->w->primary[0]);
		j->w->B.cuMemHostUnregister(j->buf);
	}
	if (j->buf)
		munmap(j->buf, j->cap);
	ckpt_sink_free(j->sink);
	ckpt_parent_close(&j->parent);
	ckpt_order_close(&j->order);
	free(j);
}

/* After the pause: the file from memory, while the program runs. */
static void *flush(void *arg)
{
	struct ckpt_job *j = arg;
	struct ckpt_run r = { .w = j->w, .a = &j->a,
			      .parent = j->parent.r ? &j->parent : NULL };
	struct vgpu_ckpt_writer *wr = NULL;
	int ret;

	if (!open_writer(&r, &j->order, &j->gpu, j->driver, &wr)) {
		ret = ckpt_sink_flush(j->sink, wr);
		if (ret)
			fail(&r, ret, "%s", ckpt_sink_error(j->sink));
		else if ((ret = vgpu_ckpt_finish(wr)))
			fail(&r, ret, "%s", vgpu_ckpt_writer_error(wr));
		vgpu_ckpt_writer_close(wr);
		file_size(&j->order, &j->a);
	}
	j->a.result.total_ns = vgpu_now_ns() - j->t_ordered;
	j->a.result.snapshot = 1;
	answer(j->w, &j->order, &j->a);
	job_free(j);
	__atomic_sub_fetch(&flushing, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Snapshot mode, the pause: everything into memory, then the program goes on. */
static void pause_and_copy(struct ckpt_job *j)
{
	struct worker *w = j->w;
	struct ckpt_run r = { .w = w, .a = &j->a, .digests = true,
			      .parent = j->parent.r ? &j->parent : NULL };
	uint64_t t0 = vgpu_now_ns();
	pthread_t t;

	if (drain(&r))
		goto fail;
	worker_gpu_identity(w, &j->gpu, &j->driver);
	r.sink = j->sink = ckpt_sink_snapshot(&w->B, j->buf, j->cap);
	if (!j->sink) {
		fail(&r, -ENOMEM, "out of memory");
		goto fail;
	}
	ckpt_sink_progress(j->sink, worker_progress_begin(w, w->vmem.in_use + w->vmem.created +
							     w->pool.in_use));
	if (collect(&r))
		goto fail;
	worker_progress_end(w);
	j->a.result.stall_ns = vgpu_now_ns() - t0;
	__atomic_add_fetch(&flushing, 1, __ATOMIC_ACQUIRE);
	if (!pthread_create(&t, NULL, flush, j)) {
		pthread_detach(t);
		return;
	}
	flush(j);	/* no thread: write it now, the program waits */
	return;
fail:
	worker_progress_end(w);
	j->a.result.stall_ns = vgpu_now_ns() - t0;
	answer(w, &j->order, &j->a);
	job_free(j);
}

void worker_checkpoint_start(struct worker *w, const struct ckpt_order *in)
{
	struct ckpt_job *j = calloc(1, sizeof(*j));
	uint64_t want = w->vmem.in_use + w->vmem.created + (64ull << 20);
	const struct ckpt_order *o = in;
	pthread_t t;

	if (!j)
		ckpt_order_drop_fds(w->ctl);
	if (j) {
		j->order = *in;
		o = &j->order;
		if (ckpt_order_recv_fds(w->ctl, &j->order)) {
			struct ckpt_answer a = { .type = WMSG_CHECKPOINTED, .status = -EBADF };

			snprintf(a.message, sizeof(a.message), "the order came without its file");
			answer(w, o, &a);
			free(j);
			return;
		}
		j->w = w;
		j->a.type = WMSG_CHECKPOINTED;
		j->t_ordered = vgpu_now_ns();
		open_parent(w, o, &j->parent, &j->a);
		/* Incremental: what changed is not known before the pause, and
		 * often nothing has: no pinned buffer (pinning one takes longer
		 * than such a checkpoint); what changed goes to the heap. */
		if (j->parent.r)
			want = 0;
		j->cap = want;
	}
	/* Snapshot only with room to spare: else the pages would be swapped. */
	/* --stop waits for the file: the program may not run on after the state. */
	if (j && !(o->flags & (VGPU_CTL_F_DIRECT | VGPU_CTL_F_STOP)) &&
	    mem_available() > want + want / 4 + (1ull << 30) &&
	    !pthread_create(&t, NULL, prepare, j)) {
		pthread_detach(t);
		w->ckpt_job = j;
		return;
	}
	if (j) {
		ckpt_parent_close(&j->parent);	/* opened again by the file's writer */
		checkpoint_now(w, o, &j->a);
		ckpt_order_close(&j->order);
		free(j);
	} else {
		struct ckpt_answer a = { .type = WMSG_CHECKPOINTED, .status = -ENOMEM };

		snprintf(a.message, sizeof(a.message), "out of memory");
		answer(w, o, &a);
	}
}

void worker_checkpoint_poll(struct worker *w)
{
	struct ckpt_job *j = w->ckpt_job;
	int state = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);

	if (state == JOB_PREPARING)
		return;
	w->ckpt_job = NULL;
	if (state == JOB_READY) {
		pause_and_copy(j);
	} else {
		checkpoint_now(w, &j->order, &j->a);
		job_free(j);
	}
}

void worker_checkpoint_refuse(struct worker *w, int err, const char *why)
{
	struct ckpt_job *j = w->ckpt_job;

	uint64_t end = vgpu_now_ns() + (uint64_t)w->cfg.order_wait_ms * 1000000;
	int expect = JOB_PREPARING;

	if (!j)
		return;
	while (__atomic_load_n(&j->state, __ATOMIC_ACQUIRE) == JOB_PREPARING &&
	       vgpu_now_ns() < end)
		usleep(1000);
	w->ckpt_job = NULL;
	j->a.status = err;
	snprintf(j->a.message, sizeof(j->a.message), "%s", why);
	answer(w, &j->order, &j->a);
	/* Pinning the buffer can wait on GPU work that never ends: the
	 * session goes on (or ends) without it. */
	if (__atomic_compare_exchange_n(&j->state, &expect, JOB_ABANDONED, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		vlog_warn("session %llu: a checkpoint buffer is still being prepared; left to "
			  "its thread", (unsigned long long)w->session_id);
		return;
	}
	job_free(j);
}

void worker_checkpoint_finish(struct worker *w)
{
	/* A buffer still being prepared: its order will not be carried out. */
	worker_checkpoint_refuse(w, -ESHUTDOWN, "the session ended first");
	/* A file being written from memory is finished: its data is all here. */
	while (__atomic_load_n(&flushing, __ATOMIC_ACQUIRE))
		usleep(1000);
}
