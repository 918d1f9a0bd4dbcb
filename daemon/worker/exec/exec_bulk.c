// SPDX-License-Identifier: MIT
/*
 * Bulk transfers through the staging chunks (see vgpu/proto.h): pageable
 * copies of any size, and module images. Two chunks are in the GPU's hands
 * at a time while the client fills or drains the others, so the copy
 * engine and the client's memcpy overlap.
 */
#include <string.h>

#include "barrier.h"
#include "exec_pinned.h"
#include "futex.h"
#include "log.h"
#include "worker.h"

#define BULK_SPIN 20000

/* Waits until chunk c's seq reads @want; false when the client is gone. */
static bool wait_seq(struct worker *w, uint32_t c, uint32_t want)
{
	struct vgpu_shared *sh = w->ring.sh;
	uint32_t *seq = &sh->chunk[c].seq;

	for (int i = 0; i < BULK_SPIN; i++) {
		if (load_acquire(seq) == want)
			return true;
		cpu_relax();
	}
	for (;;) {
		bool alive;

		__atomic_or_fetch(&sh->staging_wait, VGPU_STAGING_WORKER_WAITS, __ATOMIC_SEQ_CST);
		if (load_acquire(seq) == want) {
			__atomic_and_fetch(&sh->staging_wait, ~VGPU_STAGING_WORKER_WAITS,
					   __ATOMIC_SEQ_CST);
			return true;
		}
		alive = worker_wait_doorbell(w, 100);
		__atomic_and_fetch(&sh->staging_wait, ~VGPU_STAGING_WORKER_WAITS, __ATOMIC_SEQ_CST);
		if (!alive)
			return false;
		if (load_acquire(seq) == want)
			return true;
	}
}

static void publish_seq(struct worker *w, uint32_t c, uint32_t val)
{
	struct vgpu_shared *sh = w->ring.sh;

	store_release(&sh->chunk[c].seq, val);
	smp_mb();	/* seq before flag: pairs with the client's sleep check */
	if (read_once(&sh->staging_wait) & VGPU_STAGING_CLIENT_WAITS)
		vgpu_futex_wake(&sh->chunk[c].seq);
}

/* Length of piece k, checked against what is left. */
static uint32_t piece_len(struct worker *w, uint32_t c, uint64_t left)
{
	uint32_t len = read_once(&w->ring.sh->chunk[c].len);

	if (len > w->ring.staging_chunk || len > left || (!len && left))
		return 0;
	return len;
}

int bulk_recv_buffer(struct worker *w, void *dst, uint64_t total)
{
	uint32_t n = w->ring.staging_chunks;
	uint64_t got = 0;

	for (uint32_t k = 0; got < total; k++) {
		uint32_t c = k % n, len;

		if (!wait_seq(w, c, k + 1))
			return -EPIPE;
		len = piece_len(w, c, total - got);
		if (!len)
			return -EPROTO;
		memcpy((uint8_t *)dst + got, vgpu_staging_chunk(&w->ring, c), len);
		got += len;
		publish_seq(w, c, ~(k + 1));
	}
	return 0;
}

struct inflight {
	CUevent ev[VGPU_MAX_STAGING_CHUNKS];
	int have[VGPU_MAX_STAGING_CHUNKS];
};

static CUresult ensure_events(struct worker *w, struct inflight *f)
{
	for (uint32_t c = 0; c < w->ring.staging_chunks; c++) {
		if (f->have[c])
			continue;
		if (w->B.cuEventCreate(&f->ev[c], CU_EVENT_DISABLE_TIMING))
			return CUDA_ERROR_OUT_OF_MEMORY;
		f->have[c] = 1;
	}
	return CUDA_SUCCESS;
}

static void drop_events(struct worker *w, struct inflight *f)
{
	for (uint32_t c = 0; c < w->ring.staging_chunks; c++)
		if (f->have[c])
			w->B.cuEventDestroy_v2(f->ev[c]);
}

/* Client memory -> device: the client fills, the copy engine drains. */
static enum op_status op_htod_staged(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t dst = s->arg[0], total = s->arg[1], got = 0;
	uint32_t n = w->ring.staging_chunks, prev = 0;
	struct inflight f = { 0 };
	CUresult rc, err;
	CUstream st = worker_stream(w, s, &err);

	if (!err && !worker_addr_ok(w, dst, total))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && worker_capturing(w, st))
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (!err)
		err = ensure_events(w, &f);
	/* Even a refused copy drains every piece, so the client never waits
	 * on a chunk nobody will free. */
	for (uint32_t k = 0; got < total; k++) {
		uint32_t c = k % n, len;

		if (!wait_seq(w, c, k + 1)) {
			drop_events(w, &f);
			return OP_DONE;	/* nobody to answer */
		}
		len = piece_len(w, c, total - got);
		if (!len) {
			err = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		if (!err) {
			rc = w->B.cuMemcpyHtoDAsync_v2(dst + got, vgpu_staging_chunk(&w->ring, c),
						       len, st);
			if (!rc)
				rc = w->B.cuEventRecordWithFlags(f.ev[c], st, 0);
			if (rc)
				err = rc;
		}
		/* Free the previous piece's chunk once its copy is done. */
		if (k) {
			if (!err)
				err = w->B.cuEventSynchronize(f.ev[prev % n]);
			publish_seq(w, prev % n, ~(prev + 1));
		}
		prev = k;
		got += len;
	}
	if (got && got == total) {
		if (!err)
			err = w->B.cuEventSynchronize(f.ev[prev % n]);
		publish_seq(w, prev % n, ~(prev + 1));
	}
	drop_events(w, &f);
	call->cqe->result = err;
	return OP_DONE;
}

/* Device -> client memory: the copy engine fills, the client drains. */
static enum op_status op_dtoh_staged(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t src = s->arg[0], total = s->arg[1], off = 0;
	uint32_t n = w->ring.staging_chunks, chunk = w->ring.staging_chunk;
	uint32_t lens[VGPU_MAX_STAGING_CHUNKS] = { 0 };
	struct inflight f = { 0 };
	CUresult rc, err;
	CUstream st = worker_stream(w, s, &err);
	long prev = -1;

	if (!err && !worker_addr_ok(w, src, total))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && worker_capturing(w, st))
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (!err)
		err = ensure_events(w, &f);
	for (uint32_t k = 0; off < total; k++) {
		uint32_t c = k % n;
		uint32_t len = total - off < chunk ? (uint32_t)(total - off) : chunk;

		if (!wait_seq(w, c, k < n ? 0 : ~(k - n + 1))) {
			drop_events(w, &f);
			return OP_DONE;
		}
		if (!err) {
			rc = w->B.cuMemcpyDtoHAsync_v2(vgpu_staging_chunk(&w->ring, c),
						       src + off, len, st);
			if (!rc)
				rc = w->B.cuEventRecordWithFlags(f.ev[c], st, 0);
			if (rc)
				err = rc;
		}
		lens[c] = len;
		/* Hand over the previous piece once the GPU has written it. */
		if (prev >= 0) {
			uint32_t pc = prev % n;

			if (!err)
				err = w->B.cuEventSynchronize(f.ev[pc]);
			write_once(&w->ring.sh->chunk[pc].len, lens[pc]);
			publish_seq(w, pc, prev + 1);
		}
		prev = k;
		off += len;
	}
	if (prev >= 0) {
		uint32_t pc = prev % n;

		if (!err)
			err = w->B.cuEventSynchronize(f.ev[pc]);
		write_once(&w->ring.sh->chunk[pc].len, lens[pc]);
		publish_seq(w, pc, prev + 1);
	}
	drop_events(w, &f);
	call->cqe->result = err;
	return OP_DONE;
}

int bulk_send_buffer(struct worker *w, const void *src, uint64_t total)
{
	uint32_t n = w->ring.staging_chunks, chunk = w->ring.staging_chunk;
	uint64_t off = 0;

	for (uint32_t k = 0; off < total; k++) {
		uint32_t c = k % n;
		uint32_t len = total - off < chunk ? (uint32_t)(total - off) : chunk;

		if (!wait_seq(w, c, k < n ? 0 : ~(k - n + 1)))
			return -EPIPE;
		memcpy(vgpu_staging_chunk(&w->ring, c), (const uint8_t *)src + off, len);
		write_once(&w->ring.sh->chunk[c].len, len);
		publish_seq(w, c, k + 1);
		off += len;
	}
	return 0;
}

const struct op_desc exec_bulk_ops[] = {
	OP(MEMCPY_HTOD_STAGED, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_htod_staged),
	OP(MEMCPY_DTOH_STAGED, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_dtoh_staged),
	/* the same copies without staging, over /dev/vgpu (exec_pinned.c) */
	OP(MEMCPY_HTOD_PINNED, OPF_NEEDS_CTX | OPF_SYNC_ONLY, exec_pinned_htod),
	OP(MEMCPY_DTOH_PINNED, OPF_NEEDS_CTX | OPF_SYNC_ONLY, exec_pinned_dtoh),
	OP(PIN_FORGET, 0, exec_pin_forget),
	{ 0 },
};
