/* SPDX-License-Identifier: MIT */
/*
 * Device bytes between a checkpoint file and the GPU on several threads.
 * One core copying to or from the page cache and checksumming is several
 * times slower than the GPU's link, so the bytes are cut into pieces and
 * each thread moves its share through its own pinned buffers and stream:
 *
 *   load: pread -> CRC -> host-to-device copy (overlapping the next pread)
 *   save: device-to-host copy -> CRC -> the file, through a shared mapping
 *         (tmpfs takes its inode lock for every write(), not for faults)
 *
 * Each piece's CRC is its own (from 0); ckpt_pieces_crc() combines a
 * section's pieces into the section's CRC.
 */
#ifndef VGPU_CKPT_BULK_H
#define VGPU_CKPT_BULK_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define CKPT_PIECE (8u << 20)	/* bytes a piece holds at most */

struct ckpt_piece {
	int fd;			/* load: the file it is in (a parent's, maybe) */
	uint64_t off;		/* in the file */
	uint64_t dev;		/* device address */
	uint64_t len;		/* 1..CKPT_PIECE */
	uint32_t crc;		/* of these bytes alone: set by ckpt_bulk_run */
};

struct ckpt_pieces {
	struct ckpt_piece *p;
	size_t n, cap;
};

/* One section's pieces: ps->p[first .. first + n). */
struct ckpt_span {
	unsigned section;	/* its index in the file's (or writer's) table */
	size_t first, n;
};

enum ckpt_bulk_dir { CKPT_BULK_LOAD, CKPT_BULK_SAVE };

/*
 * Save: the file [0, len) mapped shared at map and registered with the GPU
 * beforehand (its blocks allocated): device bytes are copied straight into
 * it, with no bounce through a buffer of the thread's and no write.
 */
struct ckpt_landing {
	uint8_t *map;
	uint64_t len;
};

/* Section @section, [dev, dev + len) at offset off of file fd (-1: the one
 * ckpt_bulk_run is given), cut into pieces (which *span names). 0 or -ENOMEM. */
int ckpt_pieces_add(struct ckpt_pieces *ps, unsigned section, int fd, uint64_t off,
		    uint64_t dev, uint64_t len, struct ckpt_span *span);
/* The CRC32C of a section, from its pieces' (after ckpt_bulk_run). */
uint32_t ckpt_span_crc(const struct ckpt_pieces *ps, const struct ckpt_span *span);
void ckpt_pieces_free(struct ckpt_pieces *ps);

/* Threads to use: VGPU_CKPT_THREADS, else the online CPUs, at most 8. */
unsigned ckpt_bulk_threads(void);

/*
 * Moves every piece, ctx current in each thread; each piece's bytes are
 * added to *progress (if not NULL) once moved. Saving, the file must be
 * writable. 0, or -errno and why.
 */
int ckpt_bulk_run(const struct vgpu_backend *B, CUcontext ctx, int fd, enum ckpt_bulk_dir dir,
		  struct ckpt_pieces *ps, const struct ckpt_landing *land, uint64_t *progress,
		  char *why, size_t why_len);

/* n more bytes of the state copied (p may be NULL). */
static inline void ckpt_progress(uint64_t *p, uint64_t n)
{
	if (p)
		__atomic_add_fetch(p, n, __ATOMIC_RELAXED);
}

#endif
