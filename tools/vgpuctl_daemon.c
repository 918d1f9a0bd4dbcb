// SPDX-License-Identifier: MIT
/*
 * Asking vgpud over its control socket (include/vgpu/ctl.h), and
 * `vgpuctl sessions` from the daemon's side: the sessions it serves, with
 * or without the kernel module.
 */
#include "vgpuctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "dial.h"
#include "fdpass.h"
#include "vgpu/ctl.h"
#include "vgpu/proto.h"

#define VGPUCTL_REFUSED (-100000)	/* not an errno: the daemon said no */

int vgpuctl_ctl_arg(int argc, char **argv, int *i, struct vgpuctl_ctl_args *a)
{
	const char *arg = argv[*i];

	if (!strcmp(arg, "--json"))
		a->json = 1;
	else if (!strcmp(arg, "--control") && *i + 1 < argc)
		a->control = argv[++*i];
	else if (!strcmp(arg, "--socket") && *i + 1 < argc)
		a->socket = argv[++*i];
	else if (!a->id && arg[0] != '-')
		a->id = arg;
	else
		return 0;
	return 1;
}

const char *vgpuctl_control_path(const char *control, const char *socket, char *buf, size_t len)
{
	if (control)
		return control;
	if (!socket)
		socket = getenv("VGPU_SOCKET");
	if (!socket || !*socket)
		socket = VGPU_DEFAULT_SOCKET;
	return vgpu_ctl_path_for(socket, buf, len);
}

/* A connected control socket, or -errno. */
int vgpuctl_ctl_connect(const char *path)
{
	return vgpu_dial(path, 10);
}

void vgpuctl_control_error(const char *path, int err)
{
	if (err == -ENOENT || err == -ECONNREFUSED)
		fprintf(stderr, "vgpuctl: vgpud is not running (no control socket at %s)\n", path);
	else if (err == -EACCES || err == -EPERM)
		fprintf(stderr, "vgpuctl: %s: permission denied (the control socket's mode or "
			"folder leaves you out: vgpud --control-mode)\n", path);
	else
		fprintf(stderr, "vgpuctl: %s: %s\n", path, strerror(-err));
}

/*
 * Sends one request; on success returns the connected socket with the
 * reply header read into *rep (records follow). No daemon to ask: -errno.
 * The daemon refused or made no sense: VGPUCTL_REFUSED, said on stderr.
 */
static int ctl_request(const char *path, const struct vgpu_ctl_req *q, struct vgpu_ctl_reply *rep)
{
	int fd = vgpuctl_ctl_connect(path);
	ssize_t n;

	if (fd < 0)
		return fd;
	if (send(fd, q, sizeof(*q), MSG_NOSIGNAL) != sizeof(*q)) {
		int err = -errno;

		close(fd);
		return err;
	}
	n = recv(fd, rep, sizeof(*rep), 0);
	if (n != sizeof(*rep) || rep->magic != VGPU_CTL_MAGIC) {
		close(fd);
		fprintf(stderr, "vgpuctl: %s: no valid answer from vgpud\n", path);
		return VGPUCTL_REFUSED;
	}
	if (rep->status) {
		rep->message[sizeof(rep->message) - 1] = 0;
		fprintf(stderr, "vgpuctl: vgpud: %s\n", rep->message);
		close(fd);
		return VGPUCTL_REFUSED;
	}
	return fd;
}

static const char *state_name(uint32_t s)
{
	switch (s) {
	case VGPU_CTL_STATE_SERVING: return "serving";
	case VGPU_CTL_STATE_ENDING: return "ending";
	default: return "unknown";
	}
}

/* n: the record's place in a list (JSON: an array), -1 for one alone. */
static void print_session(const struct vgpu_ctl_session *s, int json, int n)
{
	char dev[16], pool[16];

	if (json) {
		printf("%s{\"id\": %" PRIu64 ", \"pid\": %u, \"uid\": %u, \"command\": ",
		       n < 0 ? "" : n ? ",\n  " : "\n  ", s->id, s->pid, s->uid);
		vgpuctl_json_str(stdout, s->comm);
		printf(", \"state\": \"%s\", \"carrier\": ", state_name(s->state));
		vgpuctl_json_str(stdout, s->carrier);
		printf(", \"device_bytes\": %" PRIu64 ", \"pool_bytes\": %" PRIu64
		       ", \"worker_pid\": %u, \"gpu\": %u}", s->device_bytes, s->pool_bytes,
		       s->worker_pid, s->gpu);
		return;
	}
	if (n <= 0)
		printf("%-8s %-8s %-6s %-16s %-8s %-7s %-3s %9s %9s %-8s\n", "ID", "PID", "UID",
		       "COMMAND", "STATE", "CARRIER", "GPU", "DEV-MEM", "POOL", "WORKER");
	printf("%-8" PRIu64 " %-8u %-6u %-16s %-8s %-7s %-3u %9s %9s %-8u\n", s->id, s->pid,
	       s->uid, s->comm, state_name(s->state), s->carrier, s->gpu,
	       vgpuctl_size(s->device_bytes, dev, sizeof(dev)),
	       vgpuctl_size(s->pool_bytes, pool, sizeof(pool)), s->worker_pid);
}

int vgpuctl_daemon_sessions(const char *path, uint64_t id, int json)
{
	struct vgpu_ctl_req q = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
				  .op = VGPU_CTL_SESSIONS, .session = id };
	struct vgpu_ctl_session s[VGPU_CTL_RECORDS_PER_MSG];
	struct vgpu_ctl_reply rep;
	uint32_t got = 0;
	int fd = ctl_request(path, &q, &rep);

	if (fd < 0 || fd == VGPUCTL_REFUSED)
		return fd == VGPUCTL_REFUSED ? 1 : fd;
	if (json && !id)
		printf("[");
	while (got < rep.count) {
		ssize_t n = recv(fd, s, sizeof(s), 0);

		if (n <= 0 || n % sizeof(s[0])) {
			close(fd);
			fprintf(stderr, "\nvgpuctl: %s: the session list was cut short\n", path);
			return 1;
		}
		for (size_t k = 0; k < n / sizeof(s[0]) && got < rep.count; k++, got++) {
			s[k].comm[sizeof(s[k].comm) - 1] = 0;
			s[k].carrier[sizeof(s[k].carrier) - 1] = 0;
			print_session(&s[k], json, id ? -1 : (int)got);
		}
	}
	close(fd);
	if (json)
		printf(id ? "\n" : "%s]\n", got ? "\n" : "");
	else if (!got)
		printf("no sessions\n");
	return 0;
}

/* --gpu N: 0 and the request names GPU N, or -1 (said why). */
static int gpu_arg(const char *s, struct vgpu_ctl_req *q)
{
	char *end;
	unsigned long n = strtoul(s, &end, 10);

	if (!*s || *end || *s == '-' || n >= 64) {
		fprintf(stderr, "vgpuctl: '%s' is not a GPU index\n", s);
		return -1;
	}
	q->flags |= VGPU_CTL_F_GPU;
	q->gpu = (uint32_t)n;
	return 0;
}

/*
 * Sends a request whose answer comes when the work is done (no timeout),
 * then reads its record into res (NULL: the operation has none); says why
 * on stderr ("vgpuctl: WHAT of SUBJECT: ...") and returns -1 when it failed.
 * progress: a line on a terminal meanwhile (the request names a session).
 * note (VGPU_CTL_NOTE bytes, or NULL): what the daemon says of a success.
 */
#define VGPU_CTL_NOTE sizeof(((struct vgpu_ctl_reply *)0)->message)
/* One message with @nfds descriptors (SCM_RIGHTS). */
static int ask_and_wait(const char *path, const void *msg, size_t len, const int *fds,
			unsigned nfds, struct vgpu_ctl_checkpoint *res, const char *what,
			const char *subject, bool progress, char *note)
{
	const struct vgpu_ctl_req *q = msg;
	struct vgpuctl_progress *pr = NULL;
	struct vgpu_ctl_reply rep;
	int fd = vgpuctl_ctl_connect(path);
	bool ok;

	if (fd < 0) {
		vgpuctl_control_error(path, fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 0 }, sizeof(struct timeval));
	ok = vgpu_send_fds(fd, msg, len, fds, (int)nfds) == (int)len;
	if (ok && progress)
		pr = vgpuctl_progress_start(path, q->session, what);
	ok = ok && recv(fd, &rep, sizeof(rep), 0) == sizeof(rep) && rep.magic == VGPU_CTL_MAGIC &&
	     (rep.status || !res || recv(fd, res, sizeof(*res), 0) == sizeof(*res));
	vgpuctl_progress_stop(pr, ok && !rep.status && res ? res->device_bytes + res->host_bytes : 0,
			      ok && !rep.status);
	if (!ok) {
		fprintf(stderr, "vgpuctl: %s: no valid answer from vgpud\n", path);
		close(fd);
		return -1;
	}
	close(fd);
	rep.message[sizeof(rep.message) - 1] = 0;
	if (rep.status) {
		fprintf(stderr, "vgpuctl: %s of %s: %s\n", what, subject, rep.message);
		return -1;
	}
	if (note)
		memcpy(note, rep.message, sizeof(rep.message));
	return 0;
}

int vgpuctl_migrate(int argc, char **argv)
{
	struct vgpu_ctl_req q = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
				  .op = VGPU_CTL_MIGRATE };
	struct vgpuctl_ctl_args a = { 0 };
	struct vgpu_ctl_checkpoint res;
	struct timespec t0, t1;
	char buf[108], dev[16], subject[48], gpu_note[24] = "";
	const char *id, *path;
	uint64_t downtime;

	for (int i = 1; i < argc; i++) {
		if (vgpuctl_ctl_arg(argc, argv, &i, &a))
			continue;
		if (strcmp(argv[i], "--gpu") || i + 1 == argc)
			return vgpuctl_usage(argv[0]);
		if (gpu_arg(argv[++i], &q))
			return VGPUCTL_USAGE;
		snprintf(gpu_note, sizeof(gpu_note), " on GPU %u", q.gpu);
	}
	id = a.id;
	if (!id)
		return vgpuctl_usage(argv[0]);
	if (vgpuctl_parse_id(id, &q.session) || !q.session) {
		fprintf(stderr, "vgpuctl: '%s' is not a session id\n", id);
		return VGPUCTL_USAGE;
	}
	path = vgpuctl_control_path(a.control, a.socket, buf, sizeof(buf));
	if (!path) {
		fprintf(stderr, "vgpuctl: socket path too long\n");
		return VGPUCTL_USAGE;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	snprintf(subject, sizeof(subject), "session %s", id);
	if (ask_and_wait(path, &q, sizeof(q), NULL, 0, &res, "move", subject, !a.json, NULL))
		return VGPUCTL_FAIL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* The program waits from its pause (the daemon's clock is this host's)
	 * to the new worker's answer; at most from the order. */
	downtime = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + t1.tv_nsec - t0.tv_nsec;
	if (res.paused_at_ns && res.paused_at_ns < (uint64_t)t1.tv_sec * 1000000000ull + t1.tv_nsec)
		downtime = (uint64_t)t1.tv_sec * 1000000000ull + t1.tv_nsec - res.paused_at_ns;
	if (a.json)
		printf("{\"session\": %" PRIu64 ", \"device_bytes\": %" PRIu64 ", \"host_bytes\": %"
		       PRIu64 ", \"restore_ns\": %" PRIu64 ", \"downtime_ns\": %" PRIu64 "}\n",
		       q.session, res.device_bytes, res.host_bytes, res.stall_ns, downtime);
	else
		printf("session %" PRIu64 " moved to a new worker%s: %s of device memory rebuilt in "
		       "%.3f s; the program waited %.3f s\n", q.session, gpu_note,
		       vgpuctl_size(res.device_bytes, dev, sizeof(dev)), res.stall_ns / 1e9,
		       downtime / 1e9);
	return VGPUCTL_OK;
}

/* Whether @file is a regular file, looked at without blocking on a FIFO;
 * says why not. */
static bool regular(const char *file)
{
	int fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	bool reg;

	if (fd < 0) {
		fprintf(stderr, "vgpuctl: restore of %s: %s\n", file, strerror(errno));
		return false;
	}
	reg = !fstat(fd, &st) && S_ISREG(st.st_mode);
	close(fd);
	if (!reg)
		fprintf(stderr, "vgpuctl: restore of %s: not a regular file\n", file);
	return reg;
}

int vgpuctl_restore(int argc, char **argv)
{
	struct {
		struct vgpu_ctl_req q;
		char path[VGPU_CTL_MAX_ARG];
	} m = { .q = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
		       .op = VGPU_CTL_RESTORE } };
	struct vgpuctl_ctl_args a = { 0 };
	struct vgpu_ckpt_reader *r, *p;
	char buf[108], *file, err[VGPU_CKPT_MSG];
	int fds[VGPU_CTL_MAX_FDS], ret;
	unsigned nfds = 0;
	const char *path;
	size_t len;

	for (int i = 1; i < argc; i++) {
		if (vgpuctl_ctl_arg(argc, argv, &i, &a))
			continue;
		if (strcmp(argv[i], "--gpu") || i + 1 == argc)
			return vgpuctl_usage(argv[0]);
		if (gpu_arg(argv[++i], &m.q))
			return VGPUCTL_USAGE;
	}
	if (!a.id)
		return vgpuctl_usage(argv[0]);
	file = realpath(a.id, NULL);
	if (!file || (len = strlen(file) + 1) > sizeof(m.path)) {
		fprintf(stderr, "vgpuctl: %s: %s\n", a.id, file ? "path too long" : strerror(errno));
		free(file);
		return VGPUCTL_FAIL;
	}
	memcpy(m.path, file, len);
	free(file);
	m.q.arg_len = (uint32_t)len;
	path = vgpuctl_control_path(a.control, a.socket, buf, sizeof(buf));
	if (!path) {
		fprintf(stderr, "vgpuctl: socket path too long\n");
		return VGPUCTL_USAGE;
	}
	/* The files opened here, as the caller: the daemon reads only what its
	 * caller may. No checksum pass here; the daemon does it. */
	if (!regular(m.path))
		return VGPUCTL_FAIL;
	ret = vgpu_ckpt_open_chain(&r, m.path, NULL, 0, err);
	if (ret) {
		/* Not the file's bytes: the message may end up in a log. */
		fprintf(stderr, "vgpuctl: restore of %s: %s\n", m.path,
			ret == -ENOEXEC ? "not a vgpu checkpoint" : err);
		return VGPUCTL_FAIL;
	}
	for (p = r; p && nfds < VGPU_CTL_MAX_FDS; p = vgpu_ckpt_parent(p))
		fds[nfds++] = vgpu_ckpt_reader_fd(p);
	/* The daemon checks the whole chain first: no time limit. */
	ret = ask_and_wait(path, &m, sizeof(m.q) + len, fds, nfds, NULL, "restore", m.path, false,
			   NULL);
	vgpu_ckpt_reader_close(r);
	if (ret)
		return VGPUCTL_FAIL;
	if (m.q.flags & VGPU_CTL_F_GPU)
		printf("%s: its session comes back on GPU %u when its program reconnects\n",
		       m.path, m.q.gpu);
	else
		printf("%s: its session comes back when its program reconnects\n", m.path);
	return VGPUCTL_OK;
}

/* An absolute path for @file (its folder must exist), or NULL. */
static char *absolute(const char *file)
{
	char *dup = strdup(file), *slash, *dir, *out = NULL;
	const char *base;

	if (!dup)
		return NULL;
	slash = strrchr(dup, '/');
	if (slash) {
		*slash = 0;
		base = slash + 1;
		dir = realpath(*dup ? dup : "/", NULL);
	} else {
		base = dup;
		dir = realpath(".", NULL);
	}
	if (dir && *base && asprintf(&out, "%s/%s", strcmp(dir, "/") ? dir : "", base) < 0)
		out = NULL;
	free(dir);
	free(dup);
	return out;
}

/*
 * The file a checkpoint goes into, opened with the caller's rights (the
 * daemon writes only where the caller may): @file itself is refused when it
 * exists and the caller cannot write it (it stays as it was); else a
 * temporary file beside it, the caller's, 0600, which target_name() renames
 * to @file once the daemon says it is complete. The descriptor, or -1.
 */
static int target_open(const char *file, char **tmp)
{
	int fd = open(file, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && errno != ENOENT) {
		fprintf(stderr, "vgpuctl: %s: %s\n", file, strerror(errno));
		return -1;
	}
	if (fd >= 0) {
		bool reg = !fstat(fd, &st) && S_ISREG(st.st_mode);

		close(fd);
		if (!reg) {
			fprintf(stderr, "vgpuctl: %s: not a regular file\n", file);
			return -1;
		}
	}
	if (asprintf(tmp, "%s.tmp.%d", file, (int)getpid()) < 0) {
		fprintf(stderr, "vgpuctl: out of memory\n");
		return -1;
	}
	fd = open(*tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "vgpuctl: %s: cannot create %s: %s\n", file, *tmp, strerror(errno));
		free(*tmp);
		return -1;
	}
	return fd;
}

/* Interrupted while the daemon writes: the temporary file goes with us. */
static const char *volatile tmp_file;

static void drop_tmp(int sig)
{
	if (tmp_file)
		unlink(tmp_file);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void guard_tmp(const char *tmp)
{
	tmp_file = tmp;
	signal(SIGINT, tmp ? drop_tmp : SIG_DFL);
	signal(SIGTERM, tmp ? drop_tmp : SIG_DFL);
	signal(SIGHUP, tmp ? drop_tmp : SIG_DFL);
}

/* The complete file takes its name; its folder synced so that it lasts. */
static int target_name(const char *tmp, const char *file)
{
	char *dir = strdup(file), *slash = dir ? strrchr(dir, '/') : NULL;
	int fd;

	if (rename(tmp, file) < 0) {
		fprintf(stderr, "vgpuctl: %s: cannot rename %s to it: %s\n", file, tmp,
			strerror(errno));
		unlink(tmp);
		free(dir);
		return -1;
	}
	if (slash)
		slash[slash == dir] = 0;
	fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd < 0 || fsync(fd) < 0)
		fprintf(stderr, "vgpuctl: warning: %s: its folder not synced\n", file);
	if (fd >= 0)
		close(fd);
	free(dir);
	return 0;
}

int vgpuctl_checkpoint(int argc, char **argv)
{
	struct {
		struct vgpu_ctl_req q;
		char path[VGPU_CTL_MAX_ARG];
	} m = { .q = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
		       .op = VGPU_CTL_CHECKPOINT } };
	struct vgpuctl_ctl_args a = { 0 };
	const char *out = NULL, *id, *path;
	struct vgpu_ctl_checkpoint res;
	char buf[108], subject[48], note[VGPU_CTL_NOTE], *file, *tmp;
	int fd, ret;
	size_t len;

	for (int i = 1; i < argc; i++) {
		if (vgpuctl_ctl_arg(argc, argv, &i, &a))
			continue;
		if (!strcmp(argv[i], "--compress"))
			m.q.flags |= VGPU_CTL_F_COMPRESS;
		else if (!strcmp(argv[i], "--direct"))
			m.q.flags |= VGPU_CTL_F_DIRECT;
		else if (!strcmp(argv[i], "--stop"))
			m.q.flags |= VGPU_CTL_F_STOP;
		else if (!strcmp(argv[i], "--incremental"))
			m.q.flags |= VGPU_CTL_F_INCREMENTAL;
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else
			return vgpuctl_usage(argv[0]);
	}
	id = a.id;
	if (!id || !out)
		return vgpuctl_usage(argv[0]);
	if (vgpuctl_parse_id(id, &m.q.session) || !m.q.session) {
		fprintf(stderr, "vgpuctl: '%s' is not a session id\n", id);
		return VGPUCTL_USAGE;
	}
	file = absolute(out);
	if (!file || (len = strlen(file) + 1) > sizeof(m.path)) {
		fprintf(stderr, "vgpuctl: %s: %s\n", out,
			file ? "path too long" : "its folder does not exist");
		free(file);
		return VGPUCTL_FAIL;
	}
	memcpy(m.path, file, len);
	m.q.arg_len = (uint32_t)len;
	path = vgpuctl_control_path(a.control, a.socket, buf, sizeof(buf));
	if (!path) {
		free(file);
		fprintf(stderr, "vgpuctl: socket path too long\n");
		return VGPUCTL_USAGE;
	}
	snprintf(subject, sizeof(subject), "session %s", id);
	fd = target_open(file, &tmp);
	if (fd < 0) {
		free(file);
		return VGPUCTL_FAIL;
	}
	guard_tmp(tmp);
	ret = ask_and_wait(path, &m, sizeof(m.q) + len, &fd, 1, &res, "checkpoint", subject,
			   !a.json, note);
	close(fd);
	if (!ret)
		ret = target_name(tmp, file);
	else
		unlink(tmp);
	guard_tmp(NULL);
	free(tmp);
	if (ret) {
		free(file);
		return VGPUCTL_FAIL;
	}
	if (a.json) {
		printf("{\"session\": %" PRIu64 ", \"file\": ", m.q.session);
		vgpuctl_json_str(stdout, file);
		printf(", \"device_bytes\": %" PRIu64 ", \"host_bytes\": %" PRIu64
		       ", \"file_bytes\": %" PRIu64 ", \"allocations\": %u, \"modules\": %u"
		       ", \"stall_ns\": %" PRIu64 ", \"total_ns\": %" PRIu64 ", \"snapshot\": %s"
		       ", \"incremental\": %s, \"parent_bytes\": %" PRIu64
		       ", \"parent_allocations\": %u, \"note\": ",
		       res.device_bytes, res.host_bytes, res.file_bytes, res.allocations,
		       res.modules, res.stall_ns, res.total_ns, res.snapshot ? "true" : "false",
		       res.incremental ? "true" : "false", res.parent_bytes,
		       res.parent_allocations);
		vgpuctl_json_str(stdout, note);
		printf("}\n");
	} else {
		char dev[16], host[16], fb[16], pb[16];
		double s = res.stall_ns / 1e9;
		uint64_t copied = res.device_bytes + res.host_bytes - res.parent_bytes;

		if (note[0])
			fprintf(stderr, "vgpuctl: note: %s\n", note);
		printf("session %" PRIu64 " -> %s: %s device, %s host memory, %u allocations, "
		       "%u modules; %s file in %.3f s; program paused %.3f s (%.2f GB/s)%s\n",
		       m.q.session, file, vgpuctl_size(res.device_bytes, dev, sizeof(dev)),
		       vgpuctl_size(res.host_bytes, host, sizeof(host)), res.allocations,
		       res.modules, vgpuctl_size(res.file_bytes, fb, sizeof(fb)),
		       res.total_ns / 1e9, s, s > 0 ? copied / s / 1e9 : 0.0,
		       res.snapshot ? "" : ", straight to the file");
		if (res.incremental)
			printf("incremental: %u of %u allocations (%s) unchanged, left in the "
			       "parent\n", res.parent_allocations, res.allocations,
			       vgpuctl_size(res.parent_bytes, pb, sizeof(pb)));
	}
	free(file);
	return VGPUCTL_OK;
}
