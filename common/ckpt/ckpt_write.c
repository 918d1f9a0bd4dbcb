// SPDX-License-Identifier: MIT
/*
 * The checkpoint writer: sections stream through the staging buffers of
 * ckpt_io (compressed on the way when asked), the table and header follow,
 * and the file takes its name only once it is complete and on disk.
 */
#include "ckpt.h"
#include "ckpt_crc.h"
#include "ckpt_io.h"
#include "ckpt_zstd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_NBUFS	8u
#define DEFAULT_BUFSIZE	(4u << 20)
#define MIN_LEND	(64u << 10)	/* buf_get lends at least this much */

struct vgpu_ckpt_writer {
	char *path, *tmp;
	int fd;
	int given;			/* fd came from the caller: no name of ours */
	int created;			/* tmp is ours to remove */
	int renamed;
	struct ckpt_io io;
	struct vgpu_ckpt_header hdr;
	const struct vgpu_ckpt_reader *parent;
	struct vgpu_ckpt_section *tab;
	unsigned ntab, captab;

	int in_sec;
	struct vgpu_ckpt_section cur;	/* the open section */
	uint32_t crc;			/* of its stored bytes so far */
	int zsec;			/* it is being compressed */

	int fill;			/* buffer being filled, -1: none */
	size_t fill_len;
	int lent;			/* 1: fill's tail lent out; 2: buffer sep */
	int sep;
	size_t lent_cap;

	const struct vgpu_zstd *z;
	void *cctx;

	unsigned unfilled;		/* reserved sections still without their CRC */

	int err;
	char msg[VGPU_CKPT_MSG];
};

static const char zeros[VGPU_CKPT_ALIGN];

__attribute__((format(printf, 3, 4)))
static int werr(struct vgpu_ckpt_writer *w, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w->err)
		return w->err;
	w->err = err;
	/* The name cut to leave the message room: a long path must not push
	 * msg + n past the buffer (snprintf returns what it would have written). */
	n = snprintf(w->msg, sizeof(w->msg), "%.200s: ", w->path);
	if (n < 0 || (size_t)n >= sizeof(w->msg))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(w->msg + n, sizeof(w->msg) - n, fmt, ap);
	va_end(ap);
	return err;
}

static int io_err(struct vgpu_ckpt_writer *w)
{
	return werr(w, w->io.err, "%s", w->io.msg);
}

static uint64_t wpos(const struct vgpu_ckpt_writer *w)
{
	return w->io.pos + (w->fill >= 0 ? w->fill_len : 0);
}

static int flush(struct vgpu_ckpt_writer *w)
{
	int i = w->fill;

	if (i < 0)
		return w->err;
	w->fill = -1;
	if (ckpt_io_submit(&w->io, i, w->fill_len))
		return io_err(w);
	return w->err;
}

/* A fill buffer with room in it. */
static int fill_room(struct vgpu_ckpt_writer *w)
{
	int i;

	if (w->fill >= 0 && w->fill_len < w->io.bufsize)
		return 0;
	if (flush(w))
		return w->err;
	i = ckpt_io_get(&w->io);
	if (i < 0)
		return io_err(w);
	w->fill = i;
	w->fill_len = 0;
	return 0;
}

/* Stored bytes: into the section's checksum when sum is set. */
static int emit(struct vgpu_ckpt_writer *w, const void *src, size_t len, int sum)
{
	const char *p = src;

	while (len) {
		size_t n;

		if (fill_room(w))
			return w->err;
		n = w->io.bufsize - w->fill_len;
		if (n > len)
			n = len;
		memcpy(w->io.bufs[w->fill].p + w->fill_len, p, n);
		if (sum)
			w->crc = vgpu_crc32c(w->crc, p, n);
		w->fill_len += n;
		p += n;
		len -= n;
	}
	if (sum)
		w->cur.stored_len += p - (const char *)src;
	return 0;
}

static int pad(struct vgpu_ckpt_writer *w)
{
	uint64_t r = wpos(w) % VGPU_CKPT_ALIGN;

	return r ? emit(w, zeros, VGPU_CKPT_ALIGN - r, 0) : 0;
}

/* Compress src into the fill buffers; op END finishes the frame. */
static int zfeed(struct vgpu_ckpt_writer *w, const void *src, size_t len, int op)
{
	struct vgpu_zstd_in in = { src, len, 0 };

	for (;;) {
		struct vgpu_zstd_out out;
		char *base;
		size_t ret;

		if (fill_room(w))
			return w->err;
		base = w->io.bufs[w->fill].p;
		out = (struct vgpu_zstd_out){ base, w->io.bufsize, w->fill_len };
		ret = w->z->compress(w->cctx, &out, &in, op);
		if (w->z->is_error(ret))
			return werr(w, -EIO, "zstd compression: %s", w->z->error_name(ret));
		w->crc = vgpu_crc32c(w->crc, base + w->fill_len, out.pos - w->fill_len);
		w->cur.stored_len += out.pos - w->fill_len;
		w->fill_len = out.pos;
		if (op == VGPU_ZSTD_E_END ? ret == 0 : in.pos == in.size)
			return 0;
	}
}

static int usable(struct vgpu_ckpt_writer *w, int section)
{
	if (w->err)
		return w->err;
	if (w->renamed)
		return werr(w, -EINVAL, "already finished");
	if (section && !w->in_sec)
		return werr(w, -EINVAL, "no section begun");
	if (!section && w->in_sec)
		return werr(w, -EINVAL, "section %u is still open", w->ntab);
	if (w->lent)
		return werr(w, -EINVAL, "a staging buffer is still lent out");
	return 0;
}

static int add_entry(struct vgpu_ckpt_writer *w, const struct vgpu_ckpt_section *s)
{
	if (w->ntab == w->captab) {
		unsigned cap = w->captab ? 2 * w->captab : 64;
		void *t;

		if (w->ntab >= VGPU_CKPT_MAX_SECTIONS)
			return werr(w, -E2BIG, "more than %u sections", VGPU_CKPT_MAX_SECTIONS);
		t = realloc(w->tab, (size_t)cap * sizeof(*s));
		if (!t)
			return werr(w, -ENOMEM, "section table: out of memory");
		w->tab = t;
		w->captab = cap;
	}
	w->tab[w->ntab++] = *s;
	return 0;
}

int vgpu_ckpt_begin(struct vgpu_ckpt_writer *w, uint32_t type, uint64_t id,
		    uint64_t aux, unsigned flags)
{
	if (usable(w, 0))
		return w->err;
	if (!type || type > 0xffff || (flags & ~VGPU_CKPT_B_RAW))
		return werr(w, -EINVAL, "begin: bad section type %u or flags 0x%x", type, flags);
	if (w->ntab >= VGPU_CKPT_MAX_SECTIONS)
		return werr(w, -E2BIG, "more than %u sections", VGPU_CKPT_MAX_SECTIONS);
	if (pad(w))
		return w->err;
	memset(&w->cur, 0, sizeof(w->cur));
	w->cur.type = type;
	w->cur.id = id;
	w->cur.aux = aux;
	w->cur.offset = wpos(w);
	w->crc = 0;
	w->zsec = w->cctx && !(flags & VGPU_CKPT_B_RAW);
	if (w->zsec) {
		size_t r = w->z->cctx_reset(w->cctx, VGPU_ZSTD_RESET_SESSION);

		if (w->z->is_error(r))
			return werr(w, -EIO, "zstd reset: %s", w->z->error_name(r));
		w->cur.compression = VGPU_CKPT_COMP_ZSTD;
	}
	w->in_sec = 1;
	return 0;
}

int vgpu_ckpt_write(struct vgpu_ckpt_writer *w, const void *buf, size_t len)
{
	if (usable(w, 1))
		return w->err;
	w->cur.raw_len += len;
	return w->zsec ? zfeed(w, buf, len, VGPU_ZSTD_E_CONTINUE) : emit(w, buf, len, 1);
}

int vgpu_ckpt_buf_get(struct vgpu_ckpt_writer *w, void **buf, size_t *cap)
{
	if (usable(w, 1))
		return w->err;
	if (w->zsec) {
		/* Its own buffer: compressed output goes to the fill buffers. */
		int i = ckpt_io_get(&w->io);

		if (i < 0)
			return io_err(w);
		w->sep = i;
		w->lent = 2;
		*buf = w->io.bufs[i].p;
		w->lent_cap = w->io.bufsize;
	} else {
		/* The fill buffer's tail: the bytes are written from where they land. */
		if (w->fill >= 0 && w->io.bufsize - w->fill_len < MIN_LEND && flush(w))
			return w->err;
		if (fill_room(w))
			return w->err;
		w->lent = 1;
		*buf = w->io.bufs[w->fill].p + w->fill_len;
		w->lent_cap = w->io.bufsize - w->fill_len;
	}
	*cap = w->lent_cap;
	return 0;
}

int vgpu_ckpt_buf_put(struct vgpu_ckpt_writer *w, size_t len)
{
	int lent = w->lent;

	if (w->err)
		return w->err;
	if (!lent)
		return werr(w, -EINVAL, "buf_put without buf_get");
	if (len > w->lent_cap)
		return werr(w, -EINVAL, "buf_put of %zu bytes into a %zu-byte buffer", len, w->lent_cap);
	w->lent = 0;
	w->cur.raw_len += len;
	if (lent == 2) {
		zfeed(w, w->io.bufs[w->sep].p, len, VGPU_ZSTD_E_CONTINUE);
		ckpt_io_put(&w->io, w->sep);
		return w->err;
	}
	w->crc = vgpu_crc32c(w->crc, w->io.bufs[w->fill].p + w->fill_len, len);
	w->cur.stored_len += len;
	w->fill_len += len;
	return 0;
}

int vgpu_ckpt_end(struct vgpu_ckpt_writer *w)
{
	if (usable(w, 1))
		return w->err;
	if (w->zsec && zfeed(w, NULL, 0, VGPU_ZSTD_E_END))
		return w->err;
	w->cur.crc = w->crc;
	if (w->zsec)
		w->hdr.flags |= VGPU_CKPT_F_COMPRESSED;
	w->in_sec = 0;
	return add_entry(w, &w->cur);
}

int vgpu_ckpt_reserve(struct vgpu_ckpt_writer *w, uint32_t type, uint64_t id, uint64_t aux,
		      uint64_t len, uint64_t *offset, unsigned *index)
{
	struct vgpu_ckpt_section s = { .type = type, .id = id, .aux = aux, .raw_len = len,
				       .stored_len = len, .compression = VGPU_CKPT_COMP_NONE };

	if (usable(w, 0))
		return w->err;
	if (!type || type > 0xffff)
		return werr(w, -EINVAL, "reserve: bad section type %u", type);
	if (pad(w) || flush(w))
		return w->err;
	s.offset = w->io.pos;
	if (add_entry(w, &s))
		return w->err;
	/* The caller's bytes go there; the next section starts after them. */
	w->io.pos += len;
	w->unfilled++;
	*offset = s.offset;
	*index = w->ntab - 1;
	return 0;
}

int vgpu_ckpt_filled(struct vgpu_ckpt_writer *w, unsigned index, uint32_t crc)
{
	if (w->err)
		return w->err;
	if (index >= w->ntab || w->tab[index].flags & VGPU_CKPT_SF_PARENT || !w->unfilled)
		return werr(w, -EINVAL, "filled: section %u was not reserved", index);
	w->tab[index].crc = crc;
	w->unfilled--;
	return 0;
}

int vgpu_ckpt_writer_fd(const struct vgpu_ckpt_writer *w)
{
	return w->fd;
}

int vgpu_ckpt_ref_parent(struct vgpu_ckpt_writer *w, uint32_t type, uint64_t id)
{
	struct vgpu_ckpt_section s;
	int i;

	if (usable(w, 0))
		return w->err;
	if (!w->parent)
		return werr(w, -EINVAL, "a section refers to the parent, but there is none "
			    "(not an incremental checkpoint)");
	i = vgpu_ckpt_find(w->parent, type, id);
	if (i < 0) {
		char nb[24];

		return werr(w, -ENOENT, "the parent has no %s section with id 0x%llx",
			    vgpu_ckpt_section_name(type, nb), (unsigned long long)id);
	}
	s = *vgpu_ckpt_section_at(w->parent, i);
	s.flags = VGPU_CKPT_SF_PARENT | (s.flags & VGPU_CKPT_SF_OPTIONAL);
	s.offset = 0;
	s.stored_len = 0;
	s.compression = VGPU_CKPT_COMP_NONE;
	return add_entry(w, &s);
}

static int write_header(struct vgpu_ckpt_writer *w)
{
	const char *p = (const char *)&w->hdr;
	size_t done = 0;

	while (done < sizeof(w->hdr)) {
		ssize_t n = pwrite(w->fd, p + done, sizeof(w->hdr) - done, done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return werr(w, n < 0 ? -errno : -EIO, "writing the header: %s",
				    n < 0 ? strerror(errno) : "no progress");
		done += n;
	}
	return 0;
}

static int sync_dir(struct vgpu_ckpt_writer *w)
{
	char *dir = strdup(w->path), *slash;
	int fd, ret = 0;

	if (!dir)
		return werr(w, -ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		ret = werr(w, -errno, "renamed, but syncing directory %s failed: %s", dir,
			   strerror(errno));
	if (fd >= 0)
		close(fd);
	free(dir);
	return ret;
}

int vgpu_ckpt_finish(struct vgpu_ckpt_writer *w)
{
	struct vgpu_ckpt_header *h = &w->hdr;
	uint64_t tsize = (uint64_t)w->ntab * sizeof(*w->tab);

	if (usable(w, 0) || pad(w))
		return w->err;
	if (w->unfilled)
		return werr(w, -EINVAL, "%u reserved sections were never filled", w->unfilled);
	h->section_count = w->ntab;
	h->table_offset = wpos(w);
	h->table_size = tsize;
	h->file_size = h->table_offset + tsize;
	h->table_crc = vgpu_crc32c(0, w->tab, tsize);
	if (emit(w, w->tab, tsize, 0) || flush(w))
		return w->err;
	if (ckpt_io_drain(&w->io))
		return io_err(w);
	/* Only matters when nothing followed the header: no sections at all. */
	if (ftruncate(w->fd, h->file_size) < 0)
		return werr(w, -errno, "ftruncate: %s", strerror(errno));
	h->header_crc = vgpu_ckpt_header_crc(h);
	if (write_header(w))
		return w->err;
	if (fsync(w->fd) < 0)
		return werr(w, -errno, "fsync: %s", strerror(errno));
	if (close(w->fd) < 0) {
		w->fd = -1;
		return werr(w, -errno, "close: %s", strerror(errno));
	}
	w->fd = -1;
	if (w->given) {		/* its name is the caller's business */
		w->renamed = 1;
		return 0;
	}
	if (rename(w->tmp, w->path) < 0)
		return werr(w, -errno, "renaming %s: %s", w->tmp, strerror(errno));
	w->renamed = 1;
	return sync_dir(w);
}

static int fill_header(struct vgpu_ckpt_writer *w, const struct vgpu_ckpt_writer_opts *o)
{
	struct vgpu_ckpt_header *h = &w->hdr;
	struct timespec ts;
	size_t got = 0;

	memcpy(h->magic, VGPU_CKPT_MAGIC, sizeof(h->magic));
	h->version = VGPU_CKPT_VERSION;
	h->header_size = sizeof(*h);
	h->driver_version = o->driver_version;
	h->session_id = o->session_id;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->created_ns = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
	h->gpu = *o->gpu;
	while (got < sizeof(h->file_id)) {
		ssize_t n = getrandom(h->file_id + got, sizeof(h->file_id) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return werr(w, -errno, "getrandom: %s", strerror(errno));
		got += n;
	}
	if (o->parent) {
		const struct vgpu_ckpt_header *ph = vgpu_ckpt_header(o->parent);

		h->flags |= VGPU_CKPT_F_INCREMENTAL;
		memcpy(h->parent_id, ph->file_id, sizeof(h->parent_id));
		h->parent_header_crc = ph->header_crc;
		w->parent = o->parent;
	}
	return 0;
}

static int check_opts(struct vgpu_ckpt_writer *w, const struct vgpu_ckpt_writer_opts *o,
		      unsigned *nbufs, size_t *bufsize)
{
	*nbufs = o->nbufs ? o->nbufs : DEFAULT_NBUFS;
	*bufsize = o->buf_size ? o->buf_size : DEFAULT_BUFSIZE;
	if (!o->gpu)
		return werr(w, -EINVAL, "no GPU identity given");
	if (!memchr(o->gpu->name, 0, sizeof(o->gpu->name)))
		return werr(w, -EINVAL, "GPU name longer than %zu bytes", sizeof(o->gpu->name) - 1);
	if (o->compress < 0 || o->compress > 22)
		return werr(w, -EINVAL, "compression level %d (1..22, 0 for none)", o->compress);
	if (*nbufs < 2 || *nbufs > 256)
		return werr(w, -EINVAL, "%u staging buffers (2..256)", *nbufs);
	if (*bufsize % VGPU_CKPT_ALIGN || *bufsize > (1u << 30))
		return werr(w, -EINVAL, "staging buffer size %zu (4 KiB multiple up to 1 GiB)",
			    *bufsize);
	if (o->flags & ~VGPU_CKPT_W_NO_URING)
		return werr(w, -EINVAL, "unknown writer flags 0x%x", o->flags);
	return 0;
}

static int setup_zstd(struct vgpu_ckpt_writer *w, int level)
{
	const char *why = "";
	size_t r;

	w->z = vgpu_zstd(&why);
	if (!w->z)
		return werr(w, -ENOPKG, "compression was asked for, but libzstd.so.1 cannot be "
			    "loaded (%s); install libzstd1 or checkpoint without --compress", why);
	w->cctx = w->z->create_cctx();
	if (!w->cctx)
		return werr(w, -ENOMEM, "zstd: cannot create a compression context");
	r = w->z->cctx_set(w->cctx, VGPU_ZSTD_C_LEVEL, level);
	if (w->z->is_error(r))
		return werr(w, -EINVAL, "zstd level %d: %s", level, w->z->error_name(r));
	return 0;
}

/*
 * Blocks taken and their pages faulted in (on tmpfs a read fault clears an
 * allocated page): the bytes written later only land. Best effort; the
 * finish cuts the file to its size.
 */
static void prealloc(int fd, uint64_t len)
{
	void *m;

	if (fallocate(fd, 0, 0, (off_t)len))
		return;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m != MAP_FAILED)
		munmap(m, len);
}

/* PATH.tmp.<pid>, created here: renamed to PATH by the finish. */
static int create_tmp(struct vgpu_ckpt_writer *w)
{
	if (asprintf(&w->tmp, "%s.tmp.%d", w->path, (int)getpid()) < 0) {
		w->tmp = NULL;
		return werr(w, -ENOMEM, "out of memory");
	}
	w->fd = open(w->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0)
		return werr(w, -errno, "cannot create %s: %s%s", w->tmp, strerror(errno),
			    errno == EEXIST ? " (a checkpoint of this file in progress?)" : "");
	w->created = 1;
	return 0;
}

/*
 * A file the caller opened: only a regular, empty one, open for reading and
 * writing (the landing maps it shared) and not for appending (the writes go
 * to their offsets). The writer keeps a duplicate.
 */
static int take_fd(struct vgpu_ckpt_writer *w, int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fstat(fd, &st) < 0)
		return werr(w, -EBADF, "not an open file");
	if (!S_ISREG(st.st_mode))
		return werr(w, -EINVAL, "not a regular file");
	if ((fl & O_ACCMODE) != O_RDWR || (fl & O_APPEND))
		return werr(w, -EBADF, "not open for reading and writing (or open for appending)");
	if (st.st_size)
		return werr(w, -EEXIST, "not empty");
	w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (w->fd < 0)
		return werr(w, -errno, "dup: %s", strerror(errno));
	w->given = 1;
	return 0;
}

static int writer_setup(struct vgpu_ckpt_writer *w, const struct vgpu_ckpt_writer_opts *o, int fd)
{
	unsigned nbufs;
	size_t bufsize;

	if (check_opts(w, o, &nbufs, &bufsize) || fill_header(w, o))
		return w->err;
	if (o->compress && setup_zstd(w, o->compress))
		return w->err;
	if (fd >= 0 ? take_fd(w, fd) : create_tmp(w))
		return w->err;
	if (o->prealloc)
		prealloc(w->fd, o->prealloc);
	if (ckpt_io_init(&w->io, w->fd, VGPU_CKPT_DATA_OFFSET, nbufs, bufsize,
			 o->flags & VGPU_CKPT_W_NO_URING ? CKPT_IO_NO_URING : 0))
		return io_err(w);
	return 0;
}

static int writer_open(struct vgpu_ckpt_writer **out, const char *path, int fd,
		       const struct vgpu_ckpt_writer_opts *o, char *err)
{
	struct vgpu_ckpt_writer *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w || !(w->path = strdup(path))) {
		free(w);
		snprintf(err, VGPU_CKPT_MSG, "%.200s: out of memory", path);
		return -ENOMEM;
	}
	w->fd = -1;
	w->fill = -1;
	if (writer_setup(w, o, fd)) {
		int ret = w->err;

		snprintf(err, VGPU_CKPT_MSG, "%s", w->msg);
		vgpu_ckpt_writer_close(w);
		return ret;
	}
	*out = w;
	return 0;
}

int vgpu_ckpt_writer_open(struct vgpu_ckpt_writer **out, const char *path,
			  const struct vgpu_ckpt_writer_opts *o, char *err)
{
	return writer_open(out, path, -1, o, err);
}

int vgpu_ckpt_writer_open_fd(struct vgpu_ckpt_writer **out, int fd, const char *name,
			     const struct vgpu_ckpt_writer_opts *o, char *err)
{
	if (fd < 0) {
		*out = NULL;
		snprintf(err, VGPU_CKPT_MSG, "%.200s: no file", name);
		return -EBADF;
	}
	return writer_open(out, name, fd, o, err);
}

void vgpu_ckpt_writer_close(struct vgpu_ckpt_writer *w)
{
	if (!w)
		return;
	ckpt_io_exit(&w->io);
	if (w->fd >= 0)
		close(w->fd);
	if (w->created && !w->renamed)
		unlink(w->tmp);
	if (w->cctx)
		w->z->free_cctx(w->cctx);
	free(w->tab);
	free(w->tmp);
	free(w->path);
	free(w);
}

const char *vgpu_ckpt_writer_error(const struct vgpu_ckpt_writer *w)
{
	return w->err ? w->msg : "no error";
}

void vgpu_ckpt_writer_buffers(const struct vgpu_ckpt_writer *w, void **base, size_t *size)
{
	*base = w->io.base;
	*size = (size_t)w->io.nbufs * w->io.bufsize;
}

int vgpu_ckpt_writer_uring(const struct vgpu_ckpt_writer *w)
{
	return w->io.uring;
}
