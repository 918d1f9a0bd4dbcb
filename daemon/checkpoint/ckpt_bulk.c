// SPDX-License-Identifier: MIT
#include "ckpt_bulk.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_crc.h"

#define MAX_THREADS 16u

int ckpt_pieces_add(struct ckpt_pieces *ps, unsigned section, int fd, uint64_t off,
		    uint64_t dev, uint64_t len, struct ckpt_span *span)
{
	*span = (struct ckpt_span){ .section = section, .first = ps->n };
	while (len) {
		uint64_t n = len < CKPT_PIECE ? len : CKPT_PIECE;

		if (ps->n == ps->cap) {
			size_t cap = ps->cap ? 2 * ps->cap : 256;
			struct ckpt_piece *p = realloc(ps->p, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			ps->p = p;
			ps->cap = cap;
		}
		ps->p[ps->n++] = (struct ckpt_piece){ .fd = fd, .off = off, .dev = dev, .len = n };
		span->n++;
		off += n;
		dev += n;
		len -= n;
	}
	return 0;
}

uint32_t ckpt_span_crc(const struct ckpt_pieces *ps, const struct ckpt_span *span)
{
	const struct ckpt_piece *p = ps->p + span->first;
	uint32_t crc = 0;

	for (size_t i = 0; i < span->n; i++)
		crc = vgpu_crc32c_combine(crc, p[i].crc, p[i].len);
	return crc;
}

void ckpt_pieces_free(struct ckpt_pieces *ps)
{
	free(ps->p);
	*ps = (struct ckpt_pieces){ 0 };
}

unsigned ckpt_bulk_threads(void)
{
	const char *e = getenv("VGPU_CKPT_THREADS");
	long n = e && *e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	if (!(e && *e) && n > 8)
		n = 8;
	return n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

struct bulk {
	const struct vgpu_backend *B;
	CUcontext ctx;
	int fd;
	enum ckpt_bulk_dir dir;
	struct ckpt_piece *p;
	size_t n;
	uint8_t *map;		/* save: the file from map_off, shared; or NULL */
	uint64_t map_off;
	size_t map_len;
	bool landing;		/* map is registered: device bytes go straight in */
	size_t next;		/* the next piece to take */
	uint64_t *progress;
	int err;		/* first failure, -errno */
	pthread_mutex_t lock;
	char why[160];
};

__attribute__((format(printf, 3, 4)))
static int fail(struct bulk *k, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&k->lock);
	if (!k->err) {
		k->err = err;
		va_start(ap, fmt);
		vsnprintf(k->why, sizeof(k->why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&k->lock);
	return err;
}

static bool failed(struct bulk *k)
{
	return __atomic_load_n(&k->err, __ATOMIC_RELAXED) != 0;
}

static int file_io(struct bulk *k, int fd, bool write, uint8_t *buf, size_t len, uint64_t off)
{
	if (fd < 0)
		fd = k->fd;
	while (len) {
		ssize_t n = write ? pwrite(fd, buf, len, (off_t)off) : pread(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(k, -errno, "%s the file at offset %llu: %s",
				    write ? "writing" : "reading", (unsigned long long)off,
				    strerror(errno));
		if (!n)
			return fail(k, -EBADMSG, "the file ends at offset %llu, inside a section",
				    (unsigned long long)off);
		buf += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Save: the piece's bytes, already in buf, into the file. */
static int store(struct bulk *k, const struct ckpt_piece *pc, uint8_t *buf)
{
	/* Blocks taken first: a full file system is an error here, not a SIGBUS
	 * at a fault on the mapping. */
	if (k->map && !fallocate(k->fd, 0, (off_t)pc->off, (off_t)pc->len)) {
		memcpy(k->map + (pc->off - k->map_off), buf, pc->len);
		return 0;
	}
	if (k->map && errno == ENOSPC)
		return fail(k, -ENOSPC, "writing the file at offset %llu: %s",
			    (unsigned long long)pc->off, strerror(ENOSPC));
	return file_io(k, pc->fd, true, buf, pc->len, pc->off);
}

/* Slot work begun: load reads and checksums, then copies to the GPU;
 * save copies from the GPU. */
static int begin(struct bulk *k, struct ckpt_piece *pc, uint8_t *buf, CUstream st, CUevent ev)
{
	const struct vgpu_backend *B = k->B;
	CUresult rc;

	if (k->dir == CKPT_BULK_LOAD) {
		if (file_io(k, pc->fd, false, buf, pc->len, pc->off))
			return k->err;
		pc->crc = vgpu_crc32c(0, buf, pc->len);
		rc = B->cuMemcpyHtoDAsync_v2(pc->dev, buf, pc->len, st);
	} else {
		rc = B->cuMemcpyDtoHAsync_v2(k->landing ? k->map + (pc->off - k->map_off) : buf,
					     pc->dev, pc->len, st);
	}
	if (!rc)
		rc = B->cuEventRecordWithFlags(ev, st, 0);
	return rc ? fail(k, -EIO, "%s device memory at %#llx failed (CUDA error %d)",
			 k->dir == CKPT_BULK_LOAD ? "writing" : "reading",
			 (unsigned long long)pc->dev, rc) : 0;
}

/* Slot work ended: its copy done; save then checksums and stores. */
static int end(struct bulk *k, struct ckpt_piece *pc, uint8_t *buf, CUevent ev)
{
	CUresult rc = k->B->cuEventSynchronize(ev);
	int ret = 0;

	if (rc)
		return fail(k, -EIO, "copying device memory at %#llx failed (CUDA error %d)",
			    (unsigned long long)pc->dev, rc);
	if (k->dir == CKPT_BULK_SAVE && k->landing) {
		pc->crc = vgpu_crc32c(0, k->map + (pc->off - k->map_off), pc->len);
	} else if (k->dir == CKPT_BULK_SAVE) {
		pc->crc = vgpu_crc32c(0, buf, pc->len);
		ret = store(k, pc, buf);
	}
	if (!ret)
		ckpt_progress(k->progress, pc->len);
	return ret;
}

static void *mover(void *arg)
{
	struct bulk *k = arg;
	const struct vgpu_backend *B = k->B;
	struct ckpt_piece *held[2] = { NULL, NULL };
	CUevent ev[2] = { NULL, NULL };
	CUstream st = NULL;
	uint8_t *buf = NULL;
	bool pinned = false;

	if (B->cuCtxSetCurrent(k->ctx) ||
	    B->cuStreamCreateWithPriority(&st, CU_STREAM_NON_BLOCKING, 0) ||
	    B->cuEventCreate(&ev[0], CU_EVENT_DISABLE_TIMING) ||
	    B->cuEventCreate(&ev[1], CU_EVENT_DISABLE_TIMING) ||
	    !(buf = aligned_alloc(4096, 2 * (size_t)CKPT_PIECE))) {
		fail(k, -ENOMEM, "a copy thread cannot set up its stream and buffers");
		goto out;
	}
	pinned = !B->cuMemHostRegister_v2(buf, 2 * (size_t)CKPT_PIECE, 0);
	/* Two slots: one piece's file work overlaps the other's GPU copy. */
	for (int s = 0;; s ^= 1) {
		uint8_t *slot = buf + (size_t)s * CKPT_PIECE;
		size_t i;

		if (held[s] && end(k, held[s], slot, ev[s]))
			break;
		held[s] = NULL;
		i = __atomic_fetch_add(&k->next, 1, __ATOMIC_RELAXED);
		if (i >= k->n || failed(k))
			break;
		if (begin(k, &k->p[i], slot, st, ev[s]))
			break;
		held[s] = &k->p[i];
	}
	for (int s = 0; s < 2; s++)
		if (held[s] && !failed(k))
			end(k, held[s], buf + (size_t)s * CKPT_PIECE, ev[s]);
out:
	if (st)
		B->cuStreamSynchronize(st);	/* nothing may still read buf */
	for (int s = 0; s < 2; s++)
		if (ev[s])
			B->cuEventDestroy_v2(ev[s]);
	if (st)
		B->cuStreamDestroy_v2(st);
	if (pinned)
		B->cuMemHostUnregister(buf);
	free(buf);
	return NULL;
}

/* Save: the file mapped over every piece, its size first made to cover them. */
static void map_file(struct bulk *k)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	struct stat st;
	void *m;

	for (size_t i = 0; i < k->n; i++) {
		if (k->p[i].off < lo)
			lo = k->p[i].off;
		if (k->p[i].off + k->p[i].len > hi)
			hi = k->p[i].off + k->p[i].len;
	}
	lo &= ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
	if (fstat(k->fd, &st) || (st.st_size < (off_t)hi && ftruncate(k->fd, (off_t)hi)))
		return;		/* pwrite, then */
	m = mmap(NULL, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, (off_t)lo);
	if (m == MAP_FAILED)
		return;
	k->map = m;
	k->map_off = lo;
	k->map_len = hi - lo;
}

/* Save: whether the landing holds every piece. */
static bool lands(const struct ckpt_landing *land, const struct ckpt_pieces *ps)
{
	if (!land || !land->map)
		return false;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->p[i].off + ps->p[i].len > land->len)
			return false;
	return true;
}

int ckpt_bulk_run(const struct vgpu_backend *B, CUcontext ctx, int fd, enum ckpt_bulk_dir dir,
		  struct ckpt_pieces *ps, const struct ckpt_landing *land, uint64_t *progress,
		  char *why, size_t why_len)
{
	struct bulk k = { .B = B, .ctx = ctx, .fd = fd, .dir = dir, .p = ps->p, .n = ps->n,
			  .progress = progress };
	unsigned nt = ckpt_bulk_threads();
	pthread_t t[MAX_THREADS];
	unsigned started = 0;

	if (!ps->n)
		return 0;
	if (nt > ps->n)
		nt = (unsigned)ps->n;
	pthread_mutex_init(&k.lock, NULL);
	if (dir == CKPT_BULK_SAVE && lands(land, ps)) {
		k.map = land->map;
		k.map_len = land->len;
		k.landing = true;
	} else if (dir == CKPT_BULK_SAVE) {
		map_file(&k);
	}
	for (; started < nt; started++)
		if (pthread_create(&t[started], NULL, mover, &k))
			break;
	if (!started)
		fail(&k, -EAGAIN, "no copy thread could be started");
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	if (k.map && !k.landing)
		munmap(k.map, k.map_len);
	pthread_mutex_destroy(&k.lock);
	if (k.err)
		snprintf(why, why_len, "%s", k.why);
	return k.err;
}
