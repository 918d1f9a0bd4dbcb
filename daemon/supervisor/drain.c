// SPDX-License-Identifier: MIT
/*
 * vgpud --checkpoint-on-exit: on SIGTERM every session is suspended to the
 * daemon's folder, its client left waiting, and the daemon stops once all
 * have answered (or the drain's time is up).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "process_ckpt.h"
#include "supervisor_state.h"

/* The folder of @path synced, so that a rename in it lasts. */
static void sync_dir_of(const char *path)
{
	char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
	int fd;

	if (slash && slash != dir) {
		*slash = 0;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	free(dir);
}
void sv_drained_one(void)
{
	if (sv.draining && !--sv.draining) {
		vlog_info("every session is suspended: stopping");
		sv.stopping = true;
	}
}

/* A drain's file, written or not: named, or removed. */
void sv_drain_file_done(struct wslot *ws, bool ok)
{
	if (!ws->drain_tmp)
		return;
	if (ok && rename(ws->drain_tmp, ws->drain_path) < 0) {
		vlog_warn("session %llu: cannot rename %s: %s", (unsigned long long)ws->session_id,
			  ws->drain_tmp, strerror(errno));
		ok = false;
	}
	if (ok)
		sync_dir_of(ws->drain_path);
	else
		unlink(ws->drain_tmp);
	free(ws->drain_tmp);
	free(ws->drain_path);
	ws->drain_tmp = ws->drain_path = NULL;
}

/*
 * The daemon's own folder (--checkpoint-on-exit): the one place besides
 * --restore where the supervisor opens a path itself. The worker gets the
 * temporary file's descriptor; it takes the final name once complete.
 */
static int drain_file(struct wslot *ws, const char *dir, struct ckpt_order *o)
{
	int fd;

	snprintf(o->path, sizeof(o->path), "%s/session-%llu.vgc", dir,
		 (unsigned long long)ws->session_id);
	if (!(ws->drain_path = strdup(o->path)) ||
	    asprintf(&ws->drain_tmp, "%s.tmp.%d", o->path, (int)getpid()) < 0) {
		ws->drain_tmp = NULL;
		sv_drain_file_done(ws, false);
		return -ENOMEM;
	}
	fd = open(ws->drain_tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = -errno;

		free(ws->drain_tmp);
		free(ws->drain_path);
		ws->drain_tmp = ws->drain_path = NULL;
		return err;
	}
	return fd;
}

/* SIGTERM with --checkpoint-on-exit: every session to the folder, its
 * client left waiting; the daemon stops once all have answered. */
void sv_start_drain(void)
{
	const char *dir = sv.cfg->checkpoint_on_exit;
	struct io_uring_sqe *sqe;
	static struct ckpt_order o;

	sv_parked_drain(dir);	/* cuCheckpointProcessCheckpoint's, in our memory */
	for (int i = 0; i < MAX_WORKERS; i++) {
		struct wslot *ws = &sv.w[i];
		int fd, ret;

		if (!ws->pid || ws->state != W_BUSY || ws->moved || ws->closed || ws->ctl < 0 ||
		    !sv.stats)
			continue;
		memset(&o, 0, sizeof(o));
		o.type = WORDER_SUSPEND;
		fd = drain_file(ws, dir, &o);
		ret = fd < 0 ? fd : ckpt_order_send(ws->ctl, &o, fd, NULL, 0);
		if (fd >= 0)
			close(fd);
		if (ret) {
			vlog_warn("session %llu: cannot ask it to suspend: %s",
				  (unsigned long long)ws->session_id, strerror(-ret));
			sv_drain_file_done(ws, false);
			continue;
		}
		ws->suspending = true;
		sv.draining++;
		__atomic_store_n(&sv.stats[i].order_pending, 1, __ATOMIC_RELEASE);
	}
	if (!sv.draining) {
		sv.stopping = true;
		return;
	}
	vlog_info("suspending %u sessions to %s", sv.draining, dir);
	sv.drain_ts.tv_sec = sv.cfg->drain_timeout ? sv.cfg->drain_timeout : 120;
	sqe = io_uring_get_sqe(&sv.ring);
	io_uring_prep_timeout(sqe, &sv.drain_ts, 0, 0);
	io_uring_sqe_set_data64(sqe, UD(EV_DRAIN_TIMEOUT, 0));
}
