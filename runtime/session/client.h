/* SPDX-License-Identifier: MIT */
/*
 * The runtime's one session with the daemon, and the three ways to use it:
 * a synchronous call (wait for the answer), an asynchronous call (submit
 * and return; errors come back at the next synchronous call), and a bulk
 * transfer streamed through the staging chunks. Thread-safe.
 */
#ifndef VGPU_RUNTIME_CLIENT_H
#define VGPU_RUNTIME_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "driver.h"
#include "kmod.h"
#include "ring.h"
#include "vgpu/proto.h"

#define VGPU_HIDDEN __attribute__((visibility("hidden")))

struct vgpu_session {
	struct vgpu_welcome wl;
	struct vgpu_ring ring;
	int sock;
	void *region;			/* memfd: the region; kmod: the vgpu_shared page */
	uint8_t *pool_base;		/* == wl.host_pool_base */
	int region_fd, pool_fd;		/* memfd: kept to take a suspended session up */
	uint32_t carrier;		/* VGPU_CARRIER_* */
	struct vgpu_kmod kmod;		/* VGPU_CARRIER_KMOD: the session mapped */
};

/*
 * The session, connecting on first use (VGPU_SOCKET or the default path)
 * over the carrier VGPU_TRANSPORT names: auto (default; /dev/vgpu when it
 * opens and a vgpud is registered with it, else memfd), kmod or memfd.
 * Returns CUDA_SUCCESS, or the CUresult cuInit must answer: no daemon →
 * CUDA_ERROR_NO_DEVICE, daemon refused, VGPU_TRANSPORT=kmod without a usable
 * /dev/vgpu or a bad VGPU_TRANSPORT → CUDA_ERROR_SYSTEM_NOT_READY (logged
 * once, with the reason). Cheap after the first call.
 */
VGPU_HIDDEN CUresult vgpu_session(struct vgpu_session **out);
/* The session if connected, else NULL; never connects. */
VGPU_HIDDEN struct vgpu_session *vgpu_session_peek(void);
/* True once the worker is gone: every call then fails (see vgpu_dead_error). */
VGPU_HIDDEN bool vgpu_session_dead(void);
/* What calls return once the session is dead. */
#define VGPU_DEAD_ERROR CUDA_ERROR_LAUNCH_FAILED

/* One request. Fill sqe.opcode, .ctx, .stream, .arg[] (sqe.tag and the
 * payload fields are the client's business). */
struct vgpu_req {
	struct vgpu_sqe sqe;
	const void *payload;		/* copied into the payload ring */
	uint32_t payload_len;		/* <= vgpu_payload_max() */
	void *reply;			/* sync: reply-slot bytes land here */
	uint32_t reply_cap;
	struct vgpu_cqe cqe;		/* sync: the answer */
};

/*
 * Errors that poison the context (an illegal address, ...): once a
 * synchronous answer carries one, asynchronous calls return it at once, as
 * the driver's own launches and copies do. A primary-context reset clears it.
 */
VGPU_HIDDEN void vgpu_sticky_clear(void);

/* Largest payload one entry can carry. */
VGPU_HIDDEN uint32_t vgpu_payload_max(void);
/* Submit and wait; returns cqe.result (or a transport error). */
VGPU_HIDDEN CUresult vgpu_call(struct vgpu_req *r);
/* Submit without waiting; CUDA_SUCCESS unless the session is dead. */
VGPU_HIDDEN CUresult vgpu_post(struct vgpu_req *r);
/* Bulk: submit r (synchronous) and stream @len bytes from @src to the
 * worker through the staging chunks, or from the worker into @dst. */
VGPU_HIDDEN CUresult vgpu_call_send(struct vgpu_req *r, const void *src, uint64_t len);
VGPU_HIDDEN CUresult vgpu_call_recv(struct vgpu_req *r, void *dst, uint64_t len);

/* A reply buffer of a whole reply slot, for an answer only the worker
 * knows the length of; r->reply is the caller's to free. */
static inline CUresult vgpu_reply_whole_slot(struct vgpu_req *r)
{
	struct vgpu_session *s;
	CUresult rc = vgpu_session(&s);

	if (rc)
		return rc;
	r->reply_cap = s->ring.reply_slot_size;
	r->reply = malloc(r->reply_cap);
	return r->reply ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Convenience: sync/async call with up to five arguments and no payload. */
VGPU_HIDDEN CUresult vgpu_call5(uint16_t op, uint32_t ctx, uint32_t stream,
				uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
				uint64_t a4, struct vgpu_cqe *out);
VGPU_HIDDEN CUresult vgpu_post5(uint16_t op, uint32_t ctx, uint32_t stream,
				uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
				uint64_t a4);

/* Host callbacks: the function runs on the runtime's callback thread when
 * the worker reaches VGPU_OP_HOST_FUNC with this cookie in stream order. */
VGPU_HIDDEN uint64_t vgpu_callback_cookie(void (*fn)(void *), void *data);
/* Forget a cookie whose HOST_FUNC submission failed. */
VGPU_HIDDEN void vgpu_callback_cancel(uint64_t cookie);
/* A cookie that stays (a graph host node's: its callback runs at every
 * launch, for the life of the process), one for each function and data;
 * 0: out of memory. What a kept cookie names (false: no kept cookie). */
VGPU_HIDDEN uint64_t vgpu_callback_keep(void (*fn)(void *), void *data);
VGPU_HIDDEN bool vgpu_callback_kept(uint64_t cookie, void (**fn)(void *), void **data);

/* Where the daemon's device memory and the shared pinned pool live. */
static inline bool vgpu_is_pool(const struct vgpu_session *s, uint64_t p, uint64_t len)
{
	uint64_t base = s->wl.host_pool_base, size = s->wl.host_pool_size;

	return p >= base && len <= size && p - base <= size - len;
}

/* runtime/graph/graph_memnode.c: an address a graph allocation node holds. */
VGPU_HIDDEN bool vgpu_graph_mem_contains(uint64_t p);
/* ...and whether @p is the start of one (what cuMemFree(Async) may free). */
VGPU_HIDDEN bool vgpu_graph_mem_is_alloc(uint64_t p);

static inline bool vgpu_is_device(const struct vgpu_session *s, uint64_t p)
{
	return (p >= s->wl.dev_window_base && p - s->wl.dev_window_base < s->wl.dev_window_size) ||
	       vgpu_graph_mem_contains(p);
}

#endif
