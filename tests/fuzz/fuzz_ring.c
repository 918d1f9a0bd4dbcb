// SPDX-License-Identifier: MIT
/*
 * Fuzz harness "ring": the worker's handling of ring entries, in process,
 * on the host backend. A worker is prepared once (backend, primary
 * contexts, dispatcher); each input is one session: a shared region laid
 * out as for a memfd client, the device window and pinned pool, a client
 * whose socket has hung up (so any wait on it ends at once, as when a
 * client dies mid call), and the context the runtime retains first. The
 * input then decodes into entries that go through the client side of the
 * ring (payload ring, SQ), are popped and run by dispatch_entry() exactly
 * as worker_loop() does, and have their completions reaped. Every object
 * the session made is destroyed afterwards, so nothing leaks and each
 * input starts from the same state.
 *
 * Oracles besides the sanitizers: the backend's copies and memsets are
 * wrapped, and trap when the worker hands them a range whose size
 * arithmetic wraps or that lies outside the session's own memory; a
 * pitched allocation must hold pitch * height bytes; once a session is
 * torn down, all of the device's memory is free again.
 *
 * Input: a sequence of entries; or, after a first byte 0xCA, a checkpoint's
 * generated-calls section (a record count byte, struct vgpu_ckpt_call
 * records, then their payload bytes) that a restore runs again into the
 * session (daemon/checkpoint/ckpt_calls.c); or, after 0xCB, a checkpoint's
 * graph sections (a count byte and struct vgpu_ckpt_graph records, a count
 * byte and struct vgpu_ckpt_graph_exec records, then the bodies both name)
 * made again into the session (daemon/worker/graph/graph_ckpt.c).
 *
 * Entries: Per entry, an opcode byte (an index into
 * the opcodes the dispatcher knows, or a raw one), a flags byte (tag,
 * context, stream, PTDS, payload, corrupted payload fields), five values
 * and, with a payload, its length and bytes. A value is a kind byte and,
 * for some kinds, more bytes: small numbers, addresses in the window or
 * pool or returned by earlier allocations, powers of two, values near
 * 2^64, raw 64-bit values.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "array_state.h"
#include "barrier.h"
#include "ckpt_calls.h"
#include "ipc.h"
#include "vgpu/ckpt.h"
#include "log.h"
#include "ring.h"
#include "worker.h"

#define SQ		16u
#define PAYLOAD		(64u << 10)
#define CHUNK		4096u
#define CHUNKS		4u
#define NADDR		8
#define CTX		1u

static struct worker W;
static struct vgpu_backend real;	/* the backend under the oracles */
static struct vgpu_ring C;		/* the client's side of the ring */
static struct vgpu_welcome WL;
static uint64_t addrs[NADDR];		/* returned by allocations */
static unsigned int naddr;
static bool trace;
static unsigned long long entries;	/* dispatched, over the whole run */

/* ---- oracles ---------------------------------------------------------- */

static void must(int ok)
{
	if (!ok)
		__builtin_trap();	/* the worker let a bad range through */
}

/* [p, p + n) reaches the backend: no wrap, and the session's own memory. */
static void own(uint64_t p, uint64_t n)
{
	uint64_t end;

	must(!__builtin_add_overflow(p, n, &end));
	must(!n || worker_addr_ok(&W, p, n));
}

/* Worker-side buffers (payload copies, reply slots, staging): in the region
 * or the pool, or the worker's own payload buffer. */
static void worker_side(const void *h, uint64_t n)
{
	uint64_t p = (uintptr_t)h, end;
	uint64_t r = (uintptr_t)W.region, pb = (uintptr_t)W.pbuf;

	must(!__builtin_add_overflow(p, n, &end));
	must((p >= r && end <= r + WL.region_size) || (p >= pb && end <= pb + PAYLOAD / 2) ||
	     hostpool_contains(&W.pool, p, n));
}

static void span(uint64_t p, uint64_t pitch, uint64_t width, uint64_t height)
{
	uint64_t s;

	if (!width || !height)
		return;
	must(!__builtin_mul_overflow(pitch, height - 1, &s));
	must(!__builtin_add_overflow(s, width, &s));
	own(p, s);
}

static CUresult o_htod(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
	own(d, n);
	worker_side(h, n);
	return real.cuMemcpyHtoDAsync_v2(d, h, n, s);
}

static CUresult o_dtoh(void *h, CUdeviceptr d, size_t n, CUstream s)
{
	own(d, n);
	worker_side(h, n);
	return real.cuMemcpyDtoHAsync_v2(h, d, n, s);
}

static CUresult o_dtod(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s)
{
	own(d, n);
	own(src, n);
	return real.cuMemcpyDtoDAsync_v2(d, src, n, s);
}

static CUresult o_copy2d(const CUDA_MEMCPY2D *c, CUstream s)
{
	span(c->srcDevice, c->srcPitch, c->WidthInBytes, c->Height);
	span(c->dstDevice, c->dstPitch, c->WidthInBytes, c->Height);
	return real.cuMemcpy2DAsync_v2(c, s);
}

/* A 3D copy's address ends (arrays are the worker's own objects). */
static void box(CUmemorytype t, CUdeviceptr p, size_t x, size_t y, size_t z, size_t pitch,
		size_t height, const CUDA_MEMCPY3D *c)
{
	uint64_t first = 0, s = 0, rows = 0;

	if (t == CU_MEMORYTYPE_ARRAY || !c->WidthInBytes || !c->Height || !c->Depth)
		return;
	must(t == CU_MEMORYTYPE_UNIFIED || t == CU_MEMORYTYPE_DEVICE);
	must(!__builtin_mul_overflow(z, height, &s) && !__builtin_add_overflow(s, y, &s) &&
	     !__builtin_mul_overflow(s, pitch, &s) && !__builtin_add_overflow(s, x, &s) &&
	     !__builtin_add_overflow(p, s, &first));
	must(!__builtin_mul_overflow(pitch, height, &rows) &&
	     !__builtin_mul_overflow(rows, c->Depth - 1, &rows));
	must(!__builtin_add_overflow(first, rows, &rows));
	span(first, pitch, c->WidthInBytes, c->Height);
	span(rows, pitch, c->WidthInBytes, c->Height);	/* the last slice */
}

static CUresult o_copy3d(const CUDA_MEMCPY3D *c, CUstream s)
{
	box(c->srcMemoryType, c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch,
	    c->srcHeight, c);
	box(c->dstMemoryType, c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch,
	    c->dstHeight, c);
	return real.cuMemcpy3DAsync_v2(c, s);
}

static void set1d(CUdeviceptr d, size_t n, size_t elem)
{
	uint64_t b;

	must(!__builtin_mul_overflow(n, elem, &b));
	own(d, b);
}

static CUresult o_d8(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	set1d(d, n, 1);
	return real.cuMemsetD8Async(d, v, n, s);
}

static CUresult o_d16(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
	set1d(d, n, 2);
	return real.cuMemsetD16Async(d, v, n, s);
}

static CUresult o_d32(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
	set1d(d, n, 4);
	return real.cuMemsetD32Async(d, v, n, s);
}

static void set2d(CUdeviceptr d, size_t pitch, size_t w, size_t h, size_t elem)
{
	uint64_t b;

	must(!__builtin_mul_overflow(w, elem, &b));
	span(d, pitch, b, h);
}

static CUresult o_2d8(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s)
{
	set2d(d, p, w, h, 1);
	return real.cuMemsetD2D8Async(d, p, v, w, h, s);
}

static CUresult o_2d16(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h,
		       CUstream s)
{
	set2d(d, p, w, h, 2);
	return real.cuMemsetD2D16Async(d, p, v, w, h, s);
}

static CUresult o_2d32(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s)
{
	set2d(d, p, w, h, 4);
	return real.cuMemsetD2D32Async(d, p, v, w, h, s);
}

static void oracles(struct vgpu_backend *B)
{
	real = *B;
	B->cuMemcpyHtoDAsync_v2 = o_htod;
	B->cuMemcpyDtoHAsync_v2 = o_dtoh;
	B->cuMemcpyDtoDAsync_v2 = o_dtod;
	B->cuMemcpy2DAsync_v2 = o_copy2d;
	B->cuMemcpy3DAsync_v2 = o_copy3d;
	B->cuMemsetD8Async = o_d8;
	B->cuMemsetD16Async = o_d16;
	B->cuMemsetD32Async = o_d32;
	B->cuMemsetD2D8Async = o_2d8;
	B->cuMemsetD2D16Async = o_2d16;
	B->cuMemsetD2D32Async = o_2d32;
}

/* ---- the worker and one session --------------------------------------- */

static uint16_t opcodes[VGPU_OP_MAX];
static unsigned int nops;

static void report(void)
{
	fprintf(stderr, "fuzz_ring: %llu ring entries dispatched\n", entries);
}

static void prepare(void)
{
	const struct worker_config cfg = {
		.sq_entries = SQ, .payload_size = PAYLOAD, .staging_chunk = CHUNK,
		.staging_chunks = CHUNKS, .host_pool_size = 16u << 20,
		.dev_window_size = 64u << 20,
	};
	const struct op_desc *tabs[] = { exec_ctx_ops, exec_memory_ops, exec_stream_ops,
					 exec_module_ops, exec_graph_ops, exec_bulk_ops,
					 exec_gen_ops };

	setenv("VGPU_HOST_DEVICE_MEM", "67108864", 1);
	trace = getenv("FUZZ_RING_TRACE") != NULL;
	vgpu_log_init("fuzz_ring", VGPU_LOG_ERROR);
	if (worker_prepare(&W, "host", &cfg) || waiter_start(&W))
		abort();
	oracles(&W.B);
	atexit(report);
	for (size_t t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++)
		for (const struct op_desc *d = tabs[t]; d->fn; d++)
			if (d->opcode != VGPU_OP_MODULE_LOAD)	/* its own harness */
				opcodes[nops++] = d->opcode;
}

static int open_session(void)
{
	int sv[2];
	void *region;

	memset(&WL, 0, sizeof(WL));
	if (vgpu_layout(&WL, SQ, 2 * SQ, PAYLOAD, CHUNK, CHUNKS, W.device_count))
		abort();
	W.region_fd = memfd_create("fuzz-ring", MFD_CLOEXEC);
	if (W.region_fd < 0 || ftruncate(W.region_fd, WL.region_size))
		abort();
	region = mmap(NULL, WL.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, W.region_fd, 0);
	if (region == MAP_FAILED)
		abort();
	W.region = region;
	if (vgpu_ring_attach(&W.ring, region, WL.region_size, &WL) ||
	    vgpu_ring_attach(&C, region, WL.region_size, &WL))
		abort();
	W.bell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	W.ring.bell = C.bell = W.bell_fd;
	W.pbuf = malloc(PAYLOAD / 2);
	/* The client's end is closed: a wait on it ends as on its death. */
	if (W.bell_fd < 0 || !W.pbuf || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		abort();
	close(sv[1]);
	W.sock = sv[0];
	if (worker_build_memory(&W, &WL))
		abort();
	W.dead = false;
	W.deferred = CUDA_SUCCESS;
	W.cur_ctx = 0;
	W.captures = 0;
	W.cb_posted = W.cb_finished = 0;
	memset(W.primary_refs, 0, sizeof(W.primary_refs));
	naddr = 0;
	memset(addrs, 0, sizeof(addrs));
	return 0;
}

static void reset_table(struct obj_table *t)
{
	obj_table_free(t);
	obj_table_init(t, t->kind);
}

static void close_session(void)
{
	size_t free_b = 0, total_b = 0;
	struct obj_entry *e;
	uint32_t i;

	while (waiter_busy())
		usleep(100);
	W.B.cuCtxSetCurrent(W.primary[0]);
	worker_array_destroy(&W);	/* before the contexts that hold them */
	obj_for_each(&W.graph_execs, i, e) {
		graph_snap_drop(&W, e);	/* the copy of its graph it keeps */
		W.B.cuGraphExecDestroy(e->obj);
	}
	obj_for_each(&W.graphs, i, e) {
		graph_nodes_forget(i);	/* node ids are the worker process's */
		W.B.cuGraphDestroy(e->obj);
	}
	obj_for_each(&W.events, i, e)
		W.B.cuEventDestroy_v2(e->obj);
	obj_for_each(&W.streams, i, e)
		W.B.cuStreamDestroy_v2(e->obj);
	obj_for_each(&W.ctxs, i, e)
		if (!(e->aux >> 32))
			W.B.cuCtxDestroy_v2(e->obj);
	W.B.cuCtxSetCurrent(W.primary[0]);
	reset_table(&W.graph_execs);
	reset_table(&W.graphs);
	reset_table(&W.events);
	reset_table(&W.streams);
	reset_table(&W.ctxs);
	reset_table(&W.modules);
	reset_table(&W.funcs);
	obj_for_each(&W.gen_objs, i, e)
		if (e->aux == VGPU_GEN_KIND_TEXREF)
			W.B.cuTexRefDestroy(e->obj);
	reset_table(&W.gen_objs);
	calls_log_clear(&W);
	pools_destroy(&W);
	ipc_session_end(&W);
	worker_vmm_destroy(&W);
	vmem_destroy(&W.vmem);
	hostpool_destroy(&W.pool);
	/* Every byte of device memory the session held is back. */
	must(!real.cuMemGetInfo_v2(&free_b, &total_b) && free_b == total_b);
	free(W.pbuf);
	munmap(W.region, WL.region_size);
	close(W.region_fd);
	close(W.bell_fd);
	close(W.sock);
	W.pbuf = NULL;
	W.region = NULL;
	W.region_fd = W.bell_fd = W.sock = -1;
}

/* ---- decoding --------------------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t u16(struct in *in)
{
	uint16_t v = u8(in);

	return v | (uint16_t)u8(in) << 8;
}

static uint64_t u64(struct in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)u8(in) << (8 * i);
	return v;
}

static uint64_t val(struct in *in)
{
	uint8_t k = u8(in);

	switch (k & 15) {
	case 0:
		return k >> 4;
	case 1:
		return u8(in);
	case 2:
		return u16(in);
	case 3:
		return WL.dev_window_base + ((uint64_t)u16(in) << (k >> 4));
	case 4:
		return addrs[u8(in) % NADDR] + u16(in);
	case 5:
		return WL.host_pool_base + ((uint64_t)u16(in) << (k >> 4));
	case 6:
		return 1ull << (u8(in) & 63);
	case 7:
		return UINT64_MAX - u16(in);
	case 8:
		return (1ull << (u8(in) & 63)) + (int8_t)u8(in);
	case 9:
		return (uint64_t)u16(in) << 32 | u16(in);	/* memset pitch << 32 | height */
	case 10:
		return u64(in);
	case 11:
		return WL.dev_window_base + WL.dev_window_size - u16(in);
	default:
		return (uint64_t)u8(in) << (k >> 4);
	}
}

/* Fills staging chunks as a client would before the worker asks. */
static void stage(struct in *in, uint16_t op)
{
	for (uint32_t c = 0; c < CHUNKS; c++) {
		write_once(&C.sh->chunk[c].seq, op == VGPU_OP_MEMCPY_HTOD_STAGED ? c + 1 : 0);
		write_once(&C.sh->chunk[c].len, (uint32_t)val(in));
		memset(vgpu_staging_chunk(&C, c), (int)c, CHUNK);
	}
}

static uint32_t payload(struct in *in, uint16_t op, uint32_t *off)
{
	uint32_t len = (uint32_t)(val(in) % (PAYLOAD / 2 + 1));
	uint8_t *p = client_payload_alloc(&C, len, off);

	if (!p || !len)
		return 0;
	if (op == VGPU_OP_MEMCPY_2D && len >= sizeof(struct vgpu_copy2d)) {
		uint64_t v[6];

		for (int i = 0; i < 6; i++)
			v[i] = val(in);
		memcpy(p, v, sizeof(v));
		memset(p + sizeof(v), 0, len - sizeof(v));
		return len;
	}
	/* Array descriptors, copies and texture objects: words of values, so
	 * that ids, addresses and sizes meet the worker's checks. */
	if (op == VGPU_OP_ARRAY_CREATE || op == VGPU_OP_ARRAY_COPY ||
	    op == VGPU_OP_TEXOBJ_CREATE || op == VGPU_OP_SURFOBJ_CREATE) {
		for (uint32_t i = 0; i + 8 <= len; i += 8) {
			uint64_t v = val(in);

			memcpy(p + i, &v, 8);
		}
		memset(p + (len & ~7u), 0, len & 7);
		return len;
	}
	for (uint32_t i = 0; i < len; i++)
		p[i] = in->n ? u8(in) : 0;
	return len;
}

static bool alloc_op(uint16_t op)
{
	return op == VGPU_OP_MEM_ALLOC || op == VGPU_OP_MEM_ALLOC_PITCH ||
	       op == VGPU_OP_HOST_ALLOC;
}

/* What an answer says: remember addresses; a pitched block must be whole. */
static void answered(const struct vgpu_sqe *s, const struct vgpu_cqe *c)
{
	if (c->tag != s->tag || c->result || !alloc_op(s->opcode))
		return;
	addrs[naddr++ % NADDR] = c->val[0];
	if (s->opcode == VGPU_OP_MEM_ALLOC_PITCH) {
		CUdeviceptr base;
		size_t size;
		uint64_t need;

		must(!__builtin_mul_overflow(c->val[1], s->arg[1], &need));
		must(!vmem_range_of(&W.vmem, c->val[0], &base, &size));
		must(base == c->val[0] && size >= need);
	}
}

/* The entry torn as a client might leave it, all there but the first word,
 * and that word of the wrong phase: the worker must not take it. */
static void torn(const struct vgpu_sqe *in_sqe)
{
	struct vgpu_sqe *q = &C.sq[C.sq_local & (C.sq_entries - 1)], sqe;
	struct vgpu_sqe lead = { .first = in_sqe->first };

	*q = *in_sqe;
	lead.flags = (lead.flags & ~VGPU_SQE_PHASE) |
		     (C.sq_local & C.sq_entries ? VGPU_SQE_PHASE : 0);
	store_release(&q->first, lead.first);
	if (worker_sq_pop(&W.ring, &sqe))
		abort();
}

static void run(const struct vgpu_sqe *in_sqe)
{
	struct vgpu_sqe sqe;
	struct vgpu_cqe c;

	torn(in_sqe);
	if (!client_sq_push(&C, in_sqe))
		abort();	/* every entry is taken before the next */
	while (worker_sq_pop(&W.ring, &sqe)) {
		dispatch_entry(&W, &sqe);
		entries++;
	}
	worker_sq_release(&W.ring);
	while (waiter_busy())
		usleep(10);
	while (client_cq_pop(&C, &c)) {
		if (trace)	/* FUZZ_RING_TRACE=1: what each entry got */
			fprintf(stderr, "op %#x tag %u -> %d (%#llx %#llx)\n", in_sqe->opcode,
				c.tag, c.result, (unsigned long long)c.val[0],
				(unsigned long long)c.val[1]);
		answered(&sqe, &c);
	}
}

static void one_entry(struct in *in)
{
	uint8_t o = u8(in), f = u8(in);
	struct vgpu_sqe s = { 0 };
	uint32_t off = 0, len = 0;

	s.opcode = o < 0xf0 ? opcodes[o % nops] : u16(in);
	if (s.opcode == VGPU_OP_MODULE_LOAD)
		s.opcode = VGPU_OP_NOP;
	s.tag = f & 1 ? 1 + u8(in) % SQ : 0;
	s.ctx = f & 2 ? (uint32_t)val(in) : CTX;
	s.stream = f & 4 ? (uint32_t)val(in) : 0;
	s.flags = f & 8 ? VGPU_SQE_PTDS : 0;
	for (int i = 0; i < 5; i++)
		s.arg[i] = val(in);
	if (f & 16)
		len = payload(in, s.opcode, &off);
	s.payload_off = off;
	s.payload_len = len;
	if (f & 32)
		s.payload_off = (uint32_t)val(in);
	if (f & 64)
		s.payload_len = (uint32_t)val(in);
	if (f & 128)
		s.tag = (uint32_t)val(in);
	if (s.opcode == VGPU_OP_MEMCPY_HTOD_STAGED || s.opcode == VGPU_OP_MEMCPY_DTOH_STAGED)
		stage(in, s.opcode);
	if (s.opcode == VGPU_OP_HOST_FUNC) {
		uint32_t seq = W.cb_posted + 1;

		/* The client ran it already: the callback need not wait. */
		write_once(&C.sh->cb_ack[seq % VGPU_CB_SLOTS], seq);
	}
	run(&s);
}

/* A generated-calls section as a checkpoint file would hold it, run again. */
static void replay(const uint8_t *data, size_t size)
{
	size_t n = size ? data[0] : 0, rec_bytes;
	struct vgpu_ckpt_call *c;
	char why[160];

	if (size)
		data++, size--;
	if (n > size / sizeof(*c))
		n = size / sizeof(*c);
	rec_bytes = n * sizeof(*c);
	c = malloc(rec_bytes + 1);	/* aligned, as the reader hands them over */
	if (!c)
		abort();
	memcpy(c, data, rec_bytes);
	calls_log_replay(&W, c, n, data + rec_bytes, size - rec_bytes, why, sizeof(why));
	free(c);
}

/* Graph sections as a checkpoint file would hold them, made again. */
static void graphs_again(const uint8_t *data, size_t size)
{
	struct vgpu_ckpt_graph *g;
	struct vgpu_ckpt_graph_exec *x;
	size_t ng = size ? data[0] : 0, nx;
	char why[160];

	if (size)
		data++, size--;
	if (ng > size / sizeof(*g))
		ng = size / sizeof(*g);
	g = malloc(ng * sizeof(*g) + 1);	/* aligned, as the reader hands them over */
	if (!g)
		abort();
	memcpy(g, data, ng * sizeof(*g));
	data += ng * sizeof(*g), size -= ng * sizeof(*g);
	nx = size ? data[0] : 0;
	if (size)
		data++, size--;
	if (nx > size / sizeof(*x))
		nx = size / sizeof(*x);
	x = malloc(nx * sizeof(*x) + 1);
	if (!x)
		abort();
	memcpy(x, data, nx * sizeof(*x));
	data += nx * sizeof(*x), size -= nx * sizeof(*x);
	graph_ckpt_load(&W, g, ng, data, size, x, nx, data, size, why, sizeof(why));
	free(g);
	free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct vgpu_sqe retain = { .opcode = VGPU_OP_PRIMARY_RETAIN, .tag = 1,
				   .arg = { CTX, 0 } };
	struct in in = { data, size };

	if (!ready) {
		prepare();
		ready = true;
	}
	open_session();
	run(&retain);	/* as the runtime's first call does */
	if (size && data[0] == 0xCA)
		replay(data + 1, size - 1);
	else if (size && data[0] == 0xCB)
		graphs_again(data + 1, size - 1);
	else
		while (in.n)
			one_entry(&in);
	close_session();
	return 0;
}
