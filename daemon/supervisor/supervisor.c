// SPDX-License-Identifier: MIT
#include "supervisor.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin.h"
#include "admission.h"
#include "checkpoint.h"
#include "ckpt.h"
#include "clock.h"
#include "migrate.h"
#include "jit_cache.h"
#include "privdrop.h"
#include "fdpass.h"
#include "kmod.h"
#include "log.h"

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
	       EV_DRAIN_TIMEOUT, EV_HELLO, EV_ADMIT_TICK, EV_RESTORED };
#define UD(kind, idx) (((uint64_t)(kind) << 32) | (uint32_t)(idx))

static struct {
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
} sv;

/* @dir and the folders above it, 0755 where they are missing. */
static void make_dirs(char *dir)
{
	for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		mkdir(dir, 0755);
		*p = '/';
	}
	mkdir(dir, 0755);
}

static int listen_on(const char *path, unsigned int mode)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[sizeof(a.sun_path)], *slash;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		make_dirs(dir);	/* /run/vgpu/client, /run/vgpu/control on first start */
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket someone answers on belongs to a running daemon: leave it. */
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -EADDRINUSE;
	}
	close(fd);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);	/* a stale socket from a daemon that died */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(path, mode) < 0 ||
	    listen(fd, 128) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* ---- workers ------------------------------------------------------------ */

/* The worker becomes its client's user, or --worker-user for root's (privdrop.h). */
static int become_client(const struct worker_handoff *h)
{
	uid_t uid = h->uid ? h->uid : sv.cfg->worker_uid;
	gid_t gid = h->uid ? h->gid : sv.cfg->worker_gid;
	int ret = jit_cache_open(sv.cfg->worker.jit_cache, h->uid, uid, gid);

	if (ret == -EACCES)
		vlog_info("session %llu: no JIT cache: root's programs are served as nobody "
			  "(no --worker-user, no vgpu-worker user)", (unsigned long long)h->session_id);
	else if (ret)
		vlog_warn("session %llu: no JIT cache in %s/%u: %s; PTX is compiled at each load",
			  (unsigned long long)h->session_id, sv.cfg->worker.jit_cache,
			  (unsigned)h->uid, strerror(-ret));
	ret = privdrop(uid, gid);

	if (ret)
		vlog_err("session %llu: cannot become uid %u gid %u: %s",
			 (unsigned long long)h->session_id, (unsigned)uid, (unsigned)gid,
			 strerror(-ret));
	return ret;
}

static void worker_child(int ctl, int slot)
{
	static struct worker_handoff h;
	struct worker w;
	int fds[MIGRATE_FDS], nfds = MIGRATE_FDS, ret;
	uint8_t ready = 1;

	prctl(PR_SET_PDEATHSIG, SIGTERM);	/* the daemon's end is ours */
	signal(SIGPIPE, SIG_IGN);
	ret = worker_prepare(&w, sv.cfg->backend, &sv.cfg->worker);
	if (ret) {
		ready = 0;
		(void)!write(ctl, &ready, 1);
		_exit(2);
	}
	if (sv.stats)	/* before "ready": the supervisor reads it then */
		sv.stats[slot].gpus = (uint16_t)w.device_count;
	if (write(ctl, &ready, 1) != 1)
		_exit(1);
	ret = vgpu_recv_fds(ctl, &h, sizeof(h), fds, &nfds);
	if (ret != sizeof(h) || nfds < 1)
		_exit(0);	/* the daemon is stopping */
	w.stats = sv.stats ? &sv.stats[slot] : NULL;
	if (w.stats)
		w.stats->gpu = 0;
	if (become_client(&h)) {
		if (h.type == HANDOFF_CLIENT)
			worker_refuse(fds[0], EPERM, "vgpud's worker could not give up root");
		_exit(1);
	}
	w.client_pid = h.pid;
	w.client_uid = h.uid;
	if (h.type == HANDOFF_RESUME)
		ret = worker_resume(&w, &h, fds, nfds, ctl);
	else
		ret = worker_serve(&w, fds[0], ctl, h.session_id);
	_exit(ret ? 1 : 0);
}

static void arm_worker(int i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.w[i].ctl, &sv.w[i].ckpt, sizeof(sv.w[i].ckpt), 0);
	/* With the slot's generation: a read of a worker gone can complete after
	 * its slot went to a new one, and must not be taken for the new one's. */
	io_uring_sqe_set_data64(sqe, UD(EV_WORKER, (uint32_t)sv.w[i].gen << 16 | i));
}

static int spawn_worker(void)
{
	int sp[2], i;
	pid_t pid;

	for (i = 0; i < MAX_WORKERS && sv.w[i].pid; i++)
		;
	if (i == MAX_WORKERS)
		return -EAGAIN;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (!pid) {
		close(sp[0]);
		close(sv.listen_fd);
		close(sv.sig_fd);
		if (sv.kfd >= 0)
			close(sv.kfd);	/* the server is the supervisor alone */
		if (sv.ctl_fd >= 0)
			close(sv.ctl_fd);
		admin_close_all();
		admit_close_all();
		io_uring_queue_exit(&sv.ring);
		sigprocmask(SIG_SETMASK, &(sigset_t){ 0 }, NULL);
		worker_child(sp[1], i);
	}
	close(sp[1]);
	if (sv.stats)
		memset(&sv.stats[i], 0, sizeof(sv.stats[i]));
	sv.w[i] = (struct wslot){ .pid = pid, .ctl = sp[0], .state = W_STARTING, .admin_slot = -1,
				  .moved_from = -1, .gen = (uint16_t)(sv.w[i].gen + 1) };
	arm_worker(i);
	return 0;
}

static unsigned int count(enum wstate st)
{
	unsigned int n = 0;

	for (int i = 0; i < MAX_WORKERS; i++)
		n += sv.w[i].pid && sv.w[i].state == st;
	return n;
}

static void fill_pool(void)
{
	unsigned int have = count(W_STARTING) + count(W_IDLE);

	if (sv.stopping)
		return;
	while (have < sv.cfg->pool_size + admit_ready_count()) {
		if (spawn_worker())
			break;
		have++;
	}
}

static bool peer_ok(int fd, struct ucred *cr)
{
	socklen_t len = sizeof(*cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0 || len != sizeof(*cr)) {
		vlog_warn("client without credentials refused");
		return false;
	}
	return true;
}

/* Sessions served for @uid now (a moved session counts once). */
static unsigned int serving(uid_t uid)
{
	unsigned int n = 0;

	for (int i = 0; i < MAX_WORKERS; i++)
		n += sv.w[i].pid && sv.w[i].state == W_BUSY && !sv.w[i].moved &&
		     sv.w[i].client_uid == uid;
	return n;
}

/* Hands a client whose hello is there to an idle worker: false if none. */
static bool give_to_idle(int fd, const struct ucred *cr)
{
	static struct worker_handoff h;

	for (int i = 0; i < MAX_WORKERS; i++) {
		if (!sv.w[i].pid || sv.w[i].state != W_IDLE)
			continue;
		memset(&h, 0, sizeof(h));
		h.session_id = ++sv.next_session;
		h.uid = cr->uid;
		h.gid = cr->gid;
		h.pid = cr->pid;
		h.type = HANDOFF_CLIENT;
		if (vgpu_send_fds(sv.w[i].ctl, &h, sizeof(h), &fd, 1) < 0)
			continue;
		sv.w[i].state = W_BUSY;
		sv.w[i].session_id = h.session_id;
		sv.w[i].client_pid = cr->pid;
		sv.w[i].client_uid = cr->uid;
		sv.w[i].client_gid = cr->gid;
		sv.sessions++;
		vlog_info("session %llu: pid %d uid %d -> worker %d",
			  (unsigned long long)h.session_id, cr->pid, cr->uid, sv.w[i].pid);
		close(fd);
		return true;
	}
	return false;
}

/* Clients whose hello came, oldest first, to the idle workers. */
static void drain_pending(void)
{
	int i;

	while (count(W_IDLE) && (i = admit_oldest_ready()) >= 0) {
		struct admit_entry *e = admit_at(i);
		struct ucred cr = e->cr;
		char why[96];

		/* Its other connections may have become sessions meanwhile. */
		if (serving(cr.uid) >= sv.cfg->limits.user_sessions) {
			snprintf(why, sizeof(why), "uid %d already has %u sessions "
				 "(vgpud --user-sessions)", (int)cr.uid, serving(cr.uid));
			admit_drop(i, EUSERS, why);
			continue;
		}
		if (!give_to_idle(e->fd, &cr))
			break;
		admit_take(i);
	}
}

static struct io_uring_sqe *get_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	if (!sqe) {	/* many at once (a sweep): make room */
		io_uring_submit(&sv.ring);
		sqe = io_uring_get_sqe(&sv.ring);
	}
	return sqe;
}

static uint64_t hello_ud(int i)
{
	return UD(EV_HELLO, (uint32_t)admit_at(i)->gen << 16 | (uint32_t)i);
}

/* A new client waits, holding no worker, until its hello is there. */
static void on_client(int fd)
{
	struct io_uring_sqe *sqe;
	struct ucred cr;
	int i;

	if (!peer_ok(fd, &cr)) {
		close(fd);
		return;
	}
	i = admit_add(fd, &cr);
	if (i < 0)
		return;
	sqe = get_sqe();
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, hello_ud(i));
}

static void on_hello(uint32_t idx, int res)
{
	int i = idx & 0xffff;
	struct admit_entry *e;

	if (i >= ADMIT_MAX || res < 0)
		return;		/* the poll was cancelled */
	e = admit_at(i);
	if (e->fd < 0 || e->gen != (uint16_t)(idx >> 16))
		return;		/* that connection is gone already */
	if (!(res & POLLIN) || res & (POLLHUP | POLLERR)) {
		admit_drop(i, 0, NULL);	/* gone: nobody to serve */
		return;
	}
	e->hello = true;
	fill_pool();
	drain_pending();
}

static void hello_overdue(int i)
{
	struct io_uring_sqe *sqe = get_sqe();
	char why[64];

	io_uring_prep_poll_remove(sqe, hello_ud(i));
	io_uring_sqe_set_data64(sqe, 0);
	snprintf(why, sizeof(why), "no hello within %u s", sv.cfg->limits.hello_timeout);
	admit_drop(i, ETIMEDOUT, why);
}

static void arm_tick(void)
{
	struct io_uring_sqe *sqe = get_sqe();

	sv.tick.tv_sec = 1;
	io_uring_prep_timeout(sqe, &sv.tick, 0, 0);
	io_uring_sqe_set_data64(sqe, UD(EV_ADMIT_TICK, 0));
}

/* ---- /dev/vgpu sessions ------------------------------------------------ */

static struct ksession *ks_find(uint64_t id)
{
	for (int i = 0; i < MAX_KMOD_SESSIONS; i++)
		if (sv.ks[i].id == id)
			return &sv.ks[i];
	return NULL;
}

static void ks_opened(const struct vgpu_kmod_event *ev)
{
	struct ksession *k = ks_find(0);

	if (!k) {
		vlog_warn("/dev/vgpu session %llu: too many open sessions; killing it",
			  (unsigned long long)ev->session_id);
		vgpu_kmod_kill(sv.kfd, ev->session_id);
		return;
	}
	*k = (struct ksession){ .id = ev->session_id, .pid = ev->pid, .uid = ev->uid };
}

/* The client closed its /dev/vgpu session: its worker has nothing to do. */
static void ks_closed(uint64_t id)
{
	struct ksession *k = ks_find(id);

	if (k)
		memset(k, 0, sizeof(*k));
	for (int i = 0; i < MAX_WORKERS; i++) {
		if (!sv.w[i].pid || sv.w[i].kmod_session != id)
			continue;
		vlog_info("session %llu: /dev/vgpu session %llu closed: ending worker %d",
			  (unsigned long long)sv.w[i].session_id, (unsigned long long)id,
			  sv.w[i].pid);
		kill(sv.w[i].pid, SIGKILL);
		sv.w[i].kmod_session = 0;
		sv.w[i].closed = true;
	}
}

static void drain_kmod_events(void)
{
	struct vgpu_kmod_event ev;
	int ret;

	while ((ret = vgpu_kmod_read_event(sv.kfd, &ev)) == 1) {
		if (!ev.session_id)
			continue;
		if (ev.type == VGPU_KMOD_OPENED)
			ks_opened(&ev);
		else if (ev.type == VGPU_KMOD_CLOSED)
			ks_closed(ev.session_id);
		/* DOORBELL: the worker sleeps on its own fd; nothing to do. */
	}
	if (ret < 0)
		vlog_warn("/dev/vgpu events: %s", strerror(-ret));
}

static void arm_kmod(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_poll_add(sqe, sv.kfd, POLLIN);
	io_uring_sqe_set_data64(sqe, UD(EV_KMOD, 0));
}

/* Checks that @id is the session of worker i's client; attaches it. */
static int kmod_attach(int i, uint64_t id)
{
	struct wslot *ws = &sv.w[i];
	struct ksession *k;
	int fd;

	if (sv.kfd < 0)
		return -ENODEV;
	if (ws->kmod_session)
		return -EBUSY;
	k = ks_find(id);
	if (!k) {
		drain_kmod_events();	/* its OPENED may not be read yet */
		k = ks_find(id);
	}
	if (!id || !k)
		return -ENOENT;
	if (!k->pid || k->pid != ws->client_pid) {
		vlog_warn("session %llu: pid %u names /dev/vgpu session %llu of pid %u: refused",
			  (unsigned long long)ws->session_id, ws->client_pid,
			  (unsigned long long)id, k->pid);
		return -EPERM;
	}
	if (k->attached)
		return -EBUSY;
	fd = vgpu_kmod_attach(sv.kfd, id);
	if (fd < 0)
		return fd;
	k->attached = true;
	ws->kmod_session = id;
	return fd;
}

static void on_attach_request(int i)
{
	struct wslot *ws = &sv.w[i];
	int fd = kmod_attach(i, ws->msg.kmod_session);
	struct attach_reply rep = { .status = fd < 0 ? fd : 0 };

	vgpu_send_fds(ws->ctl, &rep, sizeof(rep), &fd, fd < 0 ? 0 : 1);
	if (fd >= 0)
		close(fd);
}

/* ---- files held as descriptors ------------------------------------------ */

static void chain_close(struct chain *c)
{
	vgpu_fds_close(c->fd, c->n);
	c->n = 0;
	free(c->path);
	c->path = NULL;
}

/* @c: duplicates of @n descriptors of @fds, named @path. 0 or -errno. */
static int chain_dup(struct chain *c, const int *fds, unsigned n, const char *path)
{
	memset(c, 0, sizeof(*c));
	if (n > VGPU_CKPT_MAX_CHAIN)
		return -E2BIG;
	for (; c->n < n; c->n++) {
		c->fd[c->n] = fcntl(fds[c->n], F_DUPFD_CLOEXEC, 3);
		if (c->fd[c->n] < 0) {
			int err = -errno;

			chain_close(c);
			return err;
		}
	}
	if (path && !(c->path = strdup(path))) {
		chain_close(c);
		return -ENOMEM;
	}
	return 0;
}

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

/* ---- drain and take-up (vgpud --checkpoint-on-exit / --restore) ------- */

static void drained_one(void)
{
	if (sv.draining && !--sv.draining) {
		vlog_info("every session is suspended: stopping");
		sv.stopping = true;
	}
}

/* A drain's file, written or not: named, or removed. */
static void drain_file_done(struct wslot *ws, bool ok)
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
		drain_file_done(ws, false);
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
static void start_drain(void)
{
	const char *dir = sv.cfg->checkpoint_on_exit;
	struct io_uring_sqe *sqe;
	static struct ckpt_order o;

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
			drain_file_done(ws, false);
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

/* gpu: an index the workers see, or -1; else -ENODEV and why. */
static int check_gpu(int gpu, char *why, size_t len)
{
	if (gpu >= 0 && gpu >= sv.gpus) {
		snprintf(why, len, "no GPU %d: vgpud's workers see %d", gpu, sv.gpus);
		return -ENODEV;
	}
	return 0;
}

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

/*
 * A checked chain registered so that its own program may take it up; its
 * descriptors move to the suspended session. who: the caller of vgpuctl
 * restore, NULL for the daemon's own --restore DIR. 0, or -errno and why.
 */
/* Suspended sessions of @uid waiting for their program. */
static unsigned int waiting_of(uint32_t uid)
{
	unsigned int n = 0;

	for (size_t k = 0; k < sv.nsusp; k++)
		n += sv.susp[k].uid == uid;
	return n;
}

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
static void load_suspended(const char *dir)
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
static int order_restore(const struct ctl_caller *who, int slot, const char *path, int gpu,
			 const int *fds, unsigned nfds, char *why, size_t len)
{
	struct restore_job *j = NULL;
	pthread_t t;
	int ret = check_gpu(gpu, why, len);

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
static void restores_done(void)
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

static void arm_restored(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.restore_ev, &sv.restore_count, sizeof(sv.restore_count), 0);
	io_uring_sqe_set_data64(sqe, UD(EV_RESTORED, 0));
}

/* A worker's client wants to take up a suspended session: the chain's
 * descriptors go to the worker, which opens no path. */
static void on_resume_request(int i)
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

/* The verdict to the worker a session was leaving (migrate.h, step 4). */
static void moved(int j)
{
	struct wslot *to = &sv.w[j], *from = &sv.w[to->moved_from];
	struct migrate_verdict v = { .status = to->ckpt.status };

	if (from->ctl >= 0 && send(from->ctl, &v, sizeof(v), MSG_NOSIGNAL) != sizeof(v))
		vlog_warn("worker %d: cannot tell it the session moved", from->pid);
	if (!v.status) {
		from->moved = true;
		chain_close(&to->last);
		to->last = from->last;	/* the session's, wherever it runs */
		memset(&from->last, 0, sizeof(from->last));
		vlog_info("session %llu: moved from worker %d to worker %d",
			  (unsigned long long)to->session_id, from->pid, to->pid);
	}
	to->moved_from = -1;
}

/* The old worker wrote its checkpoint: give the session to an idle worker
 * with the descriptors it sends (migrate.h, steps 2-3). */
static void on_migrating(int i)
{
	static struct worker_handoff h;
	struct wslot *ws = &sv.w[i];
	int fds[MIGRATE_FDS], nfds = MIGRATE_SESSION_FDS, j, n, slot = ws->admin_slot;

	if (ws->ckpt.status) {		/* refused: the old worker serves on */
		admin_checkpointed(slot, &ws->ckpt);
		ws->admin_slot = -1;
		chain_close(&ws->move);
		return;
	}
	memset(&h, 0, sizeof(h));
	n = vgpu_recv_fds(ws->ctl, &h.st, sizeof(h.st), fds, &nfds);
	for (j = 0; j < MAX_WORKERS; j++)
		if (sv.w[j].pid && sv.w[j].state == W_IDLE)
			break;
	if (n != sizeof(h.st) || nfds != MIGRATE_SESSION_FDS || j == MAX_WORKERS ||
	    !ws->move.n) {
		struct migrate_verdict v = { .status = -EAGAIN };

		for (int k = 0; n >= 0 && k < nfds; k++)
			close(fds[k]);
		if (send(ws->ctl, &v, sizeof(v), MSG_NOSIGNAL) != sizeof(v))
			vlog_warn("worker %d: cannot tell it to serve on", ws->pid);
		admin_abort(slot, EAGAIN, j == MAX_WORKERS ? "no idle worker to move the session to"
						 : "the session's hand-over was incomplete");
		ws->admin_slot = -1;
		chain_close(&ws->move);
		return;
	}
	h.session_id = ws->session_id;
	h.uid = ws->client_uid;
	h.gid = ws->client_gid;
	h.pid = ws->client_pid;
	h.type = HANDOFF_RESUME;
	/* Onto the GPU ordered, else the one the session is on. */
	h.gpu = ws->move_gpu >= 0 ? ws->move_gpu : sv.stats ? sv.stats[i].gpu : -1;
	snprintf(h.path, sizeof(h.path), "%s", ws->move.path);
	fds[MIGRATE_SESSION_FDS] = ws->move.fd[0];	/* the state, written */
	n = vgpu_send_fds(sv.w[j].ctl, &h, sizeof(h), fds, MIGRATE_FDS);
	for (int k = 0; k < MIGRATE_SESSION_FDS; k++)
		close(fds[k]);	/* the new worker has them, and the old one still */
	chain_close(&ws->move);
	sv.w[j].state = W_BUSY;
	sv.w[j].session_id = ws->session_id;
	sv.w[j].client_pid = ws->client_pid;
	sv.w[j].client_uid = ws->client_uid;
	sv.w[j].client_gid = ws->client_gid;
	sv.w[j].admin_slot = slot;
	sv.w[j].moved_from = i;
	sv.w[j].paused_at = ws->ckpt.result.paused_at_ns;
	sv.sessions++;
	ws->admin_slot = -1;
	if (n < 0) {
		sv.w[j].ckpt.status = -EPIPE;
		moved(j);
	}
}

/*
 * A checkpoint vgpuctl ordered is written: it is the session's last one,
 * the parent of its next incremental, and that one's parents with it when
 * it refers to them.
 */
static void new_last(struct wslot *ws)
{
	struct chain c = ws->ordered;

	if (ws->ckpt.result.incremental && ws->last.n && ws->last.n < VGPU_CKPT_MAX_CHAIN) {
		memcpy(c.fd + 1, ws->last.fd, ws->last.n * sizeof(int));
		c.n += ws->last.n;
		ws->last.n = 0;
	}
	chain_close(&ws->last);
	ws->last = c;
	memset(&ws->ordered, 0, sizeof(ws->ordered));
}

static void on_worker_msg(int i, int res)
{
	struct wslot *ws = &sv.w[i];

	if (res == 1 && ws->msg.type == WMSG_READY && ws->state == W_STARTING) {
		ws->state = W_IDLE;
		if (sv.stats)
			sv.gpus = sv.stats[i].gpus;
		arm_worker(i);	/* hang-up on this socket is how it ends */
		drain_pending();
		return;
	}
	if (res == sizeof(ws->msg) && ws->msg.type == WMSG_ATTACH && ws->state == W_BUSY) {
		on_attach_request(i);
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->ckpt) && ws->ckpt.type == WMSG_MIGRATING && ws->admin_slot >= 0) {
		on_migrating(i);
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->ckpt) && ws->ckpt.type == WMSG_CHECKPOINTED && ws->suspending) {
		ws->suspending = false;
		ws->suspended = !ws->ckpt.status;
		if (ws->ckpt.status)
			vlog_warn("session %llu could not be suspended: %s",
				  (unsigned long long)ws->session_id, ws->ckpt.message);
		drain_file_done(ws, !ws->ckpt.status);
		drained_one();
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->msg) && ws->msg.type == WMSG_RESUME && ws->state == W_BUSY) {
		on_resume_request(i);
		arm_worker(i);
		return;
	}
	if (res == sizeof(ws->ckpt) && ws->ckpt.type == WMSG_CHECKPOINTED && ws->admin_slot >= 0) {
		if (ws->moved_from >= 0) {
			moved(i);
			ws->ckpt.result.paused_at_ns = ws->paused_at;
		}
		if (ws->ordered.n && !ws->ckpt.status)
			new_last(ws);
		chain_close(&ws->ordered);
		admin_checkpointed(ws->admin_slot, &ws->ckpt);
		ws->admin_slot = -1;
		/* --stop: the worker ends the session itself after the write. */
		ws->stopped = ws->stop_after && !ws->ckpt.status;
		ws->stop_after = false;
		arm_worker(i);
		return;
	}
	if (ws->suspending) {		/* died before it answered */
		ws->suspending = false;
		drain_file_done(ws, false);
		drained_one();
	}
	if (ws->moved_from >= 0) {	/* died while taking the session over */
		ws->ckpt.status = -EPIPE;
		moved(i);
	}
	if (ws->admin_slot >= 0) {
		admin_abort(ws->admin_slot, EPIPE, "the session ended before its checkpoint was done");
		ws->admin_slot = -1;
	}
	if (res == 1 && ws->msg.type == WMSG_FAILED)
		vlog_err("worker %d could not start its backend", ws->pid);
	/* EOF: the worker is gone; SIGCHLD reaps it. */
	close(ws->ctl);
	ws->ctl = -1;
}

static void reap_children(void)
{
	uint16_t gen;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < MAX_WORKERS; i++) {
			struct wslot *ws = &sv.w[i];

			if (ws->pid != pid)
				continue;
			if (ws->state == W_BUSY)
				sv.sessions--;
			if (ws->moved)
				;	/* its session lives on in another worker */
			else if (ws->suspended)
				vlog_info("session %llu suspended; its client waits",
					  (unsigned long long)ws->session_id);
			else if (ws->stopped)
				vlog_info("session %llu ended after its checkpoint",
					  (unsigned long long)ws->session_id);
			else if (WIFSIGNALED(status) && ws->closed)
				vlog_info("session %llu ended with its /dev/vgpu session",
					  (unsigned long long)ws->session_id);
			else if (WIFSIGNALED(status))
				vlog_warn("worker %d (session %llu) killed by signal %d",
					  pid, (unsigned long long)ws->session_id,
					  WTERMSIG(status));
			else if (ws->state == W_BUSY)
				vlog_info("session %llu ended", (unsigned long long)ws->session_id);
			else if (WEXITSTATUS(status) == 2 && !sv.stopping) {
				vlog_err("workers cannot start: stopping");
				sv.stopping = true;
			}
			if (ws->admin_slot >= 0)
				admin_abort(ws->admin_slot, EPIPE,
					    "the session ended before its checkpoint was done");
			if (ws->ctl >= 0)
				close(ws->ctl);
			chain_close(&ws->ordered);
			chain_close(&ws->last);
			chain_close(&ws->move);
			drain_file_done(ws, false);
			gen = ws->gen;
			memset(ws, 0, sizeof(*ws));
			ws->gen = gen;
			ws->ctl = ws->admin_slot = ws->moved_from = -1;
		}
	}
}

/* ---- the loop ----------------------------------------------------------- */

static void arm_accept(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_accept(sqe, sv.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD(EV_ACCEPT, 0));
}

/* ---- control socket (admin.c answers) ------------------------------------ */

static size_t list_sessions(const struct ctl_caller *who, struct vgpu_ctl_session *out,
			    size_t max, uint64_t id)
{
	size_t n = 0;

	for (int i = 0; i < MAX_WORKERS && n < max; i++) {
		const struct wslot *ws = &sv.w[i];
		struct vgpu_ctl_session *r = &out[n];

		if (!ws->pid || ws->state != W_BUSY || ws->moved || (id && ws->session_id != id) ||
		    !ctl_may(who, ws->client_uid))
			continue;
		*r = (struct vgpu_ctl_session){
			.id = ws->session_id,
			.pid = ws->client_pid,
			.uid = ws->client_uid,
			.state = ws->closed ? VGPU_CTL_STATE_ENDING : VGPU_CTL_STATE_SERVING,
			.worker_pid = (uint32_t)ws->pid,
		};
		if (sv.stats) {
			const struct worker_stats *st = &sv.stats[i];

			r->device_bytes = __atomic_load_n(&st->device_bytes, __ATOMIC_RELAXED);
			r->pool_bytes = __atomic_load_n(&st->pool_bytes, __ATOMIC_RELAXED);
			r->state_done = __atomic_load_n(&st->state_done, __ATOMIC_RELAXED);
			r->state_total = __atomic_load_n(&st->state_total, __ATOMIC_RELAXED);
			r->gpu = __atomic_load_n(&st->gpu, __ATOMIC_RELAXED);
			memcpy(r->comm, st->comm, sizeof(r->comm));
			memcpy(r->carrier, st->carrier, sizeof(r->carrier));
			r->comm[sizeof(r->comm) - 1] = 0;
			r->carrier[sizeof(r->carrier) - 1] = 0;
		}
		n++;
	}
	return n;
}

/*
 * The file vgpuctl created and passes (its caller's, opened with its
 * caller's rights): a regular, empty file open for reading and writing.
 * The worker writes and syncs it through this descriptor; vgpuctl names it.
 */
static int check_target(int fd, char *why, size_t len)
{
	int fl = fcntl(fd, F_GETFL);
	struct stat st;

	if (fl < 0 || fstat(fd, &st) < 0) {
		snprintf(why, len, "the descriptor passed is not an open file");
		return -EBADF;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "the descriptor passed is not a regular file");
		return -EINVAL;
	}
	if ((fl & O_ACCMODE) != O_RDWR || (fl & O_APPEND)) {
		snprintf(why, len, "the file passed must be open for reading and writing, "
			 "not appending");
		return -EBADF;
	}
	if (st.st_size) {
		snprintf(why, len, "the file passed is not empty");
		return -EEXIST;
	}
	return 0;
}

static int order_checkpoint(const struct ctl_caller *who, int slot, uint64_t id, uint32_t flags,
			    const char *path, int fd, char *why, size_t len)
{
	static struct ckpt_order o;
	int ret = check_target(fd, why, len);

	if (ret)
		return ret;
	for (int i = 0; i < MAX_WORKERS; i++) {
		struct wslot *ws = &sv.w[i];
		unsigned np = 0;

		/* Another user's session is answered as one that is not there. */
		if (!ws->pid || ws->state != W_BUSY || ws->session_id != id ||
		    !ctl_may(who, ws->client_uid))
			continue;
		if (ws->closed || ws->ctl < 0) {
			snprintf(why, len, "session %llu is ending", (unsigned long long)id);
			return -ESHUTDOWN;
		}
		if (ws->admin_slot >= 0 || !sv.stats) {
			snprintf(why, len, "a checkpoint of session %llu is already being written",
				 (unsigned long long)id);
			return -EBUSY;
		}
		memset(&o, 0, sizeof(o));
		o.type = WORDER_CHECKPOINT;
		o.flags = flags;
		snprintf(o.path, sizeof(o.path), "%s", path);
		/* The parent is the file the session's last checkpoint went to,
		 * kept open since: not a path opened again. */
		if (flags & VGPU_CTL_F_INCREMENTAL && ws->last.n &&
		    ws->last.n < VGPU_CKPT_MAX_CHAIN) {
			snprintf(o.parent, sizeof(o.parent), "%s", ws->last.path);
			np = ws->last.n;
		}
		chain_close(&ws->ordered);
		ret = chain_dup(&ws->ordered, &fd, 1, path);
		if (ret) {
			snprintf(why, len, "cannot keep the file: %s", strerror(-ret));
			return ret;
		}
		ret = ckpt_order_send(ws->ctl, &o, fd, ws->last.fd, np);
		if (ret) {
			chain_close(&ws->ordered);
			snprintf(why, len, "cannot reach session %llu's worker: %s",
				 (unsigned long long)id, strerror(-ret));
			return -EIO;
		}
		ws->admin_slot = slot;
		ws->stop_after = flags & VGPU_CTL_F_STOP;
		/* After the order is queued: the worker reads it once it sees this. */
		__atomic_store_n(&sv.stats[i].order_pending, 1, __ATOMIC_RELEASE);
		vlog_info("session %llu: checkpoint to %s ordered by uid %u",
			  (unsigned long long)id, path, who->uid);
		return 0;
	}
	snprintf(why, len, "no session %llu", (unsigned long long)id);
	return -ENOENT;
}

static int order_migrate(const struct ctl_caller *who, int slot, uint64_t id, int gpu, char *why,
			 size_t len)
{
	static struct ckpt_order o;
	int ret = check_gpu(gpu, why, len);

	if (ret)
		return ret;

	for (int i = 0; i < MAX_WORKERS; i++) {
		struct wslot *ws = &sv.w[i];
		int fd;

		if (!ws->pid || ws->state != W_BUSY || ws->session_id != id || ws->moved ||
		    !ctl_may(who, ws->client_uid))
			continue;
		if (ws->closed || ws->ctl < 0 || ws->moved_from >= 0) {
			snprintf(why, len, "session %llu is ending or moving", (unsigned long long)id);
			return -ESHUTDOWN;
		}
		if (ws->kmod_session) {
			snprintf(why, len, "sessions over /dev/vgpu cannot move yet");
			return -EOPNOTSUPP;
		}
		if (ws->admin_slot >= 0 || !sv.stats) {
			snprintf(why, len, "session %llu is being checkpointed", (unsigned long long)id);
			return -EBUSY;
		}
		if (!count(W_IDLE)) {
			snprintf(why, len, "no idle worker to move the session to");
			return -EAGAIN;
		}
		memset(&o, 0, sizeof(o));
		o.type = WORDER_MIGRATE;
		snprintf(o.path, sizeof(o.path), "memfd:vgpu-move-%llu", (unsigned long long)id);
		/* The daemon's own file, with no name anyone could open or guess:
		 * it travels as a descriptor, to the old worker and the new. */
		fd = memfd_create("vgpu-move", MFD_CLOEXEC);
		if (fd < 0) {
			snprintf(why, len, "memfd_create: %s", strerror(errno));
			return -errno;
		}
		chain_close(&ws->move);
		ret = chain_dup(&ws->move, &fd, 1, o.path);
		if (!ret && (ret = ckpt_order_send(ws->ctl, &o, fd, NULL, 0)))
			chain_close(&ws->move);
		close(fd);
		if (ret) {
			snprintf(why, len, "cannot reach session %llu's worker", (unsigned long long)id);
			return -EIO;
		}
		ws->admin_slot = slot;
		ws->move_gpu = gpu;
		__atomic_store_n(&sv.stats[i].order_pending, 1, __ATOMIC_RELEASE);
		if (gpu >= 0)
			vlog_info("session %llu: move to GPU %d ordered", (unsigned long long)id, gpu);
		else
			vlog_info("session %llu: move ordered", (unsigned long long)id);
		return 0;
	}
	snprintf(why, len, "no session %llu", (unsigned long long)id);
	return -ENOENT;
}

static const struct admin_ops admin_ops = { .list_sessions = list_sessions,
					    .checkpoint = order_checkpoint,
					    .migrate = order_migrate,
					    .restore = order_restore };

static void arm_ctl_accept(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_accept(sqe, sv.ctl_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD(EV_CTL_ACCEPT, 0));
}

static void on_ctl_accept(int fd)
{
	int slot = admin_add(fd);
	struct io_uring_sqe *sqe;

	if (slot < 0)
		return;
	if (io_uring_sq_space_left(&sv.ring) < 2)
		io_uring_submit(&sv.ring);	/* the read and its time limit go together */
	sqe = io_uring_get_sqe(&sv.ring);
	/* With the descriptors the request brings, close-on-exec at once. */
	io_uring_prep_recvmsg(sqe, fd, admin_msg(slot), MSG_CMSG_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD(EV_CTL_READ, slot));
	/* A silent asker holds its place --hello-timeout seconds at most. */
	sqe->flags |= IOSQE_IO_LINK;
	sv.ctl_ts.tv_sec = sv.cfg->limits.hello_timeout;
	sqe = io_uring_get_sqe(&sv.ring);
	io_uring_prep_link_timeout(sqe, &sv.ctl_ts, 0);
	io_uring_sqe_set_data64(sqe, 0);
}

static void arm_signal(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv.ring);

	io_uring_prep_read(sqe, sv.sig_fd, &sv.si, sizeof(sv.si), 0);
	io_uring_sqe_set_data64(sqe, UD(EV_SIGNAL, 0));
}

static void on_signal(void)
{
	if (sv.si.ssi_signo == SIGCHLD) {
		reap_children();
	} else if (sv.cfg->checkpoint_on_exit && !sv.draining && sv.si.ssi_signo == SIGTERM) {
		vlog_info("signal %u: suspending every session, then stopping", sv.si.ssi_signo);
		start_drain();
	} else {
		vlog_info("signal %u: stopping", sv.si.ssi_signo);
		sv.stopping = true;
	}
}

static void handle(struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	int idx = (uint32_t)ud;

	switch (ud >> 32) {
	case EV_ACCEPT:
		if (cqe->res >= 0)
			on_client(cqe->res);
		else if (cqe->res != -EINTR && cqe->res != -ECONNABORTED)
			vlog_warn("accept: %s", strerror(-cqe->res));
		arm_accept();
		break;
	case EV_SIGNAL:
		if (cqe->res == sizeof(sv.si))
			on_signal();
		arm_signal();
		fill_pool();
		break;
	case EV_WORKER:
		if (sv.w[idx & 0xffff].pid && sv.w[idx & 0xffff].ctl >= 0 &&
		    sv.w[idx & 0xffff].gen == (uint16_t)(idx >> 16))
			on_worker_msg(idx & 0xffff, cqe->res);
		break;
	case EV_KMOD:
		drain_kmod_events();
		arm_kmod();
		break;
	case EV_CTL_ACCEPT:
		if (cqe->res >= 0)
			on_ctl_accept(cqe->res);
		arm_ctl_accept();
		break;
	case EV_CTL_READ:
		admin_done(idx, cqe->res);
		break;
	case EV_RESTORED:
		restores_done();
		arm_restored();
		break;
	case EV_HELLO:
		on_hello((uint32_t)idx, cqe->res);
		break;
	case EV_ADMIT_TICK:
		admit_sweep(vgpu_now_ns(), hello_overdue);
		arm_tick();
		break;
	case EV_DRAIN_TIMEOUT:
		if (sv.draining) {
			vlog_warn("%u sessions did not suspend in time: stopping anyway", sv.draining);
			sv.stopping = true;
		}
		break;
	}
}

static void stop_workers(void)
{
	for (int i = 0; i < MAX_WORKERS; i++)
		if (sv.w[i].pid)
			kill(sv.w[i].pid, SIGTERM);
	for (int i = 0; i < MAX_WORKERS; i++)
		if (sv.w[i].pid)
			waitpid(sv.w[i].pid, NULL, 0);
}

/* Serve /dev/vgpu clients too when the module is there and we may. */
static void kmod_register(void)
{
	sv.kfd = vgpu_kmod_server();
	if (sv.kfd >= 0)
		vlog_info("registered as the /dev/vgpu server: serving both carriers");
	else if (sv.kfd == -ENOENT)
		vlog_info("no %s: memfd carrier only", VGPU_KMOD_DEVICE);
	else if (sv.kfd == -EPERM || sv.kfd == -EACCES)
		vlog_warn("%s is present but registering as its server needs CAP_SYS_ADMIN: "
			  "memfd carrier only", VGPU_KMOD_DEVICE);
	else if (sv.kfd == -EBUSY)
		vlog_warn("%s already has a server (another vgpud?): memfd carrier only",
			  VGPU_KMOD_DEVICE);
	else
		vlog_warn("cannot register as the %s server: %s; memfd carrier only",
			  VGPU_KMOD_DEVICE, strerror(-sv.kfd));
}

/* Waiting clients hold descriptors: as many as the hard limit allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int supervisor_run(const struct supervisor_config *cfg)
{
	sigset_t mask;
	int ret;

	sv.cfg = cfg;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sv.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	sv.listen_fd = listen_on(cfg->socket_path, cfg->socket_mode);
	if (sv.listen_fd == -EADDRINUSE) {
		vlog_err("another vgpud is already serving %s", cfg->socket_path);
		return 1;
	}
	if (sv.listen_fd < 0) {
		vlog_err("cannot listen on %s: %s", cfg->socket_path, strerror(-sv.listen_fd));
		return 1;
	}
	sv.ctl_fd = -1;
	if (cfg->control_path) {
		sv.ctl_fd = listen_on(cfg->control_path, cfg->control_mode);
		if (sv.ctl_fd < 0) {
			vlog_err("cannot listen on %s: %s", cfg->control_path,
				 strerror(-sv.ctl_fd));
			unlink(cfg->socket_path);
			return 1;
		}
	}
	sv.stats = mmap(NULL, MAX_WORKERS * sizeof(*sv.stats), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sv.stats == MAP_FAILED) {
		vlog_warn("no shared statistics for workers: %s", strerror(errno));
		sv.stats = NULL;
	}
	admin_init(&admin_ops, cfg->admin_gid);
	sv.restore_ev = eventfd(0, EFD_CLOEXEC);
	if (sv.restore_ev < 0)
		vlog_warn("no eventfd (%s): vgpuctl restore refused", strerror(errno));
	admit_init(&cfg->limits);
	raise_fd_limit();
	ret = io_uring_queue_init(256, &sv.ring, 0);
	if (ret) {
		vlog_err("io_uring: %s", strerror(-ret));
		return 1;
	}
	kmod_register();
	if (cfg->restore)
		load_suspended(cfg->restore);
	if (sv.ctl_fd >= 0)
		arm_ctl_accept();
	if (sv.restore_ev >= 0)
		arm_restored();
	arm_accept();
	arm_signal();
	arm_tick();
	if (sv.kfd >= 0)
		arm_kmod();
	fill_pool();
	vlog_info("listening on %s (%s backend, %u workers ready)", cfg->socket_path,
		  cfg->backend, cfg->pool_size);
	while (!sv.stopping) {
		struct io_uring_cqe *cqe;

		io_uring_submit(&sv.ring);
		ret = io_uring_wait_cqe(&sv.ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret) {
			vlog_err("io_uring wait: %s", strerror(-ret));
			break;
		}
		handle(cqe);
		io_uring_cqe_seen(&sv.ring, cqe);
	}
	unlink(cfg->socket_path);
	if (sv.ctl_fd >= 0) {
		unlink(cfg->control_path);
		close(sv.ctl_fd);
	}
	admin_close_all();
	admit_close_all();
	stop_workers();
	if (sv.kfd >= 0)
		close(sv.kfd);
	io_uring_queue_exit(&sv.ring);
	return 0;
}
