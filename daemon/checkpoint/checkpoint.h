/* SPDX-License-Identifier: MIT */
/*
 * checkpoint.c: a worker writes its session's GPU state to a checkpoint
 * file (include/vgpu/ckpt.h) while the client's calls wait: GPU work is
 * drained first, then allocations with their contents, module images,
 * functions, globals, streams, events and context settings are written.
 *
 * The supervisor asks (struct ckpt_order over the worker's control socket)
 * and the worker answers (struct ckpt_answer) once the file is complete
 * and synced, or says why there is none.
 */
#ifndef VGPU_CHECKPOINT_H
#define VGPU_CHECKPOINT_H

#include <stdint.h>

#include "vgpu/ckpt.h"
#include "ckpt.h"
#include "ckpt_bulk.h"
#include "vgpu/ctl.h"

struct worker;
struct vgpu_ckpt_writer;

#define WORDER_CHECKPOINT	1

/*
 * Supervisor -> worker. The worker opens no checkpoint path: every order
 * is followed by a message of its own (struct ckpt_order_fds) bringing the
 * files it works on: the file to write (vgpuctl's, the daemon's own for a
 * drain, a memfd for a move), then, for INCREMENTAL, the parent's chain,
 * the parent first and each one's own parent after it.
 */
struct ckpt_order {
	uint32_t type;			/* WORDER_CHECKPOINT */
	uint32_t flags;			/* VGPU_CTL_F_* */
	char path[VGPU_CTL_MAX_ARG];	/* the file's name: messages, a child's PARENT */
	char parent[VGPU_CTL_MAX_ARG];	/* INCREMENTAL: the session's last checkpoint, or "" */
	/* In the worker, from the message that follows (not meaningful on the
	 * wire): owned by whoever holds the order, ckpt_order_close() frees. */
	int fd;				/* the file to write */
	uint32_t nparent;
	int parent_fds[VGPU_CKPT_MAX_CHAIN];
};

struct ckpt_order_fds {
	uint32_t nfds;			/* 1 + nparent descriptors come with it */
	uint32_t pad;
};

/* Supervisor: @o, then its descriptors (@fd, then @nparent of @parent).
 * 0 once the order is out (the worker answers it, with an error if its
 * files did not come), or -errno: nothing was sent. */
int ckpt_order_send(int sock, const struct ckpt_order *o, int fd, const int *parent,
		    unsigned nparent);
/* Worker: the descriptors that follow @o into it; 0, or -errno and none. */
int ckpt_order_recv_fds(int sock, struct ckpt_order *o);
/* Worker: an order refused before it was copied: its descriptors closed. */
void ckpt_order_drop_fds(int sock);
void ckpt_order_close(struct ckpt_order *o);

/* Worker -> supervisor: starts like struct worker_msg (type first). */
struct ckpt_answer {
	uint8_t type;			/* WMSG_CHECKPOINTED */
	uint8_t pad[3];
	int32_t status;			/* 0 or -errno */
	struct vgpu_ctl_checkpoint result;
	char message[112];		/* why, when status is not 0; else a note or "" */
};

/*
 * Starts the checkpoint @o orders. With host memory to spare, a pinned
 * snapshot buffer is prepared on a thread while the program runs, and
 * worker_checkpoint_poll (called by the main loop while w->ckpt_job is
 * set) pauses the program only to copy into it; the file is written
 * afterwards. Without, the checkpoint is written now, the program waiting.
 * Either way the answer goes to the supervisor once the file is complete.
 */
void worker_checkpoint_start(struct worker *w, const struct ckpt_order *o);
/*
 * The copy of the session's state begins, of total bytes (device and pool):
 * the counter (worker_stats.state_done) that vgpuctl shows as progress, to
 * add to with ckpt_progress(); NULL without stats.
 */
uint64_t *worker_progress_begin(struct worker *w, uint64_t total);
/* It is over: the counter reads 0 of 0 again. */
void worker_progress_end(struct worker *w);

/*
 * The checkpoint straight to o->path, the program waiting; a->status. wr:
 * its writer opened beforehand (worker_checkpoint_writer; taken over and
 * closed here), or NULL.
 */
int worker_checkpoint_file(struct worker *w, const struct ckpt_order *o, struct ckpt_answer *a,
			   struct vgpu_ckpt_writer *wr, const struct ckpt_landing *land);
/* The writer of o->path, with prealloc bytes of it made ready to land in
 * (vgpu_ckpt_writer_opts); from any thread. 0, or -errno and why in err. */
int worker_checkpoint_writer(struct worker *w, const struct ckpt_order *o, uint64_t prealloc,
			     struct vgpu_ckpt_writer **wr, char *err);
/* Device 0 as a checkpoint names it, and the driver's version. */
void worker_gpu_identity(struct worker *w, struct vgpu_ckpt_gpu *g, uint32_t *driver);
void worker_checkpoint_poll(struct worker *w);
/* The checkpoint waiting for its pause will not get it: answered with
 * @err and @why (the session serves on). */
void worker_checkpoint_refuse(struct worker *w, int err, const char *why);
/* The session ends: refuse a checkpoint not paused for yet, and wait for
 * the files still being written. */
void worker_checkpoint_finish(struct worker *w);

#endif
