/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * vgpu.ko user-space ABI: /dev/vgpu ioctls, mmap offsets, server events and
 * the "vgpu" generic netlink family.
 *
 * Roles. Every open() of /dev/vgpu starts with no role; the first role ioctl
 * fixes it for the life of the open file description:
 *
 *   client  VGPU_IOC_SETUP makes the fd a session. The module allocates the
 *           session's pages (a read-only status page, one rings area holding a
 *           small header plus the SQ and CQ entry arrays, and a data arena) and
 *           returns the mmap offset and size of each, and the byte offsets of
 *           every ring field, io_uring style. The session lives until the last
 *           reference to the fd goes (close, exit, kill).
 *   server  VGPU_IOC_SERVER (CAP_SYS_ADMIN in the initial user namespace; one
 *           server at a time, -EBUSY otherwise) makes the fd the server. The
 *           server read()s fixed-size struct vgpu_event records (opened,
 *           closed, doorbell) and poll()s for them. VGPU_IOC_ATTACH returns a
 *           new fd, the worker fd, for one session; pass it to the worker
 *           process (fork, SCM_RIGHTS).
 *   worker  A worker fd mmaps the session's status page, rings and arena at
 *           the same offsets as the client (the same pages), and the client's
 *           pinned regions at offset == handle. SQ consumer, CQ producer.
 *
 * Only a session set up while a server is registered exists: SETUP without a
 * server fails with -ECONNREFUSED. A session belongs to the server that was
 * registered at SETUP time.
 *
 * Rings. Both rings are single-producer single-consumer arrays of
 * fixed-size entries whose contents the module never reads. Indices are
 * free-running __u32 counters; entry i lives at entries + (i & ring_mask) *
 * entry_size. The client produces SQEs (writes sq.tail) and consumes CQEs
 * (writes cq.head); the worker consumes SQEs (writes sq.head) and produces
 * CQEs (writes cq.tail). Publish entries with a store-release of the tail;
 * read the other side's index with a load-acquire.
 *
 * Doorbells. A consumer that wants to sleep sets VGPU_RING_NEED_WAKEUP in its
 * ring's flags word (the worker in sq.flags, the client in cq.flags), issues
 * a full barrier (A), re-checks the ring and only then sleeps in
 * VGPU_IOC_WAIT or poll(). A producer, after publishing the tail, issues a
 * full barrier (B, pairs with A) and calls VGPU_IOC_DOORBELL only if the
 * other side's NEED_WAKEUP bit is set; otherwise it never enters the kernel.
 * The kernel's wait condition re-reads the ring (tail != head), so a wakeup
 * is never lost. Each fd's doorbell means "I produced": a client doorbell
 * wakes the worker (and queues one coalesced VGPU_EVENT_DOORBELL to the
 * server), a worker doorbell wakes the client.
 *
 * Pinned regions. The client registers any user range (any alignment, any
 * length >= 1) with VGPU_IOC_REGISTER. The module pins the covering pages
 * (long-term, writable unless VGPU_REGION_READONLY), charges them to the
 * caller's RLIMIT_MEMLOCK (mm->pinned_vm; CAP_IPC_LOCK skips the limit) and
 * to the module-wide limit max_pinned_mb, and returns a handle. The worker
 * mmaps handle (plus any whole-page delta) on its worker fd with MAP_SHARED
 * and finds the client's byte at (address of the map) + page_offset. The
 * worker's view has no struct pages (VM_PFNMAP): it cannot be pinned again.
 * UNREGISTER, client exit, server exit and KILL first remove every worker
 * mapping of the region, then unpin; a later access by the worker gets
 * SIGBUS.
 *
 * Stale regions (VGPU_FEAT_PIN_NOTIFY). A region keeps the pages that backed
 * its range at REGISTER time. When the client's mapping of any page of the
 * range changes in a way that can put other pages behind it (munmap, mremap,
 * madvise(MADV_DONTNEED), a new mmap over it, copy-on-write, the client's
 * exit), the region becomes stale: it keeps its pin and its worker mappings
 * (the old pages) until UNREGISTER, but no longer shows what the client sees
 * at those addresses. Protection changes (mprotect, fork's write-protect,
 * NUMA hinting, soft-dirty) do not make a region stale; the kernel may also
 * report a region stale that did not change (an attempt to reclaim or
 * migrate a pinned page), never the reverse. REGION_CHECK (client or worker
 * fd) answers 0 for a live region and -ESTALE for a stale one, in one cheap
 * system call: a client that caches registrations checks before it reuses
 * one, and registers the range again when it is stale. REGION_INFO sets
 * VGPU_REGION_STALE in the returned flags. A new registration is never
 * stale when REGISTER returns (the pin is retried if the mapping changed
 * while it was being taken; -EAGAIN if it keeps changing).
 *
 * Death. When the server exits or kills a session, or the client closes it,
 * the session is dead: VGPU_RING_DEAD (plus a reason bit) is set in the
 * status page's flags word so a spinning peer notices without a system call,
 * sleepers are woken, poll() reports EPOLLHUP, and every later DOORBELL,
 * WAIT, REGISTER, ATTACH fails with -ESHUTDOWN. Entries already in a ring
 * stay readable in memory.
 *
 * Errors (negated errno from ioctl/mmap/read):
 *   -ENOTTY        unknown ioctl (also: right number, wrong size or direction)
 *   -EINVAL        bad size, unknown flag, non-zero reserved field, length 0,
 *                  range overflow, MAP_PRIVATE, offset/length outside a region
 *   -EBADFD        call not valid for this fd's role or state (SETUP twice,
 *                  REGISTER on a server fd, mmap before SETUP, ...)
 *   -EFAULT        bad argument pointer; range not fully mapped in the caller
 *   -ENOMEM        out of memory; RLIMIT_MEMLOCK would be exceeded
 *   -ENOSPC        max_pinned_mb would be exceeded; too many regions
 *   -ENOENT        unknown handle or session id
 *   -EPERM         no privilege (SERVER, netlink admin ops); writable mmap of
 *                  a read-only part (status page, READONLY region)
 *   -EBUSY         another server is registered
 *   -ECONNREFUSED  SETUP while no server is registered
 *   -ESHUTDOWN     the session is dead (see Death)
 *   -ETIMEDOUT     WAIT timed out
 *   -EINTR         WAIT interrupted by a signal
 *   -EAGAIN        read() on an O_NONBLOCK server fd with no event queued;
 *                  REGISTER while the range's mapping keeps changing
 *   -ESTALE        REGION_CHECK: the region is stale (see Stale regions)
 */
#ifndef _UAPI_VGPU_H
#define _UAPI_VGPU_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define VGPU_ABI_VERSION	1
#define VGPU_DEVICE_NAME	"vgpu"

/* Feature bits, reported by GET_INFO and SETUP. */
#define VGPU_FEAT_RINGS		(1ULL << 0)	/* SQ/CQ/arena, doorbells */
#define VGPU_FEAT_PIN		(1ULL << 1)	/* pinned-page regions */
#define VGPU_FEAT_REGION_RO	(1ULL << 2)	/* VGPU_REGION_READONLY */
#define VGPU_FEAT_WAIT_TIMEOUT	(1ULL << 3)	/* WAIT honours timeout_ns */
#define VGPU_FEAT_NETLINK	(1ULL << 4)	/* "vgpu" genl family */
#define VGPU_FEAT_PIN_NOTIFY	(1ULL << 5)	/* stale regions, REGION_CHECK */
#define VGPU_FEATURES		0x3fULL

/* Bounds (all counts and sizes are powers of two). */
#define VGPU_MAX_SQ_ENTRIES	32768
#define VGPU_MAX_CQ_ENTRIES	65536
#define VGPU_MIN_ENTRY_SIZE	16
#define VGPU_MAX_ENTRY_SIZE	256
#define VGPU_MAX_ARENA_BYTES	(256ULL << 20)	/* 0 = no arena, else >= page */
#define VGPU_MAX_REGION_BYTES	(1ULL << 36)	/* covering pages of one region */
#define VGPU_MAX_REGIONS	65535		/* per session */

/*
 * mmap offsets, per session, valid on the client fd and on worker fds.
 * A mapping must be MAP_SHARED and lie inside one part; it may start at any
 * page of the part. Read-only parts refuse PROT_WRITE with -EPERM.
 */
#define VGPU_OFF_STATUS		0x00000000ULL	/* 1 page, read-only */
#define VGPU_OFF_RINGS		0x10000000ULL	/* header + SQEs + CQEs */
#define VGPU_OFF_ARENA		0x20000000ULL	/* arena_bytes */
#define VGPU_REGION_SHIFT	36		/* handle = index << SHIFT */

/* Status page flags word (kernel-written only). */
#define VGPU_RING_DEAD		(1U << 0)	/* session is over */
#define VGPU_RING_SERVER_GONE	(1U << 1)	/* ...because the server exited */
#define VGPU_RING_CLIENT_GONE	(1U << 2)	/* ...because the client closed */
#define VGPU_RING_KILLED	(1U << 3)	/* ...because of KILL */

/* Ring flags words: sq.flags written by the worker, cq.flags by the client. */
#define VGPU_RING_NEED_WAKEUP	(1U << 0)

/* GET_INFO: any fd, any role. Out only. */
struct vgpu_info {
	__u32 abi_version;
	__u32 page_size;
	__u64 features;
	__u32 max_sq_entries;
	__u32 max_cq_entries;
	__u64 max_arena_bytes;
	__u32 min_entry_size;
	__u32 max_entry_size;
	__u64 max_region_bytes;
	__u64 max_pinned_bytes;		/* module-wide, max_pinned_mb */
	__u64 resv[4];
};

/* Byte offsets inside the rings mapping, and the ring's geometry. */
struct vgpu_ring_offsets {
	__u32 head;		/* __u32, written by the consumer */
	__u32 tail;		/* __u32, written by the producer */
	__u32 flags;		/* __u32, written by the consumer */
	__u32 entries;		/* entry 0 */
	__u32 ring_entries;
	__u32 ring_mask;
	__u32 entry_size;
	__u32 resv;
};

/*
 * SETUP (client, once): in fields are validated, out fields are written.
 * SESSION_INFO (client after SETUP, or worker): the same record, all fields
 * written.
 */
struct vgpu_setup {
	/* in */
	__u32 sq_entries;	/* 1..VGPU_MAX_SQ_ENTRIES */
	__u32 cq_entries;	/* 1..VGPU_MAX_CQ_ENTRIES */
	__u32 sqe_size;		/* VGPU_MIN_ENTRY_SIZE..VGPU_MAX_ENTRY_SIZE */
	__u32 cqe_size;		/* same */
	__u64 arena_bytes;	/* 0 or page size..VGPU_MAX_ARENA_BYTES */
	__u32 flags;		/* none defined: 0 */
	__u32 resv0;
	/* out */
	__u64 session_id;
	__u64 features;
	__u32 abi_version;
	__u32 status_flags;	/* byte offset of the flags word in status */
	struct vgpu_ring_offsets sq;
	struct vgpu_ring_offsets cq;
	__u64 status_off;	/* mmap offset and length of each part */
	__u64 status_size;
	__u64 rings_off;
	__u64 rings_size;
	__u64 arena_off;
	__u64 arena_size;
	__u64 resv[4];
};

/* WAIT: sleep until the ring this fd consumes is non-empty. */
#define VGPU_WAIT_FOREVER	(~0ULL)
struct vgpu_wait {
	__u64 timeout_ns;	/* relative; 0 = just test; VGPU_WAIT_FOREVER */
	__u32 flags;		/* none defined: 0 */
	__u32 resv;
};

/*
 * REGISTER (client): in addr, len, flags; out the rest.
 * REGION_INFO (worker): in handle; out the rest (addr is the client's).
 * REGION_CHECK (client or worker): the __u64 handle; 0 live, -ESTALE stale.
 */
#define VGPU_REGION_READONLY	(1U << 0)	/* pin for reading only */
#define VGPU_REGION_FLAGS	VGPU_REGION_READONLY
#define VGPU_REGION_STALE	(1U << 31)	/* out only, REGION_INFO */
struct vgpu_region {
	__u64 addr;
	__u64 len;
	__u32 flags;
	__u32 page_offset;	/* out: addr & (page size - 1) */
	__u64 handle;		/* out: also the worker's mmap offset */
	__u64 map_len;		/* out: covering pages, in bytes */
	__u64 resv[2];
};

/* SERVER: make this fd the server. */
struct vgpu_server_setup {
	__u32 flags;		/* none defined: 0 */
	__u32 resv0;
	__u64 resv[3];
};

/* ATTACH (server): returns a new O_CLOEXEC worker fd for the session. */
struct vgpu_attach {
	__u64 session_id;
	__u32 flags;		/* none defined: 0 */
	__u32 resv0;
};

/* KILL (server): make a session dead (VGPU_RING_KILLED). */
struct vgpu_kill {
	__u64 session_id;
	__u32 flags;		/* none defined: 0 */
	__u32 resv0;
};

#define VGPU_IOC_MAGIC		0xB9
#define VGPU_IOC_GET_INFO	_IOR(VGPU_IOC_MAGIC, 0x00, struct vgpu_info)
#define VGPU_IOC_SETUP		_IOWR(VGPU_IOC_MAGIC, 0x01, struct vgpu_setup)
#define VGPU_IOC_SESSION_INFO	_IOR(VGPU_IOC_MAGIC, 0x02, struct vgpu_setup)
#define VGPU_IOC_DOORBELL	_IO(VGPU_IOC_MAGIC, 0x03)	/* arg 0 */
#define VGPU_IOC_WAIT		_IOW(VGPU_IOC_MAGIC, 0x04, struct vgpu_wait)
#define VGPU_IOC_REGISTER	_IOWR(VGPU_IOC_MAGIC, 0x05, struct vgpu_region)
#define VGPU_IOC_UNREGISTER	_IOW(VGPU_IOC_MAGIC, 0x06, __u64)
#define VGPU_IOC_REGION_INFO	_IOWR(VGPU_IOC_MAGIC, 0x07, struct vgpu_region)
#define VGPU_IOC_REGION_CHECK	_IOW(VGPU_IOC_MAGIC, 0x08, __u64)
#define VGPU_IOC_SERVER		_IOW(VGPU_IOC_MAGIC, 0x10, struct vgpu_server_setup)
#define VGPU_IOC_ATTACH		_IOW(VGPU_IOC_MAGIC, 0x11, struct vgpu_attach)
#define VGPU_IOC_KILL		_IOW(VGPU_IOC_MAGIC, 0x12, struct vgpu_kill)

/*
 * Server events: read() returns whole records only (a buffer smaller than
 * one record: -EINVAL); it blocks unless O_NONBLOCK. OPENED carries the
 * client's identity as seen from the reader's pid and user namespaces;
 * CLOSED and DOORBELL carry only type, size and session_id. At most one
 * DOORBELL per session is queued at a time.
 */
#define VGPU_EVENT_OPENED	1
#define VGPU_EVENT_CLOSED	2
#define VGPU_EVENT_DOORBELL	3

struct vgpu_event {
	__u32 type;
	__u32 size;		/* sizeof(struct vgpu_event) */
	__u64 session_id;
	__u64 cgroup_id;	/* cgroup v2 id of the client at open */
	__u32 pid;		/* tgid of the client at open, 0 if unseen */
	__u32 tid;
	__u32 uid;		/* euid */
	__u32 gid;		/* egid */
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 sqe_size;
	__u32 cqe_size;
	__u64 arena_bytes;
	__u8 comm[16];		/* NUL-terminated */
	__u64 resv[6];
};

/*
 * Generic netlink family VGPU_GENL_NAME, init_net only.
 *
 *   GET_SESSION  dump: every session the caller may see (CAP_NET_ADMIN: all;
 *                otherwise only sessions whose client euid is the caller's
 *                euid); doit with VGPU_A_SESSION_ID: that one session.
 *                Reply attrs: SESSION_ID, STATE, PID, UID, COMM, CGROUP_ID,
 *                SQ_ENTRIES, CQ_ENTRIES, ARENA_BYTES, PINNED_BYTES, REGIONS,
 *                SUBMITTED (client doorbells), COMPLETED (worker doorbells).
 *   GET_STATS    doit, anyone: STAT_* attributes.
 *   KILL_SESSION doit, CAP_NET_ADMIN: VGPU_A_SESSION_ID.
 *   Multicast group VGPU_GENL_MCGRP_EVENTS (CAP_NET_ADMIN to join):
 *                SESSION_OPENED / SESSION_CLOSED with the session attrs.
 */
#define VGPU_GENL_NAME		"vgpu"
#define VGPU_GENL_VERSION	1
#define VGPU_GENL_MCGRP_EVENTS	"events"

#define VGPU_CMD_UNSPEC		0
#define VGPU_CMD_GET_SESSION	1
#define VGPU_CMD_GET_STATS	2
#define VGPU_CMD_KILL_SESSION	3
#define VGPU_CMD_SESSION_OPENED	4
#define VGPU_CMD_SESSION_CLOSED	5
#define VGPU_CMD_MAX		5

#define VGPU_A_UNSPEC		0
#define VGPU_A_PAD		1
#define VGPU_A_SESSION_ID	2	/* u64 */
#define VGPU_A_STATE		3	/* u32, VGPU_STATE_* */
#define VGPU_A_PID		4	/* u32 */
#define VGPU_A_UID		5	/* u32 */
#define VGPU_A_COMM		6	/* string */
#define VGPU_A_CGROUP_ID	7	/* u64 */
#define VGPU_A_SQ_ENTRIES	8	/* u32 */
#define VGPU_A_CQ_ENTRIES	9	/* u32 */
#define VGPU_A_ARENA_BYTES	10	/* u64 */
#define VGPU_A_PINNED_BYTES	11	/* u64, covering pages */
#define VGPU_A_REGIONS		12	/* u32 */
#define VGPU_A_SUBMITTED	13	/* u64 */
#define VGPU_A_COMPLETED	14	/* u64 */
#define VGPU_A_STAT_SESSIONS	15	/* u64, open now */
#define VGPU_A_STAT_SESSIONS_TOTAL 16	/* u64, ever set up */
#define VGPU_A_STAT_PINNED_PAGES 17	/* u64, now */
#define VGPU_A_STAT_REGIONS	18	/* u64, now */
#define VGPU_A_STAT_REGISTRATIONS 19	/* u64, ever */
#define VGPU_A_STAT_DOORBELLS	20	/* u64, ever, both directions */
#define VGPU_A_STAT_SERVER	21	/* u32, 1 if a server is registered */
#define VGPU_A_STAT_WORKERS	22	/* u64, worker fds now */
#define VGPU_A_STAT_MAX_PINNED_PAGES 23	/* u64 */
#define VGPU_A_MAX		23

#define VGPU_STATE_READY	1
#define VGPU_STATE_DEAD		2

#endif /* _UAPI_VGPU_H */
