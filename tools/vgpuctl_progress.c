// SPDX-License-Identifier: MIT
/*
 * Progress of a checkpoint or a move on a terminal: while the request
 * waits for its answer, a thread asks the daemon (on connections of its
 * own) how many bytes of the session's state it has copied, and redraws
 * one line on stderr: "checkpoint of session 3: 2.1G of 8.0G (26%), 12.4 GB/s".
 */
#include "vgpuctl.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/ctl.h"

struct vgpuctl_progress {
	char path[108];
	uint64_t session;
	const char *what;
	unsigned interval_ms;
	int stop;
	bool shown;
	uint64_t t0;
	pthread_t thread;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The session's counters, quietly (no message on any failure): 0 or -1. */
static int ask(const struct vgpuctl_progress *p, uint64_t *done, uint64_t *total)
{
	struct vgpu_ctl_req q = { .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
				  .op = VGPU_CTL_SESSIONS, .session = p->session };
	struct vgpu_ctl_session s[4];
	struct vgpu_ctl_reply rep;
	int fd = vgpuctl_ctl_connect(p->path), ret = -1;
	ssize_t n;

	if (fd < 0)
		return -1;
	if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) == sizeof(q) &&
	    recv(fd, &rep, sizeof(rep), 0) == sizeof(rep) && rep.magic == VGPU_CTL_MAGIC &&
	    !rep.status && rep.count && (n = recv(fd, s, sizeof(s), 0)) > 0 &&
	    n % sizeof(s[0]) == 0) {
		/* During a move two workers hold the session: the one copying. */
		for (size_t i = 0; i < (size_t)n / sizeof(s[0]); i++)
			if (s[i].state_total) {
				*done = s[i].state_done;
				*total = s[i].state_total;
				ret = 0;
			}
	}
	close(fd);
	return ret;
}

static void draw(struct vgpuctl_progress *p, uint64_t done, uint64_t total)
{
	double secs = (now_ns() - p->t0) / 1e9;
	char d[16], t[16];

	if (done > total)
		done = total;
	fprintf(stderr, "\r%s of session %llu: %s of %s (%.0f%%), %.2f GB/s   ", p->what,
		(unsigned long long)p->session, vgpuctl_size(done, d, sizeof(d)),
		vgpuctl_size(total, t, sizeof(t)), total ? 100.0 * done / total : 100.0,
		secs > 0 ? done / secs / 1e9 : 0.0);
	p->shown = true;
}

static void *poll_daemon(void *arg)
{
	struct vgpuctl_progress *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		uint64_t done, total;

		if (!ask(p, &done, &total))
			draw(p, done, total);
		for (unsigned ms = 0; ms < p->interval_ms &&
		     !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE); ms += 5)
			usleep(5000);
	}
	return NULL;
}

struct vgpuctl_progress *vgpuctl_progress_start(const char *ctl_path, uint64_t session,
						const char *what)
{
	const char *env = getenv("VGPU_PROGRESS_MS");
	struct vgpuctl_progress *p;

	if (!isatty(STDERR_FILENO) || strlen(ctl_path) >= sizeof(p->path))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	snprintf(p->path, sizeof(p->path), "%s", ctl_path);
	p->session = session;
	p->what = what;
	p->interval_ms = env && atoi(env) > 0 ? (unsigned)atoi(env) : 200;
	p->t0 = now_ns();
	if (pthread_create(&p->thread, NULL, poll_daemon, p)) {
		free(p);
		return NULL;
	}
	return p;
}

void vgpuctl_progress_stop(struct vgpuctl_progress *p, uint64_t bytes, bool ok)
{
	if (!p)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_join(p->thread, NULL);
	/* The line finished where it was drawn; the copy itself may have ended
	 * before a poll saw it. */
	if (p->shown) {
		if (ok)
			draw(p, bytes, bytes);
		fputc('\n', stderr);
	}
	free(p);
}
