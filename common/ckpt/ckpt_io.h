/* SPDX-License-Identifier: MIT */
/*
 * Appending a file from a pool of staging buffers with several writes in
 * flight: io_uring (registered buffers when the memlock limit allows), or
 * plain pwrite where io_uring cannot be set up (seccomp, old kernels,
 * io_uring_disabled). The checkpoint writer's transport; it knows nothing
 * about the format.
 *
 * A buffer is free, lent out (ckpt_io_get), or in flight (ckpt_io_submit
 * until its write completes). Writes land at consecutive offsets in submit
 * order. The first error sticks: every later call returns it.
 */
#ifndef VGPU_CKPT_IO_H
#define VGPU_CKPT_IO_H

#include <liburing.h>
#include <stddef.h>
#include <stdint.h>

struct ckpt_io_buf {
	char *p;
	size_t len;		/* bytes to write */
	size_t done;		/* of them written (short writes resume here) */
	uint64_t off;		/* file offset of p[0] */
	int busy;		/* lent out or in flight */
};

struct ckpt_io {
	int fd;
	int uring;		/* 1: io_uring; 0: pwrite */
	int fixed;		/* buffers registered with the ring */
	struct io_uring ring;
	char *base;		/* nbufs * bufsize, one mapping */
	size_t bufsize;
	unsigned nbufs;
	unsigned inflight;
	struct ckpt_io_buf *bufs;
	uint64_t pos;		/* offset of the next submitted byte */
	int err;		/* first error, -errno */
	char msg[160];		/* what failed, without the path */
};

#define CKPT_IO_NO_URING 1u	/* pwrite even where io_uring works */

int ckpt_io_init(struct ckpt_io *io, int fd, uint64_t pos, unsigned nbufs,
		 size_t bufsize, unsigned flags);
/* A free buffer's index, waiting for a write to finish if none is. */
int ckpt_io_get(struct ckpt_io *io);
/* Write the first len bytes of lent buffer i at pos; pos += len. len 0 frees it. */
int ckpt_io_submit(struct ckpt_io *io, int i, size_t len);
/* Give a lent buffer back unwritten. */
void ckpt_io_put(struct ckpt_io *io, int i);
/* Wait for every write in flight. */
int ckpt_io_drain(struct ckpt_io *io);
void ckpt_io_exit(struct ckpt_io *io);

#endif
