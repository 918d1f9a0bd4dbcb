// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A bounded, seeded random-ioctl/mmap/read fuzzer: two processes share the
 * fds (server, clients, workers, fresh ones) and throw a few thousand calls
 * with random commands, sizes and arguments at them. Passes if nothing
 * crashes, the kernel stays quiet (the runner reads dmesg) and every
 * counter is back to zero once all is closed.
 *
 *   fuzz [seed [iterations]]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

#define SLOTS	10
#define MAPS	64
#define POOL	(1 << 20)

static uint64_t rng;
static int slot[SLOTS];
static uint64_t handles[16];
static struct { void *p; size_t len; } maps[MAPS];
static uint8_t *pool;
static long pg;

static uint64_t r(uint64_t n)
{
	return n ? kt_rand(&rng) % n : 0;
}

static const unsigned int cmds[] = {
	VGPU_IOC_GET_INFO, VGPU_IOC_SETUP, VGPU_IOC_SESSION_INFO,
	VGPU_IOC_DOORBELL, VGPU_IOC_WAIT, VGPU_IOC_REGISTER,
	VGPU_IOC_UNREGISTER, VGPU_IOC_REGION_INFO, VGPU_IOC_REGION_CHECK,
	VGPU_IOC_SERVER, VGPU_IOC_ATTACH, VGPU_IOC_KILL,
};

static uint64_t pick_offset(void)
{
	switch (r(6)) {
	case 0: return VGPU_OFF_STATUS;
	case 1: return VGPU_OFF_RINGS + r(4) * pg;
	case 2: return VGPU_OFF_ARENA + r(64) * pg;
	case 3: return handles[r(16)] + r(4) * pg;
	case 4: return (r(70000) << VGPU_REGION_SHIFT) + r(3) * pg;
	}
	return r(1ULL << 50) & ~(uint64_t)(pg - 1);
}

static void *pick_ptr(uint8_t *buf)
{
	switch (r(20)) {
	case 0: return NULL;
	case 1: return (void *)0xffff888000000000UL;
	case 2: return (void *)0x10000UL;	/* unmapped */
	case 3: return buf + 4090;		/* straddles */
	}
	return buf;
}

/* Random bytes, made plausible for @cmd often enough to go deep. */
static void fill_arg(unsigned int cmd, uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = r(4) ? 0 : (uint8_t)r(256);
	if (r(3) == 0)
		return;
	memset(buf, 0, len);
	if (cmd == VGPU_IOC_SETUP) {
		struct vgpu_setup *s = (void *)buf;

		s->sq_entries = 1u << r(17);
		s->cq_entries = 1u << r(18);
		s->sqe_size = 1u << r(10);
		s->cqe_size = 1u << r(10);
		s->arena_bytes = r(2) ? 0 : 1ULL << r(21);
	} else if (cmd == VGPU_IOC_REGISTER) {
		struct vgpu_region *g = (void *)buf;

		g->addr = (uintptr_t)pool + r(POOL);
		g->len = r(8) ? r(65536) : r(1ULL << 40);
		g->flags = r(3) == 0;
	} else if (cmd == VGPU_IOC_UNREGISTER || cmd == VGPU_IOC_REGION_INFO ||
		   cmd == VGPU_IOC_REGION_CHECK) {
		memcpy(buf + (cmd == VGPU_IOC_REGION_INFO ? 24 : 0),
		       &handles[r(16)], 8);
	} else if (cmd == VGPU_IOC_ATTACH || cmd == VGPU_IOC_KILL) {
		uint64_t id = cmd == VGPU_IOC_KILL && r(8) ? 1000 + r(40) : r(40);

		memcpy(buf, &id, 8);
	}
}

/* Keeps what ioctls hand back: region handles, new fds. */
static long ok_calls[32];

static void after_ioctl(unsigned int cmd, long ret, const uint8_t *buf)
{
	if (ret >= 0 && _IOC_TYPE(cmd) == VGPU_IOC_MAGIC)
		ok_calls[_IOC_NR(cmd) & 31]++;
	if (ret >= 0 && cmd == VGPU_IOC_REGISTER)
		memcpy(&handles[r(16)], buf + 24, 8);
	if (ret > 2 && cmd == VGPU_IOC_ATTACH) {
		int i = r(SLOTS);

		if (slot[i] >= 0)
			close(slot[i]);
		slot[i] = ret;
	}
}

static void do_ioctl(int fd)
{
	static uint8_t buf[8192] __attribute__((aligned(4096)));
	unsigned int cmd;
	long ret;

	switch (r(10)) {
	case 0:
		cmd = _IOC(r(4), VGPU_IOC_MAGIC, r(0x20), r(300));
		break;
	case 1:
		/* Our type byte only: generic ones (FIONBIO) are not ours. */
		cmd = _IOC(r(4), VGPU_IOC_MAGIC, r(256), r(1 << 14));
		break;
	default:
		cmd = cmds[r(sizeof(cmds) / sizeof(cmds[0]))];
	}
	fill_arg(cmd, buf, 512);
	if (cmd == VGPU_IOC_DOORBELL) {
		ret = ioctl(fd, cmd, r(4) ? 0 : r(100));
	} else if (cmd == VGPU_IOC_WAIT) {
		/* Never sleep for long, whatever else is random. */
		struct vgpu_wait w = {
			.timeout_ns = r(1000000),
			.flags = r(8) ? 0 : (uint32_t)r(4),
		};

		ret = ioctl(fd, cmd, r(10) ? &w : NULL);
	} else {
		ret = ioctl(fd, cmd, pick_ptr(buf));
	}
	after_ioctl(cmd, ret, buf);
}

static void do_mmap(int fd)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE,
				     PROT_WRITE, PROT_NONE };
	int i = r(MAPS);
	size_t len = (1 + r(8)) * pg;
	void *p;

	if (maps[i].p) {
		munmap(maps[i].p, maps[i].len);
		maps[i].p = NULL;
	}
	p = mmap(NULL, len, prots[r(4)], r(5) ? MAP_SHARED : MAP_PRIVATE, fd,
		 pick_offset());
	if (p == MAP_FAILED)
		return;
	kt_faults(p, len, 0);
	maps[i].p = p;
	maps[i].len = len;
}

static void do_other(int i)
{
	uint8_t buf[512];
	struct pollfd pfd;

	switch (r(7)) {
	case 0:
		if (read(slot[i], buf, r(sizeof(buf))) < 0)
			break;
		break;
	case 1:
		pfd = (struct pollfd){ .fd = slot[i], .events = POLLIN };
		poll(&pfd, 1, 0);
		break;
	case 2:
		if (slot[i] >= 0)
			close(slot[i]);
		slot[i] = open("/dev/vgpu", O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (!i || !r(10))
			ioctl(slot[i], VGPU_IOC_SERVER,
			      &(struct vgpu_server_setup){ 0 });
		break;
	case 3:
		if (!i && r(20))
			break;	/* the server mostly stays */
		if (slot[i] >= 0)
			close(slot[i]);
		slot[i] = open("/dev/vgpu", O_RDWR | O_CLOEXEC);
		{
			struct vgpu_setup g = {
				.sq_entries = 1u << r(6),
				.cq_entries = 1u << r(6),
				.sqe_size = 16u << r(4),
				.cqe_size = 16u << r(4),
				.arena_bytes = r(2) ? 0 : 65536,
			};

			ioctl(slot[i], VGPU_IOC_SETUP, &g);
		}
		break;
	case 4:
		/* Invalidations under registered regions (they go stale). */
		madvise(pool + (r(POOL) & ~(pg - 1)), pg * (1 + r(4)), MADV_DONTNEED);
		break;
	default:
		kt_faults(pool + r(POOL), 1, 1);
	}
}

static void fuzz(long n)
{
	long k;

	for (k = 0; k < n; k++) {
		int i = r(SLOTS);

		switch (r(10)) {
		case 0:
		case 1:
			do_mmap(slot[i]);
			break;
		case 2:
		case 3:
			do_other(i);
			break;
		default:
			do_ioctl(slot[i]);
		}
	}
	printf("%d: succeeded: info %ld setup %ld doorbell %ld wait %ld register %ld unregister %ld region_info %ld server %ld attach %ld kill %ld\n",
	       getpid(), ok_calls[0], ok_calls[1], ok_calls[3], ok_calls[4],
	       ok_calls[5], ok_calls[6], ok_calls[7], ok_calls[0x10],
	       ok_calls[0x11], ok_calls[0x12]);
	fflush(stdout);
	for (k = 0; k < MAPS; k++)
		if (maps[k].p)
			munmap(maps[k].p, maps[k].len);
	for (k = 0; k < SLOTS; k++)
		if (slot[k] >= 0)
			close(slot[k]);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5eed;
	long n = argc > 2 ? strtol(argv[2], NULL, 0) : 3000;
	struct kt_stats st;
	int i, status;
	pid_t pid;

	printf("seed %#llx, %ld calls per process\n", (unsigned long long)seed,
	       n);
	fflush(stdout);
	pg = sysconf(_SC_PAGESIZE);
	pool = mmap(NULL, POOL, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(pool != MAP_FAILED);
	slot[0] = kt_server();
	for (i = 1; i < SLOTS; i++)
		slot[i] = i % 3 ? kt_client_default(NULL) : kt_open();
	for (i = 1; i < SLOTS; i++)
		fcntl(slot[i], F_SETFL, O_NONBLOCK);
	fcntl(slot[0], F_SETFL, O_NONBLOCK);
	for (i = 1; i < 4; i++) {
		int w = kt_attach(slot[0], i);

		if (w >= 0)
			slot[3 * i] = (close(slot[3 * i]), w);
	}
	rng = seed;
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		rng = seed ^ 0x9e3779b97f4a7c15ULL;
		fuzz(n);
		_exit(0);
	}
	fuzz(n);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	munmap(pool, POOL);
	CHECK_OK(kt_stats(&st));
	printf("left: %llu sessions, %llu pinned pages, %llu regions, %llu workers, server %u; %llu registrations, %llu doorbells\n",
	       (unsigned long long)st.sessions,
	       (unsigned long long)st.pinned_pages,
	       (unsigned long long)st.regions, (unsigned long long)st.workers,
	       st.server, (unsigned long long)st.registrations,
	       (unsigned long long)st.doorbells);
	CHECK(!st.sessions && !st.pinned_pages && !st.regions && !st.workers &&
	      !st.server);
	return 0;
}
