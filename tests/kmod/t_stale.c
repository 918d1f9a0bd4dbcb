// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Stale regions (VGPU_FEAT_PIN_NOTIFY): a region goes stale when the
 * client's mapping of its pages changes (munmap + mmap MAP_FIXED over it,
 * MADV_DONTNEED, mremap, a write that breaks copy-on-write after fork),
 * not on mprotect or a fork that leaves the pages alone; a stale region
 * keeps its old pages for the worker until UNREGISTER; REGION_CHECK and
 * REGION_INFO say so; registering memory shared copy-on-write with a child
 * gives a live region; counters go back to zero.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

static long pg;
static int cfd, wfd;

static int check(int fd, uint64_t h)
{
	return ioctl(fd, VGPU_IOC_REGION_CHECK, &h);
}

static uint8_t *anon(void *at, size_t len, int fill)
{
	uint8_t *p = mmap(at, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	CHECK(p != MAP_FAILED);
	if (fill >= 0)
		memset(p, fill, len);
	return p;
}

static void unregister(uint64_t h)
{
	CHECK_OK(ioctl(cfd, VGPU_IOC_UNREGISTER, &h));
}

/* The worker maps @r and finds byte @want at the client's first byte. */
static void worker_sees(const struct vgpu_region *r, uint8_t want)
{
	uint8_t *m = mmap(NULL, r->map_len, PROT_READ, MAP_SHARED, wfd, r->handle);

	CHECK(m != MAP_FAILED);
	CHECK(m[r->page_offset] == want);
	CHECK(m[r->page_offset + r->len - 1] == want);
	CHECK_OK(munmap(m, r->map_len));
}

static void remap_fixed(void)
{
	uint8_t *p = anon(NULL, 8 * pg, 0xa1);
	struct vgpu_region r, q = { 0 };

	CHECK_OK(kt_register(cfd, p + 3, 5 * pg, 0, &r));
	CHECK_OK(check(cfd, r.handle));
	CHECK_OK(check(wfd, r.handle));
	/* The program frees the buffer and gets the same address back. */
	CHECK_OK(munmap(p, 8 * pg));
	anon(p, 8 * pg, 0xb2);
	CHECK_ERR(check(cfd, r.handle), ESTALE);
	CHECK_ERR(check(wfd, r.handle), ESTALE);
	q.handle = r.handle;
	CHECK_OK(ioctl(wfd, VGPU_IOC_REGION_INFO, &q));
	CHECK(q.flags & VGPU_REGION_STALE);
	/* The stale region still pins, and shows, the old pages. */
	worker_sees(&r, 0xa1);
	unregister(r.handle);
	CHECK_ERR(check(cfd, r.handle), ENOENT);
	/* A new registration sees the new pages and is live. */
	CHECK_OK(kt_register(cfd, p + 3, 5 * pg, 0, &r));
	CHECK_OK(check(cfd, r.handle));
	worker_sees(&r, 0xb2);
	/* MAP_FIXED straight over the range, no munmap first. */
	anon(p + 2 * pg, pg, 0xc3);
	CHECK_ERR(check(cfd, r.handle), ESTALE);
	unregister(r.handle);
	CHECK_OK(munmap(p, 8 * pg));
}

static void other_events(void)
{
	uint8_t *p = anon(NULL, 4 * pg, 0x11), *q;
	struct vgpu_region r;
	int st;

	/* mprotect changes no page: live. */
	CHECK_OK(kt_register(cfd, p, 4 * pg, 0, &r));
	CHECK_OK(mprotect(p, 4 * pg, PROT_READ));
	CHECK_OK(mprotect(p, 4 * pg, PROT_READ | PROT_WRITE));
	CHECK_OK(check(cfd, r.handle));
	/* A fork: the pinned pages stay the parent's (the child gets copies). */
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (!pid) {
		p[0] = 0x22;	/* the child's copy */
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	p[1] = 0x33;
	CHECK_OK(check(cfd, r.handle));
	CHECK(p[0] == 0x11);
	/* MADV_DONTNEED on one page of it: stale. */
	CHECK_OK(madvise(p + 2 * pg, pg, MADV_DONTNEED));
	CHECK_ERR(check(cfd, r.handle), ESTALE);
	unregister(r.handle);
	/* mremap moving the range away: stale. */
	CHECK_OK(kt_register(cfd, p, 4 * pg, 0, &r));
	q = mremap(p, 4 * pg, 4 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, anon(NULL, 4 * pg, -1));
	CHECK(q != MAP_FAILED);
	CHECK_ERR(check(cfd, r.handle), ESTALE);
	unregister(r.handle);
	/* An invalidation next to the range leaves it alone. */
	CHECK_OK(kt_register(cfd, q + pg, pg, 0, &r));
	CHECK_OK(madvise(q, pg, MADV_DONTNEED));
	CHECK_OK(madvise(q + 2 * pg, 2 * pg, MADV_DONTNEED));
	CHECK_OK(check(cfd, r.handle));
	unregister(r.handle);
	CHECK_OK(munmap(q, 4 * pg));
}

/* Memory a child shares copy-on-write: pinning it writable breaks COW,
 * which the notifier sees; the region must still come out live. */
static void cow_shared(void)
{
	uint8_t *p = anon(NULL, 16 * pg, 0x44);
	int pipefd[2], st;
	struct vgpu_region r;
	pid_t pid;
	char c;

	CHECK_OK(pipe(pipefd));
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);	/* hold the pages shared */
		_exit(p[5] == 0x44 ? 0 : 1);
	}
	close(pipefd[0]);
	CHECK_OK(kt_register(cfd, p, 16 * pg, 0, &r));
	CHECK_OK(check(cfd, r.handle));
	p[5] = 0x55;	/* the parent's page is the pinned one */
	{
		uint8_t *m = mmap(NULL, r.map_len, PROT_READ, MAP_SHARED, wfd, r.handle);

		CHECK(m != MAP_FAILED);
		CHECK(m[5] == 0x55);
		CHECK_OK(munmap(m, r.map_len));
	}
	CHECK(write(pipefd[1], "x", 1) == 1);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	CHECK_OK(check(cfd, r.handle));
	/* Untouched memory (never faulted in) pins live too. */
	unregister(r.handle);
	CHECK_OK(munmap(p, 16 * pg));
	p = anon(NULL, 16 * pg, -1);
	CHECK_OK(kt_register(cfd, p, 16 * pg, 0, &r));
	CHECK_OK(check(cfd, r.handle));
	unregister(r.handle);
	CHECK_OK(munmap(p, 16 * pg));
	/* Read-only registration of untouched memory (the zero page may be
	 * behind it), then a write: never live and showing other bytes. */
	p = anon(NULL, 16 * pg, -1);
	CHECK_OK(kt_register(cfd, p + pg - 1, 1, VGPU_REGION_READONLY, &r));
	CHECK_OK(check(cfd, r.handle));
	p[pg - 1] = 0x66;
	if (check(cfd, r.handle) == 0) {
		worker_sees(&r, 0x66);
	} else {
		CHECK(errno == ESTALE);
		worker_sees(&r, 0);
	}
	unregister(r.handle);
	CHECK_OK(munmap(p, 16 * pg));
}

static void bad_input(void)
{
	uint64_t h = 0;

	CHECK_ERR(check(cfd, 0), ENOENT);
	CHECK_ERR(check(cfd, 1), ENOENT);
	CHECK_ERR(check(cfd, 1ULL << VGPU_REGION_SHIFT), ENOENT);
	CHECK_ERR(check(cfd, ~0ULL), ENOENT);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_REGION_CHECK, NULL), EFAULT);
	CHECK_ERR(ioctl(cfd, _IOW(VGPU_IOC_MAGIC, 0x08, uint32_t), &h), ENOTTY);
}

int main(void)
{
	struct vgpu_info info;
	struct kt_stats st;
	struct vgpu_setup g;
	int srv, fd;

	pg = sysconf(_SC_PAGESIZE);
	fd = kt_open();
	CHECK_OK(ioctl(fd, VGPU_IOC_GET_INFO, &info));
	close(fd);
	if (!(info.features & VGPU_FEAT_PIN_NOTIFY)) {
		fprintf(stderr, "no VGPU_FEAT_PIN_NOTIFY\n");
		return 1;
	}
	srv = kt_server();
	CHECK_ERR(check(srv, 0), EBADFD);
	cfd = kt_client_default(&g);
	wfd = kt_attach(srv, g.session_id);
	CHECK(wfd >= 0);
	bad_input();
	remap_fixed();
	other_events();
	cow_shared();
	/* Regions left registered go with the session, notifier first. */
	{
		static uint8_t keep[64 << 10];
		struct vgpu_region r;

		memset(keep, 1, sizeof(keep));
		CHECK_OK(kt_register(cfd, keep, sizeof(keep), 0, &r));
	}
	close(wfd);
	close(cfd);
	close(srv);
	CHECK_OK(kt_stats(&st));
	CHECK(st.regions == 0 && st.pinned_pages == 0);
	printf("stale regions: ok\n");
	return 0;
}
