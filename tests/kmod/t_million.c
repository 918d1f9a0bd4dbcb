// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A million SQEs from a client process to a worker process with a checksum,
 * both sides sleeping through the NEED_WAKEUP + DOORBELL + WAIT protocol;
 * the worker answers with a CQE every 4096 entries and a final one.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt.h"

#define COUNT		(1u << 20)
#define BATCH		4096
#define SPINS		1000

struct cqe {
	uint64_t count;
	uint64_t sum;
	uint64_t resv[2];
};

static uint64_t mix(uint64_t h, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;	/* FNV-1a */
	return h;
}

static void fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Sleeps until @r has entries: flag, barrier (A), re-check, WAIT. */
static void consumer_sleep(int fd, struct kt_ring *r, uint64_t *waits)
{
	int i;

	for (i = 0; i < SPINS; i++)
		if (__atomic_load_n(r->tail, __ATOMIC_ACQUIRE) != *r->head)
			return;
	__atomic_store_n(r->flags, VGPU_RING_NEED_WAKEUP, __ATOMIC_RELAXED);
	fence();	/* A, pairs with B */
	if (__atomic_load_n(r->tail, __ATOMIC_ACQUIRE) == *r->head) {
		++*waits;
		if (kt_wait(fd, 10ULL * 1000000000)) {
			fprintf(stderr, "wait: %s\n", strerror(errno));
			exit(1);
		}
	}
	__atomic_store_n(r->flags, 0, __ATOMIC_RELAXED);
}

/* Publishes up to @tail and rings only if the consumer sleeps. */
static void produce(int fd, struct kt_ring *r, uint32_t tail, uint64_t *bells)
{
	__atomic_store_n(r->tail, tail, __ATOMIC_RELEASE);
	fence();	/* B, pairs with A */
	if (__atomic_load_n(r->flags, __ATOMIC_RELAXED) &
	    VGPU_RING_NEED_WAKEUP) {
		++*bells;
		CHECK_OK(kt_doorbell(fd));
	}
}

static int worker(int wfd)
{
	struct kt_map m;
	uint64_t sum = 0xcbf29ce484222325ULL, waits = 0, bells = 0;
	uint32_t head = 0, ctail = 0, n = 0;
	struct cqe c;

	kt_map(wfd, &m);
	while (n < COUNT) {
		uint32_t tail = __atomic_load_n(m.sq.tail, __ATOMIC_ACQUIRE);

		if (tail == head) {
			consumer_sleep(wfd, &m.sq, &waits);
			continue;
		}
		for (; head != tail; head++, n++) {
			const uint8_t *e = m.sq.entries +
				(head & m.sq.mask) * m.sq.entry_size;
			uint64_t seq;

			memcpy(&seq, e, 8);
			if (seq != n) {
				fprintf(stderr, "entry %u has seq %llu\n", n,
					(unsigned long long)seq);
				return 1;
			}
			sum = mix(sum, e, m.sq.entry_size);
			if ((n + 1) % BATCH && n + 1 != COUNT)
				continue;
			c = (struct cqe){ .count = n + 1, .sum = sum };
			while (ctail - __atomic_load_n(m.cq.head,
						       __ATOMIC_ACQUIRE) >
			       m.cq.mask)
				sched_yield();
			memcpy(m.cq.entries + (ctail & m.cq.mask) *
			       m.cq.entry_size, &c, sizeof(c));
			produce(wfd, &m.cq, ++ctail, &bells);
		}
		__atomic_store_n(m.sq.head, head, __ATOMIC_RELEASE);
	}
	printf("worker: %u entries, %llu waits, %llu doorbells\n", n,
	       (unsigned long long)waits, (unsigned long long)bells);
	fflush(stdout);
	return 0;
}

/* Takes every CQE there is; the last one read is in @c. */
static void drain_cq(struct kt_map *m, uint32_t *chead, struct cqe *c)
{
	while (__atomic_load_n(m->cq.tail, __ATOMIC_ACQUIRE) != *chead) {
		memcpy(c, m->cq.entries + (*chead & m->cq.mask) *
		       m->cq.entry_size, sizeof(*c));
		__atomic_store_n(m->cq.head, ++*chead, __ATOMIC_RELEASE);
	}
}

static int client(int cfd, struct kt_map *m)
{
	uint64_t sum = 0xcbf29ce484222325ULL, seed = 42, waits = 0, bells = 0;
	uint32_t tail = 0, chead = 0, n;
	struct timespec t0, t1;
	struct cqe c = { 0 };

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; n < COUNT; n++) {
		uint8_t *e;
		uint32_t i;

		while (tail - __atomic_load_n(m->sq.head, __ATOMIC_ACQUIRE) >
		       m->sq.mask) {
			drain_cq(m, &chead, &c);
			sched_yield();
		}
		e = m->sq.entries + (tail & m->sq.mask) * m->sq.entry_size;
		memcpy(e, &n, 4);
		memset(e + 4, 0, 4);
		for (i = 8; i < m->sq.entry_size; i += 8) {
			uint64_t v = kt_rand(&seed);

			memcpy(e + i, &v, 8);
		}
		sum = mix(sum, e, m->sq.entry_size);
		tail++;
		if (!(tail % 16) || n + 1 == COUNT)
			produce(cfd, &m->sq, tail, &bells);
	}
	/* Completions: the last one carries the total. */
	for (drain_cq(m, &chead, &c); c.count != COUNT;
	     drain_cq(m, &chead, &c))
		consumer_sleep(cfd, &m->cq, &waits);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("client: %u entries in %.2fs, %llu waits, %llu doorbells\n",
	       COUNT, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       (unsigned long long)waits, (unsigned long long)bells);
	if (c.sum != sum) {
		fprintf(stderr, "checksum %llx, worker saw %llx\n",
			(unsigned long long)sum, (unsigned long long)c.sum);
		return 1;
	}
	return 0;
}

int main(void)
{
	struct vgpu_event ev;
	struct kt_map m;
	int srv, cfd, wfd, status;
	pid_t pid;

	srv = kt_server();
	cfd = kt_client(256, 64, 64, 32, 0, NULL);
	kt_map(cfd, &m);
	CHECK(!kt_event(srv, &ev, 1000) && ev.type == VGPU_EVENT_OPENED);
	wfd = kt_attach(srv, ev.session_id);
	CHECK(wfd >= 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(cfd);
		close(srv);
		_exit(worker(wfd));
	}
	close(wfd);
	if (client(cfd, &m)) {
		kill(pid, SIGKILL);
		return 1;
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return 0;
}
