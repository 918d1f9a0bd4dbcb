// SPDX-License-Identifier: MIT
#include "ring.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "barrier.h"
#include "futex.h"

#define PAGE 4096u

static uint32_t align_up(uint32_t v, uint32_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

int vgpu_layout(struct vgpu_welcome *w, uint32_t sq_entries, uint32_t cq_entries,
		uint32_t payload_size, uint32_t staging_chunk,
		uint32_t staging_chunks, uint32_t device_count)
{
	uint64_t off = PAGE;	/* struct vgpu_shared lives in page 0 */

	if (!pow2(sq_entries) || sq_entries > VGPU_PROTO_MAX_SQ ||
	    !pow2(cq_entries) || cq_entries > VGPU_PROTO_MAX_CQ ||
	    !pow2(payload_size) || !staging_chunks ||
	    staging_chunks > VGPU_MAX_STAGING_CHUNKS ||
	    staging_chunk % PAGE || device_count > VGPU_MAX_DEVICES)
		return -EINVAL;
	w->sq_entries = sq_entries;
	w->cq_entries = cq_entries;
	w->sq_off = off;
	off = align_up(off + sq_entries * sizeof(struct vgpu_sqe), PAGE);
	w->cq_off = off;
	off = align_up(off + cq_entries * sizeof(struct vgpu_cqe), PAGE);
	w->devinfo_off = off;
	w->device_count = device_count;
	off = align_up(off + device_count * sizeof(struct vgpu_device_info), PAGE);
	w->payload_off = off;
	w->payload_size = payload_size;
	off += payload_size;
	w->reply_off = off;
	w->reply_slot_size = 64u << 10;
	off += (uint64_t)sq_entries * w->reply_slot_size;
	/* Staging is DMA'd by the GPU: start it on a 2 MiB boundary. */
	off = (off + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
	w->staging_off = off;
	w->staging_chunk = staging_chunk;
	w->staging_chunks = staging_chunks;
	off += (uint64_t)staging_chunk * staging_chunks;
	if (off > UINT32_MAX)
		return -E2BIG;
	w->region_size = off;
	return 0;
}

static bool inside(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* Where the ring's index words live: the memfd header or the module's rings. */
static void point_indices(struct vgpu_ring *r, uint32_t *sq_head, uint32_t *sq_tail,
			  uint32_t *sq_flags, uint32_t *cq_head, uint32_t *cq_tail,
			  uint32_t *cq_flags)
{
	r->sq_head = sq_head;
	r->sq_tail = sq_tail;
	r->sq_flags = sq_flags;
	r->cq_head = cq_head;
	r->cq_tail = cq_tail;
	r->cq_flags = cq_flags;
}

int vgpu_ring_attach(struct vgpu_ring *r, void *base, size_t size,
		     const struct vgpu_welcome *w)
{
	uint8_t *b = base;

	if (!pow2(w->sq_entries) || !pow2(w->cq_entries) ||
	    !pow2(w->payload_size) || w->device_count > VGPU_MAX_DEVICES ||
	    w->staging_chunks > VGPU_MAX_STAGING_CHUNKS || w->region_size != size ||
	    !inside(0, sizeof(struct vgpu_shared), size) ||
	    !inside(w->sq_off, (uint64_t)w->sq_entries * sizeof(struct vgpu_sqe), size) ||
	    !inside(w->cq_off, (uint64_t)w->cq_entries * sizeof(struct vgpu_cqe), size) ||
	    !inside(w->devinfo_off, (uint64_t)w->device_count * sizeof(struct vgpu_device_info), size) ||
	    !inside(w->payload_off, w->payload_size, size) ||
	    !inside(w->reply_off, (uint64_t)w->sq_entries * w->reply_slot_size, size) ||
	    !inside(w->staging_off, (uint64_t)w->staging_chunk * w->staging_chunks, size))
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	r->sh = base;
	point_indices(r, &r->sh->sq_head, &r->sh->sq_tail, &r->sh->sq_flags, &r->sh->cq_head,
		      &r->sh->cq_tail, &r->sh->cq_flags);
	r->sq = (struct vgpu_sqe *)(b + w->sq_off);
	r->cq = (struct vgpu_cqe *)(b + w->cq_off);
	r->devinfo = (struct vgpu_device_info *)(b + w->devinfo_off);
	r->payload = b + w->payload_off;
	r->reply = b + w->reply_off;
	r->staging = b + w->staging_off;
	r->sq_entries = w->sq_entries;
	r->cq_entries = w->cq_entries;
	r->payload_size = w->payload_size;
	r->reply_slot_size = w->reply_slot_size;
	r->staging_chunk = w->staging_chunk;
	r->staging_chunks = w->staging_chunks;
	r->device_count = w->device_count;
	r->region_size = size;
	r->bell = -1;
	return 0;
}

int vgpu_ring_attach_kmod(struct vgpu_ring *r, void *hdr, const struct vgpu_kmod *k,
			  const struct vgpu_welcome *w)
{
	int ret;

	if (w->region_size > k->arena_size || w->sq_entries != k->sq_entries ||
	    w->cq_entries != k->cq_entries)
		return -EPROTO;
	ret = vgpu_ring_attach(r, k->arena, w->region_size, w);
	if (ret)
		return ret;
	r->sh = hdr;
	r->sq = k->sqes;
	r->cq = k->cqes;
	point_indices(r, k->sq_head, k->sq_tail, k->sq_flags, k->cq_head, k->cq_tail, k->cq_flags);
	r->kmod = k;
	return 0;
}

bool vgpu_ring_dead(const struct vgpu_ring *r)
{
	return r->kmod && vgpu_kmod_dead(r->kmod);
}

void vgpu_bell_ring(int fd)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is already non-zero: the bell is ringing. */
	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return;
}

int vgpu_bell_wait(int bell, int sock, int ctl, int timeout_ms)
{
	struct pollfd p[3] = {
		{ .fd = bell, .events = POLLIN },
		{ .fd = sock, .events = POLLIN | POLLRDHUP },
		{ .fd = ctl, .events = POLLIN },
	};
	uint64_t v;
	int n;

	n = poll(p, 3, timeout_ms);	/* negative fds are skipped */
	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	if (sock >= 0 && (p[1].revents & (POLLHUP | POLLERR | POLLRDHUP)))
		return -EPIPE;
	if (ctl >= 0 && (p[2].revents & (POLLHUP | POLLERR)))
		return -EPIPE;
	if (ctl >= 0 && (p[2].revents & POLLIN))
		return 1;
	if (p[0].revents & POLLIN) {
		if (read(bell, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return -errno;
		return 1;
	}
	return 0;
}

/* ---- phases (include/vgpu/proto.h, Rings) ------------------------------ */

/* The phase an entry written at counter @c carries: 1 on even laps, so a
 * zero-filled ring reads as empty on the first. @entries is a power of two. */
static uint16_t sq_phase(uint32_t c, uint32_t entries)
{
	return c & entries ? 0 : VGPU_SQE_PHASE;
}

static uint32_t cq_phase(uint32_t c, uint32_t entries)
{
	return c & entries ? 0 : VGPU_CQE_PHASE;
}

static struct vgpu_sqe *sq_at(struct vgpu_ring *r, uint32_t c)
{
	return &r->sq[c & (r->sq_entries - 1)];
}

static struct vgpu_cqe *cq_at(struct vgpu_ring *r, uint32_t c)
{
	return &r->cq[c & (r->cq_entries - 1)];
}

/* ---- client: SQ producer ------------------------------------------------ */

bool client_sq_room(struct vgpu_ring *r)
{
	if (r->sq_local - r->peer_seen >= r->sq_entries) {
		r->peer_seen = load_acquire(r->sq_head);	/* D, matches C */
		if (r->sq_local - r->peer_seen >= r->sq_entries)
			return false;
	}
	return true;
}

bool client_sq_push(struct vgpu_ring *r, const struct vgpu_sqe *e)
{
	struct vgpu_sqe *slot = sq_at(r, r->sq_local);
	struct vgpu_sqe lead = { .first = e->first };

	if (!client_sq_room(r))
		return false;
	/* Everything but the first word, which says that the entry is there. */
	memcpy((uint8_t *)slot + sizeof(slot->first), (const uint8_t *)e + sizeof(e->first),
	       sizeof(*e) - sizeof(e->first));
	lead.flags = (lead.flags & ~VGPU_SQE_PHASE) | sq_phase(r->sq_local, r->sq_entries);
	store_release(&slot->first, lead.first);	/* A, matches B */
	/* For the doorbells only: the worker polls the entry. */
	store_release(r->sq_tail, ++r->sq_local);	/* A', matches B' */
	smp_mb();	/* entry and tail before flag: pairs with the worker's sleep check */
	if (!(read_once(r->sq_flags) & VGPU_SQ_NEED_WAKEUP))
		return true;
	if (r->kmod)
		vgpu_kmod_doorbell(r->kmod);
	else
		vgpu_bell_ring(r->bell);
	return true;
}

void *client_payload_alloc(struct vgpu_ring *r, uint32_t len, uint32_t *off)
{
	uint32_t size = r->payload_size, pos = r->payload_local;
	uint32_t at = pos & (size - 1), skip = 0, head;

	if (len > size / 2)
		return NULL;
	if (at + len > size)
		skip = size - at;	/* never wrap a payload */
	head = r->payload_seen;
	if (pos + skip + len - head > size) {
		head = r->payload_seen = load_acquire(&r->sh->payload_head);
		if (pos + skip + len - head > size)
			return NULL;
	}
	pos += skip;
	*off = pos & (size - 1);
	r->payload_local = pos + len;
	return r->payload + *off;
}

/* ---- client: CQ consumer ------------------------------------------------ */

/* Is the entry at head @c there? Its tag with the phase, through *tag. */
static bool cq_ready(struct vgpu_ring *r, uint32_t c, uint32_t *tag)
{
	*tag = load_acquire(&cq_at(r, c)->tag);	/* B, matches A */
	return (*tag & VGPU_CQE_PHASE) == cq_phase(c, r->cq_entries);
}

/* Waiters spin here while another thread may reap: cq_local is read and
 * written with single-copy atomicity (read_once, write_once). A head read
 * stale at worst says "not empty" for an entry reaped meanwhile. */
bool client_cq_empty(struct vgpu_ring *r)
{
	uint32_t tag;

	return !cq_ready(r, read_once(&r->cq_local), &tag);
}

int client_cq_sleep(struct vgpu_ring *r, uint32_t tail, int timeout_ms)
{
	int ret;

	if (!r->kmod)
		return vgpu_futex_wait(r->cq_tail, tail, timeout_ms);
	/* The module re-checks cq tail != head itself: nothing is lost. */
	ret = vgpu_kmod_wait(r->kmod, timeout_ms);
	return ret == -ETIMEDOUT || ret == -ESHUTDOWN ? ret : 0;
}

bool client_cq_pop(struct vgpu_ring *r, struct vgpu_cqe *out)
{
	uint32_t c = r->cq_local, tag;

	if (!cq_ready(r, c, &tag))
		return false;
	*out = *cq_at(r, c);
	out->tag = tag & ~VGPU_CQE_PHASE;
	write_once(&r->cq_local, c + 1);
	store_release(r->cq_head, c + 1);	/* C, matches D */
	return true;
}

/* ---- worker: SQ consumer ------------------------------------------------ */

/* Is the entry at head there? Its first word, through *lead. Whatever the
 * client wrote, a wrong phase only means "not yet". */
static bool sq_ready(struct vgpu_ring *r, struct vgpu_sqe *lead)
{
	lead->first = load_acquire(&sq_at(r, r->sq_local)->first);	/* B, matches A */
	return (lead->flags & VGPU_SQE_PHASE) == sq_phase(r->sq_local, r->sq_entries);
}

bool worker_sq_empty(struct vgpu_ring *r)
{
	struct vgpu_sqe lead;

	return !sq_ready(r, &lead);
}

int worker_sq_sleep(struct vgpu_ring *r, int sock, int ctl, int timeout_ms)
{
	/* The module's wait needs sq head == tail to sleep: the caller
	 * released (worker_sq_release) everything it consumed. */
	if (r->kmod)
		return vgpu_kmod_poll(r->kmod, sock, ctl, timeout_ms);
	return vgpu_bell_wait(r->bell, sock, ctl, timeout_ms);
}

bool worker_sq_pop(struct vgpu_ring *r, struct vgpu_sqe *out)
{
	struct vgpu_sqe lead;

	if (!sq_ready(r, &lead))
		return false;
	memcpy(out, sq_at(r, r->sq_local), sizeof(*out));
	/* The word checked, not a second read of it; the phase is the ring's,
	 * not a flag for the handlers. */
	out->first = lead.first;
	out->flags &= ~VGPU_SQE_PHASE;
	r->sq_local++;
	return true;
}

void worker_sq_release(struct vgpu_ring *r)
{
	if (r->payload_published != r->payload_local) {
		r->payload_published = r->payload_local;
		store_release(&r->sh->payload_head, r->payload_local);
	}
	if (r->sq_published != r->sq_local) {
		r->sq_published = r->sq_local;
		store_release(r->sq_head, r->sq_local);	/* C, matches D */
	}
}

static int payload_check(struct vgpu_ring *r, const struct vgpu_sqe *sqe,
			 uint32_t *next)
{
	uint32_t size = r->payload_size, pos = r->payload_local;
	uint32_t at = pos & (size - 1), len = sqe->payload_len;

	if (len > size / 2 || sqe->payload_off >= size)
		return -EINVAL;
	/* The client skips to 0 exactly when the payload would not fit here. */
	if (at + len > size) {
		if (sqe->payload_off != 0)
			return -EINVAL;
		pos += size - at;
	} else if (sqe->payload_off != at) {
		return -EINVAL;
	}
	*next = pos + len;
	return 0;
}

int worker_payload_take(struct vgpu_ring *r, const struct vgpu_sqe *sqe,
			void *dst, uint32_t cap)
{
	uint32_t next;

	if (!sqe->payload_len)
		return 0;
	if (payload_check(r, sqe, &next) || sqe->payload_len > cap)
		return -EINVAL;
	memcpy(dst, r->payload + sqe->payload_off, sqe->payload_len);
	r->payload_local = next;
	return sqe->payload_len;
}

int worker_payload_skip(struct vgpu_ring *r, const struct vgpu_sqe *sqe)
{
	uint32_t next;

	if (!sqe->payload_len)
		return 0;
	if (payload_check(r, sqe, &next))
		return -EINVAL;
	r->payload_local = next;
	return 0;
}

/* ---- worker: CQ producer ------------------------------------------------ */

bool worker_cq_push(struct vgpu_ring *r, const struct vgpu_cqe *cqe)
{
	struct vgpu_cqe *slot;

	if (r->cq_local - r->peer_seen >= r->cq_entries) {
		r->peer_seen = load_acquire(r->cq_head);	/* D, matches C */
		if (r->cq_local - r->peer_seen >= r->cq_entries)
			return false;
	}
	slot = cq_at(r, r->cq_local);
	/* Everything but the tag, which says that the entry is there. */
	slot->result = cqe->result;
	memcpy(slot->val, cqe->val, sizeof(slot->val));
	store_release(&slot->tag, (cqe->tag & ~VGPU_CQE_PHASE) |
				  cq_phase(r->cq_local, r->cq_entries));	/* A, matches B */
	/* For the client's futex and the module: the client polls the entry. */
	store_release(r->cq_tail, ++r->cq_local);	/* A', matches B' */
	return true;
}

void worker_cq_notify(struct vgpu_ring *r)
{
	smp_mb();	/* entry and tail before flag: pairs with the client's sleep check */
	if (!(read_once(r->cq_flags) & VGPU_CQ_NEED_WAKEUP))
		return;
	if (r->kmod)
		vgpu_kmod_doorbell(r->kmod);
	else
		vgpu_futex_wake(r->cq_tail);
}
