// SPDX-License-Identifier: MIT
/*
 * What a checkpoint holds, gathered into its sink in file order
 * (ckpt_run_collect): the client, the parent, the VA window, then each
 * section; here too the run's failures, the contexts drained first, the
 * GPU's identity, the allocations (records, content digests, bytes or a
 * reference to the parent's), the client's VMM (exec_vmm_ckpt.c) and the
 * progress the supervisor reads.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "ckpt_crc.h"
#include "array_state.h"
#include "ckpt_run.h"
#include "clock.h"
#include "ipc.h"
#include "log.h"
#include "retained.h"
#include "worker.h"

__attribute__((format(printf, 3, 4)))
int ckpt_run_fail(struct ckpt_run *r, int err, const char *fmt, ...)
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
int ckpt_run_sink_failed(struct ckpt_run *r, int ret)
{
	return ckpt_run_fail(r, ret, "%s", ckpt_sink_error(r->sink));
}

/* Every context's work done; a broken context stops the checkpoint. */
int ckpt_run_drain(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct obj_entry *e;
	uint32_t i;

	/* A green context holds SMs of its own: a restore would need the
	 * descriptor, its streams and its objects made in it again. */
	obj_for_each(&w->greens, i, e)
		return ckpt_run_fail(r, -EOPNOTSUPP, "the session holds green contexts, which "
				     "checkpoints do not carry yet");
	if (w->captures)
		return ckpt_run_fail(r, -EBUSY, "a stream capture is in progress");
	if (pool_ipc_ckpt_refusal(w))
		return ckpt_run_fail(r, -EOPNOTSUPP, "%s", pool_ipc_ckpt_refusal(w));
	if (calls_log_refusal(w))
		return ckpt_run_fail(r, -EOPNOTSUPP, "%s", calls_log_refusal(w));
	if (ipc_ckpt_refusal(w))
		return ckpt_run_fail(r, -EOPNOTSUPP, "%s", ipc_ckpt_refusal(w));
	if (worker_callbacks_stuck(w))
		return ckpt_run_fail(r, -ETIMEDOUT, "session %llu is stalled waiting for its program "
				     "(in a host callback); not checkpointed",
				     (unsigned long long)w->session_id);
	if (streamops_gpu_stalled(w))
		return ckpt_run_fail(r, -ETIMEDOUT, "session %llu is stalled %s; not checkpointed",
				     (unsigned long long)w->session_id, STREAMOPS_STALLED);
	obj_for_each(&w->ctxs, i, e) {
		CUresult rc = w->B.cuCtxSetCurrent(e->obj);

		if (!rc)
			rc = w->B.cuCtxSynchronize();
		if (rc)
			return ckpt_run_fail(r, -EIO, "context %u cannot be drained (CUDA error %d): "
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
int ckpt_run_table(struct ckpt_run *r, uint32_t type, uint64_t id, const void *rec, size_t n,
		   size_t size, const void *blob, size_t blob_len)
{
	int ret = ckpt_sink_begin(r->sink, type, id, n);

	if (!ret && n)
		ret = ckpt_sink_write(r->sink, rec, n * size);
	if (!ret && blob_len)
		ret = ckpt_sink_write(r->sink, blob, blob_len);
	if (!ret)
		ret = ckpt_sink_end(r->sink);
	return ret ? ckpt_run_sink_failed(r, ret) : 0;
}

static int add_alloc(struct ckpt_run *r, uint64_t addr, uint64_t size, uint32_t kind)
{
	if (r->nalloc == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct vgpu_ckpt_alloc *a = realloc(r->alloc, cap * sizeof(*a));

		if (!a)
			return ckpt_run_fail(r, -ENOMEM, "out of memory listing allocations");
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
		return ckpt_run_fail(r, -ENOMEM, "out of memory listing digests");
	for (size_t i = 0; i < r->nalloc; i++)
		d[i] = (struct vgpu_ckpt_digest){ .data_id = r->alloc[i].data_id,
						  .size = r->alloc[i].size, .a = r->dg[i].a,
						  .b = r->dg[i].b, .kind = VGPU_CKPT_DIGEST };
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_DIGESTS, 0, d, r->nalloc, sizeof(*d), NULL, 0);
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

int ckpt_write_allocations(struct ckpt_run *r)
{
	struct worker *w = r->w;
	int ret;

	if (vmem_for_each(&w->vmem, add_device, r) || hostpool_for_each(&w->pool, add_host, r))
		return r->a->status;
	if (r->digests)
		digest_allocations(r);
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_ALLOCS, 0, r->alloc, r->nalloc, sizeof(*r->alloc),
			     NULL, 0);
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
			return ckpt_run_sink_failed(r, ret);
	}
	ret = ckpt_sink_device_flush(r->sink);
	if (ret)
		return ckpt_run_sink_failed(r, ret);
	r->a->result.allocations = (uint32_t)r->nalloc;
	return r->dg ? write_digests(r) : 0;
}

/* The client's virtual memory API state (exec_vmm.c). */
int ckpt_write_vmm(struct ckpt_run *r)
{
	char why[160];
	int ret = worker_vmm_checkpoint(r->w, r->sink, why, sizeof(why));

	if (ret)
		return ckpt_run_fail(r, ret, "%s", why);
	r->a->result.device_bytes += r->w->vmem.created;
	return 0;
}
/* CUDA arrays and texture objects (daemon/worker/array/). */
static int ckpt_write_arrays(struct ckpt_run *r)
{
	char why[200];
	int ret = worker_array_checkpoint(r->w, r->sink, why, sizeof(why));

	return ret ? ckpt_run_fail(r, ret, "%s", why) : 0;
}

/* Everything of the session into r->sink, in file order. */
int ckpt_run_collect(struct ckpt_run *r)
{
	struct worker *w = r->w;
	struct vgpu_ckpt_va va = { .base = w->vmem.base, .size = w->vmem.size,
				   .granularity = w->vmem.gran };
	struct vgpu_ckpt_client who = { .pid = w->client_pid, .uid = w->client_uid };
	int ret;

	memcpy(who.comm, w->comm, sizeof(who.comm) - 1);
	ret = ckpt_run_table(r, VGPU_CKPT_SEC_CLIENT, 0, &who, 1, sizeof(who), NULL, 0);
	if (!ret && r->parent)
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_PARENT, 0, NULL, 0, 0, r->parent->path,
				     strlen(r->parent->path));
	if (!ret)
		ret = ckpt_run_table(r, VGPU_CKPT_SEC_VA, 0, &va, 1, sizeof(va), NULL, 0);
	if (!ret)
		ret = ckpt_write_contexts(r);
	if (!ret)
		ret = ckpt_write_allocations(r);
	if (!ret)
		ret = ckpt_write_vmm(r);
	if (!ret)
		ret = ckpt_write_modules(r);
	if (!ret)
		ret = ckpt_write_functions(r);
	if (!ret)
		ret = ckpt_write_globals(r);
	if (!ret)
		ret = ckpt_write_streams_events(r);
	if (!ret)
		ret = ckpt_write_stream_attrs(r);
	if (!ret)
		ret = ckpt_write_pools(r);
	if (!ret)
		ret = ckpt_write_arrays(r);
	if (!ret)
		ret = ckpt_write_graphs(r);
	if (!ret)
		ret = ckpt_write_calls(r);	/* last: they name everything else */
	free(r->alloc);
	free(r->dg);
	r->alloc = NULL;
	r->dg = NULL;
	r->a->result.incremental = r->parent != NULL;
	return ret;
}
