// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A client killed with SIGKILL while the worker maps its pinned regions:
 * the server sees CLOSED, every page is unpinned, the worker's views are
 * gone (SIGBUS), its fd reports the death.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

#define NREG 4

struct msg {
	uint64_t id;
	struct vgpu_region r[NREG];
};

static void client(int pipe_w)
{
	static const size_t len[NREG] = { 1 << 20, 5000, 1, 3 * 4096 + 17 };
	struct vgpu_setup g;
	struct msg m;
	uint8_t *buf;
	int fd, i;

	fd = kt_client_default(&g);
	m.id = g.session_id;
	for (i = 0; i < NREG; i++) {
		buf = malloc(len[i] + 100);
		CHECK(buf);
		memset(buf, 0x5a + i, len[i] + 100);
		CHECK_OK(kt_register(fd, buf + 3 * i, len[i], 0, &m.r[i]));
	}
	CHECK(write(pipe_w, &m, sizeof(m)) == sizeof(m));
	for (;;)
		pause();
}

int main(void)
{
	struct pollfd pfd;
	struct kt_stats st;
	uint8_t *view[NREG];
	struct kt_map w;
	struct msg m;
	int srv, wfd, p[2], i, status;
	uint64_t pages = 0;
	pid_t pid;

	srv = kt_server();
	CHECK_OK(pipe(p));
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(srv);
		client(p[1]);
	}
	CHECK(read(p[0], &m, sizeof(m)) == sizeof(m));
	CHECK(!kt_event_wait(srv, VGPU_EVENT_OPENED, m.id, 2000));
	wfd = kt_attach(srv, m.id);
	CHECK(wfd >= 0);
	kt_map(wfd, &w);
	for (i = 0; i < NREG; i++) {
		view[i] = mmap(NULL, m.r[i].map_len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, wfd, m.r[i].handle);
		CHECK(view[i] != MAP_FAILED);
		CHECK(view[i][m.r[i].page_offset] == 0x5a + i);
	}
	CHECK_OK(kt_stats(&st));
	for (i = 0; i < NREG; i++)
		pages += m.r[i].map_len / 4096;
	CHECK(st.pinned_pages == pages);
	CHECK(st.regions == NREG && st.sessions == 1);

	CHECK_OK(kill(pid, SIGKILL));
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(!kt_event_wait(srv, VGPU_EVENT_CLOSED, m.id, 2000));

	CHECK_OK(kt_stats(&st));
	CHECK(st.pinned_pages == 0 && st.regions == 0 && st.sessions == 0);
	for (i = 0; i < NREG; i++)
		CHECK(kt_faults(view[i], m.r[i].map_len, 0));
	CHECK(*w.status == (VGPU_RING_DEAD | VGPU_RING_CLIENT_GONE));
	pfd = (struct pollfd){ .fd = wfd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLHUP));
	CHECK_ERR(kt_doorbell(wfd), ESHUTDOWN);
	CHECK_ERR(kt_wait(wfd, VGPU_WAIT_FOREVER), ESHUTDOWN);
	CHECK_ERR(ioctl(wfd, VGPU_IOC_REGION_INFO, &m.r[0]), ESHUTDOWN);
	CHECK_ERR(kt_attach(srv, m.id), ENOENT);
	/* Fresh maps of the dead regions are refused too. */
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, wfd, m.r[0].handle) ==
	      MAP_FAILED);

	for (i = 0; i < NREG; i++)
		munmap(view[i], m.r[i].map_len);
	kt_unmap(&w);
	close(wfd);
	close(srv);
	CHECK_OK(kt_stats(&st));
	CHECK(st.workers == 0 && st.server == 0);
	return 0;
}
