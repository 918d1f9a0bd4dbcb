// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Every ioctl with valid and with bad input gets its documented answer. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

static void info(void)
{
	struct vgpu_info i;
	int fd = kt_open();

	memset(&i, 0xff, sizeof(i));
	CHECK_OK(ioctl(fd, VGPU_IOC_GET_INFO, &i));
	CHECK(i.abi_version == VGPU_ABI_VERSION);
	CHECK(i.page_size == 4096);
	CHECK(i.features == VGPU_FEATURES);
	CHECK(i.max_sq_entries == VGPU_MAX_SQ_ENTRIES);
	CHECK(i.max_region_bytes == VGPU_MAX_REGION_BYTES);
	CHECK(i.max_pinned_bytes > 0);
	CHECK(!i.resv[0] && !i.resv[3]);
	CHECK_ERR(ioctl(fd, VGPU_IOC_GET_INFO, NULL), EFAULT);
	close(fd);
}

/* A fresh fd has no role: role-bound calls say so. */
static void no_role(void)
{
	struct vgpu_region r = { 0 };
	struct vgpu_attach a = { 0 };
	uint64_t h = 0;
	char buf[256];
	int fd = kt_open();

	CHECK_ERR(ioctl(fd, VGPU_IOC_DOORBELL, 0), EBADFD);
	CHECK_ERR(kt_wait(fd, 0), EBADFD);
	CHECK_ERR(ioctl(fd, VGPU_IOC_REGISTER, &r), EBADFD);
	CHECK_ERR(ioctl(fd, VGPU_IOC_UNREGISTER, &h), EBADFD);
	CHECK_ERR(ioctl(fd, VGPU_IOC_REGION_INFO, &r), EBADFD);
	CHECK_ERR(ioctl(fd, VGPU_IOC_ATTACH, &a), EBADFD);
	CHECK_ERR(ioctl(fd, VGPU_IOC_SESSION_INFO, buf), EBADFD);
	CHECK_ERR(ioctl(fd, _IO(VGPU_IOC_MAGIC, 0x7f), 0), ENOTTY);
	CHECK_ERR(ioctl(fd, _IOWR(VGPU_IOC_MAGIC, 0x01, uint64_t), buf),
		  ENOTTY);
	CHECK_ERR(ioctl(fd, _IOR(VGPU_IOC_MAGIC, 0x01, struct vgpu_setup),
			buf), ENOTTY);
	CHECK_ERR(ioctl(fd, _IOW(VGPU_IOC_MAGIC, 0x10, uint32_t), buf),
		  ENOTTY);
	CHECK_ERR(read(fd, buf, sizeof(buf)), EBADFD);
	CHECK_ERR(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED
		  ? -1 : 0, EBADFD);
	close(fd);
}

static int setup_raw(int fd, struct vgpu_setup *p)
{
	return ioctl(fd, VGPU_IOC_SETUP, p);
}

static void setup_bad(void)
{
	const struct vgpu_setup good = {
		.sq_entries = 64, .cq_entries = 64, .sqe_size = 64,
		.cqe_size = 32, .arena_bytes = 65536,
	};
	struct vgpu_setup p;
	int fd = kt_open();

#define BAD(field, value)						\
	do {								\
		p = good;						\
		p.field = value;					\
		CHECK_ERR(setup_raw(fd, &p), EINVAL);			\
	} while (0)
	BAD(sq_entries, 0);
	BAD(sq_entries, 3);
	BAD(sq_entries, VGPU_MAX_SQ_ENTRIES * 2);
	BAD(cq_entries, 0);
	BAD(cq_entries, 48);
	BAD(cq_entries, VGPU_MAX_CQ_ENTRIES * 2);
	BAD(sqe_size, 8);
	BAD(sqe_size, 24);
	BAD(sqe_size, 512);
	BAD(cqe_size, 0);
	BAD(cqe_size, 1024);
	BAD(arena_bytes, 100);
	BAD(arena_bytes, 2048);
	BAD(arena_bytes, 3 * 4096);
	BAD(arena_bytes, VGPU_MAX_ARENA_BYTES * 2);
	BAD(flags, 1);
	BAD(flags, 0x80000000);
	BAD(resv0, 1);
	BAD(resv[0], 1);
	BAD(resv[3], 1);
#undef BAD
	CHECK_ERR(setup_raw(fd, NULL), EFAULT);
	p = good;
	CHECK_OK(setup_raw(fd, &p));
	CHECK_ERR(setup_raw(fd, &p), EBADFD);
	close(fd);
}

static void server(int *srv)
{
	struct vgpu_server_setup s = { 0 };
	int fd = kt_open(), fd2 = kt_open();

	s.flags = 1;
	CHECK_ERR(ioctl(fd, VGPU_IOC_SERVER, &s), EINVAL);
	s.flags = 0;
	s.resv[2] = 1;
	CHECK_ERR(ioctl(fd, VGPU_IOC_SERVER, &s), EINVAL);
	s.resv[2] = 0;
	CHECK_ERR(ioctl(fd, VGPU_IOC_SERVER, NULL), EFAULT);
	CHECK_OK(ioctl(fd, VGPU_IOC_SERVER, &s));
	CHECK_ERR(ioctl(fd, VGPU_IOC_SERVER, &s), EBADFD);
	CHECK_ERR(ioctl(fd2, VGPU_IOC_SERVER, &s), EBUSY);
	CHECK_ERR(ioctl(fd, VGPU_IOC_DOORBELL, 0), EBADFD);
	CHECK_ERR(kt_wait(fd, 0), EBADFD);
	close(fd2);
	*srv = fd;
}

static void events(int srv, uint64_t id)
{
	struct vgpu_event ev[4];
	int fl;

	CHECK(!kt_event(srv, &ev[0], 1000));
	CHECK(ev[0].type == VGPU_EVENT_OPENED);
	CHECK(ev[0].session_id == id);
	CHECK(ev[0].pid == (uint32_t)getpid());
	CHECK(ev[0].tid == (uint32_t)getpid());
	CHECK(ev[0].uid == getuid());
	CHECK(ev[0].sq_entries == 64 && ev[0].cq_entries == 128);
	CHECK(ev[0].sqe_size == 64 && ev[0].cqe_size == 32);
	CHECK(ev[0].arena_bytes == 1 << 20);
	CHECK(!strcmp((char *)ev[0].comm, "abi"));
	CHECK(!ev[0].resv[0] && !ev[0].resv[5]);
	CHECK_ERR(read(srv, ev, sizeof(ev[0]) - 1), EINVAL);
	fl = fcntl(srv, F_GETFL);
	fcntl(srv, F_SETFL, fl | O_NONBLOCK);
	CHECK_ERR(read(srv, ev, sizeof(ev)), EAGAIN);
	fcntl(srv, F_SETFL, fl);
}

static void doorbells(int srv, int cfd, uint64_t id)
{
	struct vgpu_wait w = { 0 };
	struct vgpu_event ev[4];
	int fl;

	CHECK_ERR(ioctl(cfd, VGPU_IOC_DOORBELL, 1), EINVAL);
	CHECK_OK(kt_doorbell(cfd));
	CHECK_OK(kt_doorbell(cfd));
	CHECK_OK(kt_doorbell(cfd));
	/* Coalesced: one DOORBELL event for three doorbells. */
	fl = fcntl(srv, F_GETFL);
	fcntl(srv, F_SETFL, fl | O_NONBLOCK);
	CHECK(read(srv, ev, sizeof(ev)) == sizeof(ev[0]));
	CHECK(ev[0].type == VGPU_EVENT_DOORBELL && ev[0].session_id == id);
	CHECK(!ev[0].pid);
	fcntl(srv, F_SETFL, fl);

	w.flags = 1;
	CHECK_ERR(ioctl(cfd, VGPU_IOC_WAIT, &w), EINVAL);
	w.flags = 0;
	w.resv = 1;
	CHECK_ERR(ioctl(cfd, VGPU_IOC_WAIT, &w), EINVAL);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_WAIT, NULL), EFAULT);
	CHECK_ERR(kt_wait(cfd, 0), ETIMEDOUT);
	CHECK_ERR(kt_wait(cfd, 2000000), ETIMEDOUT);
}

static void registers(int cfd)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct vgpu_region r;
	uint8_t *buf, *ro, *hole;
	uint64_t h;

	buf = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED);
	CHECK_ERR(kt_register(cfd, buf, 0, 0, &r), EINVAL);
	CHECK_ERR(kt_register(cfd, buf, pg, 4, &r), EINVAL);
	CHECK_ERR(kt_register(cfd, (void *)~0UL, 2, 0, &r), EINVAL);
	CHECK_ERR(kt_register(cfd, buf, VGPU_MAX_REGION_BYTES + 1, 0, &r),
		  EINVAL);
	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)buf;
	r.len = pg;
	r.resv[1] = 1;
	CHECK_ERR(ioctl(cfd, VGPU_IOC_REGISTER, &r), EINVAL);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_REGISTER, NULL), EFAULT);
	CHECK_ERR(kt_register(cfd, (void *)0xffff888000000000UL, pg, 0, &r),
		  EFAULT);
	/* Unmapped in the middle: a partial pin is a failure. */
	hole = buf + 8 * pg;
	CHECK_OK(munmap(hole, pg));
	CHECK_ERR(kt_register(cfd, buf + 7 * pg, 3 * pg, 0, &r), EFAULT);
	CHECK_ERR(kt_register(cfd, hole, 1, 0, &r), EFAULT);
	/* Read-only memory pins only read-only. */
	ro = mmap(NULL, 2 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED);
	CHECK_ERR(kt_register(cfd, ro, pg, 0, &r), EFAULT);
	CHECK_OK(kt_register(cfd, ro, pg, VGPU_REGION_READONLY, &r));
	CHECK(r.flags == VGPU_REGION_READONLY && r.map_len == (uint64_t)pg);
	/* Any alignment and length: the covering pages. */
	CHECK_OK(kt_register(cfd, buf + 3, 2 * pg, 0, &r));
	CHECK(r.page_offset == 3 && r.map_len == 3 * (uint64_t)pg);
	CHECK(r.handle && !(r.handle & ((1ULL << VGPU_REGION_SHIFT) - 1)));
	h = r.handle;
	CHECK_OK(kt_register(cfd, buf + pg - 1, 1, 0, &r));
	CHECK(r.page_offset == pg - 1 && r.map_len == (uint64_t)pg);
	CHECK(r.handle != h);

	h = 0;
	CHECK_ERR(ioctl(cfd, VGPU_IOC_UNREGISTER, &h), ENOENT);
	h = 1;
	CHECK_ERR(ioctl(cfd, VGPU_IOC_UNREGISTER, &h), ENOENT);
	h = 999ULL << VGPU_REGION_SHIFT;
	CHECK_ERR(ioctl(cfd, VGPU_IOC_UNREGISTER, &h), ENOENT);
	h = r.handle + 4096;
	CHECK_ERR(ioctl(cfd, VGPU_IOC_UNREGISTER, &h), ENOENT);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_UNREGISTER, NULL), EFAULT);
	h = r.handle;
	CHECK_OK(ioctl(cfd, VGPU_IOC_UNREGISTER, &h));
	CHECK_ERR(ioctl(cfd, VGPU_IOC_UNREGISTER, &h), ENOENT);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_REGION_INFO, &r), EBADFD);
	/* The others go when the session closes. */
}

static void worker(int srv, int cfd, uint64_t id)
{
	struct vgpu_region r, q;
	struct vgpu_attach a = { .session_id = id };
	struct vgpu_kill k = { .session_id = 12345 };
	struct vgpu_setup g;
	static uint8_t buf[8192];
	int wfd;

	CHECK_ERR(kt_attach(srv, 12345), ENOENT);
	CHECK_ERR(kt_attach(srv, 1ULL << 40), ENOENT);
	a.flags = 1;
	CHECK_ERR(ioctl(srv, VGPU_IOC_ATTACH, &a), EINVAL);
	a.flags = 0;
	a.resv0 = 1;
	CHECK_ERR(ioctl(srv, VGPU_IOC_ATTACH, &a), EINVAL);
	CHECK_ERR(ioctl(srv, VGPU_IOC_KILL, &k), ENOENT);
	k.flags = 1;
	CHECK_ERR(ioctl(srv, VGPU_IOC_KILL, &k), EINVAL);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_ATTACH, &a), EBADFD);
	wfd = kt_attach(srv, id);
	CHECK(wfd >= 0);
	CHECK(fcntl(wfd, F_GETFD) & FD_CLOEXEC);
	CHECK_OK(ioctl(wfd, VGPU_IOC_SESSION_INFO, &g));
	CHECK(g.session_id == id && g.sq_entries == 64);
	CHECK_ERR(ioctl(wfd, VGPU_IOC_REGISTER, &r), EBADFD);
	CHECK_ERR(ioctl(wfd, VGPU_IOC_SETUP, &g), EBADFD);
	CHECK_ERR(ioctl(wfd, VGPU_IOC_ATTACH, &a), EBADFD);
	CHECK_ERR(read(wfd, buf, sizeof(buf)), EBADFD);

	CHECK_OK(kt_register(cfd, buf + 5, 5000, 0, &r));
	memset(&q, 0, sizeof(q));
	q.handle = r.handle;
	CHECK_OK(ioctl(wfd, VGPU_IOC_REGION_INFO, &q));
	CHECK(q.addr == (uintptr_t)buf + 5 && q.len == 5000);
	CHECK(q.page_offset == r.page_offset && q.map_len == r.map_len);
	q.handle = r.handle + (1ULL << VGPU_REGION_SHIFT);
	CHECK_ERR(ioctl(wfd, VGPU_IOC_REGION_INFO, &q), ENOENT);
	q.handle = r.handle;
	q.resv[0] = 1;
	CHECK_ERR(ioctl(wfd, VGPU_IOC_REGION_INFO, &q), EINVAL);
	CHECK_OK(kt_doorbell(wfd));
	CHECK_ERR(kt_wait(wfd, 1000), ETIMEDOUT);
	close(wfd);
}

/* The module-wide limit: -ENOSPC. */
static void global_limit(int cfd)
{
	static uint8_t big[4 << 20] __attribute__((aligned(4096)));
	struct vgpu_region r;
	uint64_t h;

	if (kt_param_set("max_pinned_mb", "2") < 0) {
		fprintf(stderr, "no max_pinned_mb parameter\n");
		exit(1);
	}
	CHECK_ERR(kt_register(cfd, big, 3 << 20, 0, &r), ENOSPC);
	CHECK_OK(kt_register(cfd, big, 1 << 20, 0, &r));
	h = r.handle;
	CHECK_ERR(kt_register(cfd, big, 1 << 20 | 1, 0, &r), ENOSPC);
	CHECK_OK(ioctl(cfd, VGPU_IOC_UNREGISTER, &h));
	CHECK(kt_param_set("max_pinned_mb", "0") > 0);
}

/* RLIMIT_MEMLOCK, for a caller without CAP_IPC_LOCK: -ENOMEM. */
static void memlock_limit(void)
{
	pid_t pid = fork();
	int status;

	CHECK(pid >= 0);
	if (!pid) {
		static uint8_t buf[256 << 10] __attribute__((aligned(4096)));
		struct rlimit rl = { 64 << 10, 64 << 10 };
		struct vgpu_region r;
		uint64_t h;
		int fd;

		CHECK_OK(setrlimit(RLIMIT_MEMLOCK, &rl));
		CHECK_OK(setuid(65534));
		fd = kt_client_default(NULL);
		CHECK_OK(kt_register(fd, buf, 32 << 10, 0, &r));
		CHECK_ERR(kt_register(fd, buf, 40 << 10, 0, &r), ENOMEM);
		CHECK_OK(kt_register(fd, buf + (32 << 10), 32 << 10, 0, &r));
		h = r.handle;
		CHECK_ERR(kt_register(fd, buf, 1, 0, &r), ENOMEM);
		CHECK_OK(ioctl(fd, VGPU_IOC_UNREGISTER, &h));
		CHECK_OK(kt_register(fd, buf, 1, 0, &r));
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	struct vgpu_setup geo;
	int srv, cfd, fd;

	info();
	no_role();
	fd = kt_open();
	geo = (struct vgpu_setup){ .sq_entries = 64, .cq_entries = 64,
				   .sqe_size = 64, .cqe_size = 32 };
	CHECK_ERR(setup_raw(fd, &geo), ECONNREFUSED);
	close(fd);

	server(&srv);
	setup_bad();
	while (!kt_event(srv, &(struct vgpu_event){ 0 }, 0))
		;	/* setup_bad()'s session */
	cfd = kt_client_default(&geo);
	CHECK(geo.session_id && geo.abi_version == VGPU_ABI_VERSION);
	CHECK(geo.features == VGPU_FEATURES);
	CHECK(geo.sq.entries == 4096 && geo.sq.ring_entries == 64);
	CHECK(geo.sq.ring_mask == 63 && geo.sq.entry_size == 64);
	CHECK(geo.cq.entries == 8192 && geo.cq.ring_entries == 128);
	CHECK(geo.rings_size == 3 * 4096 && geo.arena_size == 1 << 20);
	CHECK(geo.status_off == VGPU_OFF_STATUS);
	CHECK(geo.rings_off == VGPU_OFF_RINGS);
	CHECK(geo.arena_off == VGPU_OFF_ARENA);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_SERVER, &(struct vgpu_server_setup){ 0 }),
		  EBADFD);
	events(srv, geo.session_id);
	doorbells(srv, cfd, geo.session_id);
	registers(cfd);
	worker(srv, cfd, geo.session_id);
	global_limit(cfd);
	memlock_limit();
	close(cfd);
	close(srv);
	return 0;
}
