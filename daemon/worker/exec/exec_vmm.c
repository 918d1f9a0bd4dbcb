// SPDX-License-Identifier: MIT
/*
 * The client's own virtual memory API (cuMemAddressReserve, cuMemCreate,
 * cuMemMap, ...). Reservations are carved out of the session's device
 * window (vmem_reserve), so everything the client maps lies in the window
 * and a restore can ask for the same addresses. The worker keeps the truth:
 * which reservations, allocations and mappings are the client's, so that
 * it maps only the client's own memory into the client's own address space.
 *
 * Allocations are named by ids the worker issues. An allocation lives
 * while the client holds a reference to its handle (cuMemCreate, each
 * cuMemRetainAllocationHandle) or while it is mapped, as the driver's do:
 * cuMemRelease of a mapped allocation only drops the handle.
 *
 * This file: reservations, allocations, mappings and access, and the op
 * table; sharing by descriptor is exec_vmm_share.c's, checkpoint and
 * restore exec_vmm_ckpt.c's (exec_vmm.h holds the state they share).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"
#include "exec_vmm.h"

struct vmm_state *vmm_state_of(struct worker *w)
{
	if (!w->vmm) {
		w->vmm = calloc(1, sizeof(*w->vmm));
		if (w->vmm) {
			w->vmm->next_id = 1;
			for (int i = 0; i < FD_STASH; i++)
				w->vmm->stash[i].fd = -1;
		}
	}
	return w->vmm;
}

bool worker_vmm_in_use(const struct worker *w)
{
	return w->vmm && (w->vmm->nv || w->vmm->nm || w->vmm->na);
}

int vmm_grow(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t c = *cap ? 2 * *cap : 16;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, c * elem);
	if (!p)
		return -1;
	*v = p;
	*cap = c;
	return 0;
}

/* ---- lookups ------------------------------------------------------------- */

struct vmm_alloc *vmm_alloc_live(struct vmm_state *s, uint64_t id)
{
	for (size_t i = 0; i < s->na; i++)
		if (s->a[i]->id == id)
			return s->a[i]->refs ? s->a[i] : NULL;
	return NULL;
}

/* Index of the first piece ending after p. */
static size_t map_find(const struct vmm_state *s, uint64_t p)
{
	size_t lo = 0, hi = s->nm;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->m[mid].end <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct vmm_map *map_at(struct vmm_state *s, uint64_t p)
{
	size_t i = map_find(s, p);

	return i < s->nm && s->m[i].start <= p ? &s->m[i] : NULL;
}

bool vmm_map_overlaps(const struct vmm_state *s, uint64_t p, uint64_t e)
{
	size_t i = map_find(s, p);

	return i < s->nm && s->m[i].start < e;
}

/* Whether [p, e) is covered by pieces with no gap. */
bool vmm_map_covers(const struct vmm_state *s, uint64_t p, uint64_t e)
{
	for (size_t i = map_find(s, p); p < e; i++) {
		if (i == s->nm || s->m[i].start > p)
			return false;
		p = s->m[i].end;
	}
	return true;
}

int vmm_map_insert(struct vmm_state *s, const struct vmm_map *m)
{
	size_t i;

	if (vmm_grow((void **)&s->m, &s->capm, s->nm, sizeof(*s->m)))
		return -1;
	i = map_find(s, m->start);
	memmove(&s->m[i + 1], &s->m[i], (s->nm - i) * sizeof(*s->m));
	s->m[i] = *m;
	s->nm++;
	return 0;
}

/* Splits the piece holding p so that one starts at p. */
static int map_split_at(struct vmm_state *s, uint64_t p)
{
	struct vmm_map *m = map_at(s, p), hi;

	if (!m || m->start == p)
		return 0;
	hi = *m;
	hi.off += p - m->start;
	hi.start = p;
	m->end = p;
	return vmm_map_insert(s, &hi);
}

/* The reservation holding all of [p, e), or NULL. */
struct vmm_resv *vmm_resv_holding(struct vmm_state *s, uint64_t p, uint64_t e)
{
	for (size_t i = 0; i < s->nv; i++)
		if (s->v[i].start <= p && e <= s->v[i].end)
			return &s->v[i];
	return NULL;
}

/* ---- checks on what the client sent ------------------------------------------- */

bool vmm_whole_granules(struct worker *w, uint64_t p, uint64_t size, uint64_t *end)
{
	return size && !(p % w->vmem.gran) && !(size % w->vmem.gran) &&
	       !__builtin_add_overflow(p, size, end);
}

/* A device location the client names: its ordinal, or an error. */
static CUresult location(struct worker *w, const CUmemLocation *l, int *ord)
{
	if (l->type != CU_MEM_LOCATION_TYPE_DEVICE) {
		vlog_info("vmm: memory location type %d is not supported (device memory only)",
			  (int)l->type);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (l->id < 0 || l->id >= w->device_count)
		return CUDA_ERROR_INVALID_DEVICE;
	*ord = l->id;
	return CUDA_SUCCESS;
}

/* An allocation property from the payload, and the backend's version of it. */
static CUresult read_prop(struct worker *w, const struct op_call *call, CUmemAllocationProp *p,
			  CUmemAllocationProp *bp)
{
	const unsigned known = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;
	CUresult rc;
	int ord;

	if (call->len != sizeof(*p))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(p, call->payload, sizeof(*p));
	p->win32HandleMetaData = NULL;		/* a pointer of the client's: never used here */
	if (p->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = location(w, &p->location, &ord)))
		return rc;
	if (p->requestedHandleTypes & ~known) {
		vlog_info("vmm: handle types %#x are not supported (POSIX descriptors and fabric "
			  "handles only)",
			  (unsigned)p->requestedHandleTypes);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*bp = *p;
	bp->location.id = w->devices[ord];
	return CUDA_SUCCESS;
}

/* ---- allocations ------------------------------------------------------------ */

/* Frees the allocation once nothing holds it. */
static void alloc_put(struct worker *w, struct vmm_state *s, struct vmm_alloc *a)
{
	CUresult rc;

	if (a->refs || a->maps)
		return;
	rc = w->B.cuMemRelease(a->h);
	if (rc)
		vlog_warn("vmm: releasing allocation %llu: CUDA error %d",
			  (unsigned long long)a->id, rc);
	if (!a->imported)
		vmem_uncharge(&w->vmem, a->size);
	for (size_t i = 0; i < s->na; i++) {
		if (s->a[i] == a) {
			s->a[i] = s->a[--s->na];
			break;
		}
	}
	free(a);
}

/* Compression is a hint the driver may not take (cuda.h): the properties
 * of the handle say what it gave, as the driver's own answer would. */
void vmm_granted(struct worker *w, struct vmm_alloc *a)
{
	CUmemAllocationProp got;

	if (!w->B.cuMemGetAllocationPropertiesFromHandle(&got, a->h))
		a->prop.allocFlags.compressionType = got.allocFlags.compressionType;
	else
		vlog_warn("vmm: the properties of allocation %llu cannot be read",
			  (unsigned long long)a->id);
}

static enum op_status op_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	struct vmm_state *s = vmm_state_of(w);
	CUmemAllocationProp prop, bprop;
	struct vmm_alloc *a;
	CUresult rc;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!s) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	if ((rc = read_prop(w, call, &prop, &bprop))) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	if (q->arg[1] || !q->arg[0] || q->arg[0] % w->vmem.gran)
		return OP_DONE;
	if (vmm_grow((void **)&s->a, &s->capa, s->na, sizeof(*s->a)) ||
	    !(a = calloc(1, sizeof(*a)))) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	rc = vmem_charge(&w->vmem, q->arg[0]);
	if (!rc) {
		rc = w->B.cuMemCreate(&a->h, q->arg[0], &bprop, 0);
		if (rc)
			vmem_uncharge(&w->vmem, q->arg[0]);
	}
	if (rc) {
		free(a);
		call->cqe->result = rc;
		return OP_DONE;
	}
	a->id = s->next_id++;
	a->size = q->arg[0];
	a->prop = prop;
	vmm_granted(w, a);
	a->refs = 1;
	s->a[s->na++] = a;
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = a->id;
	return OP_DONE;
}

static enum op_status op_release(struct worker *w, struct op_call *call)
{
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_alloc *a = s ? vmm_alloc_live(s, call->sqe->arg[0]) : NULL;

	if (!a) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	a->refs--;
	alloc_put(w, s, a);
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

static enum op_status op_props(struct worker *w, struct op_call *call)
{
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_alloc *a = s ? vmm_alloc_live(s, call->sqe->arg[0]) : NULL;

	if (!a) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	memcpy(call->reply, &a->prop, sizeof(a->prop));
	call->cqe->val[2] = sizeof(a->prop);
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

static enum op_status op_retain(struct worker *w, struct op_call *call)
{
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_map *m = s ? map_at(s, call->sqe->arg[0]) : NULL;

	if (!m || m->a->refs == UINT32_MAX) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	m->a->refs++;
	call->cqe->val[0] = m->a->id;
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

static enum op_status op_granularity(struct worker *w, struct op_call *call)
{
	CUmemAllocationProp prop, bprop;
	uint64_t opt = call->sqe->arg[0];
	size_t g = 0;
	CUresult rc;

	if (opt != CU_MEM_ALLOC_GRANULARITY_MINIMUM && opt != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	rc = read_prop(w, call, &prop, &bprop);
	if (!rc)
		rc = w->B.cuMemGetAllocationGranularity(&g, &bprop,
							(CUmemAllocationGranularity_flags)opt);
	/* Everything here is placed on the window's granules: never promise less. */
	if (!rc && g < w->vmem.gran)
		g = w->vmem.gran;
	call->cqe->result = rc;
	call->cqe->val[0] = g;
	return OP_DONE;
}

/* ---- address space ------------------------------------------------------------ */

static enum op_status op_reserve(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	struct vmm_state *s = vmm_state_of(w);
	CUdeviceptr p = 0;
	CUresult rc;
	size_t i;

	if (!s || vmm_grow((void **)&s->v, &s->capv, s->nv, sizeof(*s->v))) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	if (q->arg[3]) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	rc = vmem_reserve(&w->vmem, q->arg[0], q->arg[1], q->arg[2], &p);
	call->cqe->result = rc;
	if (rc)
		return OP_DONE;
	for (i = 0; i < s->nv && s->v[i].start < p; i++)
		;
	memmove(&s->v[i + 1], &s->v[i], (s->nv - i) * sizeof(*s->v));
	s->v[i] = (struct vmm_resv){ p, p + q->arg[0] };
	s->nv++;
	call->cqe->val[0] = p;
	return OP_DONE;
}

static enum op_status op_addr_free(struct worker *w, struct op_call *call)
{
	uint64_t p = call->sqe->arg[0], size = call->sqe->arg[1];
	struct vmm_state *s = vmm_state_of(w);

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; s && i < s->nv; i++) {
		if (s->v[i].start != p || s->v[i].end - p != size)
			continue;
		/* Mappings left in it would lie in free space the allocator
		 * hands out again. */
		if (vmm_map_overlaps(s, p, p + size)) {
			vlog_debug("vmm: cuMemAddressFree of a range still mapped");
			return OP_DONE;
		}
		vmem_unreserve(&w->vmem, p, size);
		memmove(&s->v[i], &s->v[i + 1], (s->nv - i - 1) * sizeof(*s->v));
		s->nv--;
		call->cqe->result = CUDA_SUCCESS;
		break;
	}
	return OP_DONE;
}

/* ---- mappings ------------------------------------------------------------------- */

static enum op_status op_map(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	uint64_t p = q->arg[0], size = q->arg[1], off = q->arg[2], end;
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_alloc *a = s ? vmm_alloc_live(s, q->arg[3]) : NULL;
	struct vmm_map m = { 0 };
	CUresult rc;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!a || q->arg[4] || !size || p % w->vmem.gran || __builtin_add_overflow(p, size, &end))
		return OP_DONE;
	/* A size or offset off the granularity, or a piece the allocation does
	 * not have, is NOT_SUPPORTED to driver 580 (measured on an H100). An
	 * imported allocation of unknown size: the driver bounds it. */
	if (size % w->vmem.gran || off % w->vmem.gran ||
	    (a->size && (off > a->size || size > a->size - off))) {
		call->cqe->result = CUDA_ERROR_NOT_SUPPORTED;
		return OP_DONE;
	}
	if (!vmm_resv_holding(s, p, end) || vmm_map_overlaps(s, p, end))
		return OP_DONE;
	if (vmm_grow((void **)&s->m, &s->capm, s->nm, sizeof(*s->m))) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	rc = w->B.cuMemMap(p, size, off, a->h, 0);
	call->cqe->result = rc;
	if (rc)
		return OP_DONE;
	m.start = m.map_start = p;
	m.end = m.map_end = end;
	m.off = off;
	m.a = a;
	vmm_map_insert(s, &m);	/* room was made above */
	a->maps++;
	return OP_DONE;
}

static enum op_status op_unmap(struct worker *w, struct op_call *call)
{
	uint64_t p = call->sqe->arg[0], size = call->sqe->arg[1], end;
	struct vmm_state *s = vmm_state_of(w);
	CUresult rc;
	size_t i;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!s || !vmm_whole_granules(w, p, size, &end))
		return OP_DONE;
	/* Whole cuMemMap ranges only, and nothing unmapped in between. */
	i = map_find(s, p);
	for (uint64_t at = p; at < end; i++) {
		if (i == s->nm || s->m[i].start != at || s->m[i].map_start < p ||
		    s->m[i].map_end > end)
			return OP_DONE;
		at = s->m[i].end;
	}
	/* Work still queued in the caller's context may use the memory. */
	rc = call->sqe->ctx ? worker_use_ctx(w, call->sqe->ctx) : CUDA_SUCCESS;
	if (!rc && call->sqe->ctx)
		rc = w->B.cuCtxSynchronize();
	if (!rc)
		rc = w->B.cuMemUnmap(p, size);
	call->cqe->result = rc;
	if (rc)
		return OP_DONE;
	i = map_find(s, p);
	while (i < s->nm && s->m[i].start < end) {
		struct vmm_alloc *a = s->m[i].a;
		bool first = s->m[i].start == s->m[i].map_start;

		memmove(&s->m[i], &s->m[i + 1], (s->nm - i - 1) * sizeof(*s->m));
		s->nm--;
		if (first) {
			a->maps--;
			alloc_put(w, s, a);
		}
	}
	return OP_DONE;
}

static enum op_status op_set_access(struct worker *w, struct op_call *call)
{
	uint64_t p = call->sqe->arg[0], size = call->sqe->arg[1], end;
	CUmemAccessDesc d[VGPU_MAX_DEVICES];
	struct vmm_state *s = vmm_state_of(w);
	size_t n = call->len / sizeof(*d);
	CUresult rc;
	int ord[VGPU_MAX_DEVICES];

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!s || !n || n > VGPU_MAX_DEVICES || call->len % sizeof(*d) ||
	    !vmm_whole_granules(w, p, size, &end))
		return OP_DONE;
	memcpy(d, call->payload, n * sizeof(*d));
	for (size_t k = 0; k < n; k++) {
		if ((rc = location(w, &d[k].location, &ord[k]))) {
			call->cqe->result = rc;
			return OP_DONE;
		}
		if (d[k].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
		    d[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    d[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return OP_DONE;
		d[k].location.id = w->devices[ord[k]];
	}
	if (!vmm_map_covers(s, p, end))
		return OP_DONE;
	if (map_split_at(s, p) || map_split_at(s, end)) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	rc = w->B.cuMemSetAccess(p, size, d, n);
	call->cqe->result = rc;
	if (rc)
		return OP_DONE;
	for (size_t i = map_find(s, p); i < s->nm && s->m[i].start < end; i++)
		for (size_t k = 0; k < n; k++)
			s->m[i].acc[ord[k]] = (uint8_t)d[k].flags;
	return OP_DONE;
}

static enum op_status op_get_access(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	CUmemLocation l = { .type = (CUmemLocationType)q->arg[1], .id = (int)q->arg[2] };
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_map *m = s ? map_at(s, q->arg[0]) : NULL;
	int ord;

	if (q->arg[1] > INT32_MAX || (int64_t)q->arg[2] != (int)q->arg[2]) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	call->cqe->result = location(w, &l, &ord);
	if (!call->cqe->result && !m)
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!call->cqe->result)
		call->cqe->val[0] = m->acc[ord];
	return OP_DONE;
}

static enum op_status op_lookup(struct worker *w, struct op_call *call)
{
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_map *m = s ? map_at(s, call->sqe->arg[0]) : NULL;
	struct vgpu_vmm_info in = { 0 };

	if (!m) {
		call->cqe->result = CUDA_ERROR_NOT_FOUND;
		return OP_DONE;
	}
	in.base = m->map_start;
	in.size = m->map_end - m->map_start;
	in.handle = m->a->refs ? m->a->id : 0;
	in.handle_types = m->a->prop.requestedHandleTypes;
	in.device = (uint32_t)m->a->prop.location.id;
	in.access = m->acc[in.device];
	in.rdma = m->a->prop.allocFlags.gpuDirectRDMACapable;
	memcpy(call->reply, &in, sizeof(in));
	call->cqe->val[2] = sizeof(in);
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}
const struct op_desc exec_vmm_ops[] = {
	OP(VMM_RESERVE, OPF_SYNC_ONLY, op_reserve),
	OP(VMM_ADDR_FREE, OPF_SYNC_ONLY, op_addr_free),
	OP(VMM_CREATE, OPF_SYNC_ONLY, op_create),
	OP(VMM_RELEASE, OPF_SYNC_ONLY, op_release),
	OP(VMM_MAP, OPF_SYNC_ONLY, op_map),
	OP(VMM_UNMAP, OPF_SYNC_ONLY, op_unmap),
	OP(VMM_SET_ACCESS, OPF_SYNC_ONLY, op_set_access),
	OP(VMM_GET_ACCESS, OPF_SYNC_ONLY, op_get_access),
	OP(VMM_GRANULARITY, OPF_SYNC_ONLY, op_granularity),
	OP(VMM_PROPS, OPF_SYNC_ONLY, op_props),
	OP(VMM_RETAIN, OPF_SYNC_ONLY, op_retain),
	OP(VMM_LOOKUP, OPF_SYNC_ONLY | OPF_NO_FOLD, op_lookup),
	OP(VMM_EXPORT, OPF_SYNC_ONLY, vmm_op_export),
	OP(VMM_IMPORT, OPF_SYNC_ONLY, vmm_op_import),
	OP(VMM_RANGE_HANDLE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, vmm_op_range_handle),
	{ 0 },
};

/* ---- teardown ------------------------------------------------------------------ */

/*
 * Everything the program left: mappings unmapped, allocations released,
 * reservations given back, descriptors closed. A worker's exit does this
 * for a session; a process that serves sessions one after another (the
 * fuzz harness) calls it between them.
 */
void worker_vmm_destroy(struct worker *w)
{
	struct vmm_state *s = w->vmm;

	if (!s)
		return;
	/* Pieces of one cuMemMap call (split by cuMemSetAccess) lie side by
	 * side: each call's range is unmapped once, whole. */
	for (size_t i = 0; i < s->nm; i++)
		if (!i || s->m[i].map_start != s->m[i - 1].map_start)
			w->B.cuMemUnmap(s->m[i].map_start, s->m[i].map_end - s->m[i].map_start);
	for (size_t i = 0; i < s->na; i++) {
		s->a[i]->refs = s->a[i]->maps = 0;
		alloc_put(w, s, s->a[i--]);	/* alloc_put moves the last one here */
	}
	for (size_t i = 0; i < s->nv; i++)
		vmem_unreserve(&w->vmem, s->v[i].start, s->v[i].end - s->v[i].start);
	for (int i = 0; i < FD_STASH; i++)
		if (s->stash[i].fd >= 0)
			close(s->stash[i].fd);
	free(s->v);
	free(s->m);
	free(s->a);
	free(s);
	w->vmm = NULL;
}
