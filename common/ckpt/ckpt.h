/* SPDX-License-Identifier: MIT */
/*
 * Writing and reading checkpoint files (format: include/vgpu/ckpt.h).
 *
 * Writer
 *   vgpu_ckpt_writer_open   creates PATH.tmp.<pid> (O_EXCL, O_CLOEXEC, 0600)
 *   vgpu_ckpt_begin         starts a section (type, id, aux)
 *     vgpu_ckpt_write       appends bytes (copied; the caller's buffer is
 *                           free again on return), or, without a copy:
 *     vgpu_ckpt_buf_get     lends out staging memory to fill (a DMA target:
 *     vgpu_ckpt_buf_put     vgpu_ckpt_writer_buffers gives the whole pool to
 *                           register once), then queues its first len bytes
 *   vgpu_ckpt_end           closes the section
 *   vgpu_ckpt_ref_parent    (incremental) a section whose bytes the parent has
 *   vgpu_ckpt_finish        table, header, fsync, rename to PATH, fsync dir
 *   vgpu_ckpt_writer_close  frees; without a successful finish, unlinks the
 *                           temporary file (this is "abort")
 *   Writes go out as staging buffers fill, several in flight (io_uring; pwrite
 *   where io_uring cannot be set up). The first error sticks: every later call
 *   returns it, vgpu_ckpt_writer_error says what happened, and close removes
 *   the temporary file; PATH is only ever replaced by a complete, synced file.
 *
 * Reader
 *   vgpu_ckpt_reader_open   (or _open_fd, on a descriptor: regular files only)
 *                           validates the header, the table and every
 *                           section's bounds; with VGPU_CKPT_VERIFY every
 *                           section's checksum and the zero padding too; and
 *                           that the file suits this GPU and driver
 *   vgpu_ckpt_section_at / vgpu_ckpt_find     the table
 *   vgpu_ckpt_open_chain    (or _chain_fds) a file and all its parents
 *   vgpu_ckpt_attach_parent (incremental) the parent, checked against the
 *                           header; SF_PARENT sections then read from it
 *   vgpu_ckpt_read_begin / vgpu_ckpt_read     a section's raw bytes in pieces
 *                           (decompressed); the checksum is checked when its
 *                           last stored byte is read, so the call that would
 *                           return the end of a damaged section fails instead,
 *                           and 0 (end) means every byte was good.
 *   One section is read at a time per reader; open the file again for more.
 *
 * Errors are -errno, with a message naming the file (vgpu_ckpt_show: bounded,
 * escaped) and what is wrong, never quoting the file's bytes:
 *   -EBADMSG          damaged or inconsistent: truncated, checksum mismatch,
 *                     an offset or length out of bounds, bad compressed data
 *   -ENOEXEC          not a checkpoint (magic)
 *   -EPROTONOSUPPORT  another format version, unknown flags, compression or
 *                     section type
 *   -EXDEV            made on another GPU or a newer driver (the message
 *                     names both), or another parent
 *   -ENOPKG           compression needs libzstd.so.1, which cannot be loaded
 *   -EINVAL           not a regular file (a FIFO, a directory, a device), or
 *                     a misuse (unknown flags, a descriptor no parent)
 *   others            from the system: -ENOSPC, -EIO, -EFBIG, -EEXIST, ...
 */
#ifndef VGPU_CKPT_API_H
#define VGPU_CKPT_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vgpu/ckpt.h"

#define VGPU_CKPT_MSG 512	/* error messages fit this */

/* ---- writer ---------------------------------------------------------- */

#define VGPU_CKPT_W_NO_URING	(1u << 0)	/* pwrite only */

struct vgpu_ckpt_writer_opts {
	const struct vgpu_ckpt_gpu *gpu;	/* required */
	uint32_t driver_version;
	uint64_t session_id;
	int compress;		/* zstd level for every section (1..19); 0: none */
	const struct vgpu_ckpt_reader *parent;	/* incremental: the previous one */
	unsigned nbufs;		/* staging buffers; 0: 8 */
	size_t buf_size;	/* bytes each, multiple of 4 KiB; 0: 4 MiB */
	unsigned flags;		/* VGPU_CKPT_W_* */
	uint64_t prealloc;	/* bytes to allocate and fault in at open, so that
				 * writing them later (by a program that waits)
				 * costs no page allocation; 0: none */
};

struct vgpu_ckpt_writer;

/* On failure *out is NULL and err (VGPU_CKPT_MSG bytes) says why. */
int vgpu_ckpt_writer_open(struct vgpu_ckpt_writer **out, const char *path,
			  const struct vgpu_ckpt_writer_opts *o, char *err);
/*
 * The same into a file the caller opened (a daemon writes into the file its
 * client created, with the client's rights): a regular, empty file open
 * O_RDWR and not O_APPEND, else refused. The writer keeps a duplicate of fd;
 * the finish syncs it and renames nothing (the caller names the file), and
 * a close without a finish removes nothing. name: for messages and the
 * record only.
 */
int vgpu_ckpt_writer_open_fd(struct vgpu_ckpt_writer **out, int fd, const char *name,
			     const struct vgpu_ckpt_writer_opts *o, char *err);
#define VGPU_CKPT_B_RAW	(1u << 0)	/* begin: store this section uncompressed */
int vgpu_ckpt_begin(struct vgpu_ckpt_writer *w, uint32_t type, uint64_t id,
		    uint64_t aux, unsigned flags);
int vgpu_ckpt_write(struct vgpu_ckpt_writer *w, const void *buf, size_t len);
int vgpu_ckpt_buf_get(struct vgpu_ckpt_writer *w, void **buf, size_t *cap);
int vgpu_ckpt_buf_put(struct vgpu_ckpt_writer *w, size_t len);
int vgpu_ckpt_end(struct vgpu_ckpt_writer *w);
/*
 * A plain section of len bytes that the caller writes itself, from any
 * thread, at *offset of vgpu_ckpt_writer_fd(); then vgpu_ckpt_filled() with
 * the CRC32C of those bytes. Every reserved section is filled before finish.
 */
int vgpu_ckpt_reserve(struct vgpu_ckpt_writer *w, uint32_t type, uint64_t id, uint64_t aux,
		      uint64_t len, uint64_t *offset, unsigned *index);
int vgpu_ckpt_filled(struct vgpu_ckpt_writer *w, unsigned index, uint32_t crc);
int vgpu_ckpt_writer_fd(const struct vgpu_ckpt_writer *w);
int vgpu_ckpt_ref_parent(struct vgpu_ckpt_writer *w, uint32_t type, uint64_t id);
int vgpu_ckpt_finish(struct vgpu_ckpt_writer *w);
void vgpu_ckpt_writer_close(struct vgpu_ckpt_writer *w);
const char *vgpu_ckpt_writer_error(const struct vgpu_ckpt_writer *w);
/* The staging pool (to register with the GPU once), and whether io_uring writes it. */
void vgpu_ckpt_writer_buffers(const struct vgpu_ckpt_writer *w, void **base, size_t *size);
int vgpu_ckpt_writer_uring(const struct vgpu_ckpt_writer *w);

/* ---- reader ---------------------------------------------------------- */

/* What the file must match; NULL fields are not checked. */
#define VGPU_CKPT_SAME_GPU	(1u << 0)	/* this very GPU (UUID), not just the model */
#define VGPU_CKPT_SAME_DRIVER	(1u << 1)	/* exactly this driver, not just >= */
struct vgpu_ckpt_expect {
	const struct vgpu_ckpt_gpu *gpu;	/* same name and compute capability */
	uint32_t driver_version;	/* 0: any; else the file's must be <= */
	unsigned match;			/* VGPU_CKPT_SAME_* */
};

#define VGPU_CKPT_VERIFY	(1u << 0)	/* open: check every section's CRC now */

struct vgpu_ckpt_reader;

/*
 * The file at path, opened O_NONBLOCK (a FIFO cannot block the caller) and
 * refused unless it is a regular file. On failure *out is NULL and err
 * (VGPU_CKPT_MSG bytes) says why; messages never quote the file's content.
 */
int vgpu_ckpt_reader_open(struct vgpu_ckpt_reader **out, const char *path,
			  const struct vgpu_ckpt_expect *ex, unsigned flags, char *err);
/*
 * The same on an open file: the reader keeps a duplicate of fd
 * (F_DUPFD_CLOEXEC), the caller still owns and closes fd. name is for the
 * messages only (NULL: "checkpoint"). Anything but a regular file is refused;
 * O_NONBLOCK is cleared on the open file description of a regular one.
 */
int vgpu_ckpt_reader_open_fd(struct vgpu_ckpt_reader **out, int fd, const char *name,
			     const struct vgpu_ckpt_expect *ex, unsigned flags, char *err);
void vgpu_ckpt_reader_close(struct vgpu_ckpt_reader *r);
const char *vgpu_ckpt_reader_error(const struct vgpu_ckpt_reader *r);
/* The name its messages give the file (bounded, escaped). */
const char *vgpu_ckpt_reader_name(const struct vgpu_ckpt_reader *r);
const struct vgpu_ckpt_header *vgpu_ckpt_header(const struct vgpu_ckpt_reader *r);
unsigned vgpu_ckpt_count(const struct vgpu_ckpt_reader *r);
const struct vgpu_ckpt_section *vgpu_ckpt_section_at(const struct vgpu_ckpt_reader *r, unsigned i);
/* Index of the section (type, id), or -ENOENT. */
int vgpu_ckpt_find(const struct vgpu_ckpt_reader *r, uint32_t type, uint64_t id);
int vgpu_ckpt_verify(struct vgpu_ckpt_reader *r);
/* The reader keeps parent (not owned) for SF_PARENT sections. */
int vgpu_ckpt_attach_parent(struct vgpu_ckpt_reader *r, struct vgpu_ckpt_reader *parent);
/* The same, and parent is closed with r. */
int vgpu_ckpt_adopt_parent(struct vgpu_ckpt_reader *r, struct vgpu_ckpt_reader *parent);
struct vgpu_ckpt_reader *vgpu_ckpt_parent(const struct vgpu_ckpt_reader *r);
/* Where section i's stored bytes are: *rr's section *ri, SF_PARENT followed
 * through the attached parents. */
void vgpu_ckpt_resolve(struct vgpu_ckpt_reader *r, unsigned i, struct vgpu_ckpt_reader **rr,
		       unsigned *ri);
/*
 * A checkpoint and, if it is incremental, its parents, each adopted by its
 * child (close the first to close them all). A parent is looked for at the
 * path its child's PARENT section names, then under the same name in the
 * child's folder; at most VGPU_CKPT_MAX_CHAIN files. flags and ex apply to
 * each; the errors name the file at fault ("its parent ... is missing").
 */
#define VGPU_CKPT_MAX_CHAIN 64
int vgpu_ckpt_open_chain(struct vgpu_ckpt_reader **out, const char *path,
			 const struct vgpu_ckpt_expect *ex, unsigned flags, char *err);
/*
 * The same from open files, opening no path: fds[0] is the checkpoint,
 * fds[k + 1] the parent of fds[k], each checked to be the very parent its
 * child records. Too few (the chain needs a parent not given: -ENOENT, the
 * message names the recorded path) or too many (-EINVAL) are refused, as are
 * more than VGPU_CKPT_MAX_CHAIN. Each reader keeps a duplicate of its fd.
 */
int vgpu_ckpt_open_chain_fds(struct vgpu_ckpt_reader **out, const int *fds, unsigned nfds,
			     const char *name, const struct vgpu_ckpt_expect *ex, unsigned flags,
			     char *err);
/* Files in r's chain, r included. */
unsigned vgpu_ckpt_chain_length(const struct vgpu_ckpt_reader *r);
int vgpu_ckpt_read_begin(struct vgpu_ckpt_reader *r, unsigned i);
/* Up to len raw bytes of the current section; 0 at its (verified) end. */
ssize_t vgpu_ckpt_read(struct vgpu_ckpt_reader *r, void *buf, size_t len);
/* Section i's raw bytes whole, into a fresh buffer (free it; one NUL byte
 * follows them); a section of more than cap raw bytes is refused. */
int vgpu_ckpt_read_whole(struct vgpu_ckpt_reader *r, unsigned i, size_t cap, void **out,
			 size_t *len);
/* The record table section (type, id) whole: *n records of size bytes
 * (its aux), the blob after them up to *len. No such section: 0, *rec NULL. */
int vgpu_ckpt_read_records(struct vgpu_ckpt_reader *r, uint32_t type, uint64_t id, size_t size,
			   size_t cap, void **rec, size_t *n, size_t *len);
/*
 * For callers that read a plain (uncompressed, not the parent's) section's
 * stored bytes themselves, in parallel: the file (pread at the section's
 * offset), and the check of the CRC32C they computed over all of them.
 */
int vgpu_ckpt_reader_fd(const struct vgpu_ckpt_reader *r);
int vgpu_ckpt_check_crc(struct vgpu_ckpt_reader *r, unsigned i, uint32_t crc);

/* ---- both ------------------------------------------------------------ */

/* "allocation data", ..., or "type 0x42". buf: 24 bytes, used for unknown types. */
const char *vgpu_ckpt_section_name(uint32_t type, char *buf);
/* True for a section type this build reads (types in the gaps between the
 * blocks of ckpt.h are not). */
int vgpu_ckpt_section_known(uint32_t type);
/* "'NAME' (GPU-xxxxxxxx-xxxx-..., sm_90, 80 GiB)" into buf (256 bytes). */
const char *vgpu_ckpt_gpu_describe(const struct vgpu_ckpt_gpu *g, char *buf);
/*
 * A name (a path, or one a file records) fit for a message into buf
 * (VGPU_CKPT_NAME bytes): bytes that are not printable ASCII and the
 * backslash as \xNN, and of a longer one only "..." and its tail.
 */
#define VGPU_CKPT_NAME 128
const char *vgpu_ckpt_show(const char *name, char *buf);
/* CRC32C of the header's first 508 bytes: what header_crc must hold. */
uint32_t vgpu_ckpt_header_crc(const struct vgpu_ckpt_header *h);

#endif
