// SPDX-License-Identifier: MIT
/*
 * The runtime's session with vgpud. Any thread submits under the SQ lock;
 * any thread waiting for an answer may become the reaper, which drains the
 * CQ and hands each answer to its waiter (leader/follower), so a thread
 * waiting on a long kernel never blocks another thread's answer.
 */
#include "client.h"
#include "dial.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "barrier.h"
#include "call_stats.h"
#include "carrier.h"
#include "clock.h"
#include "fdpass.h"
#include "futex.h"
#include "log.h"
#include "managed.h"
#include "pcopy.h"
#include "print_follow.h"
#include "sticky.h"

#define SPIN_ITERS	20000	/* ~20-50 us of polling before sleeping */
#define SLEEP_MS	20	/* sleepers check the worker is alive this often */
#define SMALL_COPY	(64u << 10)

enum { W_FREE, W_PENDING, W_KICK, W_DONE };

struct waiter {
	uint32_t state;
	uint32_t sleeping;	/* its thread is in (or entering) a futex wait */
	struct vgpu_cqe cqe;
};

static struct {
	pthread_mutex_t lock;		/* connect */
	struct vgpu_session s;
	bool connected;
	CUresult failed;		/* sticky connect failure, 0 if none */
	bool dead;
	CUresult sticky;		/* the context is poisoned with this */
	pthread_mutex_t sq_lock;	/* SQ and payload ring producer */
	pthread_mutex_t reap_lock;	/* CQ consumer */
	pthread_mutex_t tag_lock;
	pthread_cond_t tag_cond;
	struct waiter *w;
	uint32_t *free_tags;
	uint32_t nfree;
	pthread_mutex_t bulk_lock;	/* one staging transfer at a time */
} cl = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.sq_lock = PTHREAD_MUTEX_INITIALIZER,
	.reap_lock = PTHREAD_MUTEX_INITIALIZER,
	.tag_lock = PTHREAD_MUTEX_INITIALIZER,
	.tag_cond = PTHREAD_COND_INITIALIZER,
	.bulk_lock = PTHREAD_MUTEX_INITIALIZER,
};

static void deliver_callback(uint64_t cookie, uint32_t seq);

/* ---- connecting --------------------------------------------------------- */

/* Keeps [base, base + size) of this process for the daemon's addresses. */
static int claim(uint64_t base, uint64_t size, int prot, int flags, int fd)
{
	void *p = mmap((void *)(uintptr_t)base, size, prot,
		       flags | MAP_NORESERVE | MAP_FIXED_NOREPLACE, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	if ((uintptr_t)p != base) {	/* kernels without FIXED_NOREPLACE */
		munmap(p, size);
		return -EEXIST;
	}
	return 0;
}

static CUresult attach(struct vgpu_session *s, const int fds[3])
{
	struct vgpu_welcome *wl = &s->wl;
	bool kmod = s->carrier == VGPU_CARRIER_KMOD;
	size_t size = kmod ? sizeof(struct vgpu_shared) : wl->region_size;
	int ret;

	s->region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (s->region == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (kmod)
		ret = vgpu_ring_attach_kmod(&s->ring, s->region, &s->kmod, wl);
	else
		ret = vgpu_ring_attach(&s->ring, s->region, wl->region_size, wl);
	if (ret) {
		vlog_err("daemon sent an inconsistent session layout");
		return CUDA_ERROR_SYSTEM_NOT_READY;
	}
	s->ring.bell = fds[1];
	ret = claim(wl->dev_window_base, wl->dev_window_size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (ret) {
		vlog_err("device address window %#llx+%#llx is already used in this process (%s)",
			 (unsigned long long)wl->dev_window_base,
			 (unsigned long long)wl->dev_window_size, strerror(-ret));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	ret = claim(wl->host_pool_base, wl->host_pool_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fds[2]);
	if (ret) {
		vlog_err("pinned host pool at %#llx is already used in this process (%s)",
			 (unsigned long long)wl->host_pool_base, strerror(-ret));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	s->pool_base = (uint8_t *)(uintptr_t)wl->host_pool_base;
	/* Kept: a daemon that takes a suspended session up needs them. */
	s->region_fd = fds[0];
	s->pool_fd = fds[2];
	return CUDA_SUCCESS;
}

static CUresult alloc_waiters(uint32_t n)
{
	cl.w = calloc(n, sizeof(*cl.w));
	cl.free_tags = calloc(n, sizeof(*cl.free_tags));
	if (!cl.w || !cl.free_tags)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < n; i++)
		cl.free_tags[i] = n - i;
	cl.nfree = n;
	return CUDA_SUCCESS;
}

static CUresult connect_session(void)
{
	struct vgpu_session *s = &cl.s;
	const char *path = vgpu_socket_path();
	struct vgpu_hello h;
	int fds[3], nfds = 3, n;
	CUresult rc;

	s->kmod.fd = -1;
	rc = vgpu_pick_carrier(s);
	if (rc)
		return rc;
	s->sock = vgpu_dial(path, 0);
	if (s->sock < 0) {
		static bool said;

		/* cuDriverGetVersion and cuInit both try: say it once. */
		if (!said)
			vlog_err("cannot reach vgpud at %s: %s (is the daemon running? set VGPU_SOCKET)",
				 path, strerror(-s->sock));
		said = true;
		return CUDA_ERROR_NO_DEVICE;
	}
	vgpu_fill_hello(&h);
	h.carrier = s->carrier;
	if (s->carrier == VGPU_CARRIER_KMOD) {
		h.kmod_session = s->kmod.session_id;
		h.sq_entries = s->kmod.sq_entries;
		h.cq_entries = s->kmod.cq_entries;
	}
	/* Our stdout goes along: device printf output lands there. */
	fds[0] = STDOUT_FILENO;
	/* Unsent, the hello may have met a refusal at accept: read it all the same. */
	(void)vgpu_send_fds(s->sock, &h, sizeof(h), fds, fcntl(STDOUT_FILENO, F_GETFD) < 0 ? 0 : 1);
	vgpu_print_follow_sent();
	n = vgpu_recv_fds(s->sock, &s->wl, sizeof(s->wl), fds, &nfds);
	if (n != sizeof(s->wl) || s->wl.magic != VGPU_PROTO_MAGIC)
		goto lost;
	if (s->wl.status < 0) {
		s->wl.message[sizeof(s->wl.message) - 1] = 0;
		vlog_err("vgpud refused the session: %s (%s)", s->wl.message,
			 strerror(-s->wl.status));
		return CUDA_ERROR_SYSTEM_NOT_READY;
	}
	if (nfds != 3 || s->wl.version != VGPU_PROTO_VERSION || s->wl.carrier != s->carrier)
		goto lost;
	rc = attach(s, fds);
	if (!rc)
		rc = alloc_waiters(s->wl.sq_entries);
	if (!rc)
		vlog_debug("session %llu: %u devices, %s backend",
			   (unsigned long long)s->wl.session_id, s->wl.device_count,
			   s->wl.backend == VGPU_BACKEND_CUDA ? "cuda" : "host");
	return rc;
lost:
	vlog_err("vgpud at %s did not complete the handshake", path);
	return CUDA_ERROR_SYSTEM_NOT_READY;
}

CUresult vgpu_session(struct vgpu_session **out)
{
	CUresult rc;

	if (load_acquire(&cl.connected)) {
		*out = &cl.s;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&cl.lock);
	if (!cl.connected) {
		rc = connect_session();
		if (rc) {
			if (cl.s.sock >= 0)
				close(cl.s.sock);
			cl.s.sock = -1;
			if (cl.s.kmod.fd >= 0)
				vgpu_kmod_close(&cl.s.kmod);
			pthread_mutex_unlock(&cl.lock);
			return rc;
		}
		store_release(&cl.connected, true);
	}
	pthread_mutex_unlock(&cl.lock);
	*out = &cl.s;
	return CUDA_SUCCESS;
}

struct vgpu_session *vgpu_session_peek(void)
{
	return load_acquire(&cl.connected) ? &cl.s : NULL;
}

/* ---- the worker's life -------------------------------------------------- */

bool vgpu_session_dead(void)
{
	return read_once(&cl.dead);
}

static void mark_dead(void)
{
	if (__atomic_exchange_n(&cl.dead, true, __ATOMIC_SEQ_CST))
		return;
	vlog_err("lost the vgpud worker: every CUDA call now fails");
	for (uint32_t i = 0; i < cl.s.wl.sq_entries; i++)
		vgpu_futex_wake(&cl.w[i].state);
}

/*
 * The session's state was saved and its worker is gone (a daemon drained for
 * an upgrade): wait for a daemon to take it up again, VGPU_RESUME_TIMEOUT
 * seconds at most (default 300). The rings and every call waiting on them
 * stay as they are; the new worker serves them. True once it does.
 */
static bool resume(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct vgpu_session *s = &cl.s;
	const char *env = getenv("VGPU_RESUME_TIMEOUT");
	uint64_t end = vgpu_now_ns() + (uint64_t)((env ? atof(env) : 300) * 1e9);
	bool said = false, ok = false;
	useconds_t pause = 200000;

	pthread_mutex_lock(&lock);
	while (!ok && read_once(&s->ring.sh->state) == VGPU_WORKER_SUSPENDED &&
	       !read_once(&cl.dead) && vgpu_now_ns() < end) {
		struct vgpu_hello h;
		struct vgpu_welcome wl;
		int fds[4] = { s->region_fd, s->ring.bell, s->pool_fd, STDOUT_FILENO };
		int sock = vgpu_dial(vgpu_socket_path(), 0), n, nfds = 0;

		if (!said) {
			vlog_info("the session was suspended: waiting for vgpud to take it up");
			said = true;
		}
		if (sock >= 0) {
			vgpu_fill_hello(&h);
			h.carrier = s->carrier;
			h.flags = VGPU_HELLO_RESUME;
			h.resume_session = s->wl.session_id;
			if (s->carrier == VGPU_CARRIER_KMOD) {	/* its rings are the module's */
				h.kmod_session = s->kmod.session_id;
				h.sq_entries = s->kmod.sq_entries;
				h.cq_entries = s->kmod.cq_entries;
			}
			n = fcntl(STDOUT_FILENO, F_GETFD) < 0 ? 3 : 4;
			if (vgpu_send_fds(sock, &h, sizeof(h), fds, n) == sizeof(h) &&
			    vgpu_send_fds(sock, &s->wl, sizeof(s->wl), NULL, 0) == sizeof(s->wl) &&
			    vgpu_recv_fds(sock, &wl, sizeof(wl), NULL, &nfds) == sizeof(wl) &&
			    wl.magic == VGPU_PROTO_MAGIC && !wl.status) {
				close(s->sock);
				s->sock = sock;
				ok = true;
				vlog_info("session %llu taken up again", (unsigned long long)wl.session_id);
				break;
			}
			close(sock);
			/* A daemon that does not have the session yet (it waits
			 * for vgpuctl restore): ask less often, up to once a second. */
			pause = pause < 500000 ? 2 * pause : 1000000;
		} else {
			pause = 200000;	/* no daemon: take up the next one quickly */
		}
		usleep(pause);
	}
	pthread_mutex_unlock(&lock);
	return ok || read_once(&s->ring.sh->state) != VGPU_WORKER_SUSPENDED;
}

/* Called after a sleep timed out: is the worker still there? */
static bool check_alive(void)
{
	struct pollfd p = { .fd = cl.s.sock, .events = POLLIN | POLLRDHUP };

	if (read_once(&cl.s.ring.sh->state) == VGPU_WORKER_SUSPENDED) {
		if (resume())
			return true;
		mark_dead();
		return false;
	}
	if (read_once(&cl.s.ring.sh->state) == VGPU_WORKER_DEAD || vgpu_ring_dead(&cl.s.ring) ||
	    (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP)))) {
		mark_dead();
		return false;
	}
	return !read_once(&cl.dead);
}

/* ---- submitting --------------------------------------------------------- */

uint32_t vgpu_payload_max(void)
{
	return cl.s.ring.payload_size / 2;
}

static void backoff(unsigned int *n)
{
	if (++*n < 64)
		cpu_relax();
	else if (*n < 256)
		sched_yield();
	else
		usleep(20);
}

static CUresult submit(struct vgpu_req *r, uint32_t tag)
{
	struct vgpu_ring *ring = &cl.s.ring;
	unsigned int spins = 0;
	uint32_t off = 0;
	void *p;

	if (r->payload_len > vgpu_payload_max())
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cl.sq_lock);
	/* A full ring means the worker is busy with what it has: wait for it. */
	while (r->payload_len && !(p = client_payload_alloc(ring, r->payload_len, &off))) {
		if (spins > 256 && !check_alive())
			goto dead;
		backoff(&spins);
	}
	if (r->payload_len)
		memcpy(p, r->payload, r->payload_len);
	r->sqe.tag = tag;
	r->sqe.payload_off = r->payload_len ? off : 0;
	r->sqe.payload_len = r->payload_len;
	while (!client_sq_push(ring, &r->sqe)) {
		if (spins > 256 && !check_alive())
			goto dead;
		backoff(&spins);
	}
	pthread_mutex_unlock(&cl.sq_lock);
	return CUDA_SUCCESS;
dead:
	pthread_mutex_unlock(&cl.sq_lock);
	return VGPU_DEAD_ERROR;
}

/* What a poisoned context still does: be reset, released, destroyed. */
static bool survives_sticky(uint16_t op)
{
	switch (op) {
	case VGPU_OP_PRIMARY_RESET:
	case VGPU_OP_PRIMARY_RELEASE:
	case VGPU_OP_PRIMARY_RETAIN:
	case VGPU_OP_CTX_DESTROY:
	case VGPU_OP_CTX_CREATE:
	case VGPU_OP_NOP:
		return true;
	default:
		return false;
	}
}

void vgpu_sticky_clear(void)
{
	write_once(&cl.sticky, CUDA_SUCCESS);
}

CUresult vgpu_post(struct vgpu_req *r)
{
	struct vgpu_session *s;
	CUresult rc = vgpu_session(&s);

	if (rc)
		return rc;
	if (read_once(&cl.dead))
		return VGPU_DEAD_ERROR;
	rc = read_once(&cl.sticky);
	if (rc)
		return rc;
	if (vgpu_call_stats_on())
		vgpu_call_stats_add(r->sqe.opcode, false, 0);
	vgpu_managed_before_entry();
	return submit(r, 0);
}

/* ---- answers ------------------------------------------------------------ */

static uint32_t tag_get(void)
{
	uint32_t tag;

	pthread_mutex_lock(&cl.tag_lock);
	while (!cl.nfree)
		pthread_cond_wait(&cl.tag_cond, &cl.tag_lock);
	tag = cl.free_tags[--cl.nfree];
	cl.w[tag - 1].state = W_PENDING;
	pthread_mutex_unlock(&cl.tag_lock);
	return tag;
}

static void tag_put(uint32_t tag)
{
	pthread_mutex_lock(&cl.tag_lock);
	cl.w[tag - 1].state = W_FREE;
	cl.free_tags[cl.nfree++] = tag;
	pthread_cond_signal(&cl.tag_cond);
	pthread_mutex_unlock(&cl.tag_lock);
}

/* Drains the CQ; the caller holds reap_lock. */
static void reap(void)
{
	struct vgpu_cqe c;

	while (client_cq_pop(&cl.s.ring, &c)) {
		struct waiter *w;

		if (!c.tag) {
			deliver_callback(c.val[0], (uint32_t)c.val[1]);
			continue;
		}
		if (c.tag > cl.s.wl.sq_entries) {
			vlog_warn("answer with an unknown tag %u ignored", c.tag);
			continue;
		}
		w = &cl.w[c.tag - 1];
		w->cqe = c;
		store_release(&w->state, W_DONE);
		/* A system call per answer costs more than the answer: wake only
		 * a waiter that sleeps (pairs with the fence in wait_tag). */
		smp_mb();
		if (read_once(&w->sleeping))
			vgpu_futex_wake(&w->state);
	}
}

/* The reaper leaves: let another waiter take over reaping. */
static void hand_off(void)
{
	pthread_mutex_lock(&cl.tag_lock);
	for (uint32_t i = 0; i < cl.s.wl.sq_entries; i++) {
		uint32_t expect = W_PENDING;

		if (__atomic_compare_exchange_n(&cl.w[i].state, &expect, W_KICK, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			vgpu_futex_wake(&cl.w[i].state);
			break;
		}
	}
	pthread_mutex_unlock(&cl.tag_lock);
}

/* As the reaper: sleep until the worker posts something (or 20 ms). The
 * entry at head is what says so; the futex is cq_tail, which the worker
 * still bumps after each entry: read before the re-check, it ends the wait
 * at once for an entry that the re-check just missed. */
static void sleep_on_cq(void)
{
	struct vgpu_ring *r = &cl.s.ring;
	uint32_t tail = load_acquire(r->cq_tail);	/* B', matches A' */

	write_once(r->cq_flags, VGPU_CQ_NEED_WAKEUP);
	smp_mb();	/* flag before re-check: pairs with worker_cq_notify */
	if (client_cq_empty(r) && client_cq_sleep(r, tail, SLEEP_MS) < 0)
		check_alive();
	write_once(r->cq_flags, 0);
}

/* True once tag's answer is in; false if the session died first. */
static bool wait_tag(uint32_t tag)
{
	struct waiter *w = &cl.w[tag - 1];

	/* Reap as soon as the worker posts: a pause costs up to ~140 cycles, so
	 * reaping every few dozen of them added a microsecond to each call. */
	for (int i = 0; i < SPIN_ITERS; i++) {
		if (load_acquire(&w->state) == W_DONE)
			return true;
		if (!client_cq_empty(&cl.s.ring) && !pthread_mutex_trylock(&cl.reap_lock)) {
			reap();
			pthread_mutex_unlock(&cl.reap_lock);
			continue;
		}
		cpu_relax();
	}
	for (;;) {
		uint32_t st = load_acquire(&w->state);

		if (st == W_DONE)
			return true;
		if (read_once(&cl.dead))
			return false;
		if (st == W_KICK)
			__atomic_compare_exchange_n(&w->state, &st, W_PENDING, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		if (!pthread_mutex_trylock(&cl.reap_lock)) {
			reap();
			while (load_acquire(&w->state) != W_DONE && !read_once(&cl.dead)) {
				sleep_on_cq();
				reap();
			}
			pthread_mutex_unlock(&cl.reap_lock);
			hand_off();
			continue;
		}
		write_once(&w->sleeping, 1);
		smp_mb();	/* flag before the state check in the wait */
		if (vgpu_futex_wait(&w->state, W_PENDING, SLEEP_MS) == -ETIMEDOUT)
			check_alive();
		write_once(&w->sleeping, 0);
	}
}

static CUresult finish(struct vgpu_req *r, uint32_t tag)
{
	struct waiter *w = &cl.w[tag - 1];
	uint64_t n;

	if (!wait_tag(tag)) {
		tag_put(tag);
		return VGPU_DEAD_ERROR;
	}
	r->cqe = w->cqe;
	n = r->cqe.val[2];
	if (r->reply && n) {
		if (n > r->reply_cap || n > cl.s.ring.reply_slot_size) {
			vlog_err("answer of %llu bytes does not fit %u", (unsigned long long)n,
				 r->reply_cap);
			tag_put(tag);
			return CUDA_ERROR_UNKNOWN;
		}
		memcpy(r->reply, vgpu_reply_slot(&cl.s.ring, tag), n);
	}
	tag_put(tag);
	if (vgpu_error_is_sticky((CUresult)r->cqe.result))
		write_once(&cl.sticky, (CUresult)r->cqe.result);
	return (CUresult)r->cqe.result;
}

CUresult vgpu_call(struct vgpu_req *r)
{
	struct vgpu_session *s;
	CUresult rc = vgpu_session(&s);
	uint64_t t0;
	uint32_t tag;

	if (rc)
		return rc;
	if (read_once(&cl.dead))
		return VGPU_DEAD_ERROR;
	rc = read_once(&cl.sticky);
	if (rc && !survives_sticky(r->sqe.opcode))
		return rc;
	/* Device printf output lands in our stdout during synchronizing calls:
	 * what the program printed before must be there first, as natively,
	 * and device printf goes to fd 1 as it is now (print_follow.c).
	 * Not for managed memory's own calls: a fault may come from inside
	 * stdio, whose lock another faulting thread may hold. */
	if (!vgpu_managed_busy()) {
		fflush(stdout);
		vgpu_print_follow(s);
	}
	vgpu_managed_before_entry();
	t0 = vgpu_call_stats_on() ? vgpu_now_ns() : 0;
	tag = tag_get();
	rc = submit(r, tag);
	if (rc) {
		tag_put(tag);
		return rc;
	}
	rc = finish(r, tag);
	vgpu_managed_after_sync();
	if (t0)
		vgpu_call_stats_add(r->sqe.opcode, true, vgpu_now_ns() - t0);
	if (rc)	/* VGPU_LOG=debug: which call a library's error came from */
		vlog_debug("opcode %#x (include/vgpu/proto.h) -> %d", r->sqe.opcode, rc);
	return rc;
}

CUresult vgpu_call5(uint16_t op, uint32_t ctx, uint32_t stream, uint64_t a0, uint64_t a1,
		    uint64_t a2, uint64_t a3, uint64_t a4, struct vgpu_cqe *out)
{
	struct vgpu_req r = {
		.sqe = { .opcode = op, .ctx = ctx, .stream = stream,
			 .arg = { a0, a1, a2, a3, a4 } },
	};
	CUresult rc = vgpu_call(&r);

	if (out)
		*out = r.cqe;
	return rc;
}

CUresult vgpu_post5(uint16_t op, uint32_t ctx, uint32_t stream, uint64_t a0, uint64_t a1,
		    uint64_t a2, uint64_t a3, uint64_t a4)
{
	struct vgpu_req r = {
		.sqe = { .opcode = op, .ctx = ctx, .stream = stream,
			 .arg = { a0, a1, a2, a3, a4 } },
	};

	return vgpu_post(&r);
}

/* ---- bulk transfers ----------------------------------------------------- */

/* Waits for chunk c's seq to read @want. False: stop (answer in or dead). */
static bool chunk_wait(uint32_t tag, uint32_t c, uint32_t want)
{
	struct vgpu_shared *sh = cl.s.ring.sh;
	uint32_t *seq = &sh->chunk[c].seq;

	for (int i = 0; i < SPIN_ITERS; i++) {
		if (load_acquire(seq) == want)
			return true;
		cpu_relax();
	}
	for (;;) {
		uint32_t v;

		__atomic_or_fetch(&sh->staging_wait, VGPU_STAGING_CLIENT_WAITS, __ATOMIC_SEQ_CST);
		v = load_acquire(seq);
		if (v != want && vgpu_futex_wait(seq, v, SLEEP_MS) == -ETIMEDOUT)
			check_alive();
		__atomic_and_fetch(&sh->staging_wait, ~VGPU_STAGING_CLIENT_WAITS,
				   __ATOMIC_SEQ_CST);
		if (load_acquire(seq) == want)
			return true;
		/* An early answer means the worker refused the transfer. */
		if (!pthread_mutex_trylock(&cl.reap_lock)) {
			reap();
			pthread_mutex_unlock(&cl.reap_lock);
		}
		if (load_acquire(&cl.w[tag - 1].state) == W_DONE || read_once(&cl.dead))
			return false;
	}
}

static void chunk_publish(uint32_t c, uint32_t val)
{
	struct vgpu_shared *sh = cl.s.ring.sh;

	store_release(&sh->chunk[c].seq, val);
	smp_mb();	/* seq before flag: pairs with the worker's sleep check */
	if (read_once(&sh->staging_wait) & VGPU_STAGING_WORKER_WAITS)
		vgpu_bell_ring(cl.s.ring.bell);
}

static CUresult bulk(struct vgpu_req *r, const void *src, void *dst, uint64_t len)
{
	struct vgpu_ring *ring = &cl.s.ring;
	struct vgpu_session *s;
	uint32_t n, chunk, tag;
	uint64_t done = 0, t0;
	CUresult rc = vgpu_session(&s);

	if (rc)
		return rc;
	if (read_once(&cl.dead))
		return VGPU_DEAD_ERROR;
	n = ring->staging_chunks;
	chunk = ring->staging_chunk;
	vgpu_managed_before_entry();
	t0 = vgpu_call_stats_on() ? vgpu_now_ns() : 0;
	pthread_mutex_lock(&cl.bulk_lock);
	/* The previous transfer is over: every chunk starts free. */
	for (uint32_t c = 0; c < n; c++)
		write_once(&ring->sh->chunk[c].seq, 0);
	tag = tag_get();
	rc = submit(r, tag);
	if (rc) {
		tag_put(tag);
		pthread_mutex_unlock(&cl.bulk_lock);
		return rc;
	}
	for (uint32_t k = 0; done < len; k++) {
		uint32_t c = k % n, piece;

		if (src) {
			piece = len - done < chunk ? (uint32_t)(len - done) : chunk;
			if (!chunk_wait(tag, c, k < n ? 0 : ~(k - n + 1)))
				break;
			vgpu_copy_parallel(vgpu_staging_chunk(ring, c), (const uint8_t *)src + done,
					   piece);
			write_once(&ring->sh->chunk[c].len, piece);
			chunk_publish(c, k + 1);
		} else {
			if (!chunk_wait(tag, c, k + 1))
				break;
			piece = read_once(&ring->sh->chunk[c].len);
			if (!piece || piece > chunk || piece > len - done)
				break;	/* the answer will say what went wrong */
			vgpu_copy_parallel((uint8_t *)dst + done, vgpu_staging_chunk(ring, c), piece);
			chunk_publish(c, ~(k + 1));
		}
		done += piece;
	}
	rc = finish(r, tag);
	pthread_mutex_unlock(&cl.bulk_lock);
	vgpu_managed_after_sync();
	if (t0)
		vgpu_call_stats_add(r->sqe.opcode, true, vgpu_now_ns() - t0);
	if (!rc && done != len)
		rc = CUDA_ERROR_UNKNOWN;
	return rc;
}

CUresult vgpu_call_send(struct vgpu_req *r, const void *src, uint64_t len)
{
	return bulk(r, src, NULL, len);
}

CUresult vgpu_call_recv(struct vgpu_req *r, void *dst, uint64_t len)
{
	return bulk(r, NULL, dst, len);
}

/* ---- host callbacks ----------------------------------------------------- */

struct callback {
	void (*fn)(void *);
	void *data;
	bool live;
	bool keep;		/* a graph host node's: runs at every launch */
};

struct cb_run {
	uint64_t cookie;
	uint32_t seq;		/* what to acknowledge */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct callback *tab;		/* indexed by cookie */
	uint32_t cap;
	struct cb_run *queue;		/* callbacks ready to run, FIFO */
	uint32_t qhead, qtail, qcap;
	uint32_t outstanding;		/* registered, not yet run */
	bool thread;
} cb = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* Called by the reaper: queue a callback the worker asked for. */
static void deliver_callback(uint64_t cookie, uint32_t seq)
{
	pthread_mutex_lock(&cb.lock);
	if (cookie >= cb.cap || !cb.tab[cookie].live) {
		pthread_mutex_unlock(&cb.lock);
		vlog_warn("worker asked for unknown host callback %llu",
			  (unsigned long long)cookie);
		return;
	}
	if (cb.qtail - cb.qhead == cb.qcap) {
		uint32_t cap = cb.qcap ? 2 * cb.qcap : 64;
		struct cb_run *q = malloc(cap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&cb.lock);
			vlog_err("out of memory queueing a host callback");
			return;
		}
		for (uint32_t i = 0; i < cb.qtail - cb.qhead; i++)
			q[i] = cb.queue[(cb.qhead + i) % cb.qcap];
		free(cb.queue);
		cb.qtail -= cb.qhead;
		cb.qhead = 0;
		cb.queue = q;
		cb.qcap = cap;
	}
	cb.queue[cb.qtail++ % cb.qcap] = (struct cb_run){ cookie, seq };
	pthread_cond_signal(&cb.cond);
	pthread_mutex_unlock(&cb.lock);
}

static void run_one(struct cb_run r)
{
	uint32_t *ack = &cl.s.ring.sh->cb_ack[r.seq % VGPU_CB_SLOTS];
	struct callback c;

	pthread_mutex_lock(&cb.lock);
	c = r.cookie < cb.cap ? cb.tab[r.cookie] : (struct callback){ 0 };
	if (c.live && !c.keep) {
		cb.tab[r.cookie].live = false;
		cb.outstanding--;
	}
	pthread_mutex_unlock(&cb.lock);
	if (c.live)
		c.fn(c.data);
	/* The worker's stream waits for exactly this acknowledgement. */
	store_release(ack, r.seq);
	vgpu_futex_wake(ack);
}

static void *callback_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct cb_run r;
		struct timespec ts;

		pthread_mutex_lock(&cb.lock);
		while (cb.qhead == cb.qtail) {
			bool pending = cb.outstanding > 0;

			if (pending && !pthread_mutex_trylock(&cl.reap_lock)) {
				/* Nobody else is reaping: drain the CQ ourselves. */
				pthread_mutex_unlock(&cb.lock);
				reap();
				if (read_once(&cb.qhead) == read_once(&cb.qtail))
					sleep_on_cq();
				reap();
				pthread_mutex_unlock(&cl.reap_lock);
				hand_off();
				pthread_mutex_lock(&cb.lock);
				continue;
			}
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (pending)
				pthread_cond_timedwait(&cb.cond, &cb.lock, &ts);
			else
				pthread_cond_wait(&cb.cond, &cb.lock);
			if (read_once(&cl.dead) && cb.qhead == cb.qtail) {
				pthread_mutex_unlock(&cb.lock);
				return NULL;
			}
		}
		r = cb.queue[cb.qhead++ % cb.qcap];
		pthread_mutex_unlock(&cb.lock);
		run_one(r);
	}
	return NULL;
}

static uint64_t cookie_new(void (*fn)(void *), void *data, bool keep)
{
	uint64_t cookie = 0;
	pthread_t t;

	pthread_mutex_lock(&cb.lock);
	for (uint32_t i = 1; keep && i < cb.cap; i++)	/* one cookie a function and data */
		if (cb.tab[i].live && cb.tab[i].keep && cb.tab[i].fn == fn &&
		    cb.tab[i].data == data) {
			pthread_mutex_unlock(&cb.lock);
			return i;
		}
	for (uint32_t i = 1; i < cb.cap; i++)
		if (!cb.tab[i].live) {
			cookie = i;
			break;
		}
	if (!cookie) {
		uint32_t cap = cb.cap ? 2 * cb.cap : 64;
		struct callback *tab = realloc(cb.tab, cap * sizeof(*tab));

		if (!tab) {
			pthread_mutex_unlock(&cb.lock);
			return 0;
		}
		memset(tab + cb.cap, 0, (cap - cb.cap) * sizeof(*tab));
		cookie = cb.cap ? cb.cap : 1;
		cb.tab = tab;
		cb.cap = cap;
	}
	cb.tab[cookie] = (struct callback){ .fn = fn, .data = data, .live = true, .keep = keep };
	cb.outstanding++;
	if (!cb.thread) {
		if (pthread_create(&t, NULL, callback_main, NULL)) {
			cb.tab[cookie].live = false;
			cb.outstanding--;
			pthread_mutex_unlock(&cb.lock);
			return 0;
		}
		pthread_detach(t);
		cb.thread = true;
	}
	pthread_cond_signal(&cb.cond);
	pthread_mutex_unlock(&cb.lock);
	return cookie;
}

uint64_t vgpu_callback_cookie(void (*fn)(void *), void *data)
{
	return cookie_new(fn, data, false);
}

uint64_t vgpu_callback_keep(void (*fn)(void *), void *data)
{
	return cookie_new(fn, data, true);
}

bool vgpu_callback_kept(uint64_t cookie, void (**fn)(void *), void **data)
{
	bool ok;

	pthread_mutex_lock(&cb.lock);
	ok = cookie && cookie < cb.cap && cb.tab[cookie].live && cb.tab[cookie].keep;
	if (ok) {
		*fn = cb.tab[cookie].fn;
		*data = cb.tab[cookie].data;
	}
	pthread_mutex_unlock(&cb.lock);
	return ok;
}

void vgpu_callback_cancel(uint64_t cookie)
{
	pthread_mutex_lock(&cb.lock);
	if (cookie && cookie < cb.cap && cb.tab[cookie].live && !cb.tab[cookie].keep) {
		cb.tab[cookie].live = false;
		cb.outstanding--;
	}
	pthread_mutex_unlock(&cb.lock);
}
