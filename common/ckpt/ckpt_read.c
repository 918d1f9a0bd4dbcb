// SPDX-License-Identifier: MIT
/*
 * The checkpoint reader. The file is hostile input: every offset and length
 * is checked against the file's real size before use, nothing is allocated
 * from a length field (the table is bounded by the file it was read from),
 * and decompression never produces more than the section's raw length.
 * Messages name the file (bounded, escaped) and never quote its bytes: the
 * file may be anything its opener could read.
 */
#include "ckpt.h"
#include "ckpt_crc.h"
#include "ckpt_zstd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK		(1u << 20)	/* verify and decompression reads */
#define MAX_READ	(1u << 30)	/* bytes returned per vgpu_ckpt_read */

struct vgpu_ckpt_reader {
	char name[VGPU_CKPT_NAME];	/* for messages: vgpu_ckpt_show() */
	int fd;
	uint64_t size;
	struct vgpu_ckpt_header hdr;
	struct vgpu_ckpt_section *tab;
	unsigned *order;		/* indices sorted by (type, id) */
	struct vgpu_ckpt_reader *parent;
	unsigned *pidx;			/* SF_PARENT section -> parent's index */
	int own_parent;			/* closed with this one */

	int cur;			/* the section being read; -1: none */
	struct vgpu_ckpt_reader *via;	/* SF_PARENT: the reader that has it */
	uint64_t sdone, rdone;		/* stored bytes read, raw bytes returned */
	uint32_t crc;
	const struct vgpu_zstd *z;
	void *dctx;
	char *zbuf;
	size_t zpos, zlen;
	int frame_done;

	char msg[VGPU_CKPT_MSG];
};

__attribute__((format(printf, 3, 4)))
static int rerr(struct vgpu_ckpt_reader *r, int err, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->msg, sizeof(r->msg), "%s: ", r->name);

	/* The name is bounded, but never write past msg whatever it is. */
	if (n < 0 || (size_t)n >= sizeof(r->msg))
		return err;
	va_start(ap, fmt);
	vsnprintf(r->msg + n, sizeof(r->msg) - n, fmt, ap);
	va_end(ap);
	return err;
}

/* "section 3 (allocation data, id 0x7f0000200000)" */
static const char *label(const struct vgpu_ckpt_reader *r, unsigned i, char *buf, size_t len)
{
	char nb[24];

	snprintf(buf, len, "section %u (%s, id 0x%llx)", i,
		 vgpu_ckpt_section_name(r->tab[i].type, nb), (unsigned long long)r->tab[i].id);
	return buf;
}

/* Bytes read; fewer than len only at the end of the file. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

static int read_at(struct vgpu_ckpt_reader *r, void *buf, size_t len, uint64_t off,
		   const char *what)
{
	ssize_t n = pread_full(r->fd, buf, len, off);

	if (n < 0)
		return rerr(r, n, "reading %s at offset %llu: %s", what,
			    (unsigned long long)off, strerror(-n));
	if ((size_t)n < len)
		return rerr(r, -EBADMSG, "truncated: %s at offset %llu (%zu bytes) is past the "
			    "end of the file", what, (unsigned long long)off, len);
	return 0;
}

static int all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	return len == 0 || (b[0] == 0 && !memcmp(b, b + 1, len - 1));
}

static int check_header(struct vgpu_ckpt_reader *r)
{
	struct vgpu_ckpt_header *h = &r->hdr;
	uint32_t crc;

	/* The magic first: a short file of another kind is not "truncated". */
	if (r->size >= sizeof(h->magic) && read_at(r, h->magic, sizeof(h->magic), 0, "the magic"))
		return -EBADMSG;
	if (r->size >= sizeof(h->magic) && memcmp(h->magic, VGPU_CKPT_MAGIC, sizeof(h->magic)))
		/* Not a word of what it holds: it may be anyone's file. */
		return rerr(r, -ENOEXEC, "not a vgpu checkpoint (bad magic)");
	if (r->size < sizeof(*h))
		return rerr(r, -EBADMSG, "truncated: %llu bytes, shorter than the %zu-byte header",
			    (unsigned long long)r->size, sizeof(*h));
	if (read_at(r, h, sizeof(*h), 0, "the header"))
		return -EBADMSG;
	if (h->version != VGPU_CKPT_VERSION)
		return rerr(r, -EPROTONOSUPPORT, "format version %u; this build reads version %u",
			    h->version, VGPU_CKPT_VERSION);
	if (h->header_size != sizeof(*h))
		return rerr(r, -EBADMSG, "header size %u, expected %zu", h->header_size, sizeof(*h));
	crc = vgpu_ckpt_header_crc(h);
	if (crc != h->header_crc)
		return rerr(r, -EBADMSG, "header checksum mismatch (stored %08x, computed %08x)",
			    h->header_crc, crc);
	if (h->flags & ~VGPU_CKPT_F_ALL)
		return rerr(r, -EPROTONOSUPPORT, "unknown header flags 0x%llx",
			    (unsigned long long)(h->flags & ~VGPU_CKPT_F_ALL));
	if (!all_zero(h->reserved, sizeof(h->reserved)))
		return rerr(r, -EPROTONOSUPPORT, "reserved header bytes are not zero");
	if (!memchr(h->gpu.name, 0, sizeof(h->gpu.name)))
		return rerr(r, -EBADMSG, "the GPU name is not terminated");
	if (!(h->flags & VGPU_CKPT_F_INCREMENTAL) &&
	    (!all_zero(h->parent_id, sizeof(h->parent_id)) || h->parent_header_crc))
		return rerr(r, -EBADMSG, "names a parent but is not incremental");
	return 0;
}

static int check_layout(struct vgpu_ckpt_reader *r)
{
	const struct vgpu_ckpt_header *h = &r->hdr;

	if (r->size < h->file_size)
		return rerr(r, -EBADMSG, "truncated: the file is %llu bytes, its header says %llu "
			    "(section table at offset %llu)", (unsigned long long)r->size,
			    (unsigned long long)h->file_size, (unsigned long long)h->table_offset);
	if (r->size > h->file_size)
		return rerr(r, -EBADMSG, "%llu bytes past the end its header gives (%llu)",
			    (unsigned long long)(r->size - h->file_size),
			    (unsigned long long)h->file_size);
	if (h->section_count > VGPU_CKPT_MAX_SECTIONS)
		return rerr(r, -EBADMSG, "%u sections, more than the limit %u", h->section_count,
			    VGPU_CKPT_MAX_SECTIONS);
	if (h->table_size != (uint64_t)h->section_count * sizeof(struct vgpu_ckpt_section))
		return rerr(r, -EBADMSG, "section table of %llu bytes for %u sections",
			    (unsigned long long)h->table_size, h->section_count);
	if (h->table_offset < VGPU_CKPT_DATA_OFFSET || h->table_offset % VGPU_CKPT_ALIGN)
		return rerr(r, -EBADMSG, "section table at offset %llu (must be %u-aligned, "
			    "after the header)", (unsigned long long)h->table_offset, VGPU_CKPT_ALIGN);
	if (h->table_offset > r->size || r->size - h->table_offset != h->table_size)
		return rerr(r, -EBADMSG, "truncated: section table at offset %llu (%llu bytes) "
			    "does not end at the end of the file (%llu bytes)",
			    (unsigned long long)h->table_offset, (unsigned long long)h->table_size,
			    (unsigned long long)r->size);
	return 0;
}

static int check_entry(struct vgpu_ckpt_reader *r, unsigned i, uint64_t *end)
{
	const struct vgpu_ckpt_section *s = &r->tab[i];
	char l[96];

	label(r, i, l, sizeof(l));
	if (s->reserved)
		return rerr(r, -EPROTONOSUPPORT, "%s: reserved field is not zero", l);
	if (s->flags & ~VGPU_CKPT_SF_ALL)
		return rerr(r, -EPROTONOSUPPORT, "%s: unknown flags 0x%x", l, s->flags);
	if (!vgpu_ckpt_section_known(s->type) && !(s->flags & VGPU_CKPT_SF_OPTIONAL))
		return rerr(r, -EPROTONOSUPPORT, "%s: a section type this build does not know", l);
	if (s->compression > VGPU_CKPT_COMP_ZSTD)
		return rerr(r, -EPROTONOSUPPORT, "%s: unknown compression %u", l, s->compression);
	if (s->flags & VGPU_CKPT_SF_PARENT) {
		if (!(r->hdr.flags & VGPU_CKPT_F_INCREMENTAL))
			return rerr(r, -EBADMSG, "%s refers to a parent, but the file is not "
				    "incremental", l);
		if (s->offset || s->stored_len || s->compression)
			return rerr(r, -EBADMSG, "%s refers to the parent but has stored bytes", l);
		return 0;
	}
	if (s->offset % VGPU_CKPT_ALIGN || s->offset < *end)
		return rerr(r, -EBADMSG, "%s at offset %llu: unaligned or overlapping what "
			    "precedes it (which ends at %llu)", l, (unsigned long long)s->offset,
			    (unsigned long long)*end);
	if (s->offset > r->hdr.table_offset || s->stored_len > r->hdr.table_offset - s->offset)
		return rerr(r, -EBADMSG, "%s: %llu bytes at offset %llu run past the section "
			    "table at %llu", l, (unsigned long long)s->stored_len,
			    (unsigned long long)s->offset, (unsigned long long)r->hdr.table_offset);
	if (s->compression == VGPU_CKPT_COMP_NONE && s->raw_len != s->stored_len)
		return rerr(r, -EBADMSG, "%s: uncompressed, but %llu stored bytes for %llu raw", l,
			    (unsigned long long)s->stored_len, (unsigned long long)s->raw_len);
	*end = s->offset + s->stored_len;
	return 0;
}

static int cmp_key(const void *a, const void *b, void *tab)
{
	const struct vgpu_ckpt_section *x = (const struct vgpu_ckpt_section *)tab + *(const unsigned *)a;
	const struct vgpu_ckpt_section *y = (const struct vgpu_ckpt_section *)tab + *(const unsigned *)b;

	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return *(const unsigned *)a < *(const unsigned *)b ? -1 : 1;
}

static int build_index(struct vgpu_ckpt_reader *r)
{
	unsigned n = r->hdr.section_count;

	r->order = malloc((n ? n : 1) * sizeof(*r->order));
	if (!r->order)
		return rerr(r, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < n; i++)
		r->order[i] = i;
	qsort_r(r->order, n, sizeof(*r->order), cmp_key, r->tab);
	for (unsigned i = 1; i < n; i++) {
		const struct vgpu_ckpt_section *a = &r->tab[r->order[i - 1]];
		const struct vgpu_ckpt_section *b = &r->tab[r->order[i]];
		char l[96];

		if (a->type == b->type && a->id == b->id)
			return rerr(r, -EBADMSG, "%s appears twice (also section %u)",
				    label(r, r->order[i], l, sizeof(l)), r->order[i - 1]);
	}
	return 0;
}

static int check_table(struct vgpu_ckpt_reader *r)
{
	const struct vgpu_ckpt_header *h = &r->hdr;
	uint64_t end = VGPU_CKPT_DATA_OFFSET;
	uint32_t crc;

	/* Bounded: the table lies inside the file, and the count is limited. */
	r->tab = malloc(h->table_size ? h->table_size : 1);
	if (!r->tab)
		return rerr(r, -ENOMEM, "section table: out of memory");
	if (read_at(r, r->tab, h->table_size, h->table_offset, "the section table"))
		return -EBADMSG;
	crc = vgpu_crc32c(0, r->tab, h->table_size);
	if (crc != h->table_crc)
		return rerr(r, -EBADMSG, "section table checksum mismatch (stored %08x, computed %08x)",
			    h->table_crc, crc);
	for (unsigned i = 0; i < h->section_count; i++) {
		int ret = check_entry(r, i, &end);

		if (ret)
			return ret;
	}
	return build_index(r);
}

static void driver_str(uint32_t v, char *buf)
{
	snprintf(buf, 32, "%u.%u (%u)", v / 1000, v % 1000 / 10, v);
}

static int check_expect(struct vgpu_ckpt_reader *r, const struct vgpu_ckpt_expect *ex)
{
	const struct vgpu_ckpt_gpu *f = &r->hdr.gpu, *g = ex->gpu;
	char a[256], b[256];

	if (g && (strncmp(f->name, g->name, sizeof(f->name)) || f->cc_major != g->cc_major ||
		  f->cc_minor != g->cc_minor ||
		  ((ex->match & VGPU_CKPT_SAME_GPU) && memcmp(f->uuid, g->uuid, sizeof(f->uuid)))))
		return rerr(r, -EXDEV, "made on GPU %s, this is %s%s", vgpu_ckpt_gpu_describe(f, a),
			    vgpu_ckpt_gpu_describe(g, b),
			    ex->match & VGPU_CKPT_SAME_GPU ? " (the same GPU is required)" : "");
	if (!ex->driver_version)
		return 0;
	driver_str(r->hdr.driver_version, a);
	driver_str(ex->driver_version, b);
	if ((ex->match & VGPU_CKPT_SAME_DRIVER) && r->hdr.driver_version != ex->driver_version)
		return rerr(r, -EXDEV, "made with CUDA driver %s, this is %s (the same is required)",
			    a, b);
	if (r->hdr.driver_version > ex->driver_version)
		return rerr(r, -EXDEV, "made with CUDA driver %s, newer than this one, %s", a, b);
	return 0;
}

/* Zero bytes from off to end, the padding between sections. */
static int check_gap(struct vgpu_ckpt_reader *r, char *buf, uint64_t off, uint64_t end)
{
	while (off < end) {
		size_t n = end - off < CHUNK ? end - off : CHUNK;

		if (read_at(r, buf, n, off, "padding"))
			return -EBADMSG;
		for (size_t k = 0; k < n; k++)
			if (buf[k])
				return rerr(r, -EBADMSG, "padding byte at offset %llu is not zero",
					    (unsigned long long)(off + k));
		off += n;
	}
	return 0;
}

static int verify_section(struct vgpu_ckpt_reader *r, char *buf, unsigned i)
{
	const struct vgpu_ckpt_section *s = &r->tab[i];
	uint32_t crc = 0;
	char l[96];

	for (uint64_t done = 0; done < s->stored_len;) {
		size_t n = s->stored_len - done < CHUNK ? s->stored_len - done : CHUNK;

		if (read_at(r, buf, n, s->offset + done, label(r, i, l, sizeof(l))))
			return -EBADMSG;
		crc = vgpu_crc32c(crc, buf, n);
		done += n;
	}
	if (crc != s->crc)
		return rerr(r, -EBADMSG, "%s: checksum mismatch (stored %08x, computed %08x)",
			    label(r, i, l, sizeof(l)), s->crc, crc);
	return 0;
}

int vgpu_ckpt_verify(struct vgpu_ckpt_reader *r)
{
	uint64_t end = sizeof(r->hdr);
	char *buf = malloc(CHUNK);
	int ret = 0;

	if (!buf)
		return rerr(r, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < r->hdr.section_count && !ret; i++) {
		const struct vgpu_ckpt_section *s = &r->tab[i];

		if (s->flags & VGPU_CKPT_SF_PARENT)
			continue;
		ret = check_gap(r, buf, end, s->offset);
		if (!ret)
			ret = verify_section(r, buf, i);
		end = s->offset + s->stored_len;
	}
	if (!ret)
		ret = check_gap(r, buf, end, r->hdr.table_offset);
	free(buf);
	return ret;
}

static const char *file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a file";
}

/*
 * Only a regular file: reading a FIFO or a device could block forever or
 * have effects. Its O_NONBLOCK (set by vgpu_ckpt_reader_open, or by whoever
 * passed it) goes, so that no read of it ever returns -EAGAIN.
 */
static int take_fd(struct vgpu_ckpt_reader *r, int fd)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0)
		return rerr(r, -errno, "fstat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode)) {
		snprintf(r->msg, sizeof(r->msg), "%s is not a regular file (%s)", r->name,
			 file_kind(st.st_mode));
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || ((fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
		return rerr(r, -errno, "fcntl: %s", strerror(errno));
	r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (r->fd < 0)
		return rerr(r, -errno, "cannot duplicate its descriptor: %s", strerror(errno));
	r->size = st.st_size;
	return 0;
}

static int reader_setup(struct vgpu_ckpt_reader *r, int fd, const struct vgpu_ckpt_expect *ex,
			unsigned flags)
{
	int ret;

	if (flags & ~VGPU_CKPT_VERIFY)
		return rerr(r, -EINVAL, "unknown open flags 0x%x", flags);
	if ((ret = take_fd(r, fd)))
		return ret;
	if ((ret = check_header(r)) || (ret = check_layout(r)) || (ret = check_table(r)))
		return ret;
	if (ex && (ret = check_expect(r, ex)))
		return ret;
	if (flags & VGPU_CKPT_VERIFY)
		return vgpu_ckpt_verify(r);
	return 0;
}

int vgpu_ckpt_reader_open_fd(struct vgpu_ckpt_reader **out, int fd, const char *name,
			     const struct vgpu_ckpt_expect *ex, unsigned flags, char *err)
{
	struct vgpu_ckpt_reader *r = calloc(1, sizeof(*r));
	char shown[VGPU_CKPT_NAME];
	int ret;

	*out = NULL;
	if (!name)
		name = "checkpoint";
	if (!r) {
		snprintf(err, VGPU_CKPT_MSG, "%s: out of memory", vgpu_ckpt_show(name, shown));
		return -ENOMEM;
	}
	vgpu_ckpt_show(name, r->name);
	r->fd = -1;
	r->cur = -1;
	ret = reader_setup(r, fd, ex, flags);
	if (ret) {
		snprintf(err, VGPU_CKPT_MSG, "%s", r->msg);
		vgpu_ckpt_reader_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

int vgpu_ckpt_reader_open(struct vgpu_ckpt_reader **out, const char *path,
			  const struct vgpu_ckpt_expect *ex, unsigned flags, char *err)
{
	/* O_NONBLOCK: opening a FIFO returns at once, and take_fd refuses it. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), ret;
	char shown[VGPU_CKPT_NAME];

	*out = NULL;
	if (fd < 0) {
		ret = -errno;
		snprintf(err, VGPU_CKPT_MSG, "%s: cannot open: %s", vgpu_ckpt_show(path, shown),
			 strerror(-ret));
		return ret;
	}
	ret = vgpu_ckpt_reader_open_fd(out, fd, path, ex, flags, err);
	close(fd);
	return ret;
}

void vgpu_ckpt_reader_close(struct vgpu_ckpt_reader *r)
{
	if (!r)
		return;
	if (r->own_parent)
		vgpu_ckpt_reader_close(r->parent);
	if (r->fd >= 0)
		close(r->fd);
	if (r->dctx)
		r->z->free_dctx(r->dctx);
	free(r->zbuf);
	free(r->pidx);
	free(r->order);
	free(r->tab);
	free(r);
}

const char *vgpu_ckpt_reader_name(const struct vgpu_ckpt_reader *r)
{
	return r->name;
}

const char *vgpu_ckpt_reader_error(const struct vgpu_ckpt_reader *r)
{
	return r->msg[0] ? r->msg : "no error";
}

const struct vgpu_ckpt_header *vgpu_ckpt_header(const struct vgpu_ckpt_reader *r)
{
	return &r->hdr;
}

unsigned vgpu_ckpt_count(const struct vgpu_ckpt_reader *r)
{
	return r->hdr.section_count;
}

const struct vgpu_ckpt_section *vgpu_ckpt_section_at(const struct vgpu_ckpt_reader *r, unsigned i)
{
	return i < r->hdr.section_count ? &r->tab[i] : NULL;
}

int vgpu_ckpt_find(const struct vgpu_ckpt_reader *r, uint32_t type, uint64_t id)
{
	unsigned lo = 0, hi = r->hdr.section_count;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		const struct vgpu_ckpt_section *s = &r->tab[r->order[mid]];

		if (s->type < type || (s->type == type && s->id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->hdr.section_count && r->tab[r->order[lo]].type == type &&
	    r->tab[r->order[lo]].id == id)
		return r->order[lo];
	return -ENOENT;
}

static void hex16(const uint8_t *id, char *buf)
{
	for (int i = 0; i < 16; i++)
		sprintf(buf + 2 * i, "%02x", id[i]);
}

int vgpu_ckpt_attach_parent(struct vgpu_ckpt_reader *r, struct vgpu_ckpt_reader *p)
{
	char a[33], b[33], l[96];

	if (!(r->hdr.flags & VGPU_CKPT_F_INCREMENTAL))
		return rerr(r, -EINVAL, "not an incremental checkpoint: it has no parent");
	hex16(r->hdr.parent_id, a);
	hex16(p->hdr.file_id, b);
	a[8] = b[8] = 0;	/* enough to tell them apart */
	if (memcmp(r->hdr.parent_id, p->hdr.file_id, sizeof(p->hdr.file_id)))
		return rerr(r, -EXDEV, "its parent is checkpoint %s..., but %s is checkpoint %s...",
			    a, p->name, b);
	if (r->hdr.parent_header_crc != p->hdr.header_crc)
		return rerr(r, -EXDEV, "its parent %s (checkpoint %s) has changed since (header "
			    "checksum %08x, expected %08x)", p->name, a, p->hdr.header_crc,
			    r->hdr.parent_header_crc);
	free(r->pidx);
	r->pidx = calloc(r->hdr.section_count ? r->hdr.section_count : 1, sizeof(*r->pidx));
	if (!r->pidx)
		return rerr(r, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < r->hdr.section_count; i++) {
		const struct vgpu_ckpt_section *s = &r->tab[i], *ps;
		int j;

		if (!(s->flags & VGPU_CKPT_SF_PARENT))
			continue;
		j = vgpu_ckpt_find(p, s->type, s->id);
		if (j < 0)
			return rerr(r, -EBADMSG, "%s refers to the parent %s, which has no such "
				    "section", label(r, i, l, sizeof(l)), p->name);
		ps = &p->tab[j];
		if (ps->raw_len != s->raw_len || ps->crc != s->crc)
			return rerr(r, -EBADMSG, "%s differs from the parent's section %d (%llu raw "
				    "bytes, crc %08x; the parent has %llu, %08x)", l, j,
				    (unsigned long long)s->raw_len, s->crc,
				    (unsigned long long)ps->raw_len, ps->crc);
		r->pidx[i] = j;
	}
	r->parent = p;
	return 0;
}

int vgpu_ckpt_adopt_parent(struct vgpu_ckpt_reader *r, struct vgpu_ckpt_reader *p)
{
	int ret;

	if (r->own_parent)
		return rerr(r, -EINVAL, "it already has a parent");
	ret = vgpu_ckpt_attach_parent(r, p);
	if (!ret)
		r->own_parent = 1;
	return ret;
}

struct vgpu_ckpt_reader *vgpu_ckpt_parent(const struct vgpu_ckpt_reader *r)
{
	return r->parent;
}

void vgpu_ckpt_resolve(struct vgpu_ckpt_reader *r, unsigned i, struct vgpu_ckpt_reader **rr,
		       unsigned *ri)
{
	while (i < r->hdr.section_count && r->tab[i].flags & VGPU_CKPT_SF_PARENT && r->parent) {
		i = r->pidx[i];
		r = r->parent;
	}
	*rr = r;
	*ri = i;
}

static int zstd_ready(struct vgpu_ckpt_reader *r, unsigned i)
{
	const char *why = "";
	char l[96];
	size_t ret;

	if (!r->z && !(r->z = vgpu_zstd(&why)))
		return rerr(r, -ENOPKG, "%s is zstd-compressed, and libzstd.so.1 cannot be "
			    "loaded (%s)", label(r, i, l, sizeof(l)), why);
	if (!r->dctx && !(r->dctx = r->z->create_dctx()))
		return rerr(r, -ENOMEM, "zstd: cannot create a decompression context");
	if (!r->zbuf && !(r->zbuf = malloc(CHUNK)))
		return rerr(r, -ENOMEM, "out of memory");
	r->z->dctx_reset(r->dctx, VGPU_ZSTD_RESET_SESSION);
	ret = r->z->dctx_set(r->dctx, VGPU_ZSTD_D_WINDOWLOG, VGPU_ZSTD_MAX_WINDOWLOG);
	if (r->z->is_error(ret))
		return rerr(r, -EIO, "zstd: %s", r->z->error_name(ret));
	return 0;
}

int vgpu_ckpt_read_begin(struct vgpu_ckpt_reader *r, unsigned i)
{
	const struct vgpu_ckpt_section *s;
	char l[96];
	int ret;

	r->cur = -1;
	r->via = NULL;
	if (i >= r->hdr.section_count)
		return rerr(r, -EINVAL, "no section %u (the file has %u)", i, r->hdr.section_count);
	s = &r->tab[i];
	if (s->flags & VGPU_CKPT_SF_PARENT) {
		if (!r->parent)
			return rerr(r, -EINVAL, "%s is in the parent checkpoint, which is not "
				    "attached", label(r, i, l, sizeof(l)));
		ret = vgpu_ckpt_read_begin(r->parent, r->pidx[i]);
		if (ret)
			return rerr(r, ret, "%s", r->parent->msg);
		r->via = r->parent;
	} else if (s->compression == VGPU_CKPT_COMP_ZSTD && (ret = zstd_ready(r, i))) {
		return ret;
	}
	r->sdone = r->rdone = 0;
	r->crc = 0;
	r->zpos = r->zlen = 0;
	r->frame_done = 0;
	r->cur = i;
	return 0;
}

/* Stored bytes into buf; checks the CRC once the last one is in. */
static ssize_t stored(struct vgpu_ckpt_reader *r, void *buf, size_t len)
{
	const struct vgpu_ckpt_section *s = &r->tab[r->cur];
	uint64_t left = s->stored_len - r->sdone;
	char l[96];

	if (len > left)
		len = left;
	if (read_at(r, buf, len, s->offset + r->sdone, label(r, r->cur, l, sizeof(l))))
		return -EBADMSG;
	r->crc = vgpu_crc32c(r->crc, buf, len);
	r->sdone += len;
	if (r->sdone == s->stored_len && r->crc != s->crc)
		return rerr(r, -EBADMSG, "%s: checksum mismatch (stored %08x, computed %08x)",
			    l, s->crc, r->crc);
	return len;
}

/* Next compressed bytes into zbuf. */
static int refill(struct vgpu_ckpt_reader *r)
{
	ssize_t n = stored(r, r->zbuf, CHUNK);

	if (n < 0)
		return n;
	r->zpos = 0;
	r->zlen = n;
	return 0;
}

static ssize_t read_zstd(struct vgpu_ckpt_reader *r, void *buf, size_t len)
{
	const struct vgpu_ckpt_section *s = &r->tab[r->cur];
	uint64_t left = s->raw_len - r->rdone;
	char one, l[96];
	/* At the raw length, a 1-byte window shows whether the frame lies about it. */
	struct vgpu_zstd_out out = left ? (struct vgpu_zstd_out){ buf, len < left ? len : left, 0 }
					: (struct vgpu_zstd_out){ &one, 1, 0 };

	label(r, r->cur, l, sizeof(l));
	for (;;) {
		struct vgpu_zstd_in in;
		size_t ret, before;

		if (r->zpos == r->zlen && r->sdone < s->stored_len && refill(r))
			return -EBADMSG;
		in = (struct vgpu_zstd_in){ r->zbuf, r->zlen, r->zpos };
		before = in.pos;
		ret = r->z->decompress(r->dctx, &out, &in);
		r->zpos = in.pos;
		if (r->z->is_error(ret))
			return rerr(r, -EBADMSG, "%s: bad compressed data (zstd: %s)", l,
				    r->z->error_name(ret));
		/* Called with nothing to do, zstd hints at a next frame: not news. */
		if (in.pos != before || out.pos)
			r->frame_done = ret == 0;
		if (out.pos && !left)
			return rerr(r, -EBADMSG, "%s: decompresses to more than its raw length "
				    "%llu", l, (unsigned long long)s->raw_len);
		if (out.pos) {
			r->rdone += out.pos;
			return out.pos;
		}
		if (r->zpos < r->zlen) {
			if (in.pos == before)
				return rerr(r, -EBADMSG, "%s: zstd makes no progress", l);
			continue;
		}
		if (r->sdone < s->stored_len)
			continue;
		if (!r->frame_done)
			return rerr(r, -EBADMSG, "%s: compressed data ends inside its frame", l);
		if (left)
			return rerr(r, -EBADMSG, "%s: decompresses to %llu bytes, not its raw "
				    "length %llu", l, (unsigned long long)r->rdone,
				    (unsigned long long)s->raw_len);
		return 0;
	}
}

ssize_t vgpu_ckpt_read(struct vgpu_ckpt_reader *r, void *buf, size_t len)
{
	ssize_t n;

	if (r->cur < 0)
		return rerr(r, -EINVAL, "read without read_begin (or after an error)");
	if (!len)
		return rerr(r, -EINVAL, "zero-length read");
	if (len > MAX_READ)
		len = MAX_READ;
	if (r->via) {
		n = vgpu_ckpt_read(r->via, buf, len);
		if (n < 0)
			rerr(r, n, "in the parent: %s", r->via->msg);
	} else if (r->tab[r->cur].compression == VGPU_CKPT_COMP_ZSTD) {
		n = read_zstd(r, buf, len);
	} else {
		const struct vgpu_ckpt_section *s = &r->tab[r->cur];

		n = r->sdone < s->stored_len ? stored(r, buf, len) : 0;
		if (n > 0)
			r->rdone += n;
		if (!s->stored_len && s->crc) {
			char l[96];

			n = rerr(r, -EBADMSG, "%s: checksum mismatch (stored %08x, computed 0)",
				 label(r, r->cur, l, sizeof(l)), s->crc);
		}
	}
	if (n < 0)
		r->cur = -1;
	return n;
}

int vgpu_ckpt_reader_fd(const struct vgpu_ckpt_reader *r)
{
	return r->fd;
}

int vgpu_ckpt_check_crc(struct vgpu_ckpt_reader *r, unsigned i, uint32_t crc)
{
	char l[96];

	if (i >= r->hdr.section_count)
		return rerr(r, -EINVAL, "no section %u (the file has %u)", i, r->hdr.section_count);
	if (r->tab[i].crc != crc)
		return rerr(r, -EBADMSG, "%s: checksum mismatch (stored %08x, computed %08x)",
			    label(r, i, l, sizeof(l)), r->tab[i].crc, crc);
	return 0;
}

int vgpu_ckpt_read_whole(struct vgpu_ckpt_reader *r, unsigned i, size_t cap, void **out,
			 size_t *len)
{
	uint8_t *buf;
	size_t got = 0;
	ssize_t n;
	int ret;

	*out = NULL;
	*len = 0;
	if (i >= r->hdr.section_count)
		return rerr(r, -EINVAL, "no section %u (the file has %u)", i, r->hdr.section_count);
	if (r->tab[i].raw_len > cap) {
		char l[96];

		return rerr(r, -EBADMSG, "%s is too large (%llu bytes, at most %zu expected)",
			    label(r, i, l, sizeof(l)), (unsigned long long)r->tab[i].raw_len, cap);
	}
	ret = vgpu_ckpt_read_begin(r, i);
	if (ret)
		return ret;
	buf = malloc(r->tab[i].raw_len + 1);
	if (!buf)
		return rerr(r, -ENOMEM, "out of memory");
	while ((n = vgpu_ckpt_read(r, buf + got, r->tab[i].raw_len + 1 - got)) > 0)
		got += (size_t)n;
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	buf[got] = 0;
	*out = buf;
	*len = got;
	return 0;
}

int vgpu_ckpt_read_records(struct vgpu_ckpt_reader *r, uint32_t type, uint64_t id, size_t size,
			   size_t cap, void **rec, size_t *n, size_t *len)
{
	int i = vgpu_ckpt_find(r, type, id), ret;
	char l[96];

	*rec = NULL;
	*n = *len = 0;
	if (i < 0)
		return 0;	/* nothing of that kind */
	ret = vgpu_ckpt_read_whole(r, (unsigned)i, cap, rec, len);
	if (ret)
		return ret;
	*n = r->tab[i].aux;
	if (*n > *len / size) {
		free(*rec);
		*rec = NULL;
		*n = *len = 0;
		return rerr(r, -EBADMSG, "%s: its %llu records overrun it",
			    label(r, (unsigned)i, l, sizeof(l)), (unsigned long long)r->tab[i].aux);
	}
	return 0;
}
