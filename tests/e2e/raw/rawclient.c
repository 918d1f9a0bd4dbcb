// SPDX-License-Identifier: MIT
/*
 * A client without the runtime: the wire protocol (vgpu/proto.h) spoken by
 * hand over the memfd carrier, to do what no well-behaved runtime does.
 *
 *   rawclient stuck    fill the SQ with synchronous calls and never reap a
 *                      completion; prints "stuck" and sleeps until killed
 *   rawclient stall    a pageable copy staged through the arena: one chunk
 *                      filled, "mid copy" printed, then SIGSTOP to itself;
 *                      after SIGCONT the copy completes and is read back,
 *                      every byte checked ("copy: every byte right")
 *   rawclient bad      entries whose sizes wrap or overflow (pitched
 *                      allocation, 2D copy, memsets, copies, allocations):
 *                      each refused, the worker serving on afterwards
 *   rawclient callback asks for a host function and, once the worker asks
 *                      for it to run, never acknowledges it: prints
 *                      "callback asked" and sleeps until killed
 *   rawclient chatter  sends a message on its socket after the welcome
 *                      (nothing is to come there), makes a call, prints
 *                      "chattered" and sleeps until killed
 *   rawclient streamops stream attribute, write/wait value, batch and
 *                      prefetch entries with bad sizes or addresses outside
 *                      the session's memory: each refused, the worker
 *                      serving on afterwards
 *   rawclient vmm      virtual memory API entries no runtime sends: short
 *                      or long properties, access descriptors cut or too
 *                      many, mappings of others' memory or outside the
 *                      client's reservations, imports with no descriptor
 *                      or a message of junk on the socket: each refused,
 *                      the worker serving on afterwards
 *
 * The daemon's socket: $VGPU_SOCKET (vgpu run --socket sets it). Exit 0
 * pass, 1 fail, 2 could not talk to the daemon.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "barrier.h"
#include "fdpass.h"
#include "ring.h"
#include "vgpu/proto.h"
#include "vgpu/proto_array.h"

#define CTX	1u	/* the context id this client issues */
#define WAIT_S	60	/* no answer in this long: the worker is broken */

static struct vgpu_ring R;
static struct vgpu_welcome W;
static int sock = -1;
static int failures;

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "rawclient: %s\n", what);
	exit(2);
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void handshake(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = getenv("VGPU_SOCKET");
	struct vgpu_hello h = {
		.magic = VGPU_PROTO_MAGIC, .version = VGPU_PROTO_VERSION,
		.features = VGPU_FEAT_ALL, .pid = (uint32_t)getpid(),
		.carrier = VGPU_CARRIER_MEMFD, .comm = "rawclient",
	};
	int fds[3], nfds = 3, out = STDOUT_FILENO;
	void *region;

	if (!path || strlen(path) >= sizeof(a.sun_path))
		die("set VGPU_SOCKET");
	strcpy(a.sun_path, path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("cannot reach vgpud");
	if (vgpu_send_fds(sock, &h, sizeof(h), &out, 1) != sizeof(h))
		die("cannot send the hello");
	if (vgpu_recv_fds(sock, &W, sizeof(W), fds, &nfds) != sizeof(W) || W.status || nfds != 3)
		die("no welcome");
	region = mmap(NULL, W.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (region == MAP_FAILED || vgpu_ring_attach(&R, region, W.region_size, &W))
		die("cannot map the session");
	R.bell = fds[1];
	/* The socket stays open: closing it would end the session. */
}

/* Queues one entry; false when the SQ stayed full for @ms. */
static bool submit(const struct vgpu_sqe *in, const void *payload, uint32_t len, int ms)
{
	struct vgpu_sqe sqe = *in;
	uint32_t off = 0;
	void *p = NULL;

	for (int i = 0; !client_sq_room(&R); i++) {
		if (i >= ms * 10)
			return false;
		sleep_us(100);
	}
	if (len && !(p = client_payload_alloc(&R, len, &off)))
		die("no room in the payload ring");
	if (len)
		memcpy(p, payload, len);
	sqe.payload_off = off;
	sqe.payload_len = len;
	if (!client_sq_push(&R, &sqe))
		die("the SQ filled up under a single producer");
	return true;
}

static struct vgpu_cqe reap(void)
{
	struct vgpu_cqe c;

	for (long i = 0; !client_cq_pop(&R, &c); i++) {
		if (i > WAIT_S * 10000L)
			die("no answer from the worker");
		sleep_us(100);
	}
	return c;
}

/* A synchronous call: its CQE. */
static struct vgpu_cqe call(uint16_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
			    uint64_t a4, const void *payload, uint32_t len)
{
	struct vgpu_sqe s = { .opcode = op, .tag = 1, .ctx = CTX,
			      .arg = { a0, a1, a2, a3, a4 } };

	if (!submit(&s, payload, len, WAIT_S * 1000))
		die("the SQ stays full");
	return reap();
}

static void check(bool ok, const char *what, int got)
{
	printf("%s %s (CUresult %d)\n", ok ? "ok  " : "FAIL", what, got);
	fflush(stdout);
	failures += !ok;
}

static void expect(CUresult want, struct vgpu_cqe c, const char *what)
{
	check(c.result == (int32_t)want, what, c.result);
}

static uint64_t setup(uint64_t bytes)
{
	struct vgpu_cqe c = call(VGPU_OP_PRIMARY_RETAIN, CTX, 0, 0, 0, 0, NULL, 0);

	if (c.result)
		die("PRIMARY_RETAIN failed");
	c = call(VGPU_OP_MEM_ALLOC, bytes, 0, 0, 0, 0, NULL, 0);
	if (c.result)
		die("MEM_ALLOC failed");
	return c.val[0];
}

/* ---- stuck ----------------------------------------------------------- */

static __attribute__((noreturn)) void stuck(void)
{
	struct vgpu_sqe s = { .opcode = VGPU_OP_NOP };
	unsigned long n = 0;

	/* Answers pile up unread: the CQ fills, then the SQ behind it. */
	for (;; n++) {
		s.tag = (uint32_t)(n % W.sq_entries) + 1;
		if (!submit(&s, NULL, 0, 2000))
			break;
	}
	printf("stuck after %lu calls (SQ %u, CQ %u entries)\n", n, W.sq_entries, W.cq_entries);
	fflush(stdout);
	for (;;)
		pause();
}

/* ---- bells ------------------------------------------------------------ */

/* Rings the worker's doorbell again and again with no entry behind it (and
 * a tail that says there are some): each ring costs this client a system
 * call; it must not cost the worker a busy CPU (tests/e2e/run bells). */
static __attribute__((noreturn)) void bells(void)
{
	store_release(&R.sh->sq_tail, load_acquire(&R.sh->sq_tail) + 5);
	printf("ringing\n");
	fflush(stdout);
	for (;;) {
		vgpu_bell_ring(R.bell);
		sleep_us(20);
	}
}

/* ---- stall ----------------------------------------------------------- */

static uint8_t byte_at(uint64_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13);
}

static void wait_seq(uint32_t c, uint32_t want)
{
	for (long i = 0; load_acquire(&R.sh->chunk[c].seq) != want; i++) {
		if (i > WAIT_S * 10000L)
			die("a staging chunk never came back");
		sleep_us(100);
	}
}

static void publish(uint32_t c, uint32_t val)
{
	store_release(&R.sh->chunk[c].seq, val);
	smp_mb();	/* seq before flag: pairs with the worker's sleep check */
	if (read_once(&R.sh->staging_wait) & VGPU_STAGING_WORKER_WAITS)
		vgpu_bell_ring(R.bell);
}

static void reset_chunks(void)
{
	for (uint32_t c = 0; c < R.staging_chunks; c++)
		write_once(&R.sh->chunk[c].seq, 0);
}

static void send_staged(uint64_t dst, uint64_t total, bool stop)
{
	struct vgpu_sqe s = { .opcode = VGPU_OP_MEMCPY_HTOD_STAGED, .tag = 1, .ctx = CTX,
			      .arg = { dst, total } };
	uint32_t n = R.staging_chunks, chunk = R.staging_chunk;
	uint64_t done = 0;

	reset_chunks();
	if (!submit(&s, NULL, 0, WAIT_S * 1000))
		die("the SQ stays full");
	for (uint32_t k = 0; done < total; k++) {
		uint32_t c = k % n, len = total - done < chunk ? (uint32_t)(total - done) : chunk;
		uint8_t *p = vgpu_staging_chunk(&R, c);

		wait_seq(c, k < n ? 0 : ~(k - n + 1));
		for (uint32_t i = 0; i < len; i++)
			p[i] = byte_at(done + i);
		write_once(&R.sh->chunk[c].len, len);
		publish(c, k + 1);
		done += len;
		if (stop && k == 0) {
			/* The worker takes this piece and waits for the next one. */
			printf("mid copy: %u of %llu bytes staged\n", len,
			       (unsigned long long)total);
			fflush(stdout);
			raise(SIGSTOP);
			printf("continued\n");
			fflush(stdout);
		}
	}
}

static uint64_t recv_staged(uint64_t src, uint64_t total)
{
	struct vgpu_sqe s = { .opcode = VGPU_OP_MEMCPY_DTOH_STAGED, .tag = 1, .ctx = CTX,
			      .arg = { src, total } };
	uint64_t done = 0, bad = 0;

	reset_chunks();
	if (!submit(&s, NULL, 0, WAIT_S * 1000))
		die("the SQ stays full");
	for (uint32_t k = 0; done < total; k++) {
		uint32_t c = k % R.staging_chunks, len;
		const uint8_t *p = vgpu_staging_chunk(&R, c);

		wait_seq(c, k + 1);
		len = read_once(&R.sh->chunk[c].len);
		if (!len || len > R.staging_chunk || len > total - done)
			die("a bad piece length");
		for (uint32_t i = 0; i < len; i++)
			bad += p[i] != byte_at(done + i);
		publish(c, ~(k + 1));
		done += len;
	}
	return bad;
}

static int stall(void)
{
	uint64_t total = 5ull * R.staging_chunk + 12345, buf = setup(total), bad;
	struct vgpu_cqe c;

	send_staged(buf, total, true);
	c = reap();
	expect(CUDA_SUCCESS, c, "the staged copy in completes after SIGCONT");
	bad = recv_staged(buf, total);
	c = reap();
	expect(CUDA_SUCCESS, c, "the staged copy out");
	check(!bad, "every byte read back is right", (int)(bad > 0));
	if (!failures)
		printf("copy: every byte right (%llu bytes)\n", (unsigned long long)total);
	return failures ? 1 : 0;
}

/* ---- bad ------------------------------------------------------------- */

static struct vgpu_cqe copy2d(uint64_t src, uint64_t dst, uint64_t sp, uint64_t dp, uint64_t w,
			      uint64_t h)
{
	struct vgpu_copy2d c = { src, dst, sp, dp, w, h };

	return call(VGPU_OP_MEMCPY_2D, 0, 0, 0, 0, 0, &c, sizeof(c));
}

static struct vgpu_cqe memset2d(uint64_t dst, uint64_t elem, uint64_t count, uint64_t pitch,
				uint64_t height)
{
	return call(VGPU_OP_MEMSET, dst, 0x7f, elem, count, pitch << 32 | height, NULL, 0);
}

static int bad(void)
{
	const uint64_t M = 1ull << 20, buf = setup(M);
	struct vgpu_cqe c;
	uint8_t *slot;

	/* 2^30-byte rows times 2^34 + 1 rows: 2^64 + 2^30, 1 GiB once wrapped. */
	c = call(VGPU_OP_MEM_ALLOC_PITCH, 1ull << 30, (1ull << 34) + 1, 4, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "pitched allocation whose size wraps");
	c = call(VGPU_OP_MEM_ALLOC_PITCH, UINT64_MAX - 8, 1, 4, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "pitched allocation whose pitch wraps");
	c = call(VGPU_OP_MEM_ALLOC, UINT64_MAX - (1ull << 20), 0, 0, 0, 0, NULL, 0);
	check(c.result != CUDA_SUCCESS, "allocation of 2^64 - 1 MiB refused", c.result);
	/* pitch * (height - 1) = 2^40 * 2^24 = 2^64: the span wraps to width. */
	c = copy2d(buf, buf + M / 2, 1ull << 40, 1ull << 40, 4096, (1ull << 24) + 1);
	expect(CUDA_ERROR_INVALID_VALUE, c, "2D copy whose source span wraps");
	c = copy2d(buf, buf + M / 2, 4096, UINT64_MAX / 2 + 1, 4096, 3);
	expect(CUDA_ERROR_INVALID_VALUE, c, "2D copy whose destination span wraps");
	c = copy2d(buf, W.dev_window_base + W.dev_window_size - 8192, 4096, 4096, 4096, 3);
	expect(CUDA_ERROR_INVALID_VALUE, c, "2D copy past the end of the session's window");
	c = memset2d(buf, 4, 1024, 0xfffffffcu, 0xffffffffu);
	expect(CUDA_ERROR_INVALID_VALUE, c, "2D memset of 2^64 bytes");
	c = memset2d(buf, 2, 4096, 4096, 2);
	expect(CUDA_ERROR_INVALID_VALUE, c, "2D memset whose rows are wider than the pitch");
	c = call(VGPU_OP_MEMSET, buf, 0, 4, (1ull << 62) + 1, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "memset D32 of (2^62 + 1) elements (wraps to 4 bytes)");
	c = call(VGPU_OP_MEMSET, buf, 0, 2, (1ull << 63) + 8, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "memset D16 whose byte count wraps");
	c = call(VGPU_OP_MEMCPY_DTOD, buf + 16, buf, UINT64_MAX - 15, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "device copy whose end wraps");
	c = call(VGPU_OP_MEMCPY_DTOD, W.dev_window_base + W.dev_window_size - 8, buf, 16, 0, 0,
		 NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "device copy past the end of the session's window");
	c = call(VGPU_OP_MEMCPY_DTOH, buf, 1ull << 63, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "copy to the reply slot of 2^63 bytes");
	c = call(VGPU_OP_MEMCPY_HTOD_POOL, buf, W.host_pool_base, UINT64_MAX, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "pool copy of 2^64 - 1 bytes");
	c = call(VGPU_OP_HOST_ALLOC, UINT64_MAX - 100, 0, 0, 0, 0, NULL, 0);
	check(c.result != CUDA_SUCCESS, "pool allocation of 2^64 - 101 bytes refused", c.result);
	/* The worker serves on: a memset read back. */
	c = call(VGPU_OP_MEMSET, buf, 0x5a, 1, 4096, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a memset afterwards");
	c = call(VGPU_OP_MEMCPY_DTOH, buf, 4096, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a copy back afterwards");
	slot = vgpu_reply_slot(&R, 1);
	for (int i = 0; i < 4096 && !c.result; i++)
		if (slot[i] != 0x5a) {
			check(false, "the memset's bytes", i);
			break;
		}
	printf("bad: %d failures\n", failures);
	return failures ? 1 : 0;
}

/* ---- streamops: stream attribute, memop and prefetch entries --------- */

static struct vgpu_cqe on_stream(uint16_t op, uint64_t a0, uint64_t a1, uint64_t a2,
				 uint64_t a3, uint64_t a4, const void *payload, uint32_t len)
{
	struct vgpu_sqe s = { .opcode = op, .tag = 1, .ctx = CTX, .stream = 0,
			      .arg = { a0, a1, a2, a3, a4 } };

	if (!submit(&s, payload, len, WAIT_S * 1000))
		die("the SQ stays full");
	return reap();
}

static int streamops(void)
{
	uint64_t buf = setup(1 << 20), outside = W.dev_window_base + W.dev_window_size - 2;
	CUstreamBatchMemOpParams ops[2];
	CUstreamAttrValue v;
	uint8_t *slot;
	struct vgpu_cqe c;

	memset(&v, 0, sizeof(v));
	c = on_stream(VGPU_OP_STREAM_SET_ATTR, CU_LAUNCH_ATTRIBUTE_PRIORITY, 0, 0, 0, 0, &v, 10);
	expect(CUDA_ERROR_INVALID_VALUE, c, "an attribute value of 10 bytes");
	v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)0x10000;
	v.accessPolicyWindow.num_bytes = 4096;
	c = on_stream(VGPU_OP_STREAM_SET_ATTR, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, 0, 0, 0, 0,
		      &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "an access window on the worker's own memory");
	v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)buf;
	v.accessPolicyWindow.num_bytes = UINT64_MAX - buf + 2;
	c = on_stream(VGPU_OP_STREAM_SET_ATTR, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, 0, 0, 0, 0,
		      &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "an access window that wraps");
	c = on_stream(VGPU_OP_STREAM_GET_ATTR, 1ull << 40, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "attribute 2^40");
	c = on_stream(VGPU_OP_STREAM_COPY_ATTRS, 1ull << 33, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "attributes copied from stream 2^33");
	c = on_stream(VGPU_OP_STREAM_WRITE_VALUE, buf, 1, 0, 3, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a 3-byte word");
	c = on_stream(VGPU_OP_STREAM_WRITE_VALUE, buf, 1ull << 32, 0, 4, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a 32-bit write of a 33-bit value");
	c = on_stream(VGPU_OP_STREAM_WRITE_VALUE, outside, 1, 0, 4, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a word across the end of the device window");
	c = on_stream(VGPU_OP_STREAM_WAIT_VALUE, 0x10000, 1, 0, 8, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a wait on the worker's own memory");
	memset(ops, 0, sizeof(ops));
	ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	ops[0].writeValue.address = buf;
	ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
	ops[1].writeValue.address = 0x10000;
	c = on_stream(VGPU_OP_STREAM_BATCH_MEMOP, 2, 0, 0, 0, 0, ops, sizeof(ops[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "a batch of 2 with 1 operation's bytes");
	c = on_stream(VGPU_OP_STREAM_BATCH_MEMOP, 1ull << 32, 0, 0, 0, 0, ops, sizeof(ops));
	expect(CUDA_ERROR_INVALID_VALUE, c, "a batch of 2^32 operations");
	c = on_stream(VGPU_OP_STREAM_BATCH_MEMOP, 2, 0, 0, 0, 0, ops, sizeof(ops));
	expect(CUDA_ERROR_INVALID_VALUE, c, "a batch writing the worker's own memory");
	c = on_stream(VGPU_OP_MEM_PREFETCH, buf, 4096, CU_MEM_LOCATION_TYPE_DEVICE, 99, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_DEVICE, c, "a prefetch to device 99");
	c = on_stream(VGPU_OP_MEM_PREFETCH, 1ull << 63, 4096, CU_MEM_LOCATION_TYPE_DEVICE, 0, 0,
		      NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a prefetch of 2^63");
	c = on_stream(VGPU_OP_CTX_RECORD_EVENT, 4242, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "a context event never created");
	/* The worker serves on, and the refused batch wrote nothing. */
	c = on_stream(VGPU_OP_MEMSET, buf, 0x5a, 1, 4096, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a memset afterwards");
	c = on_stream(VGPU_OP_STREAM_WRITE_VALUE, buf + 8, 0x01020304, 0, 4, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a good write afterwards");
	c = on_stream(VGPU_OP_MEMCPY_DTOH, buf, 16, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a copy back afterwards");
	slot = vgpu_reply_slot(&R, 1);
	check(!c.result && slot[0] == 0x5a && slot[8] == 0x04 && slot[11] == 0x01,
	      "the bytes: the memset's, and the good write's", slot[0]);
	printf("streamops: %d failures\n", failures);
	return failures ? 1 : 0;
}

/* ---- callback --------------------------------------------------------- */

static __attribute__((noreturn)) void callback(void)
{
	struct vgpu_sqe s = { .opcode = VGPU_OP_HOST_FUNC, .ctx = CTX, .arg = { 42 } };
	struct vgpu_cqe c = call(VGPU_OP_PRIMARY_RETAIN, CTX, 0, 0, 0, 0, NULL, 0);

	if (c.result || !submit(&s, NULL, 0, WAIT_S * 1000))
		die("cannot ask for a host function");
	c = reap();
	if (c.tag || c.val[0] != 42)
		die("the worker did not ask for the host function");
	printf("callback asked (sequence %llu), never acknowledged\n",
	       (unsigned long long)c.val[1]);
	fflush(stdout);
	for (;;)
		pause();
}

/* ---- chatter ---------------------------------------------------------- */

static __attribute__((noreturn)) void chatter(void)
{
	static const char junk[] = "nothing is to come on this socket";
	struct vgpu_cqe c;

	if (send(sock, junk, sizeof(junk), MSG_NOSIGNAL) != sizeof(junk))
		die("cannot send on the socket");
	c = call(VGPU_OP_NOP, 0, 0, 0, 0, 0, NULL, 0);
	printf("chattered: a call afterwards got %d\n", c.result);
	fflush(stdout);
	for (;;)
		pause();
}

/* ---- tables: the hidden tables' operations, bad entries (exec_tables.c) -- */

static int tables(void)
{
	static const uint8_t cluster_id[16] = { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
						0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca };
	const uint64_t buf = setup(4096);
	struct vgpu_cqe c;

	c = call(VGPU_OP_MODULE_FUNCTION_NAMES, 12345, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "function names of a module never loaded");
	c = call(VGPU_OP_DRIVER_EXPORT_TABLE, 0, 0, 0, 0, 0, cluster_id, 15);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a driver table id of 15 bytes");
	c = call(VGPU_OP_DRIVER_EXPORT_TABLE, 0, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a driver table id of no bytes");
	c = call(VGPU_OP_DRIVER_EXPORT_TABLE, 0, 0, 0, 0, 0, cluster_id, 16);
	check(c.result == CUDA_SUCCESS || c.result == CUDA_ERROR_NOT_FOUND,
	      "ClusterPrototype: the driver's (cuda) or none at all (host)", c.result);
	c = call(VGPU_OP_OCCUPANCY_CLUSTER_SIZE, 777, 1 | 1ull << 31 | 1ull << 47,
		 128 | 1ull << 31 | 1ull << 47, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "largest cluster of a function never looked up");
	c = call(VGPU_OP_OCCUPANCY_CLUSTER_SIZE, 777, 1 | 1ull << 31 | 1ull << 47,
		 128 | 1ull << 31 | 1ull << 47, 0, 99, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "largest cluster with scheduling policy 99");
	c = call(VGPU_OP_TPC_MAPPING, 1u << 20, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_DEVICE, c, "TPC mapping of device 2^20");
	c = call(VGPU_OP_TPC_MAPPING, UINT64_MAX, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_DEVICE, c, "TPC mapping of device 2^64 - 1");
	c = call(VGPU_OP_TPC_MAPPING, 0, 0, 0, 0, 0, NULL, 0);
	check(c.result == CUDA_SUCCESS ? c.val[0] > 0 && c.val[2] == 2 * c.val[0]
				       : c.result == CUDA_ERROR_NOT_SUPPORTED,
	      "TPC mapping of device 0: two arrays (cuda) or NOT_SUPPORTED (host)", c.result);
	{
		/* Untagged: no reply slot to write the names or arrays into. */
		struct vgpu_sqe s = { .opcode = VGPU_OP_TPC_MAPPING, .ctx = CTX };

		if (!submit(&s, NULL, 0, WAIT_S * 1000))
			die("the SQ stays full");
		s.opcode = VGPU_OP_MODULE_FUNCTION_NAMES;
		if (!submit(&s, NULL, 0, WAIT_S * 1000))
			die("the SQ stays full");
	}
	/* Refused, as asynchronous errors are reported: at the next answer. */
	c = call(VGPU_OP_MEMSET, buf, 0x5a, 1, 4096, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "untagged: refused, said at the next answer");
	/* The worker serves on. */
	c = call(VGPU_OP_MEMSET, buf, 0x5a, 1, 4096, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a memset afterwards");
	printf("tables: %d failures\n", failures);
	return failures ? 1 : 0;
}

/* A LINK request of @len bytes (one staging chunk): its answer. */
static struct vgpu_cqe link_call(const void *req, uint32_t len)
{
	struct vgpu_sqe s = { .opcode = VGPU_OP_LINK, .tag = 1, .ctx = CTX, .arg = { len } };

	if (len > R.staging_chunk)
		die("link request larger than a chunk");
	reset_chunks();
	if (!submit(&s, NULL, 0, WAIT_S * 1000))
		die("the SQ stays full");
	wait_seq(0, 0);
	memcpy(vgpu_staging_chunk(&R, 0), req, len);
	write_once(&R.sh->chunk[0].len, len);
	publish(0, 1);
	return reap();
}

/* A request of one PTX input with options @o (n of them) at the link level. */
static uint32_t link_req(uint8_t *buf, const struct vgpu_jit_option *o, uint32_t n,
			 uint32_t type, const char *name, uint32_t name_len)
{
	static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .entry vgpu_spin(.param .u64 p)\n{\n\tret;\n}\n";
	struct vgpu_link_head h = { .inputs = 1, .options = n };
	struct vgpu_link_input in = { .type = type, .name_len = name_len, .bytes = sizeof(ptx) };
	uint32_t off = 0;

	memcpy(buf + off, &h, sizeof(h));
	off += sizeof(h);
	memcpy(buf + off, o, n * sizeof(*o));
	off += n * sizeof(*o);
	memcpy(buf + off, &in, sizeof(in));
	off += sizeof(in);
	memcpy(buf + off, name, name_len);
	off += (name_len + 7) & ~7u;
	memcpy(buf + off, ptx, sizeof(ptx));
	off += (sizeof(ptx) + 7) & ~7u;
	return off;
}

/* ---- libcalls: tensor maps and device resources, bad entries ---------- */

static int libcalls(void)
{
	const uint64_t buf = setup(1u << 20);
	struct vgpu_tensor_map_req q = {
		.kind = VGPU_TMAP_TILED, .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, .rank = 2,
		.global_address = buf, .global_dim = { 64, 32 }, .global_strides = { 256 },
		.box_dim = { 16, 8 }, .element_strides = { 1, 1 },
	};
	CUdevResource res[2];
	CUtensorMap map;
	struct vgpu_cqe c;

	c = call(VGPU_OP_TENSOR_MAP_ENCODE, 0, 0, 0, 0, 0, &q, sizeof(q));
	expect(CUDA_SUCCESS, c, "tensor map: a good request encodes");
	memcpy(&map, vgpu_reply_slot(&R, 1), sizeof(map));
	c = call(VGPU_OP_TENSOR_MAP_ENCODE, 0, 0, 0, 0, 0, &q, sizeof(q) - 8);
	expect(CUDA_ERROR_INVALID_VALUE, c, "tensor map: a short request");
	q.rank = 6;
	c = call(VGPU_OP_TENSOR_MAP_ENCODE, 0, 0, 0, 0, 0, &q, sizeof(q));
	expect(CUDA_ERROR_INVALID_VALUE, c, "tensor map: rank 6 (arrays hold 5)");
	q.rank = 0xffffffffu;
	c = call(VGPU_OP_TENSOR_MAP_ENCODE, 0, 0, 0, 0, 0, &q, sizeof(q));
	expect(CUDA_ERROR_INVALID_VALUE, c, "tensor map: rank 2^32 - 1");
	q.rank = 2;
	q.kind = 3;
	c = call(VGPU_OP_TENSOR_MAP_ENCODE, 0, 0, 0, 0, 0, &q, sizeof(q));
	expect(CUDA_ERROR_INVALID_VALUE, c, "tensor map: an unknown encoder");
	q.kind = VGPU_TMAP_TILED;
	q.reserved[1] = 1;
	c = call(VGPU_OP_TENSOR_MAP_ENCODE, 0, 0, 0, 0, 0, &q, sizeof(q));
	expect(CUDA_ERROR_INVALID_VALUE, c, "tensor map: a reserved field set");
	c = call(VGPU_OP_TENSOR_MAP_REPLACE, buf + 256, 0, 0, 0, 0, &map, sizeof(map) - 1);
	expect(CUDA_ERROR_INVALID_VALUE, c, "tensor map: replacing in 127 bytes");
	c = call(VGPU_OP_TENSOR_MAP_REPLACE, buf + 256, 0, 0, 0, 0, &map, sizeof(map));
	expect(CUDA_SUCCESS, c, "tensor map: replacing the address of a good map");

	c = call(VGPU_OP_DEV_RESOURCE, 99, CU_DEV_RESOURCE_TYPE_SM, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_DEVICE, c, "resources: device 99");
	c = call(VGPU_OP_DEV_RESOURCE, 0, CU_DEV_RESOURCE_TYPE_SM, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "resources: device 0");
	memcpy(&res[0], vgpu_reply_slot(&R, 1), sizeof(res[0]));
	c = call(VGPU_OP_SM_RESOURCE_SPLIT, VGPU_MAX_SM_GROUPS + 1, 0, 8, 1, 0, &res[0],
		 sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "resources: room for 257 groups");
	c = call(VGPU_OP_SM_RESOURCE_SPLIT, 2, 0, 1ull << 32, 1, 0, &res[0], sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "resources: a minimum of 2^32 SMs");
	c = call(VGPU_OP_SM_RESOURCE_SPLIT, 2, 0, 8, 2, 0, &res[0], sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "resources: an unknown split mode");
	c = call(VGPU_OP_SM_RESOURCE_SPLIT, 2, 0, 8, 1, 0, &res[0], sizeof(res[0]) - 4);
	expect(CUDA_ERROR_INVALID_VALUE, c, "resources: a short input resource");
	c = call(VGPU_OP_RESOURCE_DESC, 0, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "resources: a descriptor of none");
	c = call(VGPU_OP_RESOURCE_DESC, 2, 0, 0, 0, 0, res, sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "resources: 2 resources in the bytes of 1");
	c = call(VGPU_OP_RESOURCE_DESC, VGPU_MAX_RESOURCES + 1, 0, 0, 0, 0, res, sizeof(res));
	expect(CUDA_ERROR_INVALID_VALUE, c, "resources: 257 resources");
	c = call(VGPU_OP_DEV_RESOURCE, 0, CU_DEV_RESOURCE_TYPE_SM, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "resources: the worker serves on");

	/* Green contexts: ids, device, resource count and bytes checked; the
	 * context of one is not destroyed or released as another. */
	c = call(VGPU_OP_GREEN_CREATE, 0, 500, 0, CU_GREEN_CTX_DEFAULT_STREAM, 1, res,
		 sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: green id 0");
	c = call(VGPU_OP_GREEN_CREATE, 1ull << 32 | 1, 500, 0, CU_GREEN_CTX_DEFAULT_STREAM, 1, res,
		 sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: green id 2^32 + 1");
	c = call(VGPU_OP_GREEN_CREATE, 1, CTX, 0, CU_GREEN_CTX_DEFAULT_STREAM, 1, res,
		 sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: a context id in use");
	c = call(VGPU_OP_GREEN_CREATE, 1, 500, 99, CU_GREEN_CTX_DEFAULT_STREAM, 1, res,
		 sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_DEVICE, c, "green: device 99");
	c = call(VGPU_OP_GREEN_CREATE, 1, 500, 0, CU_GREEN_CTX_DEFAULT_STREAM, 2, res,
		 sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: 2 resources in the bytes of 1");
	c = call(VGPU_OP_GREEN_CREATE, 1, 500, 0, CU_GREEN_CTX_DEFAULT_STREAM,
		 VGPU_MAX_RESOURCES + 1, res, sizeof(res));
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: 257 resources");
	c = call(VGPU_OP_GREEN_CREATE, 1, 500, 0, 1ull << 32, 1, res, sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: flags of 2^32");
	c = call(VGPU_OP_GREEN_CREATE, 1, 500, 0, CU_GREEN_CTX_DEFAULT_STREAM, 1, res,
		 sizeof(res[0]));
	expect(CUDA_SUCCESS, c, "green: one of the whole device");
	c = call(VGPU_OP_GREEN_CREATE, 1, 501, 0, CU_GREEN_CTX_DEFAULT_STREAM, 1, res,
		 sizeof(res[0]));
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: its green id again");
	c = call(VGPU_OP_GREEN_RESOURCE, 2, CU_DEV_RESOURCE_TYPE_SM, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_CONTEXT, c, "green: the resource of no green context");
	c = call(VGPU_OP_GREEN_RESOURCE, 1, CU_DEV_RESOURCE_TYPE_SM, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "green: its resource");
	c = call(VGPU_OP_GREEN_STREAM_CREATE, 1, 0, CU_STREAM_NON_BLOCKING, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: a stream of id 0");
	c = call(VGPU_OP_GREEN_STREAM_CREATE, 1, 1ull << 40, CU_STREAM_NON_BLOCKING, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: a stream of id 2^40");
	c = call(VGPU_OP_GREEN_STREAM_CREATE, 1, 900, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "green: a blocking stream");
	c = call(VGPU_OP_GREEN_RECORD_EVENT, 1, 4242, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "green: recording no event");
	c = call(VGPU_OP_GREEN_WAIT_EVENT, 7, 4242, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_CONTEXT, c, "green: no green context waits");
	c = call(VGPU_OP_CTX_DESTROY, 500, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_CONTEXT, c, "green: its context destroyed as a created one");
	c = call(VGPU_OP_PRIMARY_RELEASE, 500, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_CONTEXT, c, "green: its context released as a primary");
	c = call(VGPU_OP_GREEN_DESTROY, 1, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "green: destroyed");
	c = call(VGPU_OP_GREEN_DESTROY, 1, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_CONTEXT, c, "green: destroyed twice");
	c = call(VGPU_OP_DEV_RESOURCE, 0, CU_DEV_RESOURCE_TYPE_SM, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "green: the worker serves on");

	{
		const struct vgpu_jit_option level = { .option = CU_JIT_OPTIMIZATION_LEVEL,
						       .value = 3 };
		const struct vgpu_jit_option logbuf = { .option = CU_JIT_INFO_LOG_BUFFER,
							.value = 0x1000 };
		static uint8_t lreq[4096];
		uint32_t len;

		c = call(VGPU_OP_LINK, 0, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: an empty request");
		c = call(VGPU_OP_LINK, VGPU_LINK_MAX_BYTES + 1, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: a request over the limit");
		len = link_req(lreq, &level, 1, CU_JIT_INPUT_PTX, "a.ptx", 6);
		c = link_call(lreq, len);
		expect(CUDA_SUCCESS, c, "link: one PTX input links");
		c = call(VGPU_OP_LINK_RESULT, 1, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: fetching a result of the wrong size");
		len = link_req(lreq, &logbuf, 1, CU_JIT_INPUT_PTX, "a.ptx", 6);
		c = link_call(lreq, len);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: a log-buffer option (a pointer) sent");
		c = call(VGPU_OP_LINK_RESULT, 0, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: no result to fetch after a failure");
		len = link_req(lreq, &level, 1, CU_JIT_INPUT_OBJECT, "a.o", 4);
		c = link_call(lreq, len);
		expect(CUDA_ERROR_NOT_SUPPORTED, c, "link: an object input");
		len = link_req(lreq, &level, 1, CU_JIT_INPUT_PTX, "a.ptx!!!", 8);
		c = link_call(lreq, len);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: a name without its NUL");
		len = link_req(lreq, &level, 1, CU_JIT_INPUT_PTX, "a.ptx", 6);
		c = link_call(lreq, len - 8);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: input data past the request");
		c = link_call(lreq, len + 8);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: bytes after the last input");
		static struct vgpu_jit_option many[VGPU_LINK_MAX_OPTIONS + 1];

		for (uint32_t i = 0; i <= VGPU_LINK_MAX_OPTIONS; i++)
			many[i] = level;
		len = link_req(lreq, many, VGPU_LINK_MAX_OPTIONS + 1, CU_JIT_INPUT_PTX, "a", 2);
		c = link_call(lreq, len);
		expect(CUDA_ERROR_INVALID_VALUE, c, "link: 65 options");
		{
			struct vgpu_link_head h = { .inputs = VGPU_LINK_MAX_INPUTS + 1 };

			len = link_req(lreq, &level, 1, CU_JIT_INPUT_PTX, "a.ptx", 6);
			memcpy(lreq, &h, sizeof(h));
			c = link_call(lreq, len);
			expect(CUDA_ERROR_INVALID_VALUE, c, "link: 257 inputs announced");
		}
		len = link_req(lreq, &level, 1, CU_JIT_INPUT_PTX, "a.ptx", 6);
		c = link_call(lreq, len);
		expect(CUDA_SUCCESS, c, "link: the worker serves on");
	}
	{
		struct vgpu_kernel_node k = { .func = 1 };

		c = call(VGPU_OP_GRAPH_NODES, 77, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_HANDLE, c, "graph nodes: of a graph never made");
		c = call(VGPU_OP_GRAPH_NODES, 1ull << 40, 1, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_HANDLE, c, "graph nodes: roots of graph 2^40");
		c = call(VGPU_OP_KERNEL_NODE_GET, 0, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_HANDLE, c, "graph nodes: node 0");
		c = call(VGPU_OP_KERNEL_NODE_GET, (1ull << 32) + 1, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_HANDLE, c, "graph nodes: node 2^32 + 1");
		c = call(VGPU_OP_KERNEL_NODE_SET, 5, 0, 0, 0, 0, &k, sizeof(k) - 4);
		expect(CUDA_ERROR_INVALID_HANDLE, c, "graph nodes: setting a node never issued");
		c = call(VGPU_OP_GRAPH_CREATE, 0, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_VALUE, c, "graphs: creating graph id 0");
		c = call(VGPU_OP_GRAPH_CREATE, 9, 1, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_VALUE, c, "graphs: creating with flags");
		c = call(VGPU_OP_GRAPH_CREATE, 1ull << 40, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_ERROR_INVALID_VALUE, c, "graphs: creating graph id 2^40");
		c = call(VGPU_OP_GRAPH_ADD_KERNEL_NODE, 9, 0, 0, 0, 0, &k, sizeof(k));
		expect(CUDA_ERROR_INVALID_HANDLE, c, "graphs: a node added to no graph");
		c = call(VGPU_OP_GRAPH_ADD_DEPENDENCIES, 9, 1, 0, 0, 0, &k, 8);
		expect(CUDA_ERROR_INVALID_HANDLE, c, "graphs: an edge added to no graph");
	}
	printf("libcalls: %d failures\n", failures);
	return failures ? 1 : 0;
}

/* ---- graphs: nodes built by hand, bad entries ------------------------- */

static int graphs(void)
{
	const uint64_t buf = setup(1u << 20);
	const struct vgpu_node_params set = { .type = CU_GRAPH_NODE_TYPE_MEMSET, .dst = buf,
					      .width = 256, .height = 1, .value = 7, .elem = 4 };
	const struct vgpu_node_params copy = { .type = CU_GRAPH_NODE_TYPE_MEMCPY, .dst = buf,
					       .src = buf + 4096, .width = 4096, .height = 1,
					       .depth = 1 };
	struct vgpu_node_params v;
	uint8_t big[sizeof(v) + 2 * (4 + 8)];
	struct vgpu_cqe c;

	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &set, sizeof(set));
	expect(CUDA_ERROR_INVALID_HANDLE, c, "add node: a good memset, to a graph never made");
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &copy, sizeof(copy));
	expect(CUDA_ERROR_INVALID_HANDLE, c, "add node: a good copy, to a graph never made");
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &set, sizeof(set) - 8);
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a short description");
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 1, 0, 0, 0, &set, sizeof(set));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a dependency announced, none sent");
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, VGPU_MAX_GRAPH_NODES + 1, 0, 0, 0, &set,
		 sizeof(set));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: more dependencies than a graph holds");
	memset(big, 0, sizeof(big));
	memcpy(big, &set, sizeof(set));
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 2, 2, 0, 0, big, sizeof(big));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: edge data flag 2");
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 2, 1, 0, 0, big, sizeof(big));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: dependencies on nodes never issued");
	v = set, v.elem = 3;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a memset of 3-byte elements");
	v = set, v.dst = 0x1000;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a memset of memory not the session's");
	v = set, v.width = (W.dev_window_size + 4096) / v.elem;	/* longer than the window */
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a memset longer than the window");
	v = set, v.height = 2, v.dst_pitch = 16;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a 2D memset with rows overlapping");
	v = set, v.width = 1ull << 62;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a memset of 2^62 elements");
	v = set, v.src = buf;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a memset with a source");
	v = copy, v.src = 0xdead0000;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a copy from memory not the session's");
	v = copy, v.height = 4, v.src_pitch = 1ull << 63, v.dst_pitch = 4096;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a copy whose rows wrap around");
	v = copy, v.depth = 2, v.src_pitch = v.dst_pitch = 4096, v.src_rows = v.dst_rows = 0;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a 3D copy with layers overlapping");
	v = copy, v.width = 0;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a copy of 0 bytes");
	memset(&v, 0, sizeof(v));
	v.type = CU_GRAPH_NODE_TYPE_GRAPH, v.id = 55;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a child graph never made");
	v.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_HANDLE, c, "add node: recording an event never made");
	v.type = CU_GRAPH_NODE_TYPE_EMPTY;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: an empty node naming an id");
	v.id = 0, v.type = CU_GRAPH_NODE_TYPE_HOST;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a host node (a function pointer)");
	v.type = CU_GRAPH_NODE_TYPE_KERNEL;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a kernel as a description");
	v.type = 0xffffffffu;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: type 2^32 - 1");

	c = call(VGPU_OP_GRAPH_NODE_SET, 5, 0, 0, 0, 0, &set, sizeof(set));
	expect(CUDA_ERROR_INVALID_HANDLE, c, "set node: a node never issued");
	c = call(VGPU_OP_GRAPH_NODE_SET, (1ull << 32) + 1, 0, 0, 0, 0, &set, sizeof(set));
	expect(CUDA_ERROR_INVALID_HANDLE, c, "set node: node 2^32 + 1");
	c = call(VGPU_OP_GRAPH_DESTROY_NODE, 0, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "destroy node: node 0");
	c = call(VGPU_OP_GRAPH_DESTROY_NODE, 1ull << 40, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "destroy node: node 2^40");
	{
		struct vgpu_sqe q = { .opcode = VGPU_OP_STREAM_BEGIN_CAPTURE_TO_GRAPH, .tag = 1,
				      .ctx = CTX, .arg = { 0, 77, 0 } };

		if (!submit(&q, NULL, 0, WAIT_S * 1000))
			die("the SQ stays full");
		expect(CUDA_ERROR_INVALID_HANDLE, reap(), "capture into a graph never made");
		q.stream = 999;
		if (!submit(&q, NULL, 0, WAIT_S * 1000))
			die("the SQ stays full");
		c = reap();
		check(c.result != CUDA_SUCCESS, "capture on a stream never made", c.result);
	}
	c = call(VGPU_OP_GRAPH_EXEC_UPDATE, 3, 77, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "exec update: an instance never made");
	c = call(VGPU_OP_GRAPH_ADD_KERNEL_NODE, 9, 0, 2, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "add kernel node: edge flag 2, no graph");
	c = call(VGPU_OP_GRAPH_ADD_DEPENDENCIES, 9, 1, 1, 0, 0, big, 8);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "add dependencies: edge data, no graph");
	/* Queries and edits (exec_graph_query.c). */
	c = call(VGPU_OP_GRAPH_EDGES, 77, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "edges: of a graph never made");
	c = call(VGPU_OP_GRAPH_EDGES, 77, 1ull << 40, 1, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "edges: of node 2^40 of a graph never made");
	c = call(VGPU_OP_GRAPH_REMOVE_DEPENDENCIES, 77, 1, 0, 0, 0, big, 8);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "remove dependencies: a graph never made");
	c = call(VGPU_OP_STREAM_UPDATE_CAPTURE_DEPS, 0, 1, 0, 0, 0, big, 4);
	expect(CUDA_ERROR_INVALID_VALUE, c, "capture dependencies: a node of no graph");
	c = call(VGPU_OP_STREAM_UPDATE_CAPTURE_DEPS, 0, 1ull << 40, 0, 77, 0, big, 4);
	expect(CUDA_ERROR_INVALID_VALUE, c, "capture dependencies: 2^40 nodes");
	c = call(VGPU_OP_STREAM_UPDATE_CAPTURE_DEPS, 0, 0, 0, 77, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "capture dependencies: a graph and no node");
	c = call(VGPU_OP_STREAM_UPDATE_CAPTURE_DEPS, 0, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_ILLEGAL_STATE, c, "capture dependencies: no capture");
	c = call(VGPU_OP_GRAPH_NODE_OBJECT, 5, 9, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "node object: a node never issued");
	c = call(VGPU_OP_GRAPH_NODE_OBJECT, (1ull << 32) + 1, 9, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "node object: node 2^32 + 1");
	c = call(VGPU_OP_GRAPH_CLONE, 77, 78, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "clone: a graph never made");
	c = call(VGPU_OP_GRAPH_NODE_IN_CLONE, 5, 77, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "node in clone: a node never issued");
	c = call(VGPU_OP_KERNEL_NODE_ATTR, 5, 1, 1, 0, 0, big, 64);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "kernel node attribute: a node never issued");
	c = call(VGPU_OP_MEMCPY_NODE_GET, 5, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_HANDLE, c, "copy node parameters: a node never issued");
	/* Conditional and memory nodes (exec_graph_cond.c, exec_graph_mem.c). */
	{
		struct vgpu_cond_params cp = { .handle = 0xdead, .type = CU_GRAPH_COND_TYPE_IF,
					       .size = 1, .body = { 91 } }, cv;
		struct vgpu_mem_node al = { .type = CU_GRAPH_NODE_TYPE_MEM_ALLOC, .bytesize = 4096 },
				     fr = { .type = CU_GRAPH_NODE_TYPE_MEM_FREE, .dptr = buf }, mv;
		uint64_t at;

		c = call(VGPU_OP_GRAPH_CREATE, 90, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_SUCCESS, c, "graphs: graph 90 made");
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cp, sizeof(cp) - 4);
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: a short description");
		cv = cp, cv.type = 3;
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cv, sizeof(cv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: type 3");
		cv = cp, cv.size = 0;
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cv, sizeof(cv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: no body");
		cv = cp, cv.size = VGPU_MAX_COND_BODIES + 1;
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cv, sizeof(cv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: 65 bodies");
		cv = cp, cv.body[0] = 0;
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cv, sizeof(cv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: body id 0");
		cv = cp, cv.body[0] = 90;
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cv, sizeof(cv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: a body id taken");
		cv = cp, cv.type = CU_GRAPH_COND_TYPE_SWITCH, cv.size = 2, cv.body[1] = 91;
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cv, sizeof(cv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: a body id twice");
		cv = cp, cv.body[5] = 95;
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cv, sizeof(cv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "conditional node: an id past its bodies");
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 90, 0, 0, 0, 0, &cp, sizeof(cp));
		check(c.result != CUDA_SUCCESS, "conditional node: a handle never made", c.result);
		c = call(VGPU_OP_GRAPH_ADD_COND_NODE, 77, 0, 0, 0, 0, &cp, sizeof(cp));
		expect(CUDA_ERROR_INVALID_HANDLE, c, "conditional node: a graph never made");

		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &fr, sizeof(fr));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: freeing memory no node gave");
		mv = al, mv.bytesize = 0;
		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &mv, sizeof(mv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: 0 bytes");
		mv = al, mv.device = 7;
		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &mv, sizeof(mv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: device 7");
		mv = al, mv.naccess = VGPU_MAX_MEM_NODE_ACCESS + 1;
		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &mv, sizeof(mv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: 9 access descriptors");
		mv = al, mv.naccess = 1, mv.access[0].flags = 9;
		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &mv, sizeof(mv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: access flags 9");
		mv = al, mv.dptr = buf;
		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &mv, sizeof(mv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: an allocation naming an address");
		mv = al, mv.type = CU_GRAPH_NODE_TYPE_MEMSET;
		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &mv, sizeof(mv));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: a memset as a memory node");
		c = call(VGPU_OP_GRAPH_ADD_MEM_NODE, 90, 0, 0, 0, 0, &al, sizeof(al));
		expect(CUDA_SUCCESS, c, "memory node: an allocation");
		at = c.val[1];
		v = set, v.dst = at, v.width = 1024;
		c = call(VGPU_OP_GRAPH_ADD_NODE, 90, 0, 0, 0, 0, &v, sizeof(v));
		expect(CUDA_SUCCESS, c, "memory node: its memory is the session's");
		v.width = 1025;
		c = call(VGPU_OP_GRAPH_ADD_NODE, 90, 0, 0, 0, 0, &v, sizeof(v));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: up to its end only");
		c = call(VGPU_OP_GRAPH_DESTROY, 90, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_SUCCESS, c, "graphs: graph 90 destroyed");
		c = call(VGPU_OP_GRAPH_CREATE, 92, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_SUCCESS, c, "graphs: graph 92 made");
		v.width = 1024;
		c = call(VGPU_OP_GRAPH_ADD_NODE, 92, 0, 0, 0, 0, &v, sizeof(v));
		expect(CUDA_ERROR_INVALID_VALUE, c, "memory node: its memory gone with its graph");
		c = call(VGPU_OP_GRAPH_DESTROY, 92, 0, 0, 0, 0, NULL, 0);
		expect(CUDA_SUCCESS, c, "graphs: graph 92 destroyed");
	}
	/* Copies staged through the pinned pool (graph_hostcopy.c). */
	v = copy, v.id = 1, v.value = 1;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a staged copy from device memory");
	v = copy, v.id = 3, v.value = 1;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a copy staged the third way");
	v = copy, v.value = 1;
	c = call(VGPU_OP_GRAPH_ADD_NODE, 77, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "add node: a plain copy with a callback");
	c = call(VGPU_OP_GRAPH_CAPTURE_STAGED, 0, 0, 0, 0, 0, &copy, sizeof(copy));
	expect(CUDA_ERROR_INVALID_VALUE, c, "captured staged copy: a plain copy");
	v = copy, v.id = 2, v.value = 1;
	c = call(VGPU_OP_GRAPH_CAPTURE_STAGED, 0, 0, 0, 0, 0, &v, sizeof(v));
	expect(CUDA_ERROR_INVALID_VALUE, c, "captured staged copy: to device memory");
	c = call(VGPU_OP_GRAPH_CAPTURE_STAGED, 0, 0, 0, 0, 0, &v, sizeof(v) - 8);
	expect(CUDA_ERROR_INVALID_VALUE, c, "captured staged copy: a short description");
	{	/* copy nodes with an array end */
		struct vgpu_array_copy ac = {
			.src = { .kind = VGPU_COPY_END_ADDR, .ref = buf, .pitch = 64, .height = 4 },
			.dst = { .kind = VGPU_COPY_END_ARRAY, .ref = 99 },
			.width = 64, .height = 4, .depth = 1,
		};

		c = call(VGPU_OP_GRAPH_ADD_ARRAY_COPY, 77, 0, 0, 0, 0, &ac, sizeof(ac));
		expect(CUDA_ERROR_INVALID_HANDLE, c, "array copy node: an array never made");
		c = call(VGPU_OP_GRAPH_ADD_ARRAY_COPY, 77, 0, 0, 0, 0, &ac, sizeof(ac) - 8);
		expect(CUDA_ERROR_INVALID_VALUE, c, "array copy node: a short description");
		ac.dst = ac.src, ac.width = 0;
		c = call(VGPU_OP_GRAPH_ADD_ARRAY_COPY, 77, 0, 0, 0, 0, &ac, sizeof(ac));
		expect(CUDA_ERROR_INVALID_VALUE, c, "array copy node: nothing to copy");
		ac.width = 64, ac.src.ref = 0x1000;
		c = call(VGPU_OP_GRAPH_ADD_ARRAY_COPY, 77, 0, 0, 0, 0, &ac, sizeof(ac));
		expect(CUDA_ERROR_INVALID_VALUE, c, "array copy node: memory not the session's");
		ac.src.ref = buf, ac.src.kind = 7;
		c = call(VGPU_OP_GRAPH_ADD_ARRAY_COPY, 77, 0, 0, 0, 0, &ac, sizeof(ac));
		expect(CUDA_ERROR_INVALID_VALUE, c, "array copy node: an end of no kind");
	}
	c = call(VGPU_OP_MEM_ALLOC, 4096, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "the worker serves on");
	printf("graphs: %d failures\n", failures);
	return failures ? 1 : 0;
}

/* ---- vmm: the virtual memory API's entries ---------------------------- */

static int vmm(void)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc d[17];
	struct vgpu_cqe c;
	uint64_t buf = setup(4 << 20), r, h, g;
	char junk[40] = "junk";

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	c = call(VGPU_OP_VMM_GRANULARITY, CU_MEM_ALLOC_GRANULARITY_MINIMUM, 0, 0, 0, 0, &prop,
		 sizeof(prop));
	if (c.result || !c.val[0])
		die("VMM_GRANULARITY failed");
	g = c.val[0];
	c = call(VGPU_OP_VMM_CREATE, g, 0, 0, 0, 0, &prop, sizeof(prop) - 1);
	expect(CUDA_ERROR_INVALID_VALUE, c, "properties one byte short");
	c = call(VGPU_OP_VMM_CREATE, g, 0, 0, 0, 0, d, sizeof(prop) + 8);
	expect(CUDA_ERROR_INVALID_VALUE, c, "properties 8 bytes long");
	prop.location.id = -1;
	c = call(VGPU_OP_VMM_CREATE, g, 0, 0, 0, 0, &prop, sizeof(prop));
	expect(CUDA_ERROR_INVALID_DEVICE, c, "device -1");
	prop.location.id = 0;
	prop.requestedHandleTypes = (CUmemAllocationHandleType)0x80000000u;
	c = call(VGPU_OP_VMM_CREATE, g, 0, 0, 0, 0, &prop, sizeof(prop));
	expect(CUDA_ERROR_NOT_SUPPORTED, c, "an unknown handle type");
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
	c = call(VGPU_OP_VMM_CREATE, UINT64_MAX - g + 1, 0, 0, 0, 0, &prop, sizeof(prop));
	expect(CUDA_ERROR_OUT_OF_MEMORY, c, "2^64 - granularity bytes");
	c = call(VGPU_OP_VMM_CREATE, g, 0, 0, 0, 0, &prop, sizeof(prop));
	expect(CUDA_SUCCESS, c, "a good allocation");
	h = c.val[0];
	c = call(VGPU_OP_VMM_RESERVE, 4 * g, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a reservation");
	r = c.val[0];
	c = call(VGPU_OP_VMM_RESERVE, g, 1ull << 63, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_OUT_OF_MEMORY, c, "alignment 2^63");
	c = call(VGPU_OP_VMM_RESERVE, UINT64_MAX - g + 1, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_OUT_OF_MEMORY, c, "a reservation of 2^64 - granularity");
	c = call(VGPU_OP_VMM_MAP, buf / g * g, g, 0, h, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a mapping over cuMemAlloc'ed memory");
	c = call(VGPU_OP_VMM_MAP, 0x10000000, g, 0, h, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a mapping into the worker's own address space");
	c = call(VGPU_OP_VMM_MAP, r + 4 * g, g, 0, h, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a mapping just past the reservation's end");
	/* More than the allocation has: NOT_SUPPORTED, as driver 580 answers. */
	c = call(VGPU_OP_VMM_MAP, r + 3 * g, 2 * g, 0, h, 0, NULL, 0);
	expect(CUDA_ERROR_NOT_SUPPORTED, c, "a mapping of more than the allocation");
	c = call(VGPU_OP_VMM_MAP, r, g, UINT64_MAX - g + 1, h, 0, NULL, 0);
	expect(CUDA_ERROR_NOT_SUPPORTED, c, "an offset that wraps");
	c = call(VGPU_OP_VMM_MAP, UINT64_MAX - g + 1, 2 * g, 0, h, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a mapping whose end wraps");
	c = call(VGPU_OP_VMM_MAP, r, g, 0, h, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a good mapping");
	memset(d, 0, sizeof(d));
	for (int i = 0; i < 17; i++) {
		d[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		d[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	}
	c = call(VGPU_OP_VMM_SET_ACCESS, r, g, 0, 0, 0, d, sizeof(d[0]) - 4);
	expect(CUDA_ERROR_INVALID_VALUE, c, "an access descriptor cut short");
	c = call(VGPU_OP_VMM_SET_ACCESS, r, g, 0, 0, 0, d, sizeof(d));
	expect(CUDA_ERROR_INVALID_VALUE, c, "17 access descriptors");
	c = call(VGPU_OP_VMM_SET_ACCESS, r, g, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "no access descriptor");
	c = call(VGPU_OP_VMM_GET_ACCESS, r, 1ull << 40, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "access of location type 2^40");
	c = call(VGPU_OP_VMM_GET_ACCESS, r, CU_MEM_LOCATION_TYPE_DEVICE, 1ull << 35, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "access of device 2^35");
	c = call(VGPU_OP_VMM_RETAIN, 0x10000000, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a retain of the worker's own address");
	c = call(VGPU_OP_VMM_PROPS, h + 1000, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "properties of a handle never issued");
	c = call(VGPU_OP_VMM_ADDR_FREE, r, 4 * g, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a reservation freed while mapped");
	c = call(VGPU_OP_VMM_IMPORT, 42, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "an import with no descriptor");
	if (vgpu_send_fds(sock, junk, sizeof(junk), NULL, 0) != (int)sizeof(junk))
		die("the socket refused junk");
	c = call(VGPU_OP_VMM_IMPORT, 43, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "an import after a message of junk");
	c = call(VGPU_OP_VMM_RANGE_HANDLE, 0x10000000, g, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0,
		 1, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a dma-buf of the worker's own memory");
	c = call(VGPU_OP_VMM_EXPORT, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0, 7, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "an export of memory not made exportable");
	/* The worker serves on: the mapping works, and everything goes. */
	c = call(VGPU_OP_VMM_SET_ACCESS, r, g, 0, 0, 0, d, sizeof(d[0]));
	expect(CUDA_SUCCESS, c, "access afterwards");
	c = call(VGPU_OP_MEMSET, r, 0x5a, 1, 4096, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a memset of the mapping");
	c = call(VGPU_OP_MEMCPY_DTOH, r + 100, 4, 0, 0, 0, NULL, 0);
	check(!c.result && vgpu_reply_slot(&R, 1)[3] == 0x5a, "its bytes read back", c.result);
	c = call(VGPU_OP_VMM_UNMAP, r, g, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "unmap");
	c = call(VGPU_OP_VMM_RELEASE, h, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "release");
	c = call(VGPU_OP_VMM_RELEASE, h, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "release twice");
	c = call(VGPU_OP_VMM_ADDR_FREE, r, 4 * g, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "free the reservation");
	printf("vmm: %d failures\n", failures);
	return failures ? 1 : 0;
}

/* ---- poolipc: pools shared between processes (daemon/worker/pool_ipc.c) --------- */

/* The export data as the worker fills them (pool_ipc.c). */
struct pool_ptr_data {
	uint32_t magic, version;
	uint64_t id, secret, size;
	uint8_t zero[32];
};

struct pool_ipc_req {
	uint32_t magic, zero;
	uint64_t id, secret;
};

struct pool_ipc_rep {
	uint32_t magic;
	int32_t status;
	uint64_t size;
};

static void send_fd_for(uint64_t token, int fd)
{
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC, .token = token };

	if (vgpu_send_fds(sock, &m, sizeof(m), &fd, 1) != (int)sizeof(m))
		die("a descriptor cannot be sent");
}

/* The pool's own server, asked directly: the answer's status (-1: none). */
static int ask_server(int pool_fd, const void *req, size_t len, bool with_reply, int *got_fd)
{
	struct pool_ipc_rep rep;
	struct timeval tv = { 2, 0 };
	unsigned n = 1;
	int rp[2], fd = -1, r;

	*got_fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, rp))
		die("socketpair");
	r = vgpu_send_fds(pool_fd, req, len, with_reply ? &rp[1] : NULL, with_reply ? 1 : 0);
	close(rp[1]);
	if (r != (int)len) {
		close(rp[0]);
		return -1;	/* the server is gone */
	}
	setsockopt(rp[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = vgpu_recv_fds_exact(rp[0], &rep, sizeof(rep), &fd, &n);
	close(rp[0]);
	if (r != (int)sizeof(rep))
		return -1;
	*got_fd = n == 1 ? fd : -1;
	return rep.status;
}

static int poolipc(void)
{
	struct pool_ptr_data d, x;
	struct pool_ipc_req q;
	struct vgpu_fd_msg m;
	struct vgpu_cqe c;
	uint64_t buf = setup(1 << 20), a, b, p;
	unsigned n = 1;
	int pool_fd = -1, pfd[2], fd = -1, st;
	char big[65] = { 0 };

	c = call(VGPU_OP_POOL_CREATE, 100, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0, 0, NULL,
		 0);
	expect(CUDA_SUCCESS, c, "a shareable pool");
	c = call(VGPU_OP_POOL_CREATE, 101, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a plain pool");
	c = call(VGPU_OP_MEM_ALLOC_ASYNC, 100, 4096, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "an allocation from the shareable pool");
	a = c.val[0];
	c = call(VGPU_OP_MEM_ALLOC_ASYNC, 100, 4096, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a second one");
	b = c.val[0];

	/* Pool exports. */
	c = call(VGPU_OP_POOL_EXPORT, 999, 1, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of a pool that does not exist");
	c = call(VGPU_OP_POOL_EXPORT, 0, 1, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of pool 0");
	c = call(VGPU_OP_POOL_EXPORT, UINT64_MAX, 1, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of pool 2^64 - 1");
	c = call(VGPU_OP_POOL_EXPORT, 101, 1, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of a pool without handle types");
	c = call(VGPU_OP_POOL_EXPORT, 1, 1, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of the default pool");
	c = call(VGPU_OP_POOL_EXPORT, 100, 77, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "export of the shareable pool");
	if (vgpu_recv_fds_exact(sock, &m, sizeof(m), &pool_fd, &n) != (int)sizeof(m) || n != 1 ||
	    m.token != 77)
		die("the pool's descriptor did not come");

	/* Pointer exports. */
	c = call(VGPU_OP_POOL_EXPORT_PTR, a + 256, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of a pointer inside an allocation");
	c = call(VGPU_OP_POOL_EXPORT_PTR, buf, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of cuMemAlloc'ed memory");
	c = call(VGPU_OP_POOL_EXPORT_PTR, UINT64_MAX, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export of pointer 2^64 - 1");
	c = call(VGPU_OP_POOL_EXPORT_PTR, a, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "export of an allocation");
	memcpy(&d, vgpu_reply_slot(&R, 1), sizeof(d));
	c = call(VGPU_OP_POOL_EXPORT_PTR, b, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "export of the second");
	memcpy(&x, vgpu_reply_slot(&R, 1), sizeof(x));

	/* The pool's server takes requests from anyone holding its descriptor. */
	memset(&q, 0, sizeof(q));
	q.magic = d.magic;
	q.id = d.id;
	q.secret = d.secret ^ 1;
	check(ask_server(pool_fd, &q, sizeof(q), true, &fd) == CUDA_ERROR_INVALID_VALUE &&
	      fd < 0, "the server refuses a wrong secret", 0);
	q.secret = d.secret;
	if (vgpu_send_fds(pool_fd, &q, sizeof(q), NULL, 0) != (int)sizeof(q))
		die("the pool socket refused a request");
	if (vgpu_send_fds(pool_fd, &q, 3, NULL, 0) != 3)
		die("the pool socket refused a request");
	if (pipe(pfd))
		die("pipe");
	if (vgpu_send_fds(pool_fd, &q, sizeof(q), &pfd[1], 1) != (int)sizeof(q))
		die("the pool socket refused a request");
	close(pfd[0]);
	close(pfd[1]);
	check(ask_server(pool_fd, &q, 5, true, &fd) == -1 && fd < 0,
	      "the server does not answer a short request", 0);
	st = ask_server(pool_fd, &q, sizeof(q), true, &fd);
	check(st == 0 && fd >= 0, "the server answers the right pair with a descriptor", st);
	if (fd >= 0)
		close(fd);

	/* Pool imports. */
	c = call(VGPU_OP_POOL_IMPORT, 102, 55, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pool import with no descriptor");
	send_fd_for(56, pool_fd);
	c = call(VGPU_OP_POOL_IMPORT, 102, 56, 5, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pool import on device 5");
	send_fd_for(57, pool_fd);
	c = call(VGPU_OP_POOL_IMPORT, 100, 57, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pool import under a pool id in use");
	send_fd_for(58, pool_fd);
	c = call(VGPU_OP_POOL_IMPORT, 1, 58, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pool import under a default pool's id");
	send_fd_for(59, pool_fd);
	c = call(VGPU_OP_POOL_IMPORT, 1u << 30, 59, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pool import under id 2^30");
	if (pipe(pfd))
		die("pipe");
	send_fd_for(60, pfd[0]);
	c = call(VGPU_OP_POOL_IMPORT, 102, 60, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pool import of a pipe");
	close(pfd[0]);
	close(pfd[1]);
	send_fd_for(61, pool_fd);
	c = call(VGPU_OP_POOL_IMPORT, 102, 61, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a pool import");
	c = call(VGPU_OP_MEM_ALLOC_ASYNC, 102, 4096, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "an allocation from the imported pool");

	/* Pointer imports. */
	c = call(VGPU_OP_POOL_IMPORT_PTR, 101, 0, 0, 0, 0, &d, sizeof(d));
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pointer import into a pool not imported");
	c = call(VGPU_OP_POOL_IMPORT_PTR, 100, 0, 0, 0, 0, &d, sizeof(d));
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pointer import into the exporting pool");
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, &d, sizeof(d) - 1);
	expect(CUDA_ERROR_INVALID_VALUE, c, "export data one byte short");
	memcpy(big, &d, sizeof(d));
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, big, sizeof(big));
	expect(CUDA_ERROR_INVALID_VALUE, c, "export data one byte long");
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "no export data");
	x = d;
	x.magic ^= 1;
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, &x, sizeof(x));
	expect(CUDA_ERROR_INVALID_VALUE, c, "export data of another magic");
	x = d;
	x.secret ^= 1;
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, &x, sizeof(x));
	expect(CUDA_ERROR_INVALID_VALUE, c, "export data with a forged secret");
	x = d;
	x.id += 100;
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, &x, sizeof(x));
	expect(CUDA_ERROR_INVALID_VALUE, c, "export data with a forged id");
	x = d;
	x.size = 1ull << 62;
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, &x, sizeof(x));
	check(!c.result && c.val[1] == d.size, "a forged size is the exporter's, not the data's",
	      c.result);
	p = c.val[0];
	c = call(VGPU_OP_MEMSET, p, 0x5a, 1, 4096, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a memset of the imported pointer");
	c = call(VGPU_OP_MEMCPY_DTOH, a + 100, 4, 0, 0, 0, NULL, 0);
	check(!c.result && vgpu_reply_slot(&R, 1)[3] == 0x5a, "the exporter's memory holds it",
	      c.result);
	c = call(VGPU_OP_MEM_FREE, p, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "the imported pointer is freed");
	c = call(VGPU_OP_MEMSET, p, 0x5a, 1, 4096, 0, NULL, 0);
	check(c.result != CUDA_SUCCESS, "it is gone from the window", c.result);
	c = call(VGPU_OP_MEM_FREE_ASYNC, b, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "the second allocation is freed by its exporter");
	c = call(VGPU_OP_POOL_EXPORT_PTR, b, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_ERROR_INVALID_VALUE, c, "a freed allocation is not exported");
	c = call(VGPU_OP_POOL_DESTROY, 102, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "the imported pool is destroyed");
	c = call(VGPU_OP_POOL_IMPORT_PTR, 102, 0, 0, 0, 0, &d, sizeof(d));
	expect(CUDA_ERROR_INVALID_VALUE, c, "a pointer import into a destroyed pool");
	c = call(VGPU_OP_POOL_DESTROY, 100, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "the exported pool is destroyed (its allocation lives on)");
	st = ask_server(pool_fd, &q, sizeof(q), true, &fd);
	check(st == -1 && fd < 0, "its server answers nothing more", st);
	c = call(VGPU_OP_MEM_FREE_ASYNC, a, 0, 0, 0, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "its allocation is freed");
	close(pool_fd);
	/* The worker serves on. */
	c = call(VGPU_OP_MEMSET, buf, 0x5a, 1, 4096, 0, NULL, 0);
	expect(CUDA_SUCCESS, c, "a memset afterwards");
	printf("poolipc: %d failures\n", failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		die("usage: rawclient stuck|stall|bad|chatter|callback|tables|libcalls|graphs|streamops");
	handshake();
	if (!strcmp(argv[1], "stuck"))
		stuck();
	if (!strcmp(argv[1], "bells"))
		bells();
	if (!strcmp(argv[1], "stall"))
		return stall();
	if (!strcmp(argv[1], "bad"))
		return bad();
	if (!strcmp(argv[1], "streamops"))
		return streamops();
	if (!strcmp(argv[1], "chatter"))
		chatter();
	if (!strcmp(argv[1], "callback"))
		callback();
	if (!strcmp(argv[1], "tables"))
		return tables();
	if (!strcmp(argv[1], "vmm"))
		return vmm();
	if (!strcmp(argv[1], "libcalls"))
		return libcalls();
	if (!strcmp(argv[1], "graphs"))
		return graphs();
	if (!strcmp(argv[1], "poolipc"))
		return poolipc();
	die("usage: rawclient stuck|stall|bad|chatter|callback|tables|libcalls|graphs|streamops");
}
