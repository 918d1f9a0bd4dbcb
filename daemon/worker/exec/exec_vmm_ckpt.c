// SPDX-License-Identifier: MIT
/*
 * The client's virtual memory to a checkpoint and back: reservations,
 * allocations (their bytes copied through temporary mappings) and mappings
 * with their access written as tables, then rebuilt at the same addresses
 * on restore.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "ckpt_sink.h"
#include "log.h"
#include "vgpu/ckpt.h"
#include "worker.h"
#include "exec_vmm.h"

/* Access everyone has to the allocation's device somewhere else: an
 * address where all of @a is mapped readable from offset 0, or 0. */
static uint64_t whole_view(struct vmm_state *s, const struct vmm_alloc *a, unsigned acc)
{
	uint32_t dev = (uint32_t)a->prop.location.id;

	for (size_t i = 0; i < s->nm; i++) {
		const struct vmm_map *m = &s->m[i];
		bool ok = true;

		if (m->a != a || m->start != m->map_start || m->off ||
		    m->map_end - m->map_start != a->size)
			continue;
		for (size_t k = i; k < s->nm && s->m[k].start < m->map_end; k++)
			ok = ok && (s->m[k].acc[dev] & acc) == acc;
		if (ok)
			return m->map_start;
	}
	return 0;
}

/* A temporary read-write mapping of all of @a, in free space of the window. */
static CUresult temp_map(struct worker *w, const struct vmm_alloc *a, CUdeviceptr *at)
{
	CUmemAccessDesc d = {
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = w->devices[a->prop.location.id] },
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	CUresult rc = vmem_reserve(&w->vmem, a->size, 0, 0, at);

	if (rc)
		return rc;
	rc = w->B.cuMemMap(*at, a->size, 0, a->h, 0);
	if (!rc && (rc = w->B.cuMemSetAccess(*at, a->size, &d, 1)))
		w->B.cuMemUnmap(*at, a->size);
	if (rc)
		vmem_unreserve(&w->vmem, *at, a->size);
	return rc;
}

static void temp_unmap(struct worker *w, uint64_t at, uint64_t size)
{
	w->B.cuMemUnmap(at, size);
	vmem_unreserve(&w->vmem, at, size);
}

int worker_vmm_checkpoint(struct worker *w, struct ckpt_sink *sink, char *why, size_t len)
{
	struct vmm_state *s = w->vmm;
	struct vgpu_ckpt_va *v = NULL;
	struct vgpu_ckpt_vmm_alloc *a = NULL;
	struct vgpu_ckpt_vmm_map *m = NULL;
	struct vgpu_ckpt_vmm_state st = { 0 };
	CUdeviceptr *temp = NULL;
	int ret = 0;

	if (!worker_vmm_in_use(w))
		return 0;
	/* Imported memory is saved as the session's own: after a restore it
	 * is private (the exporter's process is not part of the session). Of
	 * one whose size only the driver knew, what the mappings show of it. */
	for (size_t i = 0; i < s->na; i++) {
		struct vmm_alloc *x = s->a[i];

		if (!x->imported)
			continue;
		vlog_info("session %llu: VMM allocation %llu was imported from another process; "
			  "the checkpoint holds a private copy of it",
			  (unsigned long long)w->session_id, (unsigned long long)x->id);
		for (size_t k = 0; !x->size && k < s->nm; k++)
			if (s->m[k].a == x && s->m[k].start == s->m[k].map_start)
				x->size = s->m[k].off + (s->m[k].map_end - s->m[k].map_start);
		if (!x->size)
			return ckpt_say(why, len, -EOPNOTSUPP, "VMM allocation %llu was imported and is "
					"not mapped: its size is unknown",
					(unsigned long long)x->id);
	}
	v = calloc(s->nv + 1, sizeof(*v));
	a = calloc(s->na + 1, sizeof(*a));
	m = calloc(s->nm + 1, sizeof(*m));
	temp = calloc(s->na + 1, sizeof(*temp));
	if (!v || !a || !m || !temp) {
		ret = ckpt_say(why, len, -ENOMEM, "out of memory listing VMM state");
		goto out;
	}
	for (size_t i = 0; i < s->nv; i++)
		v[i] = (struct vgpu_ckpt_va){ .base = s->v[i].start,
					      .size = s->v[i].end - s->v[i].start,
					      .granularity = w->vmem.gran };
	for (size_t i = 0; i < s->na; i++) {
		const struct vmm_alloc *x = s->a[i];

		a[i] = (struct vgpu_ckpt_vmm_alloc){
			.handle = x->id, .size = x->size, .device = (uint32_t)x->prop.location.id,
			.refs = x->refs, .handle_types = (uint32_t)x->prop.requestedHandleTypes,
			.compression = x->prop.allocFlags.compressionType,
			.rdma = x->prop.allocFlags.gpuDirectRDMACapable,
			.usage = x->prop.allocFlags.usage,
			.reserved = { (x->imported ? 1u : 0u) | (x->exported ? 2u : 0u) },
		};
	}
	for (size_t i = 0; i < s->nm; i++) {
		const struct vmm_map *x = &s->m[i];

		m[i] = (struct vgpu_ckpt_vmm_map){
			.start = x->start, .size = x->end - x->start, .map_start = x->map_start,
			.map_size = x->map_end - x->map_start, .handle = x->a->id, .offset = x->off,
		};
		memcpy(m[i].access, x->acc, sizeof(m[i].access));
	}
	st.next_handle = s->next_id;
	ret = ckpt_sink_table(sink, VGPU_CKPT_SEC_VMM_RESV, v, s->nv, sizeof(*v));
	if (!ret)
		ret = ckpt_sink_table(sink, VGPU_CKPT_SEC_VMM_ALLOCS, a, s->na, sizeof(*a));
	if (!ret)
		ret = ckpt_sink_table(sink, VGPU_CKPT_SEC_VMM_MAPS, m, s->nm, sizeof(*m));
	if (!ret)
		ret = ckpt_sink_table(sink, VGPU_CKPT_SEC_VMM_STATE, &st, 1, sizeof(st));
	if (ret) {
		ret = ckpt_say(why, len, ret, "%s", ckpt_sink_error(sink));
		goto out;
	}
	/* Each allocation's bytes once, however often it is mapped: through a
	 * mapping of all of it, or a temporary one (unmapped, or not readable). */
	for (size_t i = 0; i < s->na; i++) {
		const struct vmm_alloc *x = s->a[i];
		uint64_t src = whole_view(s, x, CU_MEM_ACCESS_FLAGS_PROT_READ);
		CUresult rc;

		if (!src) {
			rc = temp_map(w, x, &temp[i]);
			if (rc) {
				ret = ckpt_say(why, len, -EIO, "allocation %llu cannot be mapped to be "
					       "read (CUDA error %d)", (unsigned long long)x->id, rc);
				goto out;
			}
			src = temp[i];
		}
		ret = ckpt_sink_device_section(sink, VGPU_CKPT_SEC_VMM_DATA, x->id, src, x->size);
		if (ret) {
			ret = ckpt_say(why, len, ret, "%s", ckpt_sink_error(sink));
			goto out;
		}
	}
	ret = ckpt_sink_device_flush(sink);
	if (ret)
		ret = ckpt_say(why, len, ret, "%s", ckpt_sink_error(sink));
out:
	for (size_t i = 0; temp && i < s->na; i++)
		if (temp[i])
			temp_unmap(w, temp[i], s->a[i]->size);
	free(v);
	free(a);
	free(m);
	free(temp);
	return ret;
}

static struct vmm_alloc *alloc_any(struct vmm_state *s, uint64_t id)
{
	for (size_t i = 0; i < s->na; i++)
		if (s->a[i]->id == id)
			return s->a[i];
	return NULL;
}

/* One allocation's bytes from the file, through a temporary mapping. */
static int load_alloc(struct worker *w, struct vgpu_ckpt_reader *r, const struct vmm_alloc *a,
		      void *buf, size_t cap, char *why, size_t len)
{
	int k = vgpu_ckpt_find(r, VGPU_CKPT_SEC_VMM_DATA, a->id);
	const struct vgpu_ckpt_section *sec = k < 0 ? NULL : vgpu_ckpt_section_at(r, (unsigned)k);
	CUdeviceptr at = 0;
	uint64_t done = 0;
	CUresult rc = CUDA_SUCCESS;
	ssize_t got;

	if (!sec || sec->raw_len != a->size)
		return ckpt_say(why, len, -EBADMSG, "the bytes of VMM allocation %llu are missing",
				(unsigned long long)a->id);
	if (vgpu_ckpt_read_begin(r, (unsigned)k))
		return ckpt_say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r));
	rc = temp_map(w, a, &at);
	if (rc)
		return ckpt_say(why, len, -EIO, "VMM allocation %llu cannot be mapped to be written "
				"(CUDA error %d)", (unsigned long long)a->id, rc);
	while (!rc && (got = vgpu_ckpt_read(r, buf, cap)) > 0 && (uint64_t)got <= a->size - done) {
		rc = w->B.cuMemcpyHtoDAsync_v2(at + done, buf, (size_t)got, NULL);
		if (!rc)
			rc = w->B.cuStreamSynchronize(NULL);
		done += (uint64_t)got;
	}
	temp_unmap(w, at, a->size);
	if (rc)
		return ckpt_say(why, len, -EIO, "writing VMM allocation %llu failed (CUDA error %d)",
				(unsigned long long)a->id, rc);
	if (done != a->size)
		return ckpt_say(why, len, -EBADMSG, "VMM allocation %llu: %s",
				(unsigned long long)a->id, vgpu_ckpt_reader_error(r));
	return 0;
}

/* Every record checked before anything is made of it: the file is input. */
static int restore_maps(struct worker *w, struct vmm_state *s, const struct vgpu_ckpt_vmm_map *m,
			size_t n, char *why, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		struct vmm_alloc *a = alloc_any(s, m[i].handle);
		struct vmm_map x = { 0 };
		uint64_t end, mend;

		if (!a || !vmm_whole_granules(w, m[i].start, m[i].size, &end) ||
		    !vmm_whole_granules(w, m[i].map_start, m[i].map_size, &mend) ||
		    m[i].start < m[i].map_start || end > mend || m[i].offset % w->vmem.gran ||
		    m[i].offset > a->size || m[i].size > a->size - m[i].offset ||
		    m[i].offset - (m[i].start - m[i].map_start) > a->size ||
		    m[i].map_size > a->size - (m[i].offset - (m[i].start - m[i].map_start)) ||
		    !vmm_resv_holding(s, m[i].map_start, mend) || vmm_map_overlaps(s, m[i].start, end))
			return ckpt_say(why, len, -EBADMSG, "VMM mapping %zu is not sound", i);
		for (size_t d = w->device_count; d < sizeof(m[i].access); d++)
			if (m[i].access[d])
				return ckpt_say(why, len, -EBADMSG, "VMM mapping %zu: no device %zu", i, d);
		x.start = m[i].start;
		x.end = end;
		x.map_start = m[i].map_start;
		x.map_end = mend;
		x.off = m[i].offset;
		x.a = a;
		memcpy(x.acc, m[i].access, sizeof(x.acc));
		if (vmm_map_insert(s, &x))
			return ckpt_say(why, len, -ENOMEM, "out of memory");
	}
	/* Each cuMemMap range whole, its pieces consistent; then mapped again. */
	for (size_t i = 0; i < s->nm; i++) {
		const struct vmm_map *x = &s->m[i];
		CUresult rc;

		if (x->start != x->map_start)
			continue;
		for (size_t k = i; k < s->nm && s->m[k].start < x->map_end; k++)
			if (s->m[k].a != x->a || s->m[k].map_start != x->map_start ||
			    s->m[k].off != x->off + (s->m[k].start - x->start) ||
			    (k > i && s->m[k].start != s->m[k - 1].end))
				return ckpt_say(why, len, -EBADMSG, "VMM mapping at %#llx is not sound",
						(unsigned long long)x->map_start);
		if (!vmm_map_covers(s, x->map_start, x->map_end))
			return ckpt_say(why, len, -EBADMSG, "VMM mapping at %#llx has a hole",
					(unsigned long long)x->map_start);
		rc = w->B.cuMemMap(x->map_start, x->map_end - x->map_start, x->off, x->a->h, 0);
		if (rc)
			return ckpt_say(why, len, -EIO, "VMM mapping at %#llx cannot be made again "
					"(CUDA error %d)", (unsigned long long)x->map_start, rc);
		x->a->maps++;
	}
	for (size_t i = 0; i < s->nm; i++) {
		const struct vmm_map *x = &s->m[i];
		CUmemAccessDesc d[VGPU_MAX_DEVICES];
		size_t nd = 0;
		CUresult rc;

		for (int k = 0; k < w->device_count; k++) {
			if (!x->acc[k])
				continue;
			if (x->acc[k] != CU_MEM_ACCESS_FLAGS_PROT_READ &&
			    x->acc[k] != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
				return ckpt_say(why, len, -EBADMSG, "VMM access %u is not sound",
						x->acc[k]);
			d[nd].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
			d[nd].location.id = w->devices[k];
			d[nd++].flags = (CUmemAccess_flags)x->acc[k];
		}
		if (nd && (rc = w->B.cuMemSetAccess(x->start, x->end - x->start, d, nd)))
			return ckpt_say(why, len, -EIO, "VMM access at %#llx cannot be set again "
					"(CUDA error %d)", (unsigned long long)x->start, rc);
	}
	return 0;
}

int worker_vmm_restore(struct worker *w, struct vgpu_ckpt_reader *r, char *why, size_t len)
{
	struct vgpu_ckpt_vmm_state *st = NULL;
	struct vgpu_ckpt_vmm_alloc *a = NULL;
	struct vgpu_ckpt_vmm_map *m = NULL;
	struct vgpu_ckpt_va *v = NULL;
	size_t nst = 0, nv = 0, na = 0, nm = 0, blob;
	struct vmm_state *s;
	void *buf = NULL;
	int ret;

	ret = vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_VMM_STATE, 0, sizeof(*st), 4096,
				     (void **)&st, &nst, &blob);
	if (ret || !st) {
		free(st);
		return ret ? ckpt_say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r)) : 0;
	}
	s = vmm_state_of(w);
	if (!s || nst != 1 || worker_vmm_in_use(w)) {
		ret = ckpt_say(why, len, s ? -EBADMSG : -ENOMEM, "the VMM state cannot be taken up");
		goto out;
	}
	if (vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_VMM_RESV, 0, sizeof(*v), 1ull << 30,
				   (void **)&v, &nv, &blob) ||
	    vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_VMM_ALLOCS, 0, sizeof(*a), 1ull << 30,
				   (void **)&a, &na, &blob) ||
	    vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_VMM_MAPS, 0, sizeof(*m), 1ull << 30,
				   (void **)&m, &nm, &blob)) {
		ret = ckpt_say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r));
		goto out;
	}
	s->next_id = st->next_handle;
	for (size_t i = 0; i < nv; i++) {
		CUresult rc;

		if (vmm_grow((void **)&s->v, &s->capv, s->nv, sizeof(*s->v))) {
			ret = ckpt_say(why, len, -ENOMEM, "out of memory");
			goto out;
		}
		rc = vmem_reserve_at(&w->vmem, v[i].base, v[i].size);
		if (rc || (s->nv && s->v[s->nv - 1].start >= v[i].base)) {
			ret = ckpt_say(why, len, -EBADMSG, "VMM reservation at %#llx (%llu bytes) cannot "
				       "be had again (CUDA error %d)", (unsigned long long)v[i].base,
				       (unsigned long long)v[i].size, rc);
			goto out;
		}
		s->v[s->nv++] = (struct vmm_resv){ v[i].base, v[i].base + v[i].size };
	}
	for (size_t i = 0; i < na; i++) {
		CUmemAllocationProp bprop = { 0 };
		struct vmm_alloc *x;
		CUresult rc;

		if (!a[i].handle || a[i].handle >= s->next_id || alloc_any(s, a[i].handle) ||
		    !a[i].size || a[i].size % w->vmem.gran || a[i].device >= (uint32_t)w->device_count ||
		    (a[i].handle_types & ~(uint32_t)(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
						      CU_MEM_HANDLE_TYPE_FABRIC))) {
			ret = ckpt_say(why, len, -EBADMSG, "VMM allocation record %zu is not sound", i);
			goto out;
		}
		if (vmm_grow((void **)&s->a, &s->capa, s->na, sizeof(*s->a)) ||
		    !(x = calloc(1, sizeof(*x)))) {
			ret = ckpt_say(why, len, -ENOMEM, "out of memory");
			goto out;
		}
		x->id = a[i].handle;
		x->size = a[i].size;
		x->refs = a[i].refs;
		x->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		x->prop.requestedHandleTypes = (CUmemAllocationHandleType)a[i].handle_types;
		x->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		x->prop.location.id = (int)a[i].device;
		x->prop.allocFlags.compressionType = a[i].compression;
		x->prop.allocFlags.gpuDirectRDMACapable = a[i].rdma;
		x->prop.allocFlags.usage = a[i].usage;
		bprop = x->prop;
		bprop.location.id = w->devices[a[i].device];
		rc = vmem_charge(&w->vmem, x->size);
		if (!rc && (rc = w->B.cuMemCreate(&x->h, x->size, &bprop, 0)))
			vmem_uncharge(&w->vmem, x->size);
		if (rc) {
			free(x);
			ret = ckpt_say(why, len, -EIO, "VMM allocation %llu (%llu bytes) cannot be made "
				       "again (CUDA error %d)", (unsigned long long)a[i].handle,
				       (unsigned long long)a[i].size, rc);
			goto out;
		}
		vmm_granted(w, x);	/* this driver's answer to the same request */
		s->a[s->na++] = x;
		if (a[i].reserved[0] & 1)
			vlog_info("session %llu: VMM allocation %llu, imported before the "
				  "checkpoint, is private from now on",
				  (unsigned long long)w->session_id, (unsigned long long)x->id);
		if (a[i].reserved[0] & 2)
			vlog_info("session %llu: VMM allocation %llu was exported before the "
				  "checkpoint; descriptors given out then name the old memory",
				  (unsigned long long)w->session_id, (unsigned long long)x->id);
	}
	ret = restore_maps(w, s, m, nm, why, len);
	for (size_t i = 0; !ret && i < s->na; i++)
		if (!s->a[i]->refs && !s->a[i]->maps)
			ret = ckpt_say(why, len, -EBADMSG, "VMM allocation %llu is held by nothing",
				       (unsigned long long)s->a[i]->id);
	if (!ret && !(buf = malloc(8u << 20)))
		ret = ckpt_say(why, len, -ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < s->na; i++)
		ret = load_alloc(w, r, s->a[i], buf, 8u << 20, why, len);
out:
	free(buf);
	free(st);
	free(v);
	free(a);
	free(m);
	return ret;
}
