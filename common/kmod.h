/* SPDX-License-Identifier: MIT */
/*
 * The /dev/vgpu carrier, user side: a client's session (open, SETUP, map),
 * the worker's view of it (SESSION_INFO, map), doorbells and waits, and the
 * server fd the supervisor holds (SERVER, events, ATTACH, KILL). Only
 * kmod.c includes uapi/vgpu.h; everything here returns 0 or -errno.
 */
#ifndef VGPU_KMOD_H
#define VGPU_KMOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VGPU_KMOD_DEVICE "/dev/vgpu"

/* One session's mapping, the same in the client and in its worker. */
struct vgpu_kmod {
	int fd;				/* client fd or worker fd; -1: none */
	uint64_t session_id;
	uint64_t features;		/* the module's VGPU_FEAT_* */
	uint32_t sq_entries, cq_entries;
	void *status, *rings, *arena;
	size_t status_size, rings_size, arena_size;
	const uint32_t *status_flags;	/* kernel-written: VGPU_RING_DEAD ... */
	/* inside rings, at the offsets SETUP returned */
	uint32_t *sq_head, *sq_tail, *sq_flags;
	uint32_t *cq_head, *cq_tail, *cq_flags;
	void *sqes, *cqes;
};

/* Client: open /dev/vgpu, SETUP with these sizes, map it all. */
int vgpu_kmod_client(struct vgpu_kmod *k, uint32_t sq_entries, uint32_t cq_entries,
		     uint32_t sqe_size, uint32_t cqe_size, uint64_t arena_bytes);
/* Worker: map the session behind worker fd @fd (taken over, closed on
 * error), checking the entry sizes it was set up with. */
int vgpu_kmod_worker(struct vgpu_kmod *k, int fd, uint32_t sqe_size, uint32_t cqe_size);
void vgpu_kmod_close(struct vgpu_kmod *k);

/* The session is over (status page; no system call). */
bool vgpu_kmod_dead(const struct vgpu_kmod *k);
/* "I produced": wakes the other side's WAIT/poll. */
int vgpu_kmod_doorbell(const struct vgpu_kmod *k);
/* Sleeps until the ring this fd consumes has entries: 0, -ETIMEDOUT,
 * -ESHUTDOWN (dead), -EINTR. */
int vgpu_kmod_wait(const struct vgpu_kmod *k, int timeout_ms);
/* Worker: as vgpu_kmod_wait, also watching @sock for a hang-up and @ctl
 * (if not negative) for an order: 1 entries or an order, 0 timed out,
 * -EPIPE dead or hung up. */
int vgpu_kmod_poll(const struct vgpu_kmod *k, int sock, int ctl, int timeout_ms);

/* ---- pinned regions ---------------------------------------------------- */

/* The module marks regions stale when the client's mapping changes
 * (VGPU_FEAT_PIN_NOTIFY): registrations may be cached and reused. */
bool vgpu_kmod_pin_notify(const struct vgpu_kmod *k);

struct vgpu_kmod_region {
	uint64_t handle;		/* also the worker's mmap offset */
	uint64_t addr, len;		/* the client's range */
	uint64_t map_len;		/* covering pages */
	uint32_t page_offset;		/* addr within its first page */
	bool readonly, stale;
};

/* Client: pin [addr, addr + len) (read-only for uploads only): 0 with *out
 * filled, or -ENOMEM (RLIMIT_MEMLOCK), -ENOSPC (module limit), -EFAULT
 * (not all mapped, or read-only and !readonly), ... */
int vgpu_kmod_register(const struct vgpu_kmod *k, uint64_t addr, uint64_t len, bool readonly,
		       struct vgpu_kmod_region *out);
int vgpu_kmod_unregister(const struct vgpu_kmod *k, uint64_t handle);
/* Client or worker: 0 live, -ESTALE stale, -ENOENT unknown. */
int vgpu_kmod_region_check(const struct vgpu_kmod *k, uint64_t handle);
/* Worker: what the handle is now; -ENOENT unknown. */
int vgpu_kmod_region_info(const struct vgpu_kmod *k, uint64_t handle,
			  struct vgpu_kmod_region *out);
/* Worker: maps the whole region (map_len bytes); NULL with errno set. */
void *vgpu_kmod_region_map(const struct vgpu_kmod *k, const struct vgpu_kmod_region *r);

/* ---- server (vgpud's supervisor) --------------------------------------- */

/* Registers as the module's server: an O_NONBLOCK fd, or -ENOENT (no
 * device), -EPERM (no privilege), -EBUSY (another server). */
int vgpu_kmod_server(void);

#define VGPU_KMOD_OPENED	1
#define VGPU_KMOD_CLOSED	2
#define VGPU_KMOD_DOORBELL	3

struct vgpu_kmod_event {
	uint32_t type;			/* VGPU_KMOD_* */
	uint32_t pid, uid;		/* OPENED only; pid 0: unseen */
	uint64_t session_id;
};

/* 1 with an event in *ev, 0 when none is queued, or -errno. */
int vgpu_kmod_read_event(int server_fd, struct vgpu_kmod_event *ev);
/* A new worker fd for @session_id, or -errno. */
int vgpu_kmod_attach(int server_fd, uint64_t session_id);
int vgpu_kmod_kill(int server_fd, uint64_t session_id);

#endif
