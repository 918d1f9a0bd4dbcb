/* SPDX-License-Identifier: MIT */
/*
 * vgpud's control socket: what vgpuctl asks the daemon (as opposed to the
 * kernel module, which it asks over generic netlink).
 *
 * The socket is a SOCK_SEQPACKET Unix socket, by default
 * /run/vgpu/control/vgpud.ctl, mode 0666, in a folder of its own so that a
 * container, which gets the client socket's folder, does not reach it.
 *
 * Every local user may ask; each request is tied to its caller
 * (SO_PEERCRED and SO_PEERGROUPS when the connection is accepted). A
 * caller lists, checkpoints, moves, stops and restores only its own
 * sessions: those whose client has the caller's uid. Root and members of
 * the admin group (vgpud --admin-group NAME; by default vgpu-admin when it
 * exists) act on every session. Another user's session is answered as one
 * that does not exist: not listed, and "no session N" when named.
 *
 * The daemon never opens a file on a caller's behalf: vgpuctl opens the
 * files with its caller's own rights and passes their descriptors
 * (SCM_RIGHTS) with the request; the daemon works on those.
 *
 * One connection carries one request:
 *
 *   client -> daemon   struct vgpu_ctl_req followed by arg_len bytes of
 *                      argument, in one message, with the descriptors the
 *                      operation takes
 *   daemon -> client   struct vgpu_ctl_reply, then reply.count records in
 *                      messages of at most VGPU_CTL_RECORDS_PER_MSG each
 *
 * The daemon checks the magic, the version, the operation, the flags the
 * operation allows, that every reserved byte is zero, that the message
 * is exactly the request plus its argument and that it came with as many
 * descriptors as the operation takes; a bad request gets a reply with
 * a negative errno in status and a message saying what was wrong, and no
 * records; every descriptor received is closed. Messages never quote a
 * file's content. Numbers are in host byte order (the socket is local).
 *
 *   SESSIONS    session 0 (all) or one; no argument; records: one
 *               struct vgpu_ctl_session each
 *   CHECKPOINT  session (required); one descriptor: the file to write, a
 *               regular, empty file open O_RDWR (not O_APPEND), which the
 *               caller created (vgpuctl: a temporary file beside the path,
 *               renamed to it once the answer says the file is complete);
 *               argument: the absolute path it will have, NUL-terminated
 *               (the name a later incremental checkpoint records for its
 *               parent); flags VGPU_CTL_F_COMPRESS, VGPU_CTL_F_DIRECT,
 *               VGPU_CTL_F_STOP, VGPU_CTL_F_INCREMENTAL (the parent is the
 *               session's last checkpoint, whose descriptors the daemon
 *               kept; a path equal to the parent's gives a full one).
 *               The daemon drains the session's GPU work and copies its
 *               state into host memory prepared beforehand (the program
 *               waits only for that), writes the file afterwards, and
 *               answers once it is complete and synced: one struct
 *               vgpu_ctl_checkpoint record. Without the host memory to
 *               spare, or with DIRECT, the state goes straight to the file
 *               while the program waits.
 *   MIGRATE     session (required); no argument; flag VGPU_CTL_F_GPU (to
 *               another GPU; refused when the machine has no such GPU or
 *               it is another model). The session moves to another worker, its state rebuilt there at the same
 *               addresses under the same handles; the program's calls wait
 *               meanwhile and it notices nothing else. One
 *               struct vgpu_ctl_checkpoint record: stall_ns is the time the
 *               program waited. If the move fails, the session stays where
 *               it was and the error says why.
 *   RESTORE     descriptors: the checkpoint file, then (incremental) its
 *               parent, that one's parent, ... (1 to VGPU_CTL_MAX_FDS), each
 *               a regular file open for reading; argument: the checkpoint's
 *               absolute path, NUL-terminated (for the record); session 0;
 *               flag VGPU_CTL_F_GPU. The chain is checked whole (every
 *               checksum, each parent the one its child names; not on the
 *               daemon's event loop) and its session is then
 *               waiting to be taken up: when the program it names (pid and
 *               uid) reconnects as a suspended client, a fresh worker
 *               rebuilds the session from the file. Refused: a damaged or
 *               foreign file, a session already waiting, one still running,
 *               another user's session (the uid the file records).
 *   PROCESS     NVIDIA's process-checkpoint API (cuCheckpointProcess*,
 *               runtime/ckptapi/) on the session of process req.session
 *               (a pid); argument: struct vgpu_ctl_process_req; no
 *               descriptor; one struct vgpu_ctl_process record. Who may:
 *               the rule of every request above, with the pid's session
 *               in place of a session number: the caller's own uid, root
 *               or the admin group; another user's process is answered as
 *               one with no session (the driver's INVALID_VALUE), as NVIDIA
 *               asks ptrace rights over the target. LOCK: the worker takes
 *               no more of the session's entries and drains its GPU work
 *               (state LOCKED). CHECKPOINT (LOCKED only): its state goes
 *               into a memfd of the daemon's, its worker ends (the GPU
 *               memory and contexts are freed) and the daemon holds the
 *               session's rings and socket: the program notices nothing,
 *               its calls wait (CHECKPOINTED). RESTORE (CHECKPOINTED only):
 *               a fresh worker rebuilds the state from the memfd at the same
 *               addresses, on the session's GPU or req.gpu's, and holds the
 *               session (LOCKED). UNLOCK (LOCKED only): served again
 *               (RUNNING). STATE: the state only. A call in the wrong state
 *               is refused with -EBADFD, a lock not taken within
 *               timeout_ms with -ETIMEDOUT (the session runs on).
 */
#ifndef VGPU_CTL_H
#define VGPU_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VGPU_CTL_MAGIC		0x4c544356u	/* "VCTL" */
#define VGPU_CTL_VERSION	4u	/* 4: descriptors, not paths; per-caller */
#define VGPU_CTL_DEFAULT_PATH	"/run/vgpu/control/vgpud.ctl"
#define VGPU_CTL_RECORDS_PER_MSG 64u
#define VGPU_CTL_MAX_ARG	4096u	/* a path, with its NUL */
#define VGPU_CTL_CHECKPOINT_FDS	1u	/* CHECKPOINT: the file to write */
#define VGPU_CTL_MAX_FDS	64u	/* RESTORE: a chain (VGPU_CKPT_MAX_CHAIN) */

enum vgpu_ctl_op {
	VGPU_CTL_SESSIONS = 1,	/* records: struct vgpu_ctl_session */
	VGPU_CTL_CHECKPOINT = 2,	/* record: struct vgpu_ctl_checkpoint */
	VGPU_CTL_MIGRATE = 3,	/* record: struct vgpu_ctl_checkpoint */
	VGPU_CTL_RESTORE = 4,	/* no record */
	VGPU_CTL_PROCESS = 5,	/* record: struct vgpu_ctl_process */
};

#define VGPU_CTL_F_COMPRESS	(1u << 0)	/* CHECKPOINT: zstd sections */
#define VGPU_CTL_F_STOP		(1u << 2)	/* CHECKPOINT: end the session once the
						 * file is written; its program waits
						 * for a RESTORE of it (over /dev/vgpu:
						 * by the same daemon, the module's
						 * sessions ending with their server) */
#define VGPU_CTL_F_INCREMENTAL	(1u << 3)	/* CHECKPOINT: allocations unchanged since
						 * the session's last checkpoint (the
						 * parent) are not written again; with
						 * no usable parent, a full one and a
						 * note in the reply's message */
#define VGPU_CTL_F_GPU		(1u << 4)	/* MIGRATE, RESTORE: onto GPU req.gpu
						 * (the session's device 0 there, its
						 * others after it in order); without
						 * it: migrate stays on the session's
						 * GPU, restore uses GPU 0 */
#define VGPU_CTL_F_DIRECT	(1u << 1)	/* CHECKPOINT: straight to the file (no
						 * snapshot in host memory; the program
						 * waits for the disk) */

struct vgpu_ctl_req {
	uint32_t magic;
	uint32_t version;
	uint32_t op;		/* enum vgpu_ctl_op */
	uint32_t flags;		/* VGPU_CTL_F_* the operation allows */
	uint64_t session;	/* 0: all (SESSIONS) */
	uint32_t arg_len;	/* bytes of argument after the request */
	uint32_t gpu;		/* VGPU_CTL_F_GPU: the GPU's index; else 0 */
	uint8_t reserved[32];
};

struct vgpu_ctl_reply {
	uint32_t magic;
	uint32_t version;
	int32_t status;		/* 0, or a negative errno */
	uint32_t count;		/* records that follow */
	char message[112];	/* NUL-terminated; why status is not 0 */
};

enum vgpu_ctl_session_state {
	VGPU_CTL_STATE_SERVING = 1,	/* a worker runs the client's calls */
	VGPU_CTL_STATE_ENDING = 2,	/* the client is gone, the worker exits */
};

struct vgpu_ctl_session {
	uint64_t id;
	uint32_t pid;		/* the client, as SO_PEERCRED saw it */
	uint32_t uid;
	uint32_t state;		/* enum vgpu_ctl_session_state */
	uint32_t worker_pid;
	uint64_t device_bytes;	/* device memory the client holds */
	uint64_t pool_bytes;	/* pinned host memory the client holds */
	char comm[16];		/* the client's command name */
	char carrier[8];	/* "memfd" or "kmod" */
	uint64_t state_done;	/* a checkpoint or move under way: bytes of the */
	uint64_t state_total;	/* session's state copied so far, of these */
	uint32_t gpu;		/* the GPU its device 0 is on */
	uint32_t reserved;
};

/*
 * The control socket of a daemon socket. The client socket and the control
 * socket live in folders of their own, so that a container gets the first
 * and not the second: DIR/client/NAME.sock -> DIR/control/NAME.ctl (the
 * default: /run/vgpu/client/vgpud.sock, /run/vgpu/control/vgpud.ctl). Any
 * other socket has its control socket beside it: PATH.sock -> PATH.ctl,
 * another name gets ".ctl" appended. NULL when it does not fit @len bytes.
 */
static inline const char *vgpu_ctl_path_for(const char *sock, char *buf, size_t len)
{
	const char *slash = strrchr(sock, '/'), *dir = NULL;
	size_t n = strlen(sock), at;

	if (n > 5 && !strcmp(sock + n - 5, ".sock"))
		n -= 5;
	if (slash && slash - sock >= 7 && !strncmp(slash - 7, "/client", 7))
		dir = slash - 6;	/* "client/NAME" -> "control/NAME" */
	if (n + sizeof("/control") + sizeof(".ctl") > len)
		return NULL;
	if (!dir) {
		memcpy(buf, sock, n);
		memcpy(buf + n, ".ctl", sizeof(".ctl"));
		return buf;
	}
	at = (size_t)(dir - sock);
	memcpy(buf, sock, at);
	memcpy(buf + at, "control", 7);
	memcpy(buf + at + 7, slash, n - (size_t)(slash - sock));
	memcpy(buf + at + 7 + n - (size_t)(slash - sock), ".ctl", sizeof(".ctl"));
	return buf;
}

struct vgpu_ctl_checkpoint {
	uint64_t device_bytes;	/* device memory of the session's state */
	uint64_t host_bytes;	/* pinned host memory of it */
	uint64_t file_bytes;	/* the file's size */
	uint64_t stall_ns;	/* the program waited this long */
	uint32_t allocations;
	uint32_t modules;
	uint64_t total_ns;	/* from the order to the synced file */
	uint32_t snapshot;	/* 1: through host memory; 0: straight */
	uint32_t reserved0;
	uint64_t paused_at_ns;	/* MIGRATE: CLOCK_MONOTONIC when the program's
				 * calls stopped being served (its wait is from
				 * there to the answer); else 0 */
	uint64_t parent_bytes;	/* of device_bytes + host_bytes: unchanged, so
				 * only referred to in the parent */
	uint32_t parent_allocations;	/* allocations referred to in the parent */
	uint32_t incremental;	/* 1: the file has a parent */
};

enum vgpu_ctl_process_action {
	VGPU_CTL_PROC_STATE = 1,
	VGPU_CTL_PROC_LOCK = 2,
	VGPU_CTL_PROC_CHECKPOINT = 3,
	VGPU_CTL_PROC_RESTORE = 4,
	VGPU_CTL_PROC_UNLOCK = 5,
};

/* CUprocessState's values. */
enum vgpu_ctl_process_state {
	VGPU_CTL_PROC_RUNNING = 0,
	VGPU_CTL_PROC_LOCKED = 1,
	VGPU_CTL_PROC_CHECKPOINTED = 2,
	VGPU_CTL_PROC_FAILED = 3,
};

struct vgpu_ctl_process_req {
	uint32_t action;	/* enum vgpu_ctl_process_action */
	uint32_t timeout_ms;	/* LOCK: 0 none; else 0 */
	uint8_t reserved[24];
};

struct vgpu_ctl_process {
	uint32_t state;		/* enum vgpu_ctl_process_state, after the action */
	uint32_t reserved;
	uint64_t session;	/* the pid's session */
	struct vgpu_ctl_checkpoint ckpt;	/* CHECKPOINT, RESTORE: its figures */
};

_Static_assert(sizeof(struct vgpu_ctl_req) == 64, "control request layout");
_Static_assert(sizeof(struct vgpu_ctl_process_req) == 32, "process request layout");
_Static_assert(sizeof(struct vgpu_ctl_process) == 96, "process record layout");
_Static_assert(sizeof(struct vgpu_ctl_checkpoint) == 80, "checkpoint record layout");
_Static_assert(sizeof(struct vgpu_ctl_reply) == 128, "control reply layout");
_Static_assert(sizeof(struct vgpu_ctl_session) == 88, "session record layout");

#endif
