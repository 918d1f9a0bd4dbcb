// SPDX-License-Identifier: MIT
/*
 * Suspended sessions coming back (vgpud --restore DIR, vgpuctl restore):
 * each checkpoint chain checked whole, off the event loop for vgpuctl's,
 * registered for its own program alone, and handed as descriptors to the
 * worker that program's client reaches.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "fdpass.h"
#include "log.h"
#include "supervisor_state.h"

/*
 * A restore's chain checked whole (every checksum) and its program read
 * from it; from a thread (vgpuctl restore) or at start (--restore DIR).
 * Reads the descriptors only.
 */
static void check_chain(struct restore_job *j)
{
	struct vgpu_ckpt_reader *r;
	struct vgpu_ckpt_client who;
	const char *base = strrchr(j->files.path, '/');
	char err[VGPU_CKPT_MSG];
	int i;

	/* Named by its file name alone: the reply's message has 111 bytes, and
	 * vgpuctl says which file it asked about. */
	j->status = vgpu_ckpt_open_chain_fds(&r, j->files.fd, j->files.n,
					     base ? base + 1 : j->files.path, NULL,
					     VGPU_CKPT_VERIFY, err);
	if (j->status) {
		snprintf(j->why, sizeof(j->why), "%.*s", (int)sizeof(j->why) - 1, err);
		return;
	}
	j->session = vgpu_ckpt_header(r)->session_id;
	i = vgpu_ckpt_find(r, VGPU_CKPT_SEC_CLIENT, 0);
	if (i < 0 || vgpu_ckpt_read_begin(r, (unsigned)i) ||
	    vgpu_ckpt_read(r, &who, sizeof(who)) != sizeof(who)) {
		j->status = -EBADMSG;
		snprintf(j->why, sizeof(j->why), "the file names no program to give the session "
			 "back to");
	} else {
		j->pid = who.pid;
		j->uid = who.uid;
	}
	vgpu_ckpt_reader_close(r);
}

/* Suspended sessions of @uid waiting for their program. */
static unsigned int waiting_of(uint32_t uid)
{
	unsigned int n = 0;

	for (size_t k = 0; k < sv.nsusp; k++)
		n += sv.susp[k].uid == uid;
	return n;
}

/*
 * A checked chain registered so that its own program may take it up; its
 * descriptors move to the suspended session. who: the caller of vgpuctl
 * restore, NULL for the daemon's own --restore DIR. 0, or -errno and why.
 */
static int register_suspended(const struct ctl_caller *who, struct restore_job *j, bool consume)
{
	struct suspended *n;

	if (j->status)
		return j->status;
	if (who && !ctl_may(who, j->uid)) {
		snprintf(j->why, sizeof(j->why), "session %llu is another user's (uid %u): not "
			 "yours to restore", (unsigned long long)j->session, j->uid);
		return -EPERM;
	}
	/* The file is its owner's to write: new sessions count on from its
	 * number, which must leave them room (and 0 means "all"). */
	if (!j->session || j->session >= MAX_SESSION_ID) {
		snprintf(j->why, sizeof(j->why), "the file's session number %llu is out of range",
			 (unsigned long long)j->session);
		return -ERANGE;
	}
	if (who && !who->admin && waiting_of(j->uid) >= sv.cfg->limits.user_sessions) {
		snprintf(j->why, sizeof(j->why), "uid %u already has %u sessions waiting to be "
			 "taken up (vgpud --user-sessions)", j->uid, waiting_of(j->uid));
		return -EUSERS;
	}
	for (size_t k = 0; k < sv.nsusp; k++)
		if (sv.susp[k].session == j->session) {
			snprintf(j->why, sizeof(j->why), "session %llu is already waiting to be "
				 "taken up", (unsigned long long)j->session);
			return -EEXIST;
		}
	for (int k = 0; k < MAX_WORKERS; k++)
		if (sv.w[k].pid && sv.w[k].state == W_BUSY && sv.w[k].session_id == j->session &&
		    !sv.w[k].moved && !sv.w[k].suspended) {
			snprintf(j->why, sizeof(j->why), "session %llu is running",
				 (unsigned long long)j->session);
			return -EBUSY;
		}
	n = realloc(sv.susp, (sv.nsusp + 1) * sizeof(*n));
	if (!n) {
		snprintf(j->why, sizeof(j->why), "out of memory");
		return -ENOMEM;
	}
	sv.susp = n;
	n = &sv.susp[sv.nsusp++];
	*n = (struct suspended){ .session = j->session, .pid = j->pid, .uid = j->uid,
				 .consume = consume, .gpu = j->gpu, .files = j->files };
	memset(&j->files, 0, sizeof(j->files));
	if (j->session > sv.next_session)
		sv.next_session = j->session;	/* new sessions get other numbers */
	vlog_info("session %llu (pid %u) may come back from %s", (unsigned long long)j->session,
		  j->pid, n->files.path);
	return 0;
}

/* --restore DIR: the sessions suspended there, each with its program. The
 * folder is the daemon's own: it opens these files itself. */
void sv_load_suspended(const char *dir)
{
	static struct restore_job j;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		vlog_warn("--restore %s: %s", dir, strerror(errno));
		return;
	}
	while ((e = readdir(d))) {
		struct vgpu_ckpt_reader *r, *p;
		char path[VGPU_CTL_MAX_ARG], err[VGPU_CKPT_MSG];
		int fds[VGPU_CKPT_MAX_CHAIN];
		unsigned n = 0;

		if (strncmp(e->d_name, "session-", 8) || !strstr(e->d_name, ".vgc") ||
		    strstr(e->d_name, ".tmp."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		memset(&j, 0, sizeof(j));
		j.gpu = -1;
		if (vgpu_ckpt_open_chain(&r, path, NULL, 0, err)) {
			vlog_warn("--restore: %s", err);
			continue;
		}
		for (p = r; p && n < VGPU_CKPT_MAX_CHAIN; p = vgpu_ckpt_parent(p))
			fds[n++] = vgpu_ckpt_reader_fd(p);
		if (chain_dup(&j.files, fds, n, path)) {
			vlog_warn("--restore: %s: out of descriptors", path);
		} else {
			check_chain(&j);
			if (register_suspended(NULL, &j, true))
				vlog_warn("--restore: %s: %s", path, j.why);
		}
		vgpu_ckpt_reader_close(r);
		chain_close(&j.files);
	}
	closedir(d);
}

static void *restore_thread(void *arg)
{
	struct restore_job *j = arg;
	uint64_t one = 1;

	check_chain(j);
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	if (write(sv.restore_ev, &one, sizeof(one)) != sizeof(one))
		vlog_warn("restore: cannot wake the event loop: %s", strerror(errno));
	return NULL;
}

/* vgpuctl restore: the caller's files, checked on a thread; the answer
 * comes through admin_restored() once it is done. */
int sv_order_restore(const struct ctl_caller *who, int slot, const char *path, int gpu,
		     const int *fds, unsigned nfds, char *why, size_t len)
{
	struct restore_job *j = NULL;
	pthread_t t;
	int ret = sv_check_gpu(gpu, why, len);

	if (ret)
		return ret;
	for (int k = 0; k < MAX_RESTORES && !j; k++)
		if (!sv.restores[k].used)
			j = &sv.restores[k];
	if (!j || sv.restore_ev < 0) {
		snprintf(why, len, "too many restores at once");
		return -EAGAIN;
	}
	memset(j, 0, sizeof(*j));
	ret = chain_dup(&j->files, fds, nfds, path);
	if (ret) {
		snprintf(why, len, "cannot keep the files: %s", strerror(-ret));
		return ret;
	}
	j->slot = slot;
	j->who = *who;
	j->gpu = gpu;
	ret = pthread_create(&t, NULL, restore_thread, j);
	if (ret) {
		chain_close(&j->files);
		snprintf(why, len, "cannot start checking the file: %s", strerror(ret));
		return -ret;
	}
	pthread_detach(t);
	j->used = true;
	return 0;
}

/* The loop: restores whose check is done get their answer. */
void sv_restores_done(void)
{
	for (int k = 0; k < MAX_RESTORES; k++) {
		struct restore_job *j = &sv.restores[k];
		int ret;

		if (!j->used || !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE))
			continue;
		ret = register_suspended(&j->who, j, false);
		admin_restored(j->slot, -ret, j->why);
		chain_close(&j->files);
		j->used = false;
	}
}

void sv_arm_restored(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.restore_ev, &sv.restore_count, sizeof(sv.restore_count), 0);
	io_uring_sqe_set_data64(sqe, UD(EV_RESTORED, 0));
}

/* A worker's client wants to take up a suspended session: the chain's
 * descriptors go to the worker, which opens no path. */
void sv_on_resume_request(int i)
{
	static struct resume_reply rep;
	struct wslot *ws = &sv.w[i];
	uint64_t id = ws->msg.kmod_session;
	struct suspended *s = NULL;

	memset(&rep, 0, sizeof(rep));
	rep.status = -ENOENT;
	for (size_t k = 0; k < sv.nsusp && !s; k++) {
		if (sv.susp[k].session != id)
			continue;
		if (sv.susp[k].pid != ws->client_pid || sv.susp[k].uid != ws->client_uid) {
			rep.status = -EPERM;
			vlog_warn("pid %u may not take up session %llu (pid %u's)", ws->client_pid,
				  (unsigned long long)id, sv.susp[k].pid);
			break;
		}
		s = &sv.susp[k];
	}
	if (s) {
		rep.status = 0;
		rep.nfds = s->files.n;
		rep.gpu = s->gpu;
		snprintf(rep.path, sizeof(rep.path), "%s", s->files.path);
	}
	if (vgpu_send_fds(ws->ctl, &rep, sizeof(rep), s ? s->files.fd : NULL, s ? s->files.n : 0) !=
	    sizeof(rep))
		vlog_warn("worker %d: cannot answer its resume request", ws->pid);
	if (!s)
		return;
	ws->session_id = id;
	chain_close(&ws->last);
	if (s->consume) {
		/* The daemon's own file: the worker has it open; no parent later. */
		unlink(s->files.path);
		chain_close(&s->files);
	} else {
		ws->last = s->files;	/* the parent of the session's next incremental */
	}
	*s = sv.susp[--sv.nsusp];
}
