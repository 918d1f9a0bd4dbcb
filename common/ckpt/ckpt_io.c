// SPDX-License-Identifier: MIT
#include "ckpt_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

static int fail(struct ckpt_io *io, int err, const char *what, const struct ckpt_io_buf *b)
{
	if (io->err)
		return io->err;
	io->err = err;
	if (b)
		snprintf(io->msg, sizeof(io->msg), "%s of %zu bytes at offset %llu: %s", what,
			 b->len - b->done, (unsigned long long)(b->off + b->done), strerror(-err));
	else
		snprintf(io->msg, sizeof(io->msg), "%s: %s", what, strerror(-err));
	return err;
}

static void uring_setup(struct ckpt_io *io)
{
	struct iovec *iov;

	if (io_uring_queue_init(io->nbufs, &io->ring, 0) < 0)
		return;
	io->uring = 1;
	iov = calloc(io->nbufs, sizeof(*iov));
	if (!iov)
		return;
	for (unsigned i = 0; i < io->nbufs; i++) {
		iov[i].iov_base = io->bufs[i].p;
		iov[i].iov_len = io->bufsize;
	}
	/* Registration pins the pages; over RLIMIT_MEMLOCK plain writes do. */
	io->fixed = io_uring_register_buffers(&io->ring, iov, io->nbufs) == 0;
	free(iov);
}

int ckpt_io_init(struct ckpt_io *io, int fd, uint64_t pos, unsigned nbufs,
		 size_t bufsize, unsigned flags)
{
	memset(io, 0, sizeof(*io));
	io->fd = fd;
	io->pos = pos;
	io->nbufs = nbufs;
	io->bufsize = bufsize;
	io->bufs = calloc(nbufs, sizeof(*io->bufs));
	if (!io->bufs)
		return fail(io, -ENOMEM, "staging buffers", NULL);
	io->base = mmap(NULL, nbufs * bufsize, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (io->base == MAP_FAILED) {
		io->base = NULL;
		return fail(io, -errno, "staging buffers", NULL);
	}
	for (unsigned i = 0; i < nbufs; i++)
		io->bufs[i].p = io->base + (size_t)i * bufsize;
	if (!(flags & CKPT_IO_NO_URING))
		uring_setup(io);
	return 0;
}

static int pwrite_all(struct ckpt_io *io, struct ckpt_io_buf *b)
{
	while (b->done < b->len) {
		ssize_t n = pwrite(io->fd, b->p + b->done, b->len - b->done, b->off + b->done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(io, -errno, "write", b);
		if (n == 0)
			return fail(io, -EIO, "write (no progress)", b);
		b->done += n;
	}
	return 0;
}

static int queue(struct ckpt_io *io, int i)
{
	struct ckpt_io_buf *b = &io->bufs[i];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
	int ret;

	if (!sqe)	/* cannot happen: the ring has a slot per buffer */
		return fail(io, -EBUSY, "io_uring submission queue full", b);
	if (io->fixed)
		io_uring_prep_write_fixed(sqe, io->fd, b->p + b->done, b->len - b->done,
					  b->off + b->done, i);
	else
		io_uring_prep_write(sqe, io->fd, b->p + b->done, b->len - b->done,
				    b->off + b->done);
	io_uring_sqe_set_data64(sqe, i);
	ret = io_uring_submit(&io->ring);
	if (ret < 0)
		return fail(io, ret, "io_uring_submit", b);
	io->inflight++;
	return 0;
}

/* Reap one completion: the buffer is free again, or requeued after a short write. */
static int reap(struct ckpt_io *io)
{
	struct io_uring_cqe *cqe;
	struct ckpt_io_buf *b;
	int ret, res;
	unsigned i;

	do
		ret = io_uring_wait_cqe(&io->ring, &cqe);
	while (ret == -EINTR);
	if (ret < 0) {
		io->inflight = 0;	/* nothing more will be reaped */
		return fail(io, ret, "io_uring_wait_cqe", NULL);
	}
	i = (unsigned)io_uring_cqe_get_data64(cqe);
	res = cqe->res;
	io_uring_cqe_seen(&io->ring, cqe);
	io->inflight--;
	if (i >= io->nbufs)
		return fail(io, -EIO, "io_uring: completion for an unknown buffer", NULL);
	b = &io->bufs[i];
	if (res < 0) {
		b->busy = 0;
		return fail(io, res, "write", b);
	}
	if (res == 0) {
		b->busy = 0;
		return fail(io, -EIO, "write (no progress)", b);
	}
	b->done += res;
	if (b->done < b->len && !io->err)
		return queue(io, i);	/* short write: the rest, at its offset */
	b->busy = 0;
	return io->err;
}

int ckpt_io_get(struct ckpt_io *io)
{
	for (;;) {
		if (io->err)
			return io->err;
		for (unsigned i = 0; i < io->nbufs; i++)
			if (!io->bufs[i].busy) {
				io->bufs[i].busy = 1;
				return i;
			}
		if (!io->uring || !io->inflight)
			return fail(io, -ENOBUFS, "no free staging buffer (one lent twice?)", NULL);
		reap(io);
	}
}

void ckpt_io_put(struct ckpt_io *io, int i)
{
	io->bufs[i].busy = 0;
}

int ckpt_io_submit(struct ckpt_io *io, int i, size_t len)
{
	struct ckpt_io_buf *b = &io->bufs[i];

	if (io->err || !len) {
		b->busy = 0;
		return io->err;
	}
	b->len = len;
	b->done = 0;
	b->off = io->pos;
	io->pos += len;
	if (!io->uring) {
		int ret = pwrite_all(io, b);

		b->busy = 0;
		return ret;
	}
	return queue(io, i);
}

int ckpt_io_drain(struct ckpt_io *io)
{
	while (io->uring && io->inflight)
		reap(io);
	return io->err;
}

void ckpt_io_exit(struct ckpt_io *io)
{
	if (io->uring) {
		/* After an error writes may still be in flight into our buffers. */
		while (io->inflight)
			reap(io);
		io_uring_queue_exit(&io->ring);
	}
	if (io->base)
		munmap(io->base, io->nbufs * io->bufsize);
	free(io->bufs);
	memset(io, 0, sizeof(*io));
}
