/* SPDX-License-Identifier: MIT */
/*
 * Both ends of a session's shared region: the SQ/CQ rings, the payload
 * ring, reply slots and staging chunks, whatever carrier mapped them.
 * Producer/consumer roles follow include/vgpu/proto.h; every function here
 * is called by exactly one side, named in its prefix (client_/worker_).
 */
#ifndef VGPU_RING_H
#define VGPU_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kmod.h"
#include "vgpu/proto.h"

struct vgpu_ring {
	struct vgpu_shared *sh;
	/* The ring index words: in *sh on the memfd carrier, in the module's
	 * rings header on /dev/vgpu. Set at attach time. */
	uint32_t *sq_head, *sq_tail, *sq_flags;
	uint32_t *cq_head, *cq_tail, *cq_flags;
	struct vgpu_sqe *sq;
	struct vgpu_cqe *cq;
	uint8_t *payload;
	uint8_t *reply;
	uint8_t *staging;
	struct vgpu_device_info *devinfo;
	uint32_t sq_entries, cq_entries;
	uint32_t payload_size;
	uint32_t reply_slot_size;
	uint32_t staging_chunk, staging_chunks;
	uint32_t device_count;
	size_t region_size;
	int bell;		/* the worker's doorbell (eventfd) */
	const struct vgpu_kmod *kmod;	/* /dev/vgpu carrier, else NULL */
	/* private to the side that owns the ring end */
	uint32_t sq_local;	/* client: next tail; worker: next head */
	uint32_t cq_local;	/* worker: next tail; client: next head */
	uint32_t payload_local;	/* client: next tail; worker: expected head */
	/* The other side's counter as last read (client: sq_head; worker:
	 * cq_head), re-read only when the ring looks full: a read of a line
	 * the other side writes is a cache miss on every call. */
	uint32_t peer_seen;
	uint32_t payload_seen;	/* client: payload_head as last read */
	/* worker: sq_head and payload_head as last published */
	uint32_t sq_published, payload_published;
};

/* Region layout for the given sizes; fills the offset fields of *w. */
int vgpu_layout(struct vgpu_welcome *w, uint32_t sq_entries, uint32_t cq_entries,
		uint32_t payload_size, uint32_t staging_chunk,
		uint32_t staging_chunks, uint32_t device_count);
/* Points *r into a mapped region after checking every offset of *w. */
int vgpu_ring_attach(struct vgpu_ring *r, void *base, size_t size,
		     const struct vgpu_welcome *w);

/* The same over /dev/vgpu: *r keeps @k (SQ/CQ entries and index words in
 * the module's rings), @hdr (a page: struct vgpu_shared, for the words
 * other than the ring indices) and the module's arena as the region, of
 * which the layout uses w->region_size bytes. */
int vgpu_ring_attach_kmod(struct vgpu_ring *r, void *hdr, const struct vgpu_kmod *k,
			  const struct vgpu_welcome *w);
/* The carrier says the session is over (kmod status page; no system call). */
bool vgpu_ring_dead(const struct vgpu_ring *r);

/* The worker's doorbell: an eventfd write, and a wait on it or a hang-up. */
void vgpu_bell_ring(int fd);
/* Returns 1 woken (the bell, or @ctl readable: an order), 0 timed out,
 * -EPIPE if @sock or @ctl hung up; a negative fd is not watched. */
int vgpu_bell_wait(int bell, int sock, int ctl, int timeout_ms);

/* client: SQ producer. Writes @e at the tail, its first word last with
 * the lap's phase, and rings the worker if it sleeps; false when full. */
bool client_sq_push(struct vgpu_ring *r, const struct vgpu_sqe *e);
/* Is there room for one more entry? */
bool client_sq_room(struct vgpu_ring *r);
/* Payload space in SQ order; NULL when the ring is full for now. */
void *client_payload_alloc(struct vgpu_ring *r, uint32_t len, uint32_t *off);
/* client: CQ consumer */
bool client_cq_pop(struct vgpu_ring *r, struct vgpu_cqe *out);
/* Polls the phase of the entry at head, not cq_tail. */
bool client_cq_empty(struct vgpu_ring *r);
/* Sleeps while cq_tail reads @tail (the caller read it, then set cq_flags
 * and re-checked client_cq_empty):
 * 0 woken or changed, -ETIMEDOUT, -ESHUTDOWN (the carrier says dead). */
int client_cq_sleep(struct vgpu_ring *r, uint32_t tail, int timeout_ms);

/* worker: SQ consumer, polling the phase of the entry at head, not sq_tail.
 * Copies the entry out before anyone looks at it, the phase bit stripped.
 * What it pops and takes goes back to the client only at
 * worker_sq_release: once the SQ is empty or every few entries, so that
 * the client's line is not stolen from it between its call and its answer. */
bool worker_sq_pop(struct vgpu_ring *r, struct vgpu_sqe *out);
void worker_sq_release(struct vgpu_ring *r);
bool worker_sq_empty(struct vgpu_ring *r);
/* Sleeps until the client rings (the caller set sq_flags and re-checked)
 * or @sock hangs up: 1 woken, 0 timed out, -EPIPE gone. */
int worker_sq_sleep(struct vgpu_ring *r, int sock, int ctl, int timeout_ms);
/* Copies and releases the payload of @sqe into @dst (len <= @cap).
 * Returns the length, or -EINVAL when the entry lies about it. */
int worker_payload_take(struct vgpu_ring *r, const struct vgpu_sqe *sqe,
			void *dst, uint32_t cap);
/* Releases a payload without reading it (entry rejected for other reasons). */
int worker_payload_skip(struct vgpu_ring *r, const struct vgpu_sqe *sqe);
/* worker: CQ producer; false when the CQ is full. Caller serialises. */
bool worker_cq_push(struct vgpu_ring *r, const struct vgpu_cqe *cqe);
void worker_cq_notify(struct vgpu_ring *r);

static inline uint8_t *vgpu_reply_slot(struct vgpu_ring *r, uint32_t tag)
{
	return r->reply + (size_t)(tag - 1) * r->reply_slot_size;
}

static inline uint8_t *vgpu_staging_chunk(struct vgpu_ring *r, uint32_t i)
{
	return r->staging + (size_t)i * r->staging_chunk;
}

#endif
