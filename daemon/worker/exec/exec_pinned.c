// SPDX-License-Identifier: MIT
/*
 * Pinned copies (see "Pinned copies" in vgpu/proto.h): the client's pageable
 * buffer, pinned by vgpu.ko, is mapped here at offset == handle on the
 * worker fd, and the copy runs between that mapping and the device with no
 * copy on the client's side.
 *
 * Mappings are cached per handle. Every entry is checked against the
 * module's current answer for its handle (REGION_INFO, one system call per
 * copy of at least a few hundred KiB): a handle the client never had, or
 * unregistered without PIN_FORGET, fails the call instead of faulting here.
 *
 * Backends: the host backend reads and writes the mapping directly. The
 * cuda backend cannot pin it again (VM_PFNMAP), so it copies through a
 * pinned buffer of its own in pieces. With VGPU_PIN_IOMEMORY=1 it first
 * tries cuMemHostRegister(CU_MEMHOSTREGISTER_IOMEMORY) on the mapping and
 * DMAs straight from it; that is off by default because the driver then
 * holds bus addresses of pages that the module unpins when the client
 * unregisters, so a client that unregisters under its own copy would have
 * the GPU write freed memory.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "exec_pinned.h"
#include "log.h"

#define MAPS		64		/* mappings kept per session */
#define BOUNCE_SIZE	(8u << 20)	/* cuda backend: one piece */

struct pinmap {
	struct vgpu_kmod_region r;	/* r.handle 0: slot free */
	uint8_t *base;			/* r.map_len bytes */
	bool registered;		/* with the driver (IOMEMORY) */
	uint64_t used;			/* LRU tick */
};

/* One session per worker process. */
static struct {
	struct pinmap m[MAPS];
	uint64_t tick;
	uint64_t mapped;		/* mappings made, ever */
	void *bounce;
	bool bounce_tried;
} pins;

static void drop(struct worker *w, struct pinmap *m)
{
	if (m->registered)
		w->B.cuMemHostUnregister(m->base);
	if (m->base)
		munmap(m->base, m->r.map_len);
	memset(m, 0, sizeof(*m));
}

static bool same_region(const struct vgpu_kmod_region *a, const struct vgpu_kmod_region *b)
{
	return a->handle == b->handle && a->addr == b->addr && a->len == b->len &&
	       a->map_len == b->map_len && a->readonly == b->readonly;
}

static void try_iomemory(struct worker *w, struct pinmap *m)
{
	const char *e = getenv("VGPU_PIN_IOMEMORY");

	if (w->B.kind == VGPU_BACKEND_HOST || !e || strcmp(e, "1"))
		return;
	m->registered = !w->B.cuMemHostRegister_v2(m->base, m->r.map_len,
						    CU_MEMHOSTREGISTER_IOMEMORY);
	if (!m->registered)
		vlog_debug("pinned region %#llx: no IOMEMORY registration; copying in pieces",
			   (unsigned long long)m->r.handle);
}

/* The mapping of @handle as the module describes it now, or NULL. */
static struct pinmap *pin_map(struct worker *w, uint64_t handle)
{
	struct vgpu_kmod_region r;
	struct pinmap *m, *victim = &pins.m[0];

	if (!handle || vgpu_kmod_region_info(&w->kmod, handle, &r))
		return NULL;
	for (m = pins.m; m < pins.m + MAPS; m++) {
		if (m->r.handle == handle) {
			if (same_region(&m->r, &r))
				goto hit;
			drop(w, m);	/* unregistered and issued again */
		}
		if (m->used < victim->used)
			victim = m;
	}
	m = victim;
	drop(w, m);
	m->r = r;
	m->base = vgpu_kmod_region_map(&w->kmod, &r);
	if (!m->base) {
		vlog_warn("pinned region %#llx: cannot map %llu bytes",
			  (unsigned long long)handle, (unsigned long long)r.map_len);
		memset(m, 0, sizeof(*m));
		return NULL;
	}
	try_iomemory(w, m);
	if (!pins.mapped++)
		vlog_info("session %llu: pinned region %#llx mapped (%llu bytes); "
			  "pageable copies need no staging", (unsigned long long)w->session_id,
			  (unsigned long long)handle, (unsigned long long)r.len);
	else
		vlog_debug("session %llu: pinned region %#llx mapped (%llu bytes)",
			   (unsigned long long)w->session_id, (unsigned long long)handle,
			   (unsigned long long)r.len);
hit:
	m->used = ++pins.tick;
	return m;
}

static void *bounce(struct worker *w)
{
	void *p;

	if (pins.bounce_tried)
		return pins.bounce;
	pins.bounce_tried = true;
	p = mmap(NULL, BOUNCE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Unregistered, the driver stages it itself: slower, still right. */
	if (w->B.cuMemHostRegister_v2(p, BOUNCE_SIZE, 0))
		vlog_debug("pinned copies: the bounce buffer is not page-locked");
	pins.bounce = p;
	return p;
}

/* Host side @h of @n bytes, device side @d; @up: host to device. */
static CUresult copy_direct(struct worker *w, uint8_t *h, uint64_t d, uint64_t n, bool up,
			    CUstream st)
{
	CUresult rc = up ? w->B.cuMemcpyHtoDAsync_v2(d, h, n, st)
			 : w->B.cuMemcpyDtoHAsync_v2(h, d, n, st);

	return rc ? rc : w->B.cuStreamSynchronize(st);
}

static CUresult copy_bounced(struct worker *w, uint8_t *h, uint64_t d, uint64_t n, bool up,
			     CUstream st)
{
	uint8_t *b = bounce(w);
	CUresult rc = CUDA_SUCCESS;

	if (!b)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint64_t done = 0, piece; done < n && !rc; done += piece) {
		piece = n - done < BOUNCE_SIZE ? n - done : BOUNCE_SIZE;
		if (up) {
			memcpy(b, h + done, piece);
			rc = copy_direct(w, b, d + done, piece, true, st);
		} else {
			rc = copy_direct(w, b, d + done, piece, false, st);
			if (!rc)
				memcpy(h + done, b, piece);
		}
	}
	return rc;
}

/* Checks and runs one pinned copy; @up: host to device. */
static CUresult pinned_copy(struct worker *w, const struct vgpu_sqe *s, uint64_t dev,
			    uint64_t handle, uint64_t off, uint64_t n, bool up)
{
	struct pinmap *m;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc)
		return rc;
	if (w->kmod.fd < 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (!n || !worker_addr_ok(w, dev, n))
		return CUDA_ERROR_INVALID_VALUE;
	m = pin_map(w, handle);
	if (!m || off > m->r.len || n > m->r.len - off || (!up && m->r.readonly))
		return CUDA_ERROR_INVALID_VALUE;
	if (worker_capturing(w, st))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (w->B.kind == VGPU_BACKEND_HOST || m->registered)
		return copy_direct(w, m->base + m->r.page_offset + off, dev, n, up, st);
	return copy_bounced(w, m->base + m->r.page_offset + off, dev, n, up, st);
}

enum op_status exec_pinned_htod(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;

	call->cqe->result = pinned_copy(w, s, s->arg[0], s->arg[1], s->arg[2], s->arg[3], true);
	return OP_DONE;
}

enum op_status exec_pinned_dtoh(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;

	call->cqe->result = pinned_copy(w, s, s->arg[2], s->arg[0], s->arg[1], s->arg[3], false);
	return OP_DONE;
}

enum op_status exec_pin_forget(struct worker *w, struct op_call *call)
{
	uint64_t handle = call->sqe->arg[0];

	for (struct pinmap *m = pins.m; m < pins.m + MAPS; m++)
		if (handle && m->r.handle == handle)
			drop(w, m);
	return OP_DONE;
}
