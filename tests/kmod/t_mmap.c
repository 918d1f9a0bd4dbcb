// SPDX-License-Identifier: GPL-2.0 OR MIT
/* mmap fails closed: wrong offsets, sizes, private or writable read-only maps. */
#define _GNU_SOURCE
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt.h"

static long pg;

static int map(int fd, uint64_t off, size_t len, int prot, int flags)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		return -1;
	munmap(p, len);
	return 0;
}

#define RW (PROT_READ | PROT_WRITE)

static void parts(int fd, const struct vgpu_setup *g)
{
	uint8_t *p;

	/* status: read-only, one page */
	CHECK_OK(map(fd, g->status_off, pg, PROT_READ, MAP_SHARED));
	CHECK_ERR(map(fd, g->status_off, pg, RW, MAP_SHARED), EPERM);
	CHECK_ERR(map(fd, g->status_off, 2 * pg, PROT_READ, MAP_SHARED),
		  EINVAL);
	p = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, g->status_off);
	CHECK(p != MAP_FAILED);
	CHECK_ERR(mprotect(p, pg, RW), EACCES);
	CHECK(*(volatile uint32_t *)(p + g->status_flags) == 0);
	CHECK(kt_faults(p, 1, 1));
	munmap(p, pg);

	/* rings */
	CHECK_OK(map(fd, g->rings_off, g->rings_size, RW, MAP_SHARED));
	CHECK_OK(map(fd, g->rings_off + pg, g->rings_size - pg, RW,
		     MAP_SHARED));
	CHECK_ERR(map(fd, g->rings_off, g->rings_size + pg, RW, MAP_SHARED),
		  EINVAL);
	CHECK_ERR(map(fd, g->rings_off + g->rings_size, pg, RW, MAP_SHARED),
		  EINVAL);
	CHECK_ERR(map(fd, g->rings_off, g->rings_size, RW, MAP_PRIVATE),
		  EINVAL);
	CHECK_ERR(map(fd, g->rings_off - pg, pg, PROT_READ, MAP_SHARED),
		  EINVAL);

	/* arena */
	CHECK_OK(map(fd, g->arena_off, g->arena_size, RW, MAP_SHARED));
	CHECK_ERR(map(fd, g->arena_off, g->arena_size + pg, RW, MAP_SHARED),
		  EINVAL);
	CHECK_ERR(map(fd, g->arena_off + g->arena_size, pg, RW, MAP_SHARED),
		  EINVAL);
	CHECK_ERR(map(fd, 0x30000000, pg, RW, MAP_SHARED), EINVAL);
	CHECK_ERR(map(fd, 0x7ffff000, pg, RW, MAP_SHARED), EINVAL);

	/* no growing */
	p = mmap(NULL, pg, RW, MAP_SHARED, fd, g->arena_off);
	CHECK(p != MAP_FAILED);
	CHECK(mremap(p, pg, 2 * pg, MREMAP_MAYMOVE) == MAP_FAILED);
	munmap(p, pg);
}

static void no_arena(void)
{
	struct vgpu_setup g;
	int fd = kt_client(16, 16, 16, 16, 0, &g);

	CHECK(g.arena_size == 0);
	CHECK_ERR(map(fd, VGPU_OFF_ARENA, pg, RW, MAP_SHARED), EINVAL);
	CHECK_OK(map(fd, g.rings_off, g.rings_size, RW, MAP_SHARED));
	close(fd);
}

static void regions(int cfd, int wfd)
{
	static uint8_t buf[8 << 12] __attribute__((aligned(4096)));
	struct vgpu_region r, ro;
	uint64_t bad;

	CHECK_OK(kt_register(cfd, buf, 4 * pg, 0, &r));
	CHECK_OK(kt_register(cfd, buf + 4 * pg, 2 * pg, VGPU_REGION_READONLY,
			     &ro));
	/* The client may not map regions at all. */
	CHECK_ERR(map(cfd, r.handle, pg, RW, MAP_SHARED), EINVAL);
	CHECK_OK(map(wfd, r.handle, r.map_len, RW, MAP_SHARED));
	CHECK_OK(map(wfd, r.handle + pg, r.map_len - pg, RW, MAP_SHARED));
	CHECK_ERR(map(wfd, r.handle, r.map_len + pg, RW, MAP_SHARED), EINVAL);
	CHECK_ERR(map(wfd, r.handle + r.map_len, pg, RW, MAP_SHARED), EINVAL);
	CHECK_ERR(map(wfd, r.handle, pg, RW, MAP_PRIVATE), EINVAL);
	bad = r.handle + (5ULL << VGPU_REGION_SHIFT);
	CHECK_ERR(map(wfd, bad, pg, RW, MAP_SHARED), EINVAL);
	CHECK_ERR(map(wfd, 1ULL << 62, pg, RW, MAP_SHARED), EINVAL);
	CHECK_ERR(map(wfd, 65536ULL << VGPU_REGION_SHIFT, pg, RW, MAP_SHARED),
		  EINVAL);
	CHECK_ERR(map(wfd, ro.handle, pg, RW, MAP_SHARED), EPERM);
	CHECK_OK(map(wfd, ro.handle, ro.map_len, PROT_READ, MAP_SHARED));
	{
		void *p = mmap(NULL, pg, PROT_READ, MAP_SHARED, wfd, ro.handle);

		CHECK(p != MAP_FAILED);
		CHECK_ERR(mprotect(p, pg, RW), EACCES);
		munmap(p, pg);
	}
	/* Unregistered: the offset is gone. */
	CHECK_OK(ioctl(cfd, VGPU_IOC_UNREGISTER, &r.handle));
	CHECK_ERR(map(wfd, r.handle, pg, RW, MAP_SHARED), EINVAL);
}

int main(void)
{
	struct vgpu_setup g;
	int srv, cfd, wfd;

	pg = sysconf(_SC_PAGESIZE);
	srv = kt_server();
	cfd = kt_client_default(&g);
	parts(cfd, &g);
	no_arena();
	wfd = kt_attach(srv, g.session_id);
	CHECK(wfd >= 0);
	parts(wfd, &g);
	regions(cfd, wfd);
	close(wfd);
	close(cfd);
	close(srv);
	return 0;
}
