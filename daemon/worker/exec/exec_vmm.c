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
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "ckpt_sink.h"
#include "fdpass.h"
#include "log.h"
#include "vgpu/ckpt.h"
#include "worker.h"

struct vmm_alloc {
	uint64_t id;
	CUmemGenericAllocationHandle h;	/* the backend's */
	uint64_t size;
	CUmemAllocationProp prop;	/* as the client asked (client ordinal) */
	uint32_t refs;			/* handle references; 0: handle released */
	uint32_t maps;			/* live cuMemMap calls on it */
	bool imported;			/* another process's (size 0: the driver knows) */
	bool exported;			/* a descriptor of it went to the program */
};

/* Descriptors the program sent for imports, waiting for their entries. */
#define FD_STASH 8
struct fd_stash {
	uint64_t token;
	int fd;				/* -1: empty */
};

/* A piece of a mapping: cuMemSetAccess may split a cuMemMap range. */
struct vmm_map {
	uint64_t start, end;
	uint64_t map_start, map_end;	/* the cuMemMap call's range */
	uint64_t off;			/* offset of start in the allocation */
	struct vmm_alloc *a;
	uint8_t acc[VGPU_MAX_DEVICES];	/* CU_MEM_ACCESS_FLAGS_* per device */
};

struct vmm_resv {
	uint64_t start, end;
};

struct vmm_state {
	struct vmm_resv *v;		/* sorted by start */
	size_t nv, capv;
	struct vmm_map *m;		/* sorted by start, disjoint */
	size_t nm, capm;
	struct vmm_alloc **a;
	size_t na, capa;
	uint64_t next_id;
	struct fd_stash stash[FD_STASH];
	unsigned stash_next;		/* the slot the next one takes */
};

static struct vmm_state *state(struct worker *w)
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

static int grow(void **v, size_t *cap, size_t n, size_t elem)
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

static struct vmm_alloc *alloc_live(struct vmm_state *s, uint64_t id)
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

static bool map_overlaps(const struct vmm_state *s, uint64_t p, uint64_t e)
{
	size_t i = map_find(s, p);

	return i < s->nm && s->m[i].start < e;
}

/* Whether [p, e) is covered by pieces with no gap. */
static bool map_covers(const struct vmm_state *s, uint64_t p, uint64_t e)
{
	for (size_t i = map_find(s, p); p < e; i++) {
		if (i == s->nm || s->m[i].start > p)
			return false;
		p = s->m[i].end;
	}
	return true;
}

static int map_insert(struct vmm_state *s, const struct vmm_map *m)
{
	size_t i;

	if (grow((void **)&s->m, &s->capm, s->nm, sizeof(*s->m)))
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
	return map_insert(s, &hi);
}

/* The reservation holding all of [p, e), or NULL. */
static struct vmm_resv *resv_holding(struct vmm_state *s, uint64_t p, uint64_t e)
{
	for (size_t i = 0; i < s->nv; i++)
		if (s->v[i].start <= p && e <= s->v[i].end)
			return &s->v[i];
	return NULL;
}

/* ---- checks on what the client sent ------------------------------------------- */

static bool whole_granules(struct worker *w, uint64_t p, uint64_t size, uint64_t *end)
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

static enum op_status op_create(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	struct vmm_state *s = state(w);
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
	if (grow((void **)&s->a, &s->capa, s->na, sizeof(*s->a)) ||
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
	a->refs = 1;
	s->a[s->na++] = a;
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = a->id;
	return OP_DONE;
}

static enum op_status op_release(struct worker *w, struct op_call *call)
{
	struct vmm_state *s = state(w);
	struct vmm_alloc *a = s ? alloc_live(s, call->sqe->arg[0]) : NULL;

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
	struct vmm_state *s = state(w);
	struct vmm_alloc *a = s ? alloc_live(s, call->sqe->arg[0]) : NULL;

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
	struct vmm_state *s = state(w);
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
	struct vmm_state *s = state(w);
	CUdeviceptr p = 0;
	CUresult rc;
	size_t i;

	if (!s || grow((void **)&s->v, &s->capv, s->nv, sizeof(*s->v))) {
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
	struct vmm_state *s = state(w);

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; s && i < s->nv; i++) {
		if (s->v[i].start != p || s->v[i].end - p != size)
			continue;
		/* Mappings left in it would lie in free space the allocator
		 * hands out again. */
		if (map_overlaps(s, p, p + size)) {
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
	struct vmm_state *s = state(w);
	struct vmm_alloc *a = s ? alloc_live(s, q->arg[3]) : NULL;
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
	if (!resv_holding(s, p, end) || map_overlaps(s, p, end))
		return OP_DONE;
	if (grow((void **)&s->m, &s->capm, s->nm, sizeof(*s->m))) {
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
	map_insert(s, &m);	/* room was made above */
	a->maps++;
	return OP_DONE;
}

static enum op_status op_unmap(struct worker *w, struct op_call *call)
{
	uint64_t p = call->sqe->arg[0], size = call->sqe->arg[1], end;
	struct vmm_state *s = state(w);
	CUresult rc;
	size_t i;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!s || !whole_granules(w, p, size, &end))
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
	struct vmm_state *s = state(w);
	size_t n = call->len / sizeof(*d);
	CUresult rc;
	int ord[VGPU_MAX_DEVICES];

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!s || !n || n > VGPU_MAX_DEVICES || call->len % sizeof(*d) ||
	    !whole_granules(w, p, size, &end))
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
	if (!map_covers(s, p, end))
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
	struct vmm_state *s = state(w);
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
	struct vmm_state *s = state(w);
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

/* ---- sharing by descriptor -------------------------------------------------------- */

/* Takes whatever the program sent on its socket: descriptors for imports
 * are kept (the oldest goes when the stash is full), the rest dropped. */
void worker_fd_drain(struct worker *w)
{
	struct vmm_state *s = state(w);

	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * 4)];
		struct vgpu_fd_msg m;
		struct iovec io = { &m, sizeof(m) };
		struct msghdr h = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		int fds[4], cut = 0;
		unsigned n;
		ssize_t got = recvmsg(w->sock, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (got <= 0)
			return;
		n = vgpu_fds_take(&h, fds, 4, &cut);
		if (!s || got != sizeof(m) || (h.msg_flags & MSG_TRUNC) || cut || n != 1 ||
		    m.magic != VGPU_FD_MSG_MAGIC) {
			vgpu_fds_close(fds, n);
			continue;
		}
		if (s->stash[s->stash_next].fd >= 0)
			close(s->stash[s->stash_next].fd);
		s->stash[s->stash_next] = (struct fd_stash){ m.token, fds[0] };
		s->stash_next = (s->stash_next + 1) % FD_STASH;
	}
}

/* The descriptor the program sent for @token, waiting a little for it. */
static int fd_for(struct worker *w, struct vmm_state *s, uint64_t token)
{
	for (int tries = 0; tries < 20; tries++) {
		struct pollfd p = { .fd = w->sock, .events = POLLIN | POLLRDHUP };

		worker_fd_drain(w);
		for (int i = 0; i < FD_STASH; i++) {
			if (s->stash[i].fd >= 0 && s->stash[i].token == token) {
				int fd = s->stash[i].fd;

				s->stash[i].fd = -1;
				return fd;
			}
		}
		if (poll(&p, 1, 100) < 0 || (p.revents & (POLLHUP | POLLERR | POLLRDHUP)))
			break;
	}
	return -1;
}

/* Sends fd to the program for @token and closes it here. Never blocks: a
 * program that does not read its socket only loses its own descriptor. */
static CUresult send_fd(struct worker *w, uint64_t token, int fd)
{
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC, .token = token };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec io = { &m, sizeof(m) };
	struct msghdr h = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&h);
	CUresult rc = CUDA_SUCCESS;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(w->sock, &h, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		vlog_info("vmm: a descriptor cannot be sent to the program: %s", strerror(errno));
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	}
	close(fd);
	return rc;
}

/* The channel for other descriptors (pool_ipc.c). */
int worker_fd_take(struct worker *w, uint64_t token)
{
	struct vmm_state *s = state(w);

	return s ? fd_for(w, s, token) : -1;
}

CUresult worker_fd_send(struct worker *w, uint64_t token, int fd)
{
	return send_fd(w, token, fd);
}

static enum op_status op_range_handle(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	uint64_t p = q->arg[0], size = q->arg[1], end;
	struct vmm_state *s = state(w);
	CUresult rc;
	int fd = -1;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!p || !size || q->arg[2] != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
	    (q->arg[3] & ~(uint64_t)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) ||
	    __builtin_add_overflow(p, size, &end))
		return OP_DONE;
	/* The program's own device memory only: one allocation, or mappings. */
	if (!vmem_contains(&w->vmem, p, size) && !(s && map_covers(s, p, end)))
		return OP_DONE;
	rc = w->B.cuMemGetHandleForAddressRange(&fd, p, size, (CUmemRangeHandleType)q->arg[2],
						q->arg[3]);
	if (rc || fd < 0) {
		call->cqe->result = rc ? rc : CUDA_ERROR_UNKNOWN;
		return OP_DONE;
	}
	call->cqe->result = send_fd(w, q->arg[4], fd);
	return OP_DONE;
}

static enum op_status op_export(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	struct vmm_state *s = state(w);
	struct vmm_alloc *a = s ? alloc_live(s, q->arg[0]) : NULL;
	CUresult rc;
	int fd = -1;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!a || q->arg[2])
		return OP_DONE;
	if (q->arg[1] != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
	    q->arg[1] != CU_MEM_HANDLE_TYPE_FABRIC) {
		vlog_info("vmm: export as handle type %llu is not supported (POSIX descriptors "
			  "and fabric handles only)", (unsigned long long)q->arg[1]);
		call->cqe->result = CUDA_ERROR_NOT_SUPPORTED;
		return OP_DONE;
	}
	if (!(a->prop.requestedHandleTypes & q->arg[1])) {
		vlog_debug("vmm: allocation %llu was not created exportable",
			   (unsigned long long)a->id);
		return OP_DONE;
	}
	if (q->arg[1] == CU_MEM_HANDLE_TYPE_FABRIC) {
		/* A fabric handle is data: it comes back in the reply. */
		CUmemFabricHandle fh;

		memset(&fh, 0, sizeof(fh));
		rc = w->B.cuMemExportToShareableHandle(&fh, a->h, CU_MEM_HANDLE_TYPE_FABRIC, 0);
		if (!rc) {
			memcpy(call->reply, &fh, sizeof(fh));
			call->cqe->val[2] = sizeof(fh);
			a->exported = true;
		}
		call->cqe->result = rc;
		return OP_DONE;
	}
	rc = w->B.cuMemExportToShareableHandle(&fd, a->h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
					       0);
	if (rc || fd < 0) {
		call->cqe->result = rc ? rc : CUDA_ERROR_UNKNOWN;
		return OP_DONE;
	}
	call->cqe->result = send_fd(w, q->arg[3], fd);
	if (!call->cqe->result)
		a->exported = true;
	return OP_DONE;
}

/* The new allocation record of an import, with its backend handle. */
static void imported(struct vmm_state *s, struct op_call *call, struct vmm_alloc *a,
		     unsigned type, uint64_t size)
{
	a->id = s->next_id++;
	a->size = size;
	a->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	a->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a->prop.location.id = 0;
	a->prop.requestedHandleTypes = (CUmemAllocationHandleType)type;
	a->refs = 1;
	a->imported = true;
	s->a[s->na++] = a;
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = a->id;
}

/* A fabric handle is 64 bytes of data: the payload; the driver judges it. */
static enum op_status import_fabric(struct worker *w, struct vmm_state *s, struct op_call *call)
{
	CUmemFabricHandle fh;
	struct vmm_alloc *a;
	CUresult rc;

	if (call->len != sizeof(fh))
		return OP_DONE;
	memcpy(&fh, call->payload, sizeof(fh));
	a = calloc(1, sizeof(*a));
	if (!a) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	rc = w->B.cuMemImportFromShareableHandle(&a->h, &fh, CU_MEM_HANDLE_TYPE_FABRIC);
	if (rc) {
		call->cqe->result = rc;
		free(a);
		return OP_DONE;
	}
	imported(s, call, a, CU_MEM_HANDLE_TYPE_FABRIC, 0);
	return OP_DONE;
}

static enum op_status op_import(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	struct vmm_state *s = state(w);
	struct vmm_alloc *a = NULL;
	struct stat st;
	CUresult rc;
	int fd;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!s || grow((void **)&s->a, &s->capa, s->na, sizeof(*s->a))) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	if (q->arg[1] == CU_MEM_HANDLE_TYPE_FABRIC)
		return import_fabric(w, s, call);
	fd = fd_for(w, s, q->arg[0]);
	if (fd < 0) {
		vlog_info("vmm: an import came without its descriptor");
		return OP_DONE;
	}
	if (q->arg[1] != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
		vlog_info("vmm: import of handle type %llu is not supported (POSIX descriptors "
			  "only)", (unsigned long long)q->arg[1]);
		call->cqe->result = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	/* The backend judges what the descriptor is (the driver, or the host
	 * backend's own memfds); it runs with the program's own rights. */
	if (fstat(fd, &st) || S_ISDIR(st.st_mode) || !(a = calloc(1, sizeof(*a)))) {
		call->cqe->result = a ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	rc = w->B.cuMemImportFromShareableHandle(&a->h, (void *)(intptr_t)fd,
						 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (rc) {
		call->cqe->result = rc;
		free(a);
		goto out;
	}
	/* A memfd says its size; the driver's descriptors do not, and the
	 * driver bounds the mappings itself. */
	imported(s, call, a, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
		 S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size % w->vmem.gran == 0
			 ? (uint64_t)st.st_size : 0);
out:
	close(fd);
	return OP_DONE;
}

/* ---- checkpoint and restore -------------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static int say(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return err;
}

static int table_out(struct ckpt_sink *sink, uint32_t type, const void *rec, size_t n, size_t size)
{
	int ret = ckpt_sink_begin(sink, type, 0, n);

	if (!ret && n)
		ret = ckpt_sink_write(sink, rec, n * size);
	if (!ret)
		ret = ckpt_sink_end(sink);
	return ret;
}

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
			return say(why, len, -EOPNOTSUPP, "VMM allocation %llu was imported and is "
				   "not mapped: its size is unknown",
				   (unsigned long long)x->id);
	}
	v = calloc(s->nv + 1, sizeof(*v));
	a = calloc(s->na + 1, sizeof(*a));
	m = calloc(s->nm + 1, sizeof(*m));
	temp = calloc(s->na + 1, sizeof(*temp));
	if (!v || !a || !m || !temp) {
		ret = say(why, len, -ENOMEM, "out of memory listing VMM state");
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
	ret = table_out(sink, VGPU_CKPT_SEC_VMM_RESV, v, s->nv, sizeof(*v));
	if (!ret)
		ret = table_out(sink, VGPU_CKPT_SEC_VMM_ALLOCS, a, s->na, sizeof(*a));
	if (!ret)
		ret = table_out(sink, VGPU_CKPT_SEC_VMM_MAPS, m, s->nm, sizeof(*m));
	if (!ret)
		ret = table_out(sink, VGPU_CKPT_SEC_VMM_STATE, &st, 1, sizeof(st));
	if (ret) {
		ret = say(why, len, ret, "%s", ckpt_sink_error(sink));
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
				ret = say(why, len, -EIO, "allocation %llu cannot be mapped to be "
					  "read (CUDA error %d)", (unsigned long long)x->id, rc);
				goto out;
			}
			src = temp[i];
		}
		ret = ckpt_sink_device_section(sink, VGPU_CKPT_SEC_VMM_DATA, x->id, src, x->size);
		if (ret) {
			ret = say(why, len, ret, "%s", ckpt_sink_error(sink));
			goto out;
		}
	}
	ret = ckpt_sink_device_flush(sink);
	if (ret)
		ret = say(why, len, ret, "%s", ckpt_sink_error(sink));
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
		return say(why, len, -EBADMSG, "the bytes of VMM allocation %llu are missing",
			   (unsigned long long)a->id);
	if (vgpu_ckpt_read_begin(r, (unsigned)k))
		return say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r));
	rc = temp_map(w, a, &at);
	if (rc)
		return say(why, len, -EIO, "VMM allocation %llu cannot be mapped to be written "
			   "(CUDA error %d)", (unsigned long long)a->id, rc);
	while (!rc && (got = vgpu_ckpt_read(r, buf, cap)) > 0 && (uint64_t)got <= a->size - done) {
		rc = w->B.cuMemcpyHtoDAsync_v2(at + done, buf, (size_t)got, NULL);
		if (!rc)
			rc = w->B.cuStreamSynchronize(NULL);
		done += (uint64_t)got;
	}
	temp_unmap(w, at, a->size);
	if (rc)
		return say(why, len, -EIO, "writing VMM allocation %llu failed (CUDA error %d)",
			   (unsigned long long)a->id, rc);
	if (done != a->size)
		return say(why, len, -EBADMSG, "VMM allocation %llu: %s",
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

		if (!a || !whole_granules(w, m[i].start, m[i].size, &end) ||
		    !whole_granules(w, m[i].map_start, m[i].map_size, &mend) ||
		    m[i].start < m[i].map_start || end > mend || m[i].offset % w->vmem.gran ||
		    m[i].offset > a->size || m[i].size > a->size - m[i].offset ||
		    m[i].offset - (m[i].start - m[i].map_start) > a->size ||
		    m[i].map_size > a->size - (m[i].offset - (m[i].start - m[i].map_start)) ||
		    !resv_holding(s, m[i].map_start, mend) || map_overlaps(s, m[i].start, end))
			return say(why, len, -EBADMSG, "VMM mapping %zu is not sound", i);
		for (size_t d = w->device_count; d < sizeof(m[i].access); d++)
			if (m[i].access[d])
				return say(why, len, -EBADMSG, "VMM mapping %zu: no device %zu", i, d);
		x.start = m[i].start;
		x.end = end;
		x.map_start = m[i].map_start;
		x.map_end = mend;
		x.off = m[i].offset;
		x.a = a;
		memcpy(x.acc, m[i].access, sizeof(x.acc));
		if (map_insert(s, &x))
			return say(why, len, -ENOMEM, "out of memory");
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
				return say(why, len, -EBADMSG, "VMM mapping at %#llx is not sound",
					   (unsigned long long)x->map_start);
		if (!map_covers(s, x->map_start, x->map_end))
			return say(why, len, -EBADMSG, "VMM mapping at %#llx has a hole",
				   (unsigned long long)x->map_start);
		rc = w->B.cuMemMap(x->map_start, x->map_end - x->map_start, x->off, x->a->h, 0);
		if (rc)
			return say(why, len, -EIO, "VMM mapping at %#llx cannot be made again "
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
				return say(why, len, -EBADMSG, "VMM access %u is not sound",
					   x->acc[k]);
			d[nd].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
			d[nd].location.id = w->devices[k];
			d[nd++].flags = (CUmemAccess_flags)x->acc[k];
		}
		if (nd && (rc = w->B.cuMemSetAccess(x->start, x->end - x->start, d, nd)))
			return say(why, len, -EIO, "VMM access at %#llx cannot be set again "
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
		return ret ? say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r)) : 0;
	}
	s = state(w);
	if (!s || nst != 1 || worker_vmm_in_use(w)) {
		ret = say(why, len, s ? -EBADMSG : -ENOMEM, "the VMM state cannot be taken up");
		goto out;
	}
	if (vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_VMM_RESV, 0, sizeof(*v), 1ull << 30,
				   (void **)&v, &nv, &blob) ||
	    vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_VMM_ALLOCS, 0, sizeof(*a), 1ull << 30,
				   (void **)&a, &na, &blob) ||
	    vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_VMM_MAPS, 0, sizeof(*m), 1ull << 30,
				   (void **)&m, &nm, &blob)) {
		ret = say(why, len, -EBADMSG, "%s", vgpu_ckpt_reader_error(r));
		goto out;
	}
	s->next_id = st->next_handle;
	for (size_t i = 0; i < nv; i++) {
		CUresult rc;

		if (grow((void **)&s->v, &s->capv, s->nv, sizeof(*s->v))) {
			ret = say(why, len, -ENOMEM, "out of memory");
			goto out;
		}
		rc = vmem_reserve_at(&w->vmem, v[i].base, v[i].size);
		if (rc || (s->nv && s->v[s->nv - 1].start >= v[i].base)) {
			ret = say(why, len, -EBADMSG, "VMM reservation at %#llx (%llu bytes) cannot "
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
			ret = say(why, len, -EBADMSG, "VMM allocation record %zu is not sound", i);
			goto out;
		}
		if (grow((void **)&s->a, &s->capa, s->na, sizeof(*s->a)) ||
		    !(x = calloc(1, sizeof(*x)))) {
			ret = say(why, len, -ENOMEM, "out of memory");
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
			ret = say(why, len, -EIO, "VMM allocation %llu (%llu bytes) cannot be made "
				  "again (CUDA error %d)", (unsigned long long)a[i].handle,
				  (unsigned long long)a[i].size, rc);
			goto out;
		}
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
			ret = say(why, len, -EBADMSG, "VMM allocation %llu is held by nothing",
				  (unsigned long long)s->a[i]->id);
	if (!ret && !(buf = malloc(8u << 20)))
		ret = say(why, len, -ENOMEM, "out of memory");
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
	OP(VMM_EXPORT, OPF_SYNC_ONLY, op_export),
	OP(VMM_IMPORT, OPF_SYNC_ONLY, op_import),
	OP(VMM_RANGE_HANDLE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_range_handle),
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
