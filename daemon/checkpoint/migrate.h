/* SPDX-License-Identifier: MIT */
/*
 * Moving a live session to another worker (vgpuctl migrate), the client
 * none the wiser: its rings, doorbell, pinned pool and socket stay where
 * they are; only the worker behind them changes.
 *
 *   1. supervisor -> old worker: WORDER_MIGRATE with a file to use (a
 *      memfd of the supervisor's: no name anyone could guess or open).
 *   2. old worker: drains, writes a checkpoint to the file, hands every
 *      entry it took back to the ring, answers WMSG_MIGRATING, then sends
 *      struct migrate_state with the session's descriptors (client socket,
 *      region, doorbell, pool, the client's stdout) and waits for a verdict.
 *   3. supervisor -> an idle worker: struct worker_handoff (RESUME) with
 *      those descriptors and the file's; it rebuilds the state at the same
 *      addresses and
 *      answers WMSG_CHECKPOINTED (status 0: it serves the session now).
 *   4. supervisor -> old worker: the verdict. 0: exit, the session moved;
 *      else: serve on, nothing changed for the client.
 * The client's calls wait from step 2 to step 4.
 */
#ifndef VGPU_MIGRATE_H
#define VGPU_MIGRATE_H

#include <stdint.h>

#include "checkpoint.h"
#include "ckpt_bulk.h"
#include "vgpu/proto.h"

struct worker;

#define WORDER_MIGRATE		2
#define WORDER_SUSPEND		3	/* checkpoint, then leave the client waiting */
#define WMSG_MIGRATING		4	/* struct ckpt_answer */

#define MIGRATE_SESSION_FDS	5	/* socket, region, doorbell, pool, stdout */
#define MIGRATE_KMOD_FDS	6	/* /dev/vgpu: those, and the worker fd */
#define MIGRATE_FDS		6	/* memfd: the session's, and the checkpoint to take up */
#define MIGRATE_MAX_FDS		7	/* /dev/vgpu: the session's, and the checkpoint */

struct migrate_state {
	struct vgpu_welcome wl;		/* the layout the client uses */
	char comm[16];
	int32_t deferred;		/* an error owed to the next sync call */
	uint32_t carrier;		/* VGPU_CARRIER_*: /dev/vgpu brings its worker fd */
};

/* The session's descriptors that come with @st. */
static inline unsigned migrate_session_fds(const struct migrate_state *st)
{
	return st->carrier == VGPU_CARRIER_KMOD ? MIGRATE_KMOD_FDS : MIGRATE_SESSION_FDS;
}

#define HANDOFF_CLIENT		0	/* a new client: the socket */
#define HANDOFF_RESUME		1	/* a moved session: its fds, the checkpoint last */
#define HANDOFF_F_LOCKED	(1u << 0)	/* RESUME: hold the session until unlocked
						 * (ckpt_process.h) */

/* Supervisor -> an idle worker. */
struct worker_handoff {
	uint64_t session_id;
	uint32_t uid, pid;
	uint32_t type;			/* HANDOFF_* */
	int32_t gpu;			/* RESUME: onto this GPU; -1: GPU 0 */
	uint32_t gid;			/* the client's (SO_PEERCRED): the worker's */
	uint32_t flags;			/* HANDOFF_F_* */
	struct migrate_state st;	/* RESUME */
	char path[VGPU_CTL_MAX_ARG];	/* RESUME: the checkpoint's name (messages) */
};

/* Supervisor -> worker: a resuming session's state (WMSG_RESUME). With
 * status 0 the chain's descriptors come with it, the checkpoint first. */
struct resume_reply {
	int32_t status;			/* 0, -ENOENT (none), -EPERM (not yours) */
	uint32_t nfds;			/* descriptors with it */
	int32_t gpu;			/* onto this GPU; -1: GPU 0 */
	uint32_t pad;
	char path[VGPU_CTL_MAX_ARG];	/* the checkpoint's name (messages) */
};

/* Supervisor -> old worker: step 4. */
struct migrate_verdict {
	int32_t status;
	uint32_t pad;
};

/*
 * Step 2, from the worker's main loop: a thread first makes the file ready
 * (blocks allocated, pages faulted in, mapped and registered with the
 * GPU) while the program runs on; worker_migrate_poll (the main loop,
 * while w->move_job is set) then pauses the program and moves it
 * (worker_migrate_out, wr: that file's writer or NULL, land: its mapping
 * or NULL). worker_migrate_finish: the session ends meanwhile.
 */
void worker_migrate_start(struct worker *w, const struct ckpt_order *o);
void worker_migrate_poll(struct worker *w);
void worker_migrate_finish(struct worker *w);
/* The move waiting for its pause will not get it: refused with @err and
 * @why (the session serves on). */
void worker_migrate_refuse(struct worker *w, int err, const char *why);
void worker_migrate_out(struct worker *w, const struct ckpt_order *o, struct vgpu_ckpt_writer *wr,
			const struct ckpt_landing *land);
/* A drain: the state to o->path, the session left suspended (its client
 * waits for a daemon to take it up), this worker gone. */
void worker_suspend(struct worker *w, const struct ckpt_order *o);
/* After a complete checkpoint to path: the worker goes, the client waits
 * (VGPU_WORKER_SUSPENDED) for a daemon to take the session up from it. */
void worker_leave_suspended(struct worker *w, const char *path);
/* A suspended session's client came back (hello with VGPU_HELLO_RESUME and
 * its region, doorbell, pool and stdout): take it up, then serve it. */
int worker_resume_client(struct worker *w, const struct vgpu_hello *h, int *fds, int nfds);
/*
 * A session's state from the checkpoint chain in @ckpt (@nckpt files, the
 * checkpoint first; named @name in messages) into this fresh worker (a
 * move, or a suspended client coming back), serving the rings in @fds:
 * socket, region, doorbell, pool, the client's stdout (or -1). 0, or
 * -errno, why in a. Opens no path.
 */
int worker_take_up(struct worker *w, const struct vgpu_welcome *layout, const int *fds,
		   const int *ckpt, unsigned nckpt, const char *name, int gpu,
		   struct ckpt_answer *a);
/* The session's rings in @fds (as worker_take_up's) mapped and taken
 * over where they stand (migrate_ring.c). */
int migrate_take_ring(struct worker *w, const struct migrate_state *st, const int *fds);
/* The answer of a move or suspension to the supervisor (migrate.c). */
void migrate_say(struct worker *w, struct ckpt_answer *a);
/* Step 3, in a fresh worker: 0 and the session served until it ends. */
int worker_resume(struct worker *w, const struct worker_handoff *h, const int *fds, int nfds,
		  int ctl);

#endif
