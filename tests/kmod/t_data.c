// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Client and worker see the same bytes, both ways: ring entries, arena,
 * pinned regions (also from a separate worker process), and lose the
 * pinned view on UNREGISTER.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

static long pg;

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)kt_rand(&seed);
}

static int same(const uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)kt_rand(&seed))
			return 0;
	return 1;
}

static int readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

static void rings(struct kt_map *c, struct kt_map *w, int cfd, int wfd)
{
	uint8_t *sqe = c->sq.entries + 5 * c->sq.entry_size;
	uint8_t *cqe = w->cq.entries + 7 * w->cq.entry_size;

	CHECK(!readable(cfd) && !readable(wfd));
	fill(sqe, c->sq.entry_size, 1);
	CHECK(same(w->sq.entries + 5 * w->sq.entry_size, w->sq.entry_size, 1));
	__atomic_store_n(c->sq.tail, 1, __ATOMIC_RELEASE);
	CHECK(__atomic_load_n(w->sq.tail, __ATOMIC_ACQUIRE) == 1);
	CHECK(readable(wfd) && !readable(cfd));
	CHECK_OK(kt_wait(wfd, 0));
	__atomic_store_n(w->sq.head, 1, __ATOMIC_RELEASE);
	CHECK(!readable(wfd));

	fill(cqe, w->cq.entry_size, 2);
	CHECK(same(c->cq.entries + 7 * c->cq.entry_size, c->cq.entry_size, 2));
	__atomic_store_n(w->cq.tail, 1, __ATOMIC_RELEASE);
	CHECK(readable(cfd));
	CHECK_OK(kt_wait(cfd, 0));
	__atomic_store_n(c->cq.head, 1, __ATOMIC_RELEASE);
	CHECK_ERR(kt_wait(cfd, 0), ETIMEDOUT);

	fill(c->arena + 12345, 100000, 3);
	CHECK(same(w->arena + 12345, 100000, 3));
	fill(w->arena + c->geo.arena_size - 5000, 5000, 4);
	CHECK(same(c->arena + c->geo.arena_size - 5000, 5000, 4));
	CHECK(*c->status == 0 && *w->status == 0);
}

static uint8_t *map_region(int wfd, const struct vgpu_region *r, int prot)
{
	uint8_t *p = mmap(NULL, r->map_len, prot, MAP_SHARED, wfd, r->handle);

	CHECK(p != MAP_FAILED);
	return p + r->page_offset;
}

static void pinned(int cfd, int wfd)
{
	size_t len = 3 * pg + 100;
	uint8_t *buf = malloc(len + 64), *view, *ro;
	struct vgpu_region r, rr;
	static const char msg[] = "read-only view";
	static char text[8192] __attribute__((aligned(4096))) = "read-only view";
	pid_t pid;
	int status;

	CHECK(buf);
	buf += 7;
	fill(buf, len, 5);
	CHECK_OK(kt_register(cfd, buf, len, 0, &r));
	view = map_region(wfd, &r, PROT_READ | PROT_WRITE);
	CHECK(same(view, len, 5));
	fill(view + 10, 2 * pg, 6);
	CHECK(same(buf + 10, 2 * pg, 6));
	/* Later client writes show through as well: same pages. */
	fill(buf, len, 7);
	CHECK(same(view, len, 7));

	/* A worker process of its own. */
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		uint8_t *v = map_region(wfd, &r, PROT_READ | PROT_WRITE);

		if (!same(v, len, 7))
			_exit(1);
		fill(v, len, 8);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(same(buf, len, 8));

	CHECK_OK(kt_register(cfd, text, sizeof(msg), VGPU_REGION_READONLY, &rr));
	ro = map_region(wfd, &rr, PROT_READ);
	CHECK(!memcmp(ro, msg, sizeof(msg)));
	CHECK(kt_faults(ro, 1, 1));	/* no writes through a read-only view */

	/* UNREGISTER zaps the worker's view before unpinning. */
	CHECK_OK(ioctl(cfd, VGPU_IOC_UNREGISTER, &r.handle));
	CHECK(kt_faults(view - r.page_offset, r.map_len, 0));
	CHECK(same(buf, len, 8));
	CHECK_OK(ioctl(cfd, VGPU_IOC_UNREGISTER, &rr.handle));
	CHECK(kt_faults(ro - rr.page_offset, 1, 0));
	munmap(view - r.page_offset, r.map_len);
	munmap(ro - rr.page_offset, rr.map_len);
}

int main(void)
{
	struct kt_map c, w;
	struct kt_stats st;
	int srv, cfd, wfd;

	pg = sysconf(_SC_PAGESIZE);
	srv = kt_server();
	cfd = kt_client(64, 64, 128, 64, 4 << 20, NULL);
	kt_map(cfd, &c);
	wfd = kt_attach(srv, c.geo.session_id);
	CHECK(wfd >= 0);
	kt_map(wfd, &w);
	CHECK(w.rings != c.rings);
	rings(&c, &w, cfd, wfd);
	pinned(cfd, wfd);
	CHECK_OK(kt_stats(&st));
	CHECK(st.pinned_pages == 0 && st.regions == 0);
	CHECK(st.sessions == 1 && st.workers == 1 && st.server == 1);
	/* Mappings hold their files: the session ends with the last one. */
	close(wfd);
	close(cfd);
	close(srv);
	CHECK_OK(kt_stats(&st));
	CHECK(st.sessions == 1 && st.workers == 1 && st.server == 0);
	CHECK(*c.status == (VGPU_RING_DEAD | VGPU_RING_SERVER_GONE));
	kt_unmap(&c);
	kt_unmap(&w);
	CHECK_OK(kt_stats(&st));
	CHECK(st.sessions == 0 && st.workers == 0 && st.server == 0);
	return 0;
}
