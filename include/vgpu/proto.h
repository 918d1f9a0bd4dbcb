/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * vgpu wire protocol: what the runtime (client, inside the CUDA program) and
 * the daemon's worker (server, owns the GPU context) exchange. The same
 * entries travel over every carrier: a memfd (default), /dev/vgpu pages, TCP.
 *
 * Connection
 *   0. /dev/vgpu carrier only (VGPU_TRANSPORT=auto finds the device and a
 *      registered vgpud, or VGPU_TRANSPORT=kmod insists): the client opens
 *      /dev/vgpu, sets a session up (VGPU_IOC_SETUP: SQ of 64-byte SQEs, CQ
 *      of 32-byte CQEs, an arena) and maps it; the hello then names the
 *      carrier and the session id. The supervisor, the module's server,
 *      checks that the session was opened by the process at the other end of
 *      the socket (the OPENED event's pid against SO_PEERCRED), attaches it
 *      and passes the worker fd to the worker. Then as for memfd, except:
 *      SQ/CQ entries and their head, tail and flags words are the module's
 *      rings; the payload ring, reply slots, staging chunks and device
 *      snapshot are the module's arena, at the welcome's offsets; the first
 *      descriptor of the welcome is a one-page memfd holding struct
 *      vgpu_shared, whose words other than the ring indices are futex
 *      words (a futex cannot live in the module's pages, which have no
 *      file mapping); SQ/CQ doorbells are VGPU_IOC_DOORBELL and VGPU_IOC_WAIT
 *      or poll() on the /dev/vgpu fds, and the module's status page says
 *      when the session is dead.
 *   1. The client connects to the daemon's Unix socket (SOCK_SEQPACKET)
 *      and sends a struct vgpu_hello, with its stdout as SCM_RIGHTS so
 *      device printf output reaches the program's own stdout. The daemon
 *      checks the peer with SO_PEERCRED.
 *   2. The daemon hands the connection to a worker, which answers with a
 *      struct vgpu_welcome and, with SCM_RIGHTS, three descriptors: the
 *      shared region (memfd), the worker's doorbell (eventfd, the client
 *      writes it) and the pinned-host pool (memfd), which both sides map at
 *      host_pool_base so pointers into it are the same in both processes.
 *      On refusal the welcome carries a negative errno in .status, a
 *      message, and no descriptors.
 *   3. The shared region starts with struct vgpu_shared and holds, at the
 *      offsets the welcome gives: the submission ring (SQ, vgpu_sqe), the
 *      completion ring (CQ, vgpu_cqe), the payload ring, the reply slots, the
 *      staging chunks and the device snapshot (struct vgpu_device_info[]).
 *   4. The socket stays open for the session's life: either side closing it
 *      ends the session. The worker exits and returns every GPU resource.
 *
 * Rings
 *   SQ: single producer (the client, serialised by a client-side lock),
 *   single consumer (the worker). CQ: single producer (the worker, its two
 *   threads serialised by a lock), single consumer (whichever client
 *   thread holds the reap lock). Heads and tails are free-running u32
 *   counters; index = counter & (entries - 1).
 *   Each entry's first word carries a phase bit (VGPU_SQE_PHASE in
 *   sqe.flags, VGPU_CQE_PHASE in cqe.tag): the producer sets it to 1 on
 *   laps 0, 2, 4, ... of the counter and to 0 on laps 1, 3, ..., so a
 *   zero-filled ring reads as empty and an entry left from the lap before
 *   reads as not yet written. The consumer polls the entry at its head,
 *   not the producer's tail: a call and its answer then each move one
 *   cache line between the two cores (the entry's) instead of two (the
 *   tail's, then the entry's).
 *   Producer: write every field but the first word, then store-release
 *   the first word with the lap's phase (A, pairs with B), then
 *   store-release tail (A', pairs with B' below).
 *   Consumer: load-acquire the first word of the entry at head (B); the
 *   entry is there when its phase is the lap's; read the rest, strip the
 *   phase, store-release head (C).
 *   Producer reads head with load-acquire (D, pairs with C) before reuse.
 *   The tails are still stored: they are the words the doorbells sleep
 *   on (the client's futex on cq_tail, the module's wait on /dev/vgpu),
 *   and what diagnostics and a worker taking a session up read (B', a
 *   load-acquire). Neither side reads them on its fast path.
 *   Each side keeps the other's head as last read and reads it again
 *   only when the ring looks full; the worker stores sq_head and
 *   payload_head once the SQ is empty or every few entries, not per entry.
 *   Each store to a line the other side polls costs a cache miss, so the
 *   fewer there are between a call and its answer, the faster the call:
 *   on the memfd carrier each tail shares its line with nothing the other
 *   side writes or the same side writes often, and each head has a line
 *   of its own (struct vgpu_shared).
 *   A client that writes a wrong phase only stalls itself: to the worker
 *   its entry is not there yet.
 *
 * Doorbells (io_uring style)
 *   A side about to sleep sets its NEED_WAKEUP/WAITS flag, issues a full
 *   fence, re-checks the word it waits on (for the rings: the phase of the
 *   entry at its head), and only then sleeps. The other
 *   side, after publishing, issues a full fence and wakes it only if the
 *   flag is set, so a busy pair never makes a system call. The worker sleeps
 *   on its eventfd (polled together with the socket, so a dead client is
 *   seen at once); client threads sleep on the shared word itself as a
 *   futex (cq_tail, a chunk's seq, ...), with a bounded timeout after which
 *   they check that the worker is still there.
 *
 * Payloads
 *   An SQE whose arguments do not fit in arg[] carries payload_off/len into
 *   the payload ring. Payloads are allocated in SQ order; the worker copies
 *   a payload out (never trusting it in place), then releases it by storing
 *   payload_head past it. A payload never wraps: the client skips to offset
 *   0 when the tail of the ring is too short.
 *
 * Replies
 *   A synchronous call puts a non-zero tag in its SQE. The worker answers
 *   with one CQE carrying the same tag, the CUresult and up to three u64
 *   values. Larger answers go to reply slot (tag - 1) in the shared region
 *   (reply_slot_size bytes each); cqe.val[2] then holds the byte count.
 *   Asynchronous calls (tag 0) get no CQE: an error they cause is kept by
 *   the worker and returned by the next synchronous call on the session,
 *   as CUDA defers it; sticky errors keep being returned.
 *
 * Bulk transfers (staging chunks)
 *   Copies of pageable memory and large module images stream through
 *   staging chunks in pipelined fashion, so their size is not bounded by
 *   any buffer. Each chunk has a control word (struct vgpu_chunk_ctl):
 *   the side that fills a chunk stores the sequence number of the piece
 *   with release semantics, the side that drains it stores ~seq when done.
 *   One bulk transfer at a time per session (the client serialises).
 *
 * Pinned copies (/dev/vgpu carrier, VGPU_FEAT_PINNED_COPY)
 *   Pageable copies of at least a few hundred KiB need no staging: the
 *   client registers the pages covering its buffer with the module
 *   (VGPU_IOC_REGISTER, a handle; the runtime caches registrations and
 *   checks a cached one with VGPU_IOC_REGION_CHECK before reuse) and sends
 *   MEMCPY_HTOD_PINNED / MEMCPY_DTOH_PINNED naming the handle and a byte
 *   offset from the registered address. The worker maps the handle on its
 *   worker fd (once; REGION_INFO tells it the region's length, which bounds
 *   offset + bytes) and copies between that mapping and the device; the
 *   answer comes once the copy is complete. After VGPU_IOC_UNREGISTER the
 *   client posts PIN_FORGET so the worker drops its mapping; entries are in
 *   order, so a handle the module issues again is never confused with the
 *   old one. A handle that is not the session's, or a range outside the
 *   region, fails the call with CUDA_ERROR_INVALID_VALUE.
 *
 * Host callbacks
 *   The worker asks the client to run a host function by posting a CQE with
 *   tag 0, val[0] = the cookie the client gave in VGPU_OP_HOST_FUNC and
 *   val[1] = a sequence number. The client runs it on its callback thread,
 *   then stores the sequence number in cb_ack[seq % VGPU_CB_SLOTS] and wakes
 *   that word as a futex; work behind the callback in its stream waits until
 *   then. Callbacks of different streams may finish in any order, so each
 *   has its own acknowledgement; the worker keeps fewer than VGPU_CB_SLOTS
 *   in flight.
 *
 * Everything in the shared region is written by the other side too: the
 * worker copies every entry and payload out of shared memory and validates
 * it before use. A bad entry fails that call with an error, never the worker.
 */
#ifndef VGPU_PROTO_H
#define VGPU_PROTO_H

#include <stdint.h>

#include "vgpu/calls_gen.h"

#define VGPU_PROTO_MAGIC	0x55504756u	/* "VGPU" */
#define VGPU_PROTO_VERSION	10u

/* Feature word negotiated at connect: the worker answers the subset it has. */
#define VGPU_FEAT_STAGING	(1u << 0)	/* bulk staging chunks */
#define VGPU_FEAT_HOST_POOL	(1u << 1)	/* shared pinned-host pool */
#define VGPU_FEAT_HOST_CALLBACK	(1u << 2)	/* host functions run in client */
#define VGPU_FEAT_PINNED_COPY	(1u << 3)	/* MEMCPY_*_PINNED (/dev/vgpu only) */
#define VGPU_FEAT_ALL		(VGPU_FEAT_STAGING | VGPU_FEAT_HOST_POOL | \
				 VGPU_FEAT_HOST_CALLBACK | VGPU_FEAT_PINNED_COPY)

#define VGPU_DEFAULT_SOCKET	"/run/vgpu/client/vgpud.sock"

/* Limits the daemon enforces on what a client may ask for. */
#define VGPU_PROTO_MAX_SQ	4096u
#define VGPU_PROTO_MAX_CQ	8192u
#define VGPU_MAX_DEVICES	16u
#define VGPU_MAX_KERNEL_PARAMS	1024u	/* cuFuncGetParamInfo entries */
#define VGPU_MAX_PARAM_BYTES	32764u	/* CUDA 12.1+ kernel parameter limit */
#define VGPU_MAX_NAME		1024u	/* symbol names, NUL included */

struct vgpu_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t features;	/* what the client understands */
	uint32_t pid;		/* informational; SO_PEERCRED is what counts */
	uint32_t sq_entries;	/* 0: daemon default; else power of two */
	uint32_t cq_entries;
	uint32_t flags;		/* none defined yet: must be 0 */
	uint32_t carrier;	/* VGPU_CARRIER_*: what the client set up */
	char comm[32];		/* program name, NUL-terminated */
	uint64_t kmod_session;	/* VGPU_CARRIER_KMOD: its /dev/vgpu session id */
	uint64_t resume_session;	/* VGPU_HELLO_RESUME: the session to take up */
	uint64_t reserved;	/* must be 0 */
};

/* Hello flags. */
#define VGPU_HELLO_RESUME	(1u << 0)	/* a suspended session comes back: its
						 * welcome follows the hello, and the
						 * region, doorbell and pool go along */
#define VGPU_HELLO_QUERY	(1u << 1)	/* no session: the supervisor answers
						 * what the caller may see of the GPUs
						 * (vgpu/query.h, vgpu's NVML) */

/* Carriers (see "Connection" above). */
#define VGPU_CARRIER_MEMFD	1u
#define VGPU_CARRIER_KMOD	2u

struct vgpu_welcome {
	uint32_t magic;
	uint32_t version;
	int32_t status;		/* 0, or -errno with a refusal */
	uint32_t features;	/* accepted subset */
	uint64_t session_id;
	uint64_t region_size;	/* bytes of the memfd */
	uint32_t sq_entries, cq_entries;
	uint32_t sq_off, cq_off;	/* entry arrays */
	uint32_t payload_off, payload_size;
	uint32_t reply_off, reply_slot_size;	/* reply_slots = sq_entries */
	uint32_t staging_off, staging_chunk;	/* chunk ctl words live in vgpu_shared */
	uint32_t staging_chunks;
	uint32_t devinfo_off;		/* struct vgpu_device_info[device_count] */
	uint32_t device_count;
	uint32_t driver_version;	/* what cuDriverGetVersion answers */
	uint64_t dev_window_base;	/* device VA the client must keep free */
	uint64_t dev_window_size;
	uint64_t host_pool_base;	/* shared pinned pool, same address both sides */
	uint64_t host_pool_size;
	uint32_t backend;		/* VGPU_BACKEND_* */
	uint32_t carrier;		/* VGPU_CARRIER_*, as the hello asked */
	char message[128];		/* why, when status < 0 */
};

#define VGPU_BACKEND_CUDA	1u
#define VGPU_BACKEND_HOST	2u

#define VGPU_MAX_STAGING_CHUNKS	16u
#define VGPU_CB_SLOTS		512u

/* One cache line per writer so the two sides never share a line. */
struct vgpu_chunk_ctl {
	uint32_t seq;		/* filler: piece number + 1; drainer: ~seq */
	uint32_t len;		/* bytes valid in the chunk */
};

/* On the /dev/vgpu carrier the SQ/CQ head, tail and flags words below are
 * unused: the module's rings header holds them. */
struct vgpu_shared {
	/* Each ring's tail is polled by the other side, alone on its line with
	 * what is written as rarely; each head, read by the producer only when
	 * its ring looks full, has a line of its own, so that a consumer's
	 * store to it does not take away the line the other side polls. */
	/* written by the worker, polled by the client */
	uint32_t cq_tail;
	uint32_t state;			/* VGPU_WORKER_* */
	uint32_t pad0[14];
	/* written by the client, polled by the worker */
	uint32_t sq_tail;
	uint32_t pad1[15];
	/* written by the worker: what it consumed */
	uint32_t sq_head;
	uint32_t payload_head;		/* free-running byte counter */
	uint32_t pad2[14];
	/* written by the client: what it consumed */
	uint32_t cq_head;
	uint32_t pad3[15];
	/* written by whichever side fills/drains the chunk */
	struct vgpu_chunk_ctl chunk[VGPU_MAX_STAGING_CHUNKS];
	/* Sleep flags, written only when a side goes to sleep or wakes up:
	 * each publish checks the other side's flag, and on a line of its own
	 * that check hits the cache instead of missing on every call. */
	uint32_t staging_wait;		/* VGPU_STAGING_* waiter bits */
	uint32_t sq_flags;		/* worker: VGPU_SQ_NEED_WAKEUP */
	uint32_t cq_flags;		/* client: VGPU_CQ_NEED_WAKEUP */
	uint32_t pad4[13];
	/* written by the client: host callbacks finished (futex words) */
	uint32_t cb_ack[VGPU_CB_SLOTS];
};

#define VGPU_SQ_NEED_WAKEUP	1u
#define VGPU_CQ_NEED_WAKEUP	1u
#define VGPU_STAGING_CLIENT_WAITS 1u
#define VGPU_STAGING_WORKER_WAITS 2u

#define VGPU_WORKER_RUNNING	0u
#define VGPU_WORKER_DEAD	1u	/* worker is gone or going */
#define VGPU_WORKER_SUSPENDED	2u	/* state saved to a file: the client waits
					 * for a daemon to take it up again */

struct vgpu_sqe {
	union {
		struct {
			uint16_t opcode;	/* VGPU_OP_* */
			uint16_t flags;		/* VGPU_SQE_* */
		};
		uint32_t first;	/* opcode and flags: stored last (Rings) */
	};
	uint32_t tag;		/* 0: asynchronous; else reply slot + 1 */
	uint32_t ctx;		/* client context id (0: none needed) */
	uint32_t stream;	/* client stream id (0: legacy default) */
	uint32_t payload_off;	/* offset in the payload ring */
	uint32_t payload_len;
	uint64_t arg[5];
};

struct vgpu_cqe {
	uint32_t tag;		/* | VGPU_CQE_PHASE on the ring: stored last */
	int32_t result;		/* CUresult */
	uint64_t val[3];
};

/* SQE flags */
#define VGPU_SQE_PTDS		(1u << 0)	/* stream 0 means per-thread */
#define VGPU_SQE_PHASE		(1u << 15)	/* on the ring only (Rings) */
/* The CQE's phase bit (Rings); tags are at most VGPU_PROTO_MAX_SQ. */
#define VGPU_CQE_PHASE		(1u << 31)

/*
 * Opcodes. Arguments are listed as arg[i]; "P:" is the payload layout,
 * "R:" what comes back (cqe.val[], or the reply slot).
 */
enum vgpu_op {
	VGPU_OP_NOP = 0,		/* R: nothing; round-trip probe */

	/* contexts: ctx ids are issued by the client */
	VGPU_OP_CTX_CREATE = 0x10,	/* arg0 new ctx id, arg1 device, arg2 flags */
	VGPU_OP_CTX_DESTROY,		/* arg0 ctx id */
	VGPU_OP_PRIMARY_RETAIN,		/* arg0 ctx id, arg1 device */
	VGPU_OP_PRIMARY_RELEASE,	/* arg0 ctx id */
	VGPU_OP_PRIMARY_RESET,		/* arg0 device */
	VGPU_OP_PRIMARY_SET_FLAGS,	/* arg0 device, arg1 flags */
	VGPU_OP_CTX_SYNCHRONIZE,	/* sqe.ctx */
	VGPU_OP_CTX_SET_CACHE_CONFIG,	/* arg0 config */
	VGPU_OP_CTX_SET_SHMEM_CONFIG,	/* arg0 config */
	VGPU_OP_MEM_GET_INFO,		/* R: val0 free, val1 total */

	/* memory */
	VGPU_OP_MEM_ALLOC = 0x30,	/* arg0 bytes; R: val0 device address */
	VGPU_OP_MEM_ALLOC_PITCH,	/* arg0 width, arg1 height, arg2 elem; R: val0 addr, val1 pitch */
	VGPU_OP_MEM_FREE,		/* arg0 address (asynchronous) */
	VGPU_OP_HOST_ALLOC,		/* arg0 bytes, arg1 CU_MEMHOSTALLOC_*; R: val0 pool address */
	VGPU_OP_HOST_FREE,		/* arg0 pool address */
	VGPU_OP_MEM_GET_RANGE,		/* arg0 address; R: val0 base, val1 size */
	VGPU_OP_MEMSET,			/* arg0 dst, arg1 value, arg2 elem size (1/2/4), arg3 count,
					 * arg4 pitch<<32 | height (0: 1-D) */
	VGPU_OP_MEMCPY_HTOD,		/* arg0 dst, arg1 bytes; P: the data (small copies) */
	VGPU_OP_MEMCPY_HTOD_POOL,	/* arg0 dst, arg1 pool src, arg2 bytes */
	VGPU_OP_MEMCPY_DTOH_POOL,	/* arg0 pool dst, arg1 src, arg2 bytes */
	VGPU_OP_MEMCPY_DTOH,		/* arg0 src, arg1 bytes; R: slot holds the data */
	VGPU_OP_MEMCPY_DTOD,		/* arg0 dst, arg1 src, arg2 bytes */
	VGPU_OP_MEMCPY_HTOD_STAGED,	/* arg0 dst, arg1 bytes; data follows in chunks */
	VGPU_OP_MEMCPY_DTOH_STAGED,	/* arg0 src, arg1 bytes; data returns in chunks */
	VGPU_OP_MEMCPY_2D,		/* P: struct vgpu_copy2d (device/pool ends only) */
	VGPU_OP_MEMCPY_HTOD_PINNED,	/* arg0 dst, arg1 region handle, arg2 offset in the
					 * region, arg3 bytes (synchronous) */
	VGPU_OP_MEMCPY_DTOH_PINNED,	/* arg0 region handle, arg1 offset, arg2 src,
					 * arg3 bytes (synchronous) */
	VGPU_OP_PIN_FORGET,		/* arg0 region handle the client unregistered */

	/* streams and events: ids issued by the client */
	VGPU_OP_STREAM_CREATE = 0x50,	/* arg0 stream id, arg1 flags, arg2 priority (s32) */
	VGPU_OP_STREAM_DESTROY,		/* arg0 stream id */
	VGPU_OP_STREAM_SYNCHRONIZE,	/* sqe.stream */
	VGPU_OP_STREAM_QUERY,		/* sqe.stream */
	VGPU_OP_STREAM_WAIT_EVENT,	/* sqe.stream, arg0 event id, arg1 flags */
	VGPU_OP_HOST_FUNC,		/* sqe.stream, arg0 callback cookie */
	VGPU_OP_EVENT_CREATE,		/* arg0 event id, arg1 flags */
	VGPU_OP_EVENT_DESTROY,		/* arg0 event id */
	VGPU_OP_EVENT_RECORD,		/* sqe.stream, arg0 event id, arg1 flags */
	VGPU_OP_EVENT_SYNCHRONIZE,	/* arg0 event id */
	VGPU_OP_EVENT_QUERY,		/* arg0 event id */
	VGPU_OP_EVENT_ELAPSED,		/* arg0 start id, arg1 end id; R: val0 float bits */

	/* modules and kernels */
	VGPU_OP_MODULE_LOAD = 0x70,	/* arg0 module id, arg1 image bytes, arg2 kind
					 * (VGPU_IMAGE_*), arg3 hash lo, arg4 hash hi;
					 * the image follows in staging chunks */
	VGPU_OP_MODULE_UNLOAD,		/* arg0 module id */
	VGPU_OP_MODULE_GET_FUNCTION,	/* arg0 module id, arg1 new function id; P: name;
					 * R: slot holds struct vgpu_func_info */
	VGPU_OP_MODULE_GET_GLOBAL,	/* arg0 module id; P: name; R: val0 addr, val1 bytes */
	VGPU_OP_FUNC_SET_ATTRIBUTE,	/* arg0 function id, arg1 attribute, arg2 value */
	VGPU_OP_FUNC_SET_CACHE_CONFIG,	/* arg0 function id, arg1 config */
	VGPU_OP_LAUNCH,			/* arg0 function id, arg1 grid xyz, arg2 block xyz,
					 * arg3 shared bytes, arg4 flags; P: struct vgpu_launch */
	VGPU_OP_OCCUPANCY,		/* arg0 function id, arg1 block size, arg2 dyn smem,
					 * arg3 flags; R: val0 blocks per SM */
	VGPU_OP_OCCUPANCY_CLUSTERS,	/* arg0 function id, arg1 grid xyz, arg2 block xyz,
					 * arg3 dyn smem, arg4 cluster xyz; R: val0 clusters */

	/* stream capture and graphs: ids issued by the client */
	VGPU_OP_STREAM_BEGIN_CAPTURE = 0x90,	/* sqe.stream, arg0 CUstreamCaptureMode */
	VGPU_OP_STREAM_END_CAPTURE,	/* sqe.stream, arg0 new graph id */
	VGPU_OP_STREAM_CAPTURE_INFO,	/* sqe.stream; R: val0 status, val1 capture id */
	VGPU_OP_GRAPH_NODE_COUNT,	/* arg0 graph id; R: val0 nodes */
	VGPU_OP_GRAPH_INSTANTIATE,	/* arg0 graph id, arg1 new exec id, arg2 flags */
	VGPU_OP_GRAPH_LAUNCH,		/* sqe.stream, arg0 exec id */
	VGPU_OP_GRAPH_UPLOAD,		/* sqe.stream, arg0 exec id */
	VGPU_OP_GRAPH_EXEC_DESTROY,	/* arg0 exec id */
	VGPU_OP_GRAPH_DESTROY,		/* arg0 graph id */

	/* hidden tables and what they need (runtime/dark_*.c, exec_tables.c) */
	VGPU_OP_MODULE_FUNCTION_NAMES = 0xB0, /* arg0 module id, arg1 first index;
					 * R: val0 functions in all, val1 names
					 * here (NUL-terminated, in order) */
	VGPU_OP_DRIVER_EXPORT_TABLE,	/* P: 16-byte table id (raw); R: val0 the
					 * driver's size word (slot 0), val1 1
					 * when slot 0 is no size; result: the
					 * backend's cuGetExportTable answer */
	VGPU_OP_OCCUPANCY_CLUSTER_SIZE,	/* arg0 function id, arg1 grid xyz, arg2 block
					 * xyz, arg3 dyn smem, arg4 cluster
					 * scheduling policy (0: none given);
					 * R: val0 cluster size */
	VGPU_OP_TPC_MAPPING,		/* sqe.ctx current, arg0 device ordinal;
					 * R: val0 TPCs, slot: val0 vGPC ids
					 * then val0 mTPC ids */
	/* the virtual memory API (cuMem*): handle ids issued by the worker */
	VGPU_OP_VMM_RESERVE = 0xC0,	/* arg0 size, arg1 alignment, arg2 address wanted,
					 * arg3 flags; R: val0 address */
	VGPU_OP_VMM_ADDR_FREE,		/* arg0 address, arg1 size */
	VGPU_OP_VMM_CREATE,		/* arg0 size, arg1 flags; P: CUmemAllocationProp;
					 * R: val0 handle id */
	VGPU_OP_VMM_RELEASE,		/* arg0 handle id */
	VGPU_OP_VMM_MAP,		/* arg0 address, arg1 size, arg2 offset, arg3 handle id,
					 * arg4 flags */
	VGPU_OP_VMM_UNMAP,		/* arg0 address, arg1 size */
	VGPU_OP_VMM_SET_ACCESS,		/* arg0 address, arg1 size; P: CUmemAccessDesc[] */
	VGPU_OP_VMM_GET_ACCESS,		/* arg0 address, arg1 location type, arg2 location id;
					 * R: val0 flags */
	VGPU_OP_VMM_GRANULARITY,	/* arg0 option; P: CUmemAllocationProp; R: val0 */
	VGPU_OP_VMM_PROPS,		/* arg0 handle id; R: slot holds CUmemAllocationProp */
	VGPU_OP_VMM_RETAIN,		/* arg0 address; R: val0 handle id */
	VGPU_OP_VMM_LOOKUP,		/* arg0 address; R: slot holds struct vgpu_vmm_info */
	VGPU_OP_VMM_EXPORT,		/* arg0 handle id, arg1 handle type, arg2 flags, arg3 token;
					 * a descriptor follows on the session's socket
					 * (struct vgpu_fd_msg) before the answer; a fabric
					 * handle is in the slot */
	VGPU_OP_VMM_IMPORT,		/* arg0 token, arg1 handle type; a descriptor was sent
					 * on the session's socket first; a fabric handle
					 * is the payload; R: val0 handle id */
	VGPU_OP_VMM_RANGE_HANDLE,	/* arg0 address, arg1 size, arg2 CUmemRangeHandleType,
					 * arg3 flags, arg4 token; the descriptor follows as
					 * with VMM_EXPORT */

	/* stream-ordered allocation and memory pools: pool ids are issued by
	 * the client; the default pool of device d is id d + 1 */
	VGPU_OP_POOL_CREATE = 0xD0,	/* arg0 pool id, arg1 device, arg2 handle types,
					 * arg3 max size (0: none) */
	VGPU_OP_POOL_DESTROY,		/* arg0 pool id */
	VGPU_OP_POOL_SET_ATTR,		/* arg0 pool id, arg1 CUmemPool_attribute, arg2 value */
	VGPU_OP_POOL_GET_ATTR,		/* arg0 pool id, arg1 CUmemPool_attribute; R: val0 */
	VGPU_OP_POOL_TRIM,		/* arg0 pool id, arg1 bytes to keep */
	VGPU_OP_MEM_ALLOC_ASYNC,	/* sqe.stream, arg0 pool id, arg1 bytes; R: val0 address,
					 * val1 1: a graph's (the stream captures) */
	VGPU_OP_MEM_FREE_ASYNC,		/* sqe.stream, arg0 address (asynchronous) */
	VGPU_OP_GRAPH_MEM_ATTR,		/* arg0 device, arg1 CUgraphMem_attribute, arg2 1: set
					 * (arg3 the value) 0: get; R: val0 */
	VGPU_OP_GRAPH_MEM_TRIM,		/* arg0 device */

	/* stream attributes, stream memory operations, context events, prefetch
	 * (streamops) */
	VGPU_OP_STREAM_SET_ATTR = 0xE0,	/* sqe.stream, arg0 CUstreamAttrID;
					 * P: CUstreamAttrValue (64 bytes) */
	VGPU_OP_STREAM_GET_ATTR,	/* sqe.stream, arg0 CUstreamAttrID; R: slot holds the value */
	VGPU_OP_STREAM_COPY_ATTRS,	/* sqe.stream destination, arg0 source stream id */
	VGPU_OP_CTX_RECORD_EVENT,	/* arg0 event id */
	VGPU_OP_CTX_WAIT_EVENT,		/* arg0 event id */
	VGPU_OP_STREAM_WRITE_VALUE,	/* sqe.stream, arg0 address, arg1 value, arg2 flags,
					 * arg3 bytes (4 or 8) */
	VGPU_OP_STREAM_WAIT_VALUE,	/* sqe.stream, arg0 address, arg1 value, arg2 flags,
					 * arg3 bytes (4 or 8) */
	VGPU_OP_STREAM_BATCH_MEMOP,	/* sqe.stream, arg0 count, arg1 flags;
					 * P: CUstreamBatchMemOpParams[count] */
	VGPU_OP_MEM_PREFETCH,		/* sqe.stream, arg0 address, arg1 bytes,
					 * arg2 CUmemLocationType, arg3 location id, arg4 flags */

	/* libraries' helpers: tensor maps, device resources, JIT linking */
	VGPU_OP_TENSOR_MAP_ENCODE = 0xF0,	/* P: struct vgpu_tensor_map_req;
					 * R: slot holds the 128-byte CUtensorMap */
	VGPU_OP_TENSOR_MAP_REPLACE,	/* arg0 new global address; P: the 128-byte map;
					 * R: slot holds the new map */
	VGPU_OP_DEV_RESOURCE,		/* arg0 device, arg1 CUdevResourceType, arg2 1: of
					 * sqe.ctx instead; R: slot holds a CUdevResource */
	VGPU_OP_SM_RESOURCE_SPLIT,	/* arg0 groups room (<= VGPU_MAX_SM_GROUPS), arg1
					 * useFlags, arg2 minCount, arg3 1: fill groups (0:
					 * count them only); P: the input CUdevResource;
					 * R: val0 groups, slot holds what remains, then
					 * the groups */
	VGPU_OP_RESOURCE_DESC,		/* arg0 resources; P: CUdevResource[arg0] */
	VGPU_OP_LINK,			/* arg0 bytes: the link request (struct
					 * vgpu_link_head ...) follows in staging chunks;
					 * R: slot holds struct vgpu_link_reply and the
					 * logs, also on failure */
	VGPU_OP_LINK_RESULT,		/* arg0 cubin bytes of the last LINK: they come
					 * back in staging chunks, and are forgotten */
	VGPU_OP_GRAPH_NODES,		/* arg0 graph id, arg1 1: root nodes only; R: val0
					 * nodes, slot holds struct vgpu_graph_node[val0]
					 * (ids the worker issues, stable per node) */
	VGPU_OP_KERNEL_NODE_GET,	/* arg0 node id; R: slot holds struct
					 * vgpu_kernel_node and its parameter block */
	VGPU_OP_KERNEL_NODE_SET,	/* arg0 node id, arg1 graph exec id (0: the node
					 * in its graph); P: struct vgpu_kernel_node and
					 * the parameter block, packed at the function's
					 * parameter offsets */
	VGPU_OP_GRAPH_CREATE,		/* arg0 new graph id, arg1 flags */
	VGPU_OP_GRAPH_ADD_KERNEL_NODE,	/* arg0 graph id, arg1 dependencies; P: struct
					 * vgpu_kernel_node, the parameter block, padded
					 * to 4 bytes, then u32 node ids[arg1];
					 * R: val0 the new node's id */
	VGPU_OP_GRAPH_ADD_DEPENDENCIES,	/* arg0 graph id, arg1 edges; P: u32 from[arg1],
					 * then u32 to[arg1] (node ids) */

	/* Graphs built node by node (graphs): nodes other than kernels. */
	VGPU_OP_GRAPH_ADD_NODE = 0x110,	/* arg0 graph id, arg1 dependencies, arg2 1: edge
					 * data follow; P: struct vgpu_node_params, u32
					 * node ids[arg1], CUgraphEdgeData[arg1] if arg2;
					 * R: val0 the new node's id. GRAPH_ADD_KERNEL_NODE
					 * and GRAPH_ADD_DEPENDENCIES take arg2 alike. */
	VGPU_OP_GRAPH_NODE_SET,		/* arg0 node id, arg1 graph exec id (0: the node
					 * in its graph); P: struct vgpu_node_params */
	VGPU_OP_GRAPH_DESTROY_NODE,	/* arg0 node id */
	VGPU_OP_STREAM_BEGIN_CAPTURE_TO_GRAPH, /* sqe.stream, arg0 CUstreamCaptureMode,
					 * arg1 graph id, arg2 dependencies; P: u32 node
					 * ids[arg2]. STREAM_END_CAPTURE then answers
					 * val0: that graph's id (arg0 is not used) */
	VGPU_OP_GRAPH_EXEC_UPDATE,	/* arg0 graph exec id, arg1 graph id; R: val0
					 * CUgraphExecUpdateResult, val1 the error node,
					 * val2 the error's from node (each: id, type << 32;
					 * 0: none) */

	/* Pools shared between processes (poolipc, daemon/worker/pool_ipc.c). */
	VGPU_OP_POOL_EXPORT = 0x130,	/* arg0 pool id, arg1 token: the pool's descriptor
					 * comes on the session's socket (vgpu_fd_msg) */
	VGPU_OP_POOL_IMPORT,		/* arg0 new pool id, arg1 token of the descriptor
					 * the program sent first, arg2 device */
	VGPU_OP_POOL_EXPORT_PTR,	/* arg0 address; R: slot holds the 64 bytes of
					 * CUmemPoolPtrExportData */
	VGPU_OP_POOL_IMPORT_PTR,	/* arg0 imported pool id; P: the 64 bytes;
					 * R: val0 address, val1 bytes mapped */

	/* Graph queries and edits (graphq, runtime/graph/graph_query.c,
	 * daemon/worker/exec/exec_graph_query.c). Nodes travel as the ids
	 * GRAPH_NODES issues, graphs and events as the client's ids. */
	VGPU_OP_GRAPH_EDGES = 0x150,	/* arg0 graph id, arg1 node id (0: every edge of
					 * the graph), arg2 1: the node's dependents, 0:
					 * its dependencies; R: val0 edges, slot holds
					 * struct vgpu_graph_edge[val0] */
	VGPU_OP_GRAPH_REMOVE_DEPENDENCIES, /* as GRAPH_ADD_DEPENDENCIES */
	VGPU_OP_STREAM_UPDATE_CAPTURE_DEPS, /* sqe.stream, arg0 flags, arg1 nodes, arg2 1:
					 * edge data follow, arg3 the nodes' graph id (0:
					 * no nodes); P: u32 node ids[arg1],
					 * CUgraphEdgeData[arg1] if arg2 */
	VGPU_OP_GRAPH_NODE_OBJECT,	/* arg0 node id, arg1 a new graph id, taken for a
					 * child graph the session does not know yet;
					 * R: val0 the child graph's or event's id (a
					 * host node: its callback's cookie), val1 1:
					 * arg1 was taken (the graph is the node's) */
	VGPU_OP_GRAPH_CLONE,		/* arg0 graph id, arg1 the clone's new id */
	VGPU_OP_GRAPH_NODE_IN_CLONE,	/* arg0 node id, arg1 clone's graph id; R: val0
					 * the clone's node: id | type << 32 */
	VGPU_OP_KERNEL_NODE_ATTR,	/* arg0 node id, arg1 CUkernelNodeAttrID, arg2 1:
					 * set; P (set) / R (get: slot): the
					 * CUkernelNodeAttrValue, an event in it as its
					 * client id */
	VGPU_OP_MEMCPY_NODE_GET,	/* arg0 node id; R: slot holds the CUDA_MEMCPY3D
					 * (host ends: pinned pool addresses; no arrays) */
	/* Green contexts (runtime/api/green.c, exec_green.c): a green context
	 * has a client-issued green id, and its CUcontext (cuCtxFromGreenCtx) a
	 * context id of its own, which every context-taking entry may name. */
	VGPU_OP_GREEN_CREATE = 0x170,	/* arg0 green id, arg1 context id for it, arg2
					 * device, arg3 flags, arg4 resources;
					 * P: CUdevResource[arg4] */
	VGPU_OP_GREEN_DESTROY,		/* arg0 green id */
	VGPU_OP_GREEN_RESOURCE,		/* arg0 green id, arg1 CUdevResourceType;
					 * R: slot holds a CUdevResource */
	VGPU_OP_GREEN_STREAM_CREATE,	/* arg0 green id, arg1 stream id, arg2 flags,
					 * arg3 priority (s32) */
	VGPU_OP_GREEN_RECORD_EVENT,	/* arg0 green id, arg1 event id */
	VGPU_OP_GREEN_WAIT_EVENT,	/* arg0 green id, arg1 event id */

	/* CUDA arrays, textures and surfaces (proto_array.h): ids issued by
	 * the client for arrays, driver values for texture/surface objects. */
	VGPU_OP_ARRAY_CREATE = 0x190,	/* arg0 array id; P: struct vgpu_array_desc
					 * (levels 0: an array, else mipmapped) */
	VGPU_OP_ARRAY_DESTROY,		/* arg0 array or mipmapped array id */
	VGPU_OP_ARRAY_LEVEL,		/* arg0 mipmapped id, arg1 level, arg2 new id;
					 * R: slot holds its struct vgpu_array_desc */
	VGPU_OP_ARRAY_PLANE,		/* arg0 array id, arg1 plane, arg2 new id;
					 * R: slot holds its struct vgpu_array_desc */
	VGPU_OP_ARRAY_COPY,		/* sqe.stream, arg0 VGPU_ARRAY_COPY_*;
					 * P: struct vgpu_array_copy */
	VGPU_OP_ARRAY_MEMREQ,		/* arg0 array or mipmapped id, arg1 device;
					 * R: slot holds CUDA_ARRAY_MEMORY_REQUIREMENTS */
	VGPU_OP_ARRAY_SPARSE,		/* arg0 array or mipmapped id;
					 * R: slot holds CUDA_ARRAY_SPARSE_PROPERTIES */
	VGPU_OP_TEXOBJ_CREATE,		/* P: struct vgpu_texobj_req; R: val0 value */
	VGPU_OP_TEXOBJ_DESTROY,		/* arg0 value */
	VGPU_OP_SURFOBJ_CREATE,		/* P: struct vgpu_texobj_req; R: val0 value */
	VGPU_OP_SURFOBJ_DESTROY,	/* arg0 value */
	VGPU_OP_TEXOBJ_GET,		/* arg0 value, arg1 1: a surface object, arg2
					 * VGPU_TEXOBJ_GET_*; R: slot holds struct
					 * vgpu_res_desc, vgpu_tex_desc or vgpu_view_desc */
	VGPU_OP_TEXREF_ARRAY,		/* arg0 texture reference id (generated kind),
					 * arg1 array id, arg2 CU_TRSA_* flags, arg3 1: a
					 * mipmapped array (recorded for a restore) */
	VGPU_OP_TEXREF_GET_ARRAY,	/* arg0 texture reference id, arg1 1: the
					 * mipmapped array; R: val0 its id */

	/* CUDA IPC between sessions of one user (runtime/ipc/,
	 * daemon/worker/ipc/): the 64 bytes of a handle as ipc_wire.h lays them. */
	VGPU_OP_IPC_GET_MEM = 0x1C0,	/* sqe.ctx, arg0 address; R: slot holds the
					 * CUipcMemHandle */
	VGPU_OP_IPC_OPEN_MEM,		/* sqe.ctx, arg0 flags; P: the CUipcMemHandle;
					 * R: val0 address, val1 the allocation's bytes */
	VGPU_OP_IPC_CLOSE_MEM,		/* sqe.ctx, arg0 address; R: val0 1 when its last
					 * close unmapped it */
	VGPU_OP_IPC_GET_EVENT,		/* sqe.ctx, arg0 event id; R: slot holds the
					 * CUipcEventHandle */
	VGPU_OP_IPC_OPEN_EVENT,		/* sqe.ctx, arg0 the new event's id (the client's);
					 * P: the CUipcEventHandle */
	/* Device printf follows the program's fd 1 (runtime/session/print_follow.c,
	 * daemon/worker/ipc/print_follow.c). */
	VGPU_OP_PRINT_TO = 0x1C8,	/* arg0 token: the program's fd 1 now, sent first on
					 * the session's socket (struct vgpu_fd_msg) */
	/* Mapped registration of pageable memory without /dev/vgpu
	 * (runtime/ipc/hostreg_map.c, daemon/worker/ipc/hostreg_map.c). */
	VGPU_OP_HOSTREG_MAP,		/* arg0 token of a sealed memfd sent first, arg1
					 * address, arg2 bytes (whole pages), arg3
					 * CU_MEMHOSTREGISTER_* flags; R: val0 device pointer */
	VGPU_OP_HOSTREG_UNMAP,		/* arg0 address */

	/* Graphs, the rest (graphs, runtime/graph/, daemon/worker/graph/). */
	VGPU_OP_GRAPH_DOT = 0x1D0,	/* arg0 graph id, arg1 CUgraphDebugDot_flags, arg2
					 * offset in the text (0: made anew); R: val0 the
					 * text's bytes, the slot those from arg2 on (val2) */

	/* Graph copies with a host end (graphcopy, runtime/graph/graph_hostcopy.c,
	 * daemon/worker/graph/graph_hostcopy.c). */
	VGPU_OP_GRAPH_CAPTURE_STAGED = 0x1D8, /* sqe.stream (capturing); P: struct
					 * vgpu_node_params, a staged MEMCPY (id 1 or 2):
					 * recorded into the capture as one node */
	VGPU_OP_GRAPH_ADD_ARRAY_COPY,	/* arg0 graph id, arg1 dependencies, arg2 1: edge
					 * data follow; P: struct vgpu_array_copy, u32
					 * node ids[arg1], CUgraphEdgeData[arg1] if arg2;
					 * R: val0 the new node's id */
	/* Conditional graph nodes (graphmem, runtime/graph/graph_cond.c,
	 * daemon/worker/graph/exec_graph_cond.c). */
	VGPU_OP_GRAPH_ADD_COND_NODE = 0x1E0, /* arg0 graph id, arg1 dependencies, arg2 1:
					 * edge data follow; P: struct vgpu_cond_params,
					 * u32 node ids[arg1], CUgraphEdgeData[arg1] if
					 * arg2; R: val0 the new node's id. The driver's
					 * body graphs join the session's graphs under
					 * the ids the client chose, owned by the node */
	VGPU_OP_GRAPH_ADD_MEM_NODE,	/* arg0 graph id, arg1 dependencies, arg2 1: edge
					 * data follow; P: struct vgpu_mem_node, u32 node
					 * ids[arg1], CUgraphEdgeData[arg1] if arg2; R:
					 * val0 the new node's id, val1 (MEM_ALLOC) the
					 * address the driver fixed, which the session's
					 * device memory holds while the node's graph lives */

	/* Generated calls (include/vgpu/calls.def): VGPU_OP_GEN_<name>, their
	 * arguments and answers as include/vgpu/calls_gen.h lays them out. */
	VGPU_OP_GEN_BASE = 0x200,
#define VGPU_GEN_OPCODE(op) VGPU_OP_##op,
	VGPU_GEN_OPCODES(VGPU_GEN_OPCODE)
#undef VGPU_GEN_OPCODE

	VGPU_OP_MAX			/* past every opcode: blocks ascend */
};

/* Three 21-bit dimensions packed in one u64 (CUDA limits fit: 2^31-1 for
 * grid x does not, so grid x gets 31 bits and y, z 16 bits each). */
#define VGPU_DIM_PACK(x, y, z) \
	((uint64_t)(x) | ((uint64_t)(y) << 31) | ((uint64_t)(z) << 47))
#define VGPU_DIM_X(v) ((uint32_t)((v) & 0x7fffffffu))
#define VGPU_DIM_Y(v) ((uint32_t)(((v) >> 31) & 0xffffu))
#define VGPU_DIM_Z(v) ((uint32_t)(((v) >> 47) & 0xffffu))

#define VGPU_IMAGE_AUTO		0u	/* cubin, fatbin or PTX: the driver tells */
#define VGPU_IMAGE_FATBIN	1u

/* HOST_ALLOC arg1: besides CU_MEMHOSTALLOC_*, the runtime's own staging
 * for a graph copy recorded while a stream captures: the worker makes it in
 * relaxed capture mode (a pinned allocation is unsafe in global mode). */
#define VGPU_HOST_ALLOC_FOR_CAPTURE	(1u << 31)

/* Launch payload: attributes then the packed parameter block. */
#define VGPU_LAUNCH_COOPERATIVE	(1u << 0)

struct vgpu_launch {
	uint32_t param_bytes;
	uint32_t cluster_x, cluster_y, cluster_z;	/* 0: none */
	int32_t priority;
	uint32_t flags;				/* VGPU_LAUNCH_* */
	uint32_t reserved[2];			/* must be 0 */
	/* uint8_t params[param_bytes] follows */
};

/* One kernel parameter as cuFuncGetParamInfo reports it. */
struct vgpu_param_info {
	uint32_t offset;
	uint32_t size;
};

/* Reply of MODULE_GET_FUNCTION: layout and the attributes the runtime caches. */
#define VGPU_FUNC_ATTRS 10	/* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK .. _MAX_DYNAMIC_SHARED_SIZE_BYTES+1 */
struct vgpu_func_info {
	uint32_t param_count;
	uint32_t param_bytes;		/* end of the last parameter */
	int32_t attr[VGPU_FUNC_ATTRS];	/* CUfunction_attribute 0..9 */
	struct vgpu_param_info param[];	/* param_count entries */
};

/* MEMCPY_2D payload: a CUDA_MEMCPY2D reduced to addresses. */
struct vgpu_copy2d {
	uint64_t src, dst;		/* device or pool addresses */
	uint64_t src_pitch, dst_pitch;
	uint64_t width, height;		/* bytes, rows */
};

/* One device as the worker saw it; answered locally by the runtime. */
#define VGPU_DEV_ATTRS 160	/* > CU_DEVICE_ATTRIBUTE_MAX in CUDA 13.0 */
struct vgpu_device_info {
	char name[256];
	uint8_t uuid[16];
	uint64_t total_mem;
	int32_t attr[VGPU_DEV_ATTRS];	/* indexed by CUdevice_attribute */
	uint8_t luid[8];
	uint32_t luid_mask;
	uint32_t reserved;
};

/* TENSOR_MAP_ENCODE payload: the arguments of cuTensorMapEncodeTiled,
 * ...Im2col or ...Im2colWide. Arrays hold rank entries (global_strides
 * rank - 1; lower/upper rank - 2 for IM2COL, [0] alone for IM2COL_WIDE);
 * the rest is zero. */
#define VGPU_MAX_SM_GROUPS	256u	/* SM_RESOURCE_SPLIT: more than any GPU has SMs */
#define VGPU_MAX_RESOURCES	256u	/* RESOURCE_DESC */

#define VGPU_TMAP_TILED		0u
#define VGPU_TMAP_IM2COL	1u
#define VGPU_TMAP_IM2COL_WIDE	2u
#define VGPU_TMAP_MAX_RANK	5u
#define VGPU_TMAP_BYTES		128u
struct vgpu_tensor_map_req {
	uint32_t kind;			/* VGPU_TMAP_* */
	uint32_t data_type;		/* CUtensorMapDataType */
	uint32_t rank;
	uint32_t interleave, swizzle, l2_promotion, oob_fill;
	uint32_t wide_mode;		/* CUtensorMapIm2ColWideMode */
	uint64_t global_address;
	uint64_t global_dim[VGPU_TMAP_MAX_RANK];
	uint64_t global_strides[VGPU_TMAP_MAX_RANK - 1];
	uint32_t box_dim[VGPU_TMAP_MAX_RANK];
	uint32_t element_strides[VGPU_TMAP_MAX_RANK];
	int32_t lower[3], upper[3];	/* pixel box corners */
	uint32_t channels_per_pixel, pixels_per_column;
	uint32_t reserved[2];		/* must be 0 */
};

/*
 * LINK request: a head, its options, then each input: struct
 * vgpu_link_input, its options, its name (name_len bytes, NUL last) and its
 * data (bytes), each piece padded to 8 bytes. Options are the scalar ones
 * of common/jit_options.h only. The reply's logs follow it: info_len bytes
 * of the info log, then error_len of the error log (no NULs).
 */
#define VGPU_LINK_MAX_INPUTS	256u
#define VGPU_LINK_MAX_OPTIONS	64u	/* per list */
#define VGPU_LINK_MAX_BYTES	(1ull << 30)
#define VGPU_LINK_LOG		(16u << 10)	/* each log, its NUL included */
struct vgpu_link_head {
	uint32_t inputs, options;
	uint64_t reserved;		/* must be 0 */
};
struct vgpu_jit_option {
	uint32_t option;		/* CUjit_option */
	uint32_t reserved;		/* must be 0 */
	uint64_t value;
};
struct vgpu_link_input {
	uint32_t type;			/* CUjitInputType: CUBIN, PTX, FATBINARY */
	uint32_t name_len;		/* 1..VGPU_MAX_NAME */
	uint32_t options;
	uint32_t reserved;		/* must be 0 */
	uint64_t bytes;
};
struct vgpu_link_reply {
	uint64_t cubin_bytes;		/* fetched with LINK_RESULT */
	uint32_t info_len, error_len;
	uint32_t threads_per_block;	/* CU_JIT_THREADS_PER_BLOCK as the linker left it */
	float wall_ms;			/* CU_JIT_WALL_TIME */
};

/* GRAPH_NODES: one node of a graph. */
#define VGPU_MAX_GRAPH_NODES	8192u	/* what one reply slot holds */
struct vgpu_graph_node {
	uint32_t id;
	uint32_t type;			/* CUgraphNodeType */
};

/* GRAPH_EDGES: one edge, its ends with their types (CUgraphNodeType). */
#define VGPU_MAX_GRAPH_EDGES	2048u	/* what one reply slot holds */
struct vgpu_graph_edge {
	uint32_t from, to;		/* node ids */
	uint32_t from_type, to_type;
	uint8_t data[8];		/* CUgraphEdgeData */
};

/* KERNEL_NODE_GET / _SET: a kernel node's parameters. */
struct vgpu_kernel_node {
	uint32_t func;			/* client function id */
	uint32_t param_bytes;		/* the block that follows */
	uint32_t grid[3], block[3];
	uint32_t shared_bytes;
	uint32_t reserved;		/* must be 0 */
};

/* GRAPH_ADD_NODE / GRAPH_NODE_SET: a node that is not a kernel. Copies
 * and memsets name device memory with their offsets folded in. */
struct vgpu_node_params {
	uint32_t type;			/* CUgraphNodeType */
	uint32_t id;			/* GRAPH: child graph id; EVENT_*: event id;
					 * MEMCPY: 0, or a host end is staged through
					 * a pinned pool block: 1 the program's callback
					 * (cookie value | elem << 32) fills src before
					 * the copy, 2 it empties dst after it */
	uint64_t dst, src;		/* MEMCPY: addresses; MEMSET: dst;
					 * HOST: src the callback's cookie */
	uint64_t dst_pitch, src_pitch;	/* bytes from one row to the next */
	uint64_t width;			/* MEMCPY: bytes a row; MEMSET: elements a row */
	uint64_t height, depth;		/* rows (a layer), layers (MEMCPY) */
	uint64_t dst_rows, src_rows;	/* MEMCPY: rows from one layer to the next */
	uint32_t value, elem;		/* MEMSET: the value, its size (1, 2, 4) */
};

/* A conditional node (GRAPH_ADD_COND_NODE). */
#define VGPU_MAX_COND_BODIES 64		/* a SWITCH's cases, at most */
struct vgpu_cond_params {
	uint64_t handle;		/* cuGraphConditionalHandleCreate's value */
	uint32_t type;			/* CUgraphConditionalNodeType */
	uint32_t size;			/* body graphs: IF 1 or 2, WHILE 1, SWITCH 1.. */
	uint32_t body[VGPU_MAX_COND_BODIES]; /* fresh graph ids for them ([size..]: 0) */
};

/* A memory allocation or free node (GRAPH_ADD_MEM_NODE). */
#define VGPU_MAX_MEM_NODE_ACCESS 8
struct vgpu_mem_node {
	uint32_t type;			/* CU_GRAPH_NODE_TYPE_MEM_ALLOC or _MEM_FREE */
	uint32_t device;		/* ALLOC: the device ordinal it resides on */
	uint64_t bytesize;		/* ALLOC */
	uint64_t dptr;			/* FREE: an address an allocation node gave */
	uint32_t naccess;		/* ALLOC: the access descriptors that follow */
	uint32_t pad;
	struct {
		uint32_t device;	/* ordinal */
		uint32_t flags;		/* CUmemAccess_flags */
	} access[VGPU_MAX_MEM_NODE_ACCESS];
};

/* CQE results the protocol adds to CUresult: none; errors are CUresults. */

_Static_assert(sizeof(struct vgpu_sqe) == 64, "SQE is one cache line");
_Static_assert(__builtin_offsetof(struct vgpu_sqe, tag) == 4, "opcode and flags are one word");
_Static_assert(VGPU_PROTO_MAX_SQ < VGPU_CQE_PHASE, "tags leave the CQE phase bit free");
_Static_assert(sizeof(struct vgpu_cqe) == 32, "CQE is half a cache line");
_Static_assert(sizeof(struct vgpu_hello) == 88, "hello layout");
_Static_assert(__builtin_offsetof(struct vgpu_hello, kmod_session) == 64, "hello layout");
_Static_assert(sizeof(struct vgpu_welcome) == 256, "welcome layout");
_Static_assert(sizeof(struct vgpu_chunk_ctl) == 8, "chunk ctl layout");
_Static_assert(sizeof(struct vgpu_shared) == 448 + 4 * VGPU_CB_SLOTS, "shared header layout");
_Static_assert(sizeof(struct vgpu_shared) <= 4096, "shared header fits page 0");
_Static_assert(__builtin_offsetof(struct vgpu_shared, sq_tail) == 64 &&
	       __builtin_offsetof(struct vgpu_shared, sq_head) == 128 &&
	       __builtin_offsetof(struct vgpu_shared, cq_head) == 192 &&
	       __builtin_offsetof(struct vgpu_shared, chunk) == 256,
	       "polled tails and rarely read heads on cache lines of their own");
_Static_assert(sizeof(struct vgpu_launch) == 32, "launch layout");
_Static_assert(sizeof(struct vgpu_func_info) == 48, "func info layout");
_Static_assert(sizeof(struct vgpu_copy2d) == 48, "copy2d layout");
_Static_assert(sizeof(struct vgpu_device_info) == 936, "device info layout");
_Static_assert(sizeof(struct vgpu_tensor_map_req) == 192, "tensor map request layout");
_Static_assert(sizeof(struct vgpu_link_head) == 16, "link head layout");
_Static_assert(sizeof(struct vgpu_jit_option) == 16, "jit option layout");
_Static_assert(sizeof(struct vgpu_link_input) == 24, "link input layout");
_Static_assert(sizeof(struct vgpu_link_reply) == 24, "link reply layout");
_Static_assert(sizeof(struct vgpu_graph_node) == 8, "graph node layout");
_Static_assert(sizeof(struct vgpu_graph_edge) == 24, "graph edge layout");
_Static_assert(sizeof(struct vgpu_kernel_node) == 40, "kernel node layout");
_Static_assert(sizeof(struct vgpu_node_params) == 88, "node params layout");

/* A descriptor crossing the session's socket after the handshake, with
 * SCM_RIGHTS: exported memory (worker -> client), memory to import (client
 * -> worker). The token pairs it with its ring entry. */
#define VGPU_FD_MSG_MAGIC 0x76666431u	/* "vfd1" */
struct vgpu_fd_msg {
	uint32_t magic;
	uint32_t pad;
	uint64_t token;
};

/* VMM_LOOKUP answer: the mapping holding an address. */
struct vgpu_vmm_info {
	uint64_t base, size;		/* the cuMemMap call's range */
	uint64_t handle;		/* its allocation's handle id (0: released) */
	uint64_t handle_types;		/* requestedHandleTypes of the allocation */
	uint32_t device;		/* the allocation's device (client ordinal) */
	uint32_t access;		/* CU_MEM_ACCESS_FLAGS_* for that device */
	uint32_t rdma;			/* allocFlags.gpuDirectRDMACapable */
	uint32_t pad;
};

#endif
