// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the checkpoint reader (common/ckpt/ckpt_read.c,
 * ckpt_chain.c): the input becomes one or two checkpoint files (memfds)
 * read as the daemon reads a caller's descriptors.
 *
 * Input: byte 0 chooses the mode.
 *   bit 0 clear: the rest is one file, opened with
 *         vgpu_ckpt_reader_open_fd(VERIFY)
 *   bit 0 set: bytes 1..4 (little-endian) are the child's length, then the
 *         child, then the parent; bits 1-2 (% 3) pick what is passed to
 *         vgpu_ckpt_open_chain_fds: child and parent, the child alone, or
 *         child, parent and the parent again (an extra descriptor)
 *   bit 7: "reseal" each file first: its section CRCs, table CRC and header
 *         CRC recomputed wherever the fields it holds allow, so that mutations
 *         get past the checksums into the checks behind them; bit 6 then also
 *         makes the child's parent_header_crc the parent's.
 *   bit 5: the files must suit a GPU and driver (the seeds'), bit 4: this
 *         very GPU and driver.
 * Whatever opens has every section walked: resolved, read whole (capped),
 * and read as a record table.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"
#include "ckpt_crc.h"

#define CAP (4u << 20)	/* raw bytes read whole per section */

/* What the seeds were made on (tests/unit/test_ckpt.c). */
static const struct vgpu_ckpt_gpu gpu = {
	.name = "NVIDIA H100 80GB HBM3",
	.uuid = { 0x5b, 0x1e, 0x2c, 0x3d, 0x01, 0x02, 0x03, 0x04,
		  0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c },
	.cc_major = 9, .cc_minor = 0, .total_mem = 80ull << 30,
};

/* A file holding len bytes of data; -1 if none can be made. */
static int file_of(const uint8_t *data, size_t len)
{
	int fd = memfd_create("fuzz-ckpt", MFD_CLOEXEC);
	size_t done = 0;

	while (fd >= 0 && done < len) {
		ssize_t n = write(fd, data + done, len - done);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return fd;
}

/* Correct checksums for whatever b's header and table say (the harness's
 * doing, not the reader's: the reader sees a file like any other). */
static void reseal(uint8_t *b, size_t len)
{
	struct vgpu_ckpt_header h;	/* copies: b need not be aligned */
	struct vgpu_ckpt_section s;

	if (len < sizeof(h))
		return;
	memcpy(&h, b, sizeof(h));
	if (h.table_offset <= len && h.table_size <= len - h.table_offset &&
	    h.table_size % sizeof(s) == 0) {
		uint8_t *t = b + h.table_offset;

		for (size_t i = 0; i < h.table_size / sizeof(s); i++) {
			memcpy(&s, t + i * sizeof(s), sizeof(s));
			if (s.flags & VGPU_CKPT_SF_PARENT || s.offset > len ||
			    s.stored_len > len - s.offset)
				continue;
			s.crc = vgpu_crc32c(0, b + s.offset, s.stored_len);
			memcpy(t + i * sizeof(s), &s, sizeof(s));
		}
		h.table_crc = vgpu_crc32c(0, t, h.table_size);
	}
	h.header_crc = vgpu_ckpt_header_crc(&h);
	memcpy(b, &h, sizeof(h));
}

static void walk(struct vgpu_ckpt_reader *r)
{
	for (unsigned i = 0; i < vgpu_ckpt_count(r); i++) {
		const struct vgpu_ckpt_section *s = vgpu_ckpt_section_at(r, i);
		struct vgpu_ckpt_reader *rr;
		unsigned ri;
		void *buf;
		size_t n, len;

		vgpu_ckpt_resolve(r, i, &rr, &ri);
		s = vgpu_ckpt_section_at(rr, ri);
		/* As the daemon's copy threads do: pread the plain stored bytes. */
		if (s && !(s->flags & VGPU_CKPT_SF_PARENT) && s->compression == VGPU_CKPT_COMP_NONE &&
		    s->stored_len <= CAP && (buf = malloc(s->stored_len + 1))) {
			ssize_t got = pread(vgpu_ckpt_reader_fd(rr), buf, s->stored_len,
					    (off_t)s->offset);

			if (got == (ssize_t)s->stored_len)
				vgpu_ckpt_check_crc(rr, ri, vgpu_crc32c(0, buf, s->stored_len));
			free(buf);
		}
		s = vgpu_ckpt_section_at(r, i);
		if (vgpu_ckpt_find(r, s->type, s->id) < 0)
			abort();	/* every section is found by its key */
		if (!vgpu_ckpt_read_whole(r, i, CAP, &buf, &len))
			free(buf);
		if (!vgpu_ckpt_read_records(r, s->type, s->id, 16, CAP, &buf, &n, &len))
			free(buf);
	}
	(void)vgpu_ckpt_chain_length(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vgpu_ckpt_reader *r = NULL;
	char err[VGPU_CKPT_MSG];
	int fds[3] = { -1, -1, -1 };
	struct vgpu_ckpt_expect exs = { &gpu, 13000, 0 }, *ex = NULL;
	uint8_t *b, mode;
	int ret;

	if (size < 1 || !(b = malloc(size)))
		return 0;
	memcpy(b, data, size);
	mode = b[0];
	if (mode & 0x20) {
		exs.match = mode & 0x10 ? VGPU_CKPT_SAME_GPU | VGPU_CKPT_SAME_DRIVER : 0;
		ex = &exs;
	}
	if (!(mode & 1)) {
		if (mode & 0x80)
			reseal(b + 1, size - 1);
		fds[0] = file_of(b + 1, size - 1);
		if (fds[0] < 0) {
			free(b);
			return 0;
		}
		ret = vgpu_ckpt_reader_open_fd(&r, fds[0], "fuzz", ex, VGPU_CKPT_VERIFY, err);
	} else {
		static const unsigned counts[3] = { 2, 1, 3 };
		unsigned nfds = counts[(mode >> 1 & 3) % 3];
		uint8_t *child = b + 5, *parent;
		size_t clen, plen;

		if (size < 5) {
			free(b);
			return 0;
		}
		clen = b[1] | b[2] << 8 | (size_t)b[3] << 16 | (size_t)b[4] << 24;
		if (clen > size - 5)
			clen = size - 5;
		parent = child + clen;
		plen = size - 5 - clen;
		if (mode & 0x80) {
			reseal(parent, plen);
			if (mode & 0x40 && clen >= sizeof(struct vgpu_ckpt_header) &&
			    plen >= sizeof(struct vgpu_ckpt_header)) {
				uint32_t crc;

				memcpy(&crc, parent + offsetof(struct vgpu_ckpt_header, header_crc),
				       sizeof(crc));
				memcpy(child + offsetof(struct vgpu_ckpt_header, parent_header_crc),
				       &crc, sizeof(crc));
			}
			reseal(child, clen);
		}
		fds[0] = file_of(child, clen);
		fds[1] = file_of(parent, plen);
		fds[2] = fds[1];
		if (fds[0] < 0 || fds[1] < 0) {
			ret = -1;
			goto out;
		}
		ret = vgpu_ckpt_open_chain_fds(&r, fds, nfds, "fuzz", ex, VGPU_CKPT_VERIFY, err);
	}
	/* A message always fits and is terminated. */
	if (ret && strnlen(err, VGPU_CKPT_MSG) >= VGPU_CKPT_MSG)
		abort();
	if (!ret) {
		walk(r);
		vgpu_ckpt_reader_close(r);
	}
out:
	free(b);
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return 0;
}
