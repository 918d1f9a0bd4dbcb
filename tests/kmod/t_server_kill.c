// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The server killed mid-session: sleeping clients wake with -ESHUTDOWN,
 * every later call fails instead of hanging, the status page says why,
 * pages are unpinned, and a new server can start.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

struct msg {
	uint64_t id;
	struct vgpu_region r;
};

static void server(int in, int out)
{
	struct msg m;
	struct kt_map w;
	uint8_t *v;
	int srv = kt_server(), wfd;

	CHECK(write(out, "R", 1) == 1);
	CHECK(read(in, &m, sizeof(m)) == sizeof(m));
	CHECK(!kt_event_wait(srv, VGPU_EVENT_OPENED, m.id, 2000));
	wfd = kt_attach(srv, m.id);
	CHECK(wfd >= 0);
	kt_map(wfd, &w);
	v = mmap(NULL, m.r.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, wfd,
		 m.r.handle);
	CHECK(v != MAP_FAILED);
	v[m.r.page_offset] = 'W';
	CHECK(write(out, "M", 1) == 1);
	for (;;)
		pause();
}

/* Sleeps on @fd one way or the other; exits 0 on the expected wakeup. */
static pid_t sleeper(int fd, int use_poll)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid)
		return pid;
	alarm(20);
	if (use_poll) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		_exit(poll(&pfd, 1, -1) == 1 && (pfd.revents & POLLHUP) ? 0 : 1);
	}
	_exit(kt_wait(fd, VGPU_WAIT_FOREVER) == -1 && errno == ESHUTDOWN ?
	      0 : 2);
}

static void reap(pid_t pid)
{
	int status;

	alarm(20);
	CHECK(waitpid(pid, &status, 0) == pid);
	alarm(0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "pid %d: status %#x\n", pid, status);
		exit(1);
	}
}

int main(void)
{
	static uint8_t buf[3 * 4096] __attribute__((aligned(4096)));
	struct vgpu_setup g;
	struct vgpu_region r;
	struct kt_stats st;
	struct kt_map c;
	struct msg m;
	int to[2], from[2], cfd, srv, cfd2, status;
	pid_t spid, w1, w2;
	char x;

	CHECK_OK(pipe(to));
	CHECK_OK(pipe(from));
	spid = fork();
	CHECK(spid >= 0);
	if (!spid)
		server(to[0], from[1]);
	CHECK(read(from[0], &x, 1) == 1 && x == 'R');
	cfd = kt_client_default(&g);
	kt_map(cfd, &c);
	m.id = g.session_id;
	CHECK_OK(kt_register(cfd, buf + 100, 5000, 0, &m.r));
	CHECK(write(to[1], &m, sizeof(m)) == sizeof(m));
	CHECK(read(from[0], &x, 1) == 1 && x == 'M');
	CHECK(buf[100] == 'W');
	CHECK_OK(kt_stats(&st));
	CHECK(st.pinned_pages == 2 && st.workers == 1 && st.server == 1);

	w1 = sleeper(cfd, 0);
	w2 = sleeper(cfd, 1);
	usleep(200000);
	CHECK_OK(kill(spid, SIGKILL));
	CHECK(waitpid(spid, &status, 0) == spid);
	reap(w1);
	reap(w2);

	CHECK(*c.status == (VGPU_RING_DEAD | VGPU_RING_SERVER_GONE));
	CHECK_ERR(kt_doorbell(cfd), ESHUTDOWN);
	CHECK_ERR(kt_wait(cfd, 0), ESHUTDOWN);
	CHECK_ERR(kt_wait(cfd, VGPU_WAIT_FOREVER), ESHUTDOWN);
	CHECK_ERR(kt_register(cfd, buf, 1, 0, &r), ESHUTDOWN);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_UNREGISTER, &m.r.handle), ESHUTDOWN);
	CHECK_OK(ioctl(cfd, VGPU_IOC_SESSION_INFO, &g));
	CHECK_OK(kt_stats(&st));
	CHECK(st.pinned_pages == 0 && st.regions == 0);
	CHECK(st.server == 0 && st.workers == 0 && st.sessions == 1);

	/* A new server serves new sessions; the old one stays dead. */
	srv = kt_server();
	cfd2 = kt_client_default(NULL);
	CHECK_OK(kt_doorbell(cfd2));
	CHECK_ERR(kt_doorbell(cfd), ESHUTDOWN);
	CHECK_ERR(kt_attach(srv, m.id), ENOENT);
	close(cfd2);
	kt_unmap(&c);
	close(cfd);
	close(srv);
	CHECK_OK(kt_stats(&st));
	CHECK(st.sessions == 0 && st.server == 0);
	return 0;
}
