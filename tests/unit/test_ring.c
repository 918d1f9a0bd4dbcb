// SPDX-License-Identifier: MIT
/*
 * The shared rings on their own: layout checks, the SQ and payload ring
 * between two threads over millions of entries with a checksum, the CQ the
 * same way, hostile entries (payloads that lie about where they are, stale
 * and torn entries, garbage phases), phases over many laps and across the
 * counters' wrap, a full CQ; the same ring code over a /dev/vgpu-shaped
 * mapping (entries and index words in the module's rings, the rest in its
 * arena, struct vgpu_shared apart).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "barrier.h"
#include "ring.h"

#include "check.h"


/* Each side's private state on its own cache lines, as in two processes. */
static struct vgpu_ring client __attribute__((aligned(128)));
static struct vgpu_ring worker __attribute__((aligned(128)));
static struct vgpu_welcome wl;
static void *region;

static void setup(uint32_t sq, uint32_t payload)
{
	CHECK(vgpu_layout(&wl, sq, 2 * sq, payload, 1u << 20, 4, 1) == 0, "layout");
	region = mmap(NULL, wl.region_size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(region != MAP_FAILED, "mmap");
	CHECK(vgpu_ring_attach(&client, region, wl.region_size, &wl) == 0, "attach client");
	CHECK(vgpu_ring_attach(&worker, region, wl.region_size, &wl) == 0, "attach worker");
	client.bell = worker.bell = -1;
}

static void teardown(void)
{
	munmap(region, wl.region_size);
}

static void test_layout(void)
{
	struct vgpu_welcome w = { 0 }, bad;

	CHECK(vgpu_layout(&w, 3, 8, 1 << 20, 1 << 20, 4, 1) == -EINVAL, "sq not pow2");
	CHECK(vgpu_layout(&w, 8, 8, 1000, 1 << 20, 4, 1) == -EINVAL, "payload not pow2");
	CHECK(vgpu_layout(&w, 8192, 8, 1 << 20, 1 << 20, 4, 1) == -EINVAL, "sq too big");
	CHECK(vgpu_layout(&w, 8, 8, 1 << 20, 1 << 20, 17, 1) == -EINVAL, "too many chunks");
	CHECK(vgpu_layout(&w, 8, 8, 1 << 20, 1000, 4, 1) == -EINVAL, "chunk not page sized");
	CHECK(vgpu_layout(&w, 8, 16, 1 << 20, 1 << 20, 4, 1) == 0, "good layout");
	bad = w;
	bad.sq_off = w.region_size;
	CHECK(vgpu_ring_attach(&client, NULL, w.region_size, &bad) == -EPROTO, "sq outside");
	bad = w;
	bad.staging_chunk = 1u << 30;
	CHECK(vgpu_ring_attach(&client, NULL, w.region_size, &bad) == -EPROTO, "staging outside");
	bad = w;
	CHECK(vgpu_ring_attach(&client, NULL, w.region_size + 1, &bad) == -EPROTO, "size mismatch");
}

#define STRESS_N 2000000u

static uint64_t sum_sent __attribute__((aligned(128)));
static uint64_t sum_seen __attribute__((aligned(128)));

static void *producer(void *arg)
{
	uint64_t sum = 0;

	(void)arg;
	for (uint32_t i = 0; i < STRESS_N; i++) {
		struct vgpu_sqe s = { 0 };
		uint32_t len = (i * 7919u) % 200, off = 0;
		uint8_t *p = NULL;

		while (len && !(p = client_payload_alloc(&client, len, &off)))
			cpu_relax();
		for (uint32_t k = 0; k < len; k++)
			p[k] = (uint8_t)(i + k);
		s.opcode = i & 0xffff;
		/* A phase the caller leaves in flags is the ring's to set. */
		s.flags = (i & 3) == 3 ? VGPU_SQE_PHASE | VGPU_SQE_PTDS : (i & 1) * VGPU_SQE_PTDS;
		s.arg[0] = (uint64_t)i * 2654435761u;
		s.arg[4] = ~s.arg[0];
		s.payload_off = len ? off : 0;
		s.payload_len = len;
		sum += s.arg[0] + len;
		while (!client_sq_push(&client, &s))
			cpu_relax();
	}
	sum_sent = sum;
	return NULL;
}

static void *consumer(void *arg)
{
	uint8_t buf[256];
	uint32_t got = 0, bad = 0;
	uint64_t sum = 0;

	(void)arg;
	while (got < STRESS_N) {
		struct vgpu_sqe s;
		int n;

		if (!worker_sq_pop(&worker, &s)) {
			worker_sq_release(&worker);
			cpu_relax();
			continue;
		}
		if (!(got % 16))
			worker_sq_release(&worker);
		/* Every field as written, the first word last: never torn. */
		if (s.opcode != (got & 0xffff) || s.flags != (got & 1) * VGPU_SQE_PTDS ||
		    s.arg[4] != ~s.arg[0] || s.arg[0] != (uint64_t)got * 2654435761u)
			bad++;
		n = worker_payload_take(&worker, &s, buf, sizeof(buf));
		if (n < 0 || (uint32_t)n != s.payload_len)
			bad++;
		for (int k = 0; k < n; k++)
			if (buf[k] != (uint8_t)(got + k)) {
				bad++;
				break;
			}
		sum += s.arg[0] + (n > 0 ? n : 0);
		got++;
	}
	sum_seen = sum;
	CHECK(!bad, "%u entries with a wrong field or payload", bad);
	return NULL;
}

static void test_stress(void)
{
	pthread_t a, b;

	setup(64, 1u << 16);
	pthread_create(&b, NULL, consumer, NULL);
	pthread_create(&a, NULL, producer, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	CHECK(sum_sent == sum_seen, "checksum %llu != %llu over %u entries",
	      (unsigned long long)sum_sent, (unsigned long long)sum_seen, STRESS_N);
	CHECK(worker_sq_empty(&worker), "drained");
	teardown();
}

static void test_hostile(void)
{
	struct vgpu_sqe s = { 0 };
	uint8_t buf[64];
	uint32_t off;

	setup(8, 8192);
	/* A payload claimed at the wrong offset is refused, ring unchanged. */
	s.payload_off = 100;
	s.payload_len = 10;
	CHECK(worker_payload_take(&worker, &s, buf, sizeof(buf)) == -EINVAL, "wrong offset");
	s.payload_off = 0;
	s.payload_len = 4000;
	CHECK(worker_payload_take(&worker, &s, buf, sizeof(buf)) == -EINVAL, "too big for cap");
	s.payload_len = 5000;
	CHECK(worker_payload_skip(&worker, &s) == -EINVAL, "bigger than the ring");
	s.payload_off = 4095;
	s.payload_len = 0;
	CHECK(worker_payload_take(&worker, &s, buf, sizeof(buf)) == 0, "no payload: ignored");
	/* Never wrap: a payload that does not fit the tail goes to 0. */
	CHECK(client_payload_alloc(&client, 3000, &off) && off == 0, "first at 0");
	CHECK(client_payload_alloc(&client, 3000, &off) && off == 3000, "second at 3000");
	s.payload_off = 0;
	s.payload_len = 3000;
	CHECK(worker_payload_skip(&worker, &s) == 0, "consume first");
	s.payload_off = 3000;
	CHECK(worker_payload_skip(&worker, &s) == 0, "consume second");
	CHECK(client_payload_alloc(&client, 3000, &off) == NULL, "not handed back yet");
	worker_sq_release(&worker);
	CHECK(client_payload_alloc(&client, 3000, &off) && off == 0, "third skips to 0");
	s.payload_off = 6000;	/* a lie: the client skipped to 0 */
	CHECK(worker_payload_skip(&worker, &s) == -EINVAL, "lie about the skip");
	s.payload_off = 0;
	CHECK(worker_payload_skip(&worker, &s) == 0, "skip accepted at 0");
	CHECK(client_payload_alloc(&client, 5000, &off) == NULL, "more than half refused");
	/* The worker polls entries, not the tail: a tail far ahead is moot. */
	store_release(&worker.sh->sq_tail, worker.sq_local + 1000);
	CHECK(!worker_sq_pop(&worker, &s) && worker_sq_empty(&worker), "lying tail");
	teardown();
}

/* Publishes, by hand as a client does, an entry whose arg[0] is @c at
 * counter @c of lap 0. */
static void sq_at_counter_publish(uint32_t c)
{
	struct vgpu_sqe *slot = &client.sq[c & (client.sq_entries - 1)];

	memset(slot, 0, sizeof(*slot));
	slot->arg[0] = c;
	store_release(&slot->first, (uint32_t)VGPU_SQE_PHASE << 16);
}

/* What a client may leave in its SQ: entries torn, stale or garbage. */
static void test_torn(void)
{
	struct vgpu_sqe s, *slot;
	struct vgpu_cqe c = { .tag = 2, .result = 5 }, *cs, out;

	setup(8, 4096);
	slot = &worker.sq[0];
	/* Everything but the first word: not there yet. */
	memset(slot, 0xa5, sizeof(*slot));
	slot->first = 0;
	CHECK(!worker_sq_pop(&worker, &s) && worker_sq_empty(&worker), "torn entry not taken");
	/* A first word of the wrong phase, the rest garbage: still not there. */
	slot->opcode = 0xffff;
	slot->flags = 0x7fff;
	CHECK(!worker_sq_pop(&worker, &s), "garbage with the wrong phase not taken");
	/* The right phase: taken as written (garbage is dispatch's to refuse),
	 * the phase stripped. */
	slot->flags = 0xffff;
	CHECK(worker_sq_pop(&worker, &s) && s.opcode == 0xffff && s.flags == 0x7fff &&
	      s.tag == 0xa5a5a5a5u, "written entry taken, phase stripped");
	/* Its slot, one lap later, holds the old phase: empty until rewritten. */
	for (int i = 1; i < 8; i++)
		sq_at_counter_publish(i);
	for (int i = 1; i < 8; i++)
		CHECK(worker_sq_pop(&worker, &s) && s.arg[0] == (uint64_t)i, "entry %d", i);
	CHECK(!worker_sq_pop(&worker, &s), "stale entry from lap 0 not taken on lap 1");
	/* The CQ the same way round: a tag without its phase is not an answer. */
	cs = &client.cq[0];
	cs->tag = 2;
	cs->result = 9;
	CHECK(client_cq_empty(&client) && !client_cq_pop(&client, &out), "CQE without phase");
	CHECK(worker_cq_push(&worker, &c), "push");
	CHECK(!client_cq_empty(&client) && client_cq_pop(&client, &out) && out.tag == 2 &&
	      out.result == 5, "CQE taken, phase stripped");
	teardown();
}

/* Popped slots go back to the client only when the worker says so. */
static void test_release(void)
{
	struct vgpu_sqe e = { 0 }, s;
	uint32_t n = 0;

	setup(8, 4096);
	while (client_sq_push(&client, &e))
		n++;
	CHECK(n == 8, "SQ holds sq_entries (%u)", n);
	CHECK(worker_sq_pop(&worker, &s) && worker_sq_pop(&worker, &s), "pop two");
	CHECK(!client_sq_push(&client, &e), "still full before the release");
	worker_sq_release(&worker);
	CHECK(client_sq_push(&client, &e), "room after the release");
	teardown();
}

/* Both rings on a counter @start, as a session that has run that long. */
static void start_at(uint32_t start)
{
	client.sq_local = client.peer_seen = worker.sq_local = worker.sq_published = start;
	worker.cq_local = worker.peer_seen = client.cq_local = start;
	*worker.sq_head = *worker.sq_tail = *worker.cq_head = *worker.cq_tail = start;
}

/* Full laps, each leaving every slot with the phase of the lap before:
 * nothing stale is read again, nothing new is missed; across the u32
 * counters' wrap too, since 2^32 is an even number of laps. */
static void laps(uint32_t start, int nlaps)
{
	setup(8, 4096);
	start_at(start);
	for (int lap = 0; lap < nlaps; lap++) {
		uint32_t bad = 0;

		for (uint32_t i = 0; i < 8; i++) {
			struct vgpu_sqe e = { .opcode = (uint16_t)lap, .tag = i + 1,
					      .arg = { lap * 100 + i } };
			struct vgpu_cqe c = { .tag = i + 1, .val = { lap * 100 + i } };

			bad += !client_sq_push(&client, &e);
			bad += !worker_cq_push(&worker, &c);
			bad += !worker_cq_push(&worker, &c);
		}
		CHECK(!bad, "lap %d: the rings took every entry", lap);
		for (uint32_t i = 0; i < 8; i++) {
			struct vgpu_sqe s;
			struct vgpu_cqe c;

			bad += !worker_sq_pop(&worker, &s) || s.opcode != lap || s.tag != i + 1 ||
			       s.flags || s.arg[0] != (uint64_t)(lap * 100 + i);
			for (int k = 0; k < 2; k++)
				bad += !client_cq_pop(&client, &c) || c.tag != i + 1 ||
				       c.val[0] != (uint64_t)(lap * 100 + i);
		}
		CHECK(!bad, "lap %d: every entry read as written", lap);
		CHECK(worker_sq_empty(&worker) && client_cq_empty(&client),
		      "lap %d: the stale entries read as empty", lap);
		worker_sq_release(&worker);
	}
	teardown();
}

static void test_laps(void)
{
	laps(0, 7);
	laps(UINT32_MAX - 8 * 16 + 1, 40);	/* an even lap, 16 laps before the wrap */
}

/* Answers from one thread to another over many laps of a small CQ. */
#define CQ_STRESS_N 500000u

static void *cq_producer(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < CQ_STRESS_N; i++) {
		struct vgpu_cqe c = { .tag = i % VGPU_PROTO_MAX_SQ, .result = (int32_t)i,
				      .val = { i, ~(uint64_t)i, (uint64_t)i << 20 } };

		while (!worker_cq_push(&worker, &c))
			cpu_relax();
	}
	return NULL;
}

static void test_cq_stress(void)
{
	uint32_t got = 0, bad = 0;
	pthread_t t;

	setup(8, 4096);
	pthread_create(&t, NULL, cq_producer, NULL);
	while (got < CQ_STRESS_N) {
		struct vgpu_cqe c;

		if (!client_cq_pop(&client, &c)) {
			cpu_relax();
			continue;
		}
		bad += c.tag != got % VGPU_PROTO_MAX_SQ || c.result != (int32_t)got ||
		       c.val[0] != got || c.val[1] != ~(uint64_t)got || c.val[2] != (uint64_t)got << 20;
		got++;
	}
	pthread_join(t, NULL);
	CHECK(!bad, "%u of %u answers torn or out of order", bad, CQ_STRESS_N);
	CHECK(client_cq_empty(&client), "CQ drained");
	teardown();
}

static void test_cq(void)
{
	struct vgpu_cqe c = { .tag = 1, .result = 7 }, out;
	uint32_t n = 0;

	setup(8, 4096);
	while (worker_cq_push(&worker, &c))
		n++;
	CHECK(n == 16, "CQ holds cq_entries (%u)", n);
	CHECK(client_cq_pop(&client, &out) && out.tag == 1 && out.result == 7, "pop");
	CHECK(worker_cq_push(&worker, &c), "room again");
	teardown();
}

/* A fake of what vgpu_kmod_client maps: rings header words on lines of
 * their own, then the entry arrays; the arena; no fd (flags stay clear). */
static void test_kmod_shape(void)
{
	enum { SQ = 8, CQ = 16 };
	uint8_t *rings = calloc(1, 4096 + SQ * 64 + CQ * 32);
	struct vgpu_shared *hdr = calloc(1, sizeof(*hdr));
	static uint32_t status;
	struct vgpu_kmod k = {
		.fd = -1, .sq_entries = SQ, .cq_entries = CQ, .status_flags = &status,
		.sq_head = (uint32_t *)(rings + 0), .sq_tail = (uint32_t *)(rings + 64),
		.cq_head = (uint32_t *)(rings + 128), .cq_tail = (uint32_t *)(rings + 192),
		.sq_flags = (uint32_t *)(rings + 256), .cq_flags = (uint32_t *)(rings + 320),
		.sqes = rings + 4096, .cqes = rings + 4096 + SQ * 64,
	};
	struct vgpu_welcome w = { 0 };
	struct vgpu_sqe in = { .opcode = VGPU_OP_NOP, .tag = 3 }, out, *e;
	struct vgpu_cqe c = { .tag = 3, .result = 7 }, got;

	CHECK(vgpu_layout(&w, SQ, CQ, 1 << 20, 1 << 20, 4, 1) == 0, "kmod layout");
	k.arena_size = w.region_size - 1;
	k.arena = calloc(1, w.region_size);
	CHECK(vgpu_ring_attach_kmod(&client, hdr, &k, &w) == -EPROTO, "arena too small");
	k.arena_size = w.region_size;
	k.sq_entries = SQ * 2;
	CHECK(vgpu_ring_attach_kmod(&client, hdr, &k, &w) == -EPROTO, "sq geometry differs");
	k.sq_entries = SQ;
	CHECK(vgpu_ring_attach_kmod(&client, hdr, &k, &w) == 0, "kmod attach client");
	CHECK(vgpu_ring_attach_kmod(&worker, hdr, &k, &w) == 0, "kmod attach worker");
	CHECK(client.sh == hdr && client.payload == (uint8_t *)k.arena + w.payload_off,
	      "header apart, payload in the arena");

	CHECK(client_sq_push(&client, &in), "push");
	e = k.sqes;
	CHECK(e->tag == 3 && (e->flags & VGPU_SQE_PHASE), "first SQE is the module's entry 0");
	CHECK(*k.sq_tail == 1 && hdr->sq_tail == 0, "tail published in the module's header");
	CHECK(worker_sq_pop(&worker, &out) && out.tag == 3, "worker pops it");
	worker_sq_release(&worker);
	CHECK(*k.sq_head == 1, "head released in the module's header");
	CHECK(worker_cq_push(&worker, &c), "worker answers");
	worker_cq_notify(&worker);
	CHECK(*k.cq_tail == 1 && !vgpu_ring_dead(&client), "cq tail in the module's header");
	CHECK(client_cq_pop(&client, &got) && got.result == 7 && *k.cq_head == 1, "client reaps");
	status = 1;	/* VGPU_RING_DEAD, as the module sets it */
	CHECK(vgpu_ring_dead(&client), "death seen in the status word");
	free(k.arena);
	free(hdr);
	free(rings);
}

int main(void)
{
	test_layout();
	test_kmod_shape();
	test_hostile();
	test_cq();
	test_release();
	test_torn();
	test_laps();
	test_cq_stress();
	test_stress();
	printf("test_ring: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
