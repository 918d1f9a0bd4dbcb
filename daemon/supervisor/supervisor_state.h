/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's state, one instance (sv, supervisor.c), and what its
 * files call of one another. Everything runs on the event loop's thread,
 * but for a restore's check (restore.c), which touches its job alone.
 *   supervisor.c      the loop: sockets, completions routed, signals, stop
 *   worker_slots.c    workers started, their messages, reaped
 *   client_intake.c   clients from accept to an idle worker
 *   kmod_sessions.c   /dev/vgpu sessions
 *   chain.c           checkpoint files held as descriptors
 *   drain.c           --checkpoint-on-exit
 *   restore.c         suspended sessions taken up (--restore, vgpuctl restore)
 *   session_move.c    vgpuctl move
 *   ctl_orders.c      vgpuctl's other orders, the control socket's accepts
 *   nvml_query.c      the GPU query of vgpu's NVML (vgpu/query.h)
 */
#ifndef VGPU_SUPERVISOR_STATE_H
#define VGPU_SUPERVISOR_STATE_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "admin.h"
#include "checkpoint.h"
#include "ckpt.h"
#include "kmod.h"
#include "migrate.h"
#include "stats.h"
#include "supervisor.h"

#define MAX_WORKERS 1024
#define MAX_KMOD_SESSIONS 4096	/* /dev/vgpu sessions opened and not closed */
#define MAX_SESSION_ID (1ull << 48)	/* session numbers stay below: they never wrap */


enum wstate { W_STARTING, W_IDLE, W_BUSY };

/*
 * Checkpoint files the supervisor holds open: the daemon never opens a
 * caller's file, so what a later order needs (the parent of an incremental
 * checkpoint) is kept as descriptors. n 0: none (a zeroed slot has none).
 */
struct chain {
	unsigned n;
	int fd[VGPU_CKPT_MAX_CHAIN];	/* the file, then its parents */
	char *path;			/* the file's name, as its caller gave it */
};

struct wslot {
	pid_t pid;
	int ctl;		/* our end of the control socketpair */
	enum wstate state;
	uint64_t session_id;
	uint32_t client_pid;	/* SO_PEERCRED of its client */
	uint32_t client_uid;
	uint32_t client_gid;
	uint64_t kmod_session;	/* attached /dev/vgpu session, 0 if none */
	bool closed;		/* killed because its client closed the session */
	bool stop_after;	/* end the session once its checkpoint is written */
	bool suspending;	/* a drain asked it to suspend its session */
	bool suspended;		/* and it did: its client waits for a daemon */
	bool stopped;		/* ended that way */
	int admin_slot;		/* a checkpoint it is writing for vgpuctl, or -1 */
	int moved_from;		/* resuming the session of that worker, or -1 */
	uint16_t gen;		/* counts the workers this slot has had */
	bool moved;		/* its session went to another worker */
	struct chain move;	/* the memfd a move goes through */
	struct chain ordered;	/* the checkpoint it is writing for vgpuctl */
	struct chain last;	/* its session's last checkpoint (the parent of
				 * an incremental one) and that one's parents */
	char *drain_path;	/* --checkpoint-on-exit: the file, and the */
	char *drain_tmp;	/* temporary one it is written to */
	int move_gpu;		/* the GPU a move it was ordered goes to, or -1 */
	uint64_t paused_at;	/* taking a session over: when its old worker paused it */
	bool locked;		/* process_ckpt.c: its worker holds the session */
	int proc_action;	/* process_ckpt.c: the action admin_slot waits for */
	uint64_t lock_deadline;	/* and a lock's timeout (CLOCK_MONOTONIC ns), or 0 */
	union {			/* what the worker says lands here */
		struct worker_msg msg;
		struct ckpt_answer ckpt;
	};
};

/* A /dev/vgpu session as the module announced it (OPENED event). */
struct ksession {
	uint64_t id;		/* 0: free slot */
	uint32_t pid, uid;
	bool attached;
};

/* A suspended session (vgpud --restore DIR, vgpuctl restore): only its own
 * process may take it up again. */
struct suspended {
	uint64_t session;
	uint32_t pid, uid;
	bool consume;		/* the daemon's own file (--restore DIR): removed once used */
	int gpu;		/* vgpuctl restore --gpu N, or -1 */
	struct chain files;	/* its checkpoint and parents, checked whole */
};

/*
 * vgpuctl restore: the chain is checked whole (every checksum) on a thread
 * of its own, not on the event loop; done tells the loop (woken through
 * restore_ev) that the rest is its to finish.
 */
#define MAX_RESTORES 16
struct restore_job {
	bool used;
	int done;		/* set by the thread, last */
	int slot;		/* the admin slot waiting for the answer */
	struct ctl_caller who;
	int gpu;
	struct chain files;
	/* what the thread found */
	int status;
	char why[112];
	uint64_t session;
	uint32_t pid, uid;
};

/* What an io_uring completion is about. */
enum ev_kind { EV_ACCEPT = 1, EV_SIGNAL, EV_WORKER, EV_KMOD, EV_CTL_ACCEPT, EV_CTL_READ,
	       EV_DRAIN_TIMEOUT, EV_HELLO, EV_ADMIT_TICK, EV_RESTORED, EV_PARKED };
#define UD(kind, idx) (((uint64_t)(kind) << 32) | (uint32_t)(idx))

struct sv_state {
	const struct supervisor_config *cfg;
	struct io_uring ring;
	int listen_fd, sig_fd;
	struct signalfd_siginfo si;
	struct wslot w[MAX_WORKERS];
	struct __kernel_timespec tick;	/* the waiting room's clock */
	struct __kernel_timespec ctl_ts;	/* a control request's time to arrive */
	uint64_t next_session;
	unsigned int sessions;
	bool stopping;
	int kfd;		/* /dev/vgpu server fd, -1 if none */
	int ctl_fd;		/* the control socket, -1 if none */
	struct suspended *susp;	/* sessions waiting to be taken up (--restore) */
	size_t nsusp;
	struct restore_job restores[MAX_RESTORES];
	int restore_ev;		/* eventfd: a restore's check is done */
	uint64_t restore_count;
	int gpus;			/* the GPUs a worker sees (from the first ready) */
	unsigned int draining;	/* suspensions still to be answered */
	struct __kernel_timespec drain_ts;
	struct worker_stats *stats;	/* one slot per worker, shared with it */
	struct ksession ks[MAX_KMOD_SESSIONS];
};

extern struct sv_state sv;

/* worker_slots.c */
unsigned int sv_count(enum wstate st);
void sv_fill_pool(void);
void sv_on_worker_msg(int i, int res);
void sv_reap_children(void);
void sv_stop_workers(void);

/* client_intake.c */
void sv_drain_pending(void);
void sv_on_client(int fd);
void sv_on_hello(uint32_t idx, int res);
void sv_hello_overdue(int i);
void sv_arm_tick(void);
void sv_arm_accept(void);

/* kmod_sessions.c */
void sv_kmod_register(void);
void sv_drain_kmod_events(void);
void sv_arm_kmod(void);
void sv_on_attach_request(int i);
void sv_kmod_worker_gone(uint64_t id);

/* chain.c */
void chain_close(struct chain *c);
int chain_dup(struct chain *c, const int *fds, unsigned n, const char *path);

/* drain.c */
void sv_start_drain(void);
void sv_drained_one(void);
void sv_drain_file_done(struct wslot *ws, bool ok);

/* restore.c */
void sv_load_suspended(const char *dir);
int sv_order_restore(const struct ctl_caller *who, int slot, const char *path, int gpu,
		     const int *fds, unsigned nfds, char *why, size_t len);
void sv_restores_done(void);
void sv_arm_restored(void);
void sv_on_resume_request(int i);

/* session_move.c */
int sv_order_migrate(const struct ctl_caller *who, int slot, uint64_t id, int gpu, char *why,
		     size_t len);
void sv_on_migrating(int i);
void sv_moved(int j);
/* A migrate order to @ws's worker into a new memfd @name, o->path its name
 * in the order and ws->move; 1: the worker cannot be reached. */
int sv_order_move_file(struct wslot *ws, struct ckpt_order *o, const char *name, char *why,
		       size_t len);

/* nvml_query.c */
void sv_nvml_init(void);
void sv_nvml_describe(const struct worker *w);
bool sv_nvml_query(int fd, const struct ucred *cr);

/* ctl_orders.c */
extern const struct admin_ops sv_admin_ops;
int sv_check_gpu(int gpu, char *why, size_t len);
void sv_new_last(struct wslot *ws);
void sv_arm_ctl_accept(void);
void sv_on_ctl_accept(int fd);

#endif
