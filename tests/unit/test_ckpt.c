// SPDX-License-Identifier: MIT
/*
 * The checkpoint file on its own (common/ckpt*.c): CRC32C values and speed,
 * round trips through io_uring and pwrite (also with io_uring blocked by
 * seccomp), compressed and not, sections from 0 bytes to 24 MiB written in
 * pieces; incremental files and their parents; every kind of damage
 * (truncation, a flipped byte in the header, the padding, the table and
 * each section, another version, magic, GPU or driver, hostile fields with
 * valid checksums, random mutations), each refused with its own message;
 * running out of disk (RLIMIT_FSIZE, a full tmpfs) and missing libzstd, with
 * no file left behind and the previous checkpoint untouched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "ckpt_crc.h"
#include "ckpt_zstd.h"

#include "check.h"

static int skips;


static char dir[256];
static char path[300], path2[300];
static int have_zstd, have_uring;

static const struct vgpu_ckpt_gpu gpu_a = {
	.name = "NVIDIA H100 80GB HBM3",
	.uuid = { 0x5b, 0x1e, 0x2c, 0x3d, 0x01, 0x02, 0x03, 0x04,
		  0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c },
	.cc_major = 9, .cc_minor = 0, .total_mem = 80ull << 30,
};
static const struct vgpu_ckpt_gpu gpu_b = {
	.name = "host backend",
	.uuid = { 0xaa, 0xbb },
	.cc_major = 8, .cc_minor = 0, .total_mem = 16ull << 30,
};
#define DRIVER 13000u

/* ---- deterministic contents ------------------------------------------ */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Byte pos of a section seeded seed: random, or mostly runs (compressible). */
static void gen(uint64_t seed, int runs, uint64_t pos, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++, pos++) {
		if (runs && pos % 4096 >= 64)
			buf[i] = (uint8_t)(pos / 4096 + seed);
		else
			buf[i] = (uint8_t)(mix(seed ^ (pos >> 3) << 8) >> (pos & 7) * 8);
	}
}

static uint64_t rng = 42;

static uint64_t rnd(uint64_t n)
{
	rng = mix(rng);
	return n ? rng % n : 0;
}

struct spec {
	uint32_t type;
	uint64_t id;
	uint64_t size;
	int runs;		/* compressible */
	unsigned flags;		/* VGPU_CKPT_B_* */
	int parent;		/* a reference to the parent's section */
	uint64_t seed;
};

static void wopts(struct vgpu_ckpt_writer_opts *o, int compress, unsigned flags)
{
	memset(o, 0, sizeof(*o));
	o->gpu = &gpu_a;
	o->driver_version = DRIVER;
	o->session_id = 7;
	o->compress = compress;
	o->flags = flags;
}

/* Stream one section in pieces of random size, by copy or by borrowed buffer. */
static int put_section(struct vgpu_ckpt_writer *w, const struct spec *s, uint64_t maxpiece)
{
	static uint8_t piece[3 << 20];
	int ret = vgpu_ckpt_begin(w, s->type, s->id, 0, s->flags);

	for (uint64_t off = 0; !ret && off < s->size;) {
		uint64_t n = 1 + rnd(maxpiece);

		if (n > s->size - off)
			n = s->size - off;
		if (rnd(2)) {
			void *buf;
			size_t cap;

			ret = vgpu_ckpt_buf_get(w, &buf, &cap);
			if (ret)
				break;
			if (n > cap)
				n = cap;
			gen(s->seed, s->runs, off, buf, n);
			ret = vgpu_ckpt_buf_put(w, n);
		} else {
			if (n > sizeof(piece))
				n = sizeof(piece);
			gen(s->seed, s->runs, off, piece, n);
			ret = vgpu_ckpt_write(w, piece, n);
		}
		off += n;
	}
	return ret ? ret : vgpu_ckpt_end(w);
}

static int write_file(const char *p, const struct vgpu_ckpt_writer_opts *o,
		      const struct spec *s, int n, uint64_t maxpiece, char *msg)
{
	struct vgpu_ckpt_writer *w;
	int ret = vgpu_ckpt_writer_open(&w, p, o, msg);

	if (ret)
		return ret;
	for (int i = 0; i < n && !ret; i++)
		ret = s[i].parent ? vgpu_ckpt_ref_parent(w, s[i].type, s[i].id)
				  : put_section(w, &s[i], maxpiece);
	if (!ret)
		ret = vgpu_ckpt_finish(w);
	if (ret)
		snprintf(msg, VGPU_CKPT_MSG, "%s", vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	return ret;
}

/* Read section i in random pieces and compare with what gen makes. */
static int section_matches(struct vgpu_ckpt_reader *r, int i, const struct spec *s)
{
	static uint8_t got[1 << 20], want[1 << 20];
	uint64_t off = 0;
	ssize_t n;

	if (vgpu_ckpt_read_begin(r, i))
		return 0;
	while ((n = vgpu_ckpt_read(r, got, 1 + rnd(sizeof(got)))) > 0) {
		if (off + n > s->size)
			return 0;
		gen(s->seed, s->runs, off, want, n);
		if (memcmp(got, want, n))
			return 0;
		off += n;
	}
	return n == 0 && off == s->size;
}

static int check_file(const char *p, const struct spec *s, int n, struct vgpu_ckpt_reader *parent)
{
	struct vgpu_ckpt_expect ex = { &gpu_a, DRIVER, VGPU_CKPT_SAME_GPU | VGPU_CKPT_SAME_DRIVER };
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	int ok = 1;

	if (vgpu_ckpt_reader_open(&r, p, &ex, VGPU_CKPT_VERIFY, msg)) {
		printf("  open: %s\n", msg);
		return 0;
	}
	if (parent && vgpu_ckpt_attach_parent(r, parent)) {
		printf("  attach: %s\n", vgpu_ckpt_reader_error(r));
		ok = 0;
	}
	ok &= vgpu_ckpt_count(r) == (unsigned)n;
	for (int k = 0; ok && k < n; k++) {
		int i = vgpu_ckpt_find(r, s[k].type, s[k].id);
		const struct vgpu_ckpt_section *e = vgpu_ckpt_section_at(r, i);

		if (i != k || e->raw_len != s[k].size) {
			printf("  section %d: index %d\n", k, i);
			ok = 0;
		} else if (!section_matches(r, i, &s[k])) {
			printf("  section %d differs: %s\n", k, vgpu_ckpt_reader_error(r));
			ok = 0;
		}
	}
	vgpu_ckpt_reader_close(r);
	return ok;
}

/* No PATH.tmp.* is left in dir d. */
static int no_temp(const char *d)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	int found = 0;

	while (dp && (e = readdir(dp)))
		found |= strstr(e->d_name, ".tmp.") != NULL;
	if (dp)
		closedir(dp);
	return dp && !found;
}

static int file_is(const char *p, const char *content)
{
	char buf[64] = "";
	int fd = open(p, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n >= 0 && (size_t)n == strlen(content) && !memcmp(buf, content, n);
}

static void put_file(const char *p, const void *buf, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len, "write %s", p);
	close(fd);
}

static uint8_t *get_file(const char *p, size_t *len)
{
	struct stat st;
	int fd = open(p, O_RDONLY);
	uint8_t *buf;

	if (fd < 0 || fstat(fd, &st))
		return NULL;
	buf = malloc(st.st_size + 1);
	if (buf && read(fd, buf, st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = st.st_size;
	return buf;
}

/* Runs fn in a child process; its exit status (0 pass, 77 skip, else fail). */
static int in_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int ret = fn(arg);

		fflush(stdout);
		_exit(ret);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- CRC32C ---------------------------------------------------------- */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void test_crc(void)
{
	size_t n = 64 << 20;
	uint8_t *b = malloc(n);
	int same = 1;
	double t0, t1, t2;
	uint32_t x = 0;

	CHECK(vgpu_crc32c(0, "123456789", 9) == 0xe3069283, "crc32c check value");
	CHECK(vgpu_crc32c_sw(0, "123456789", 9) == 0xe3069283, "slice-by-8 check value");
	CHECK(vgpu_crc32c(0, "", 0) == 0, "empty");
	gen(1, 0, 0, b, n);
	for (int i = 0; i < 300; i++) {
		size_t off = rnd(64), len = rnd(i < 200 ? 20000 : 1 << 20);
		size_t cut = rnd(len + 1);
		uint32_t one = vgpu_crc32c(0, b + off, len);

		same &= one == vgpu_crc32c_sw(0, b + off, len);
		same &= one == vgpu_crc32c(vgpu_crc32c(0, b + off, cut), b + off + cut, len - cut);
	}
	CHECK(same, "%s and slice-by-8 agree, in one piece or two", vgpu_crc32c_impl());
	same = 1;
	for (int i = 0; i < 300; i++) {
		size_t len = rnd(i < 200 ? 20000 : n), cut = rnd(len + 1);

		same &= vgpu_crc32c(0, b, len) ==
			vgpu_crc32c_combine(vgpu_crc32c(0, b, cut), vgpu_crc32c(0, b + cut, len - cut),
					    len - cut);
	}
	CHECK(same, "crc of two pieces combined = crc of the whole");
	CHECK(vgpu_crc32c_combine(0xe3069283, 0, 0) == 0xe3069283, "combined with nothing");
	t0 = now();
	for (int i = 0; i < 4; i++)
		x ^= vgpu_crc32c(0, b, n);
	t1 = now();
	x ^= vgpu_crc32c_sw(0, b, n);
	t2 = now();
	printf("crc32c: %s %.0f MB/s, slice-by-8 %.0f MB/s (%x)\n", vgpu_crc32c_impl(),
	       4 * n / 1e6 / (t1 - t0), n / 1e6 / (t2 - t1), x);
	free(b);
}

/* ---- round trips ----------------------------------------------------- */

static struct spec round_specs[] = {
	{ VGPU_CKPT_SEC_ALLOCS, 0, 0, 0, 0, 0, 1 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000000000, 1, 0, 0, 0, 2 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000200000, 4095, 1, 0, 0, 3 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000400000, 4096, 0, 0, 0, 4 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000600000, 4097, 1, VGPU_CKPT_B_RAW, 0, 5 },
	{ VGPU_CKPT_SEC_MODULE_IMAGE, 0xfeedface, (1 << 20) + 3, 1, 0, 0, 6 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0001000000, 24 << 20, 0, 0, 0, 7 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0003000000, 24 << 20, 1, 0, 0, 8 },
	{ VGPU_CKPT_SEC_STREAMS, 0, 96, 0, 0, 0, 9 },
};
#define NROUND (int)(sizeof(round_specs) / sizeof(round_specs[0]))

static void round_trip(int compress, unsigned wflags, unsigned nbufs, size_t bufsize,
		       uint64_t maxpiece)
{
	struct vgpu_ckpt_writer_opts o;
	char msg[VGPU_CKPT_MSG] = "";
	int ret;

	if (compress && !have_zstd) {
		skips++;
		return;
	}
	wopts(&o, compress, wflags);
	o.nbufs = nbufs;
	o.buf_size = bufsize;
	unlink(path);
	ret = write_file(path, &o, round_specs, NROUND, maxpiece, msg);
	CHECK(ret == 0, "write (compress %d, flags %u, %u x %zu): %s", compress, wflags, nbufs,
	      bufsize, msg);
	CHECK(no_temp(dir), "no temporary file left");
	CHECK(check_file(path, round_specs, NROUND, NULL),
	      "read back (compress %d, flags %u, %u x %zu)", compress, wflags, nbufs, bufsize);
}

static void test_round_trips(void)
{
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	char msg[VGPU_CKPT_MSG];
	void *base, *buf;
	size_t size, cap;

	for (int c = 0; c <= 3; c += 3)
		for (unsigned f = 0; f <= VGPU_CKPT_W_NO_URING; f++) {
			round_trip(c, f, 0, 0, 3 << 20);
			round_trip(c, f, 3, 64 << 10, 200 << 10);
		}
	round_trip(0, 0, 2, 4096, 10000);
	unlink(path);
	wopts(&o, 0, 0);
	CHECK(write_file(path, &o, NULL, 0, 1, msg) == 0, "no sections: %s", msg);
	CHECK(check_file(path, NULL, 0, NULL), "an empty checkpoint reads back");

	/* Which path writes, and the pool handed out for DMA. */
	wopts(&o, 0, 0);
	o.nbufs = 4;
	o.buf_size = 1 << 20;
	unlink(path);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "open: %s", msg);
	CHECK(vgpu_ckpt_writer_uring(w) == have_uring, "io_uring used where it works");
	vgpu_ckpt_writer_buffers(w, &base, &size);
	CHECK(vgpu_ckpt_begin(w, VGPU_CKPT_SEC_ALLOC_DATA, 1, 0, 0) == 0 &&
	      vgpu_ckpt_buf_get(w, &buf, &cap) == 0, "buf_get");
	CHECK(size == 4 << 20 && (char *)buf >= (char *)base &&
	      (char *)buf + cap <= (char *)base + size, "lent buffer inside the pool");
	CHECK(vgpu_ckpt_buf_put(w, cap + 1) == -EINVAL, "put more than lent");
	vgpu_ckpt_writer_close(w);
	CHECK(access(path, F_OK) && no_temp(dir), "abandoned: nothing left");
	wopts(&o, 0, VGPU_CKPT_W_NO_URING);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0 && !vgpu_ckpt_writer_uring(w),
	      "pwrite when asked");
	vgpu_ckpt_writer_close(w);
}

/* Reserved sections, filled by the caller at their offsets, between
 * written ones; unfilled ones stop the finish. */
static void test_reserve(void)
{
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	struct vgpu_ckpt_reader *r;
	size_t len = (3 << 20) + 123;
	uint8_t *b = malloc(len), *back = malloc(len);
	uint64_t off[2];
	unsigned idx[2];
	char msg[VGPU_CKPT_MSG];
	int fd, k;

	gen(9, 0, 0, b, len);
	wopts(&o, 0, 0);
	unlink(path);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "open: %s", msg);
	fd = vgpu_ckpt_writer_fd(w);
	CHECK(vgpu_ckpt_reserve(w, VGPU_CKPT_SEC_ALLOC_DATA, 1, 0, len, &off[0], &idx[0]) == 0 &&
	      off[0] % VGPU_CKPT_ALIGN == 0, "reserve");
	CHECK(vgpu_ckpt_begin(w, VGPU_CKPT_SEC_MODULE_IMAGE, 2, 0, 0) == 0 &&
	      vgpu_ckpt_write(w, b, 5000) == 0 && vgpu_ckpt_end(w) == 0, "a written section after it");
	CHECK(vgpu_ckpt_reserve(w, VGPU_CKPT_SEC_ALLOC_DATA, 3, 0, 4096, &off[1], &idx[1]) == 0 &&
	      off[1] >= off[0] + len + 5000, "a second reserve after both");
	/* Pieces out of order, as threads write them. */
	CHECK(pwrite(fd, b + 4096, len - 4096, (off_t)off[0] + 4096) == (ssize_t)(len - 4096) &&
	      pwrite(fd, b, 4096, (off_t)off[0]) == 4096 && pwrite(fd, b, 4096, (off_t)off[1]) == 4096,
	      "caller's writes");
	CHECK(vgpu_ckpt_filled(w, idx[0], vgpu_crc32c_combine(vgpu_crc32c(0, b, 4096),
							   vgpu_crc32c(0, b + 4096, len - 4096),
							   len - 4096)) == 0, "filled");
	CHECK(vgpu_ckpt_finish(w) == -EINVAL && strstr(vgpu_ckpt_writer_error(w), "never filled"),
	      "an unfilled reserve stops the finish: %s", vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	CHECK(access(path, F_OK) && no_temp(dir), "nothing left of it");

	unlink(path);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "open again: %s", msg);
	CHECK(vgpu_ckpt_filled(w, 0, 0) == -EINVAL, "filled without a reserve");
	vgpu_ckpt_writer_close(w);
	unlink(path);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "open a third time: %s", msg);
	fd = vgpu_ckpt_writer_fd(w);
	CHECK(vgpu_ckpt_reserve(w, VGPU_CKPT_SEC_ALLOC_DATA, 1, 0, len, &off[0], &idx[0]) == 0 &&
	      pwrite(fd, b, len, (off_t)off[0]) == (ssize_t)len &&
	      vgpu_ckpt_filled(w, idx[0], vgpu_crc32c(0, b, len)) == 0 &&
	      vgpu_ckpt_finish(w) == 0, "reserved, written, filled, finished: %s",
	      vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	r = NULL;
	CHECK(vgpu_ckpt_reader_open(&r, path, NULL, VGPU_CKPT_VERIFY, msg) == 0, "verifies: %s", msg);
	if (r) {
		k = vgpu_ckpt_find(r, VGPU_CKPT_SEC_ALLOC_DATA, 1);
		CHECK(k >= 0 && vgpu_ckpt_read_begin(r, (unsigned)k) == 0 &&
		      vgpu_ckpt_read(r, back, len) == (ssize_t)len && !memcmp(b, back, len),
		      "its bytes read back");
		CHECK(k >= 0 && pread(vgpu_ckpt_reader_fd(r), back, 4096,
				     (off_t)vgpu_ckpt_section_at(r, (unsigned)k)->offset) == 4096 &&
		      !memcmp(b, back, 4096), "the reader's descriptor reads the section");
		CHECK(k >= 0 && vgpu_ckpt_check_crc(r, (unsigned)k, vgpu_crc32c(0, b, len)) == 0,
		      "the right CRC passes");
		CHECK(k >= 0 && vgpu_ckpt_check_crc(r, (unsigned)k, 1) == -EBADMSG &&
		      strstr(vgpu_ckpt_reader_error(r), "checksum mismatch"),
		      "a wrong one is a mismatch: %s", vgpu_ckpt_reader_error(r));
		vgpu_ckpt_reader_close(r);
	}
	free(b);
	free(back);
}

/* A seccomp filter that fails io_uring_setup with ENOSYS, as container runtimes do. */
static int no_uring_child(void *arg)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	char msg[VGPU_CKPT_MSG];
	int ret;

	(void)arg;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return 77;
	wopts(&o, 0, 0);
	o.nbufs = 3;
	o.buf_size = 64 << 10;
	if (vgpu_ckpt_writer_open(&w, path, &o, msg)) {
		printf("  %s\n", msg);
		return 1;
	}
	ret = vgpu_ckpt_writer_uring(w) ? 2 : 0;
	vgpu_ckpt_writer_close(w);
	if (ret)
		return ret;
	unlink(path);
	return write_file(path, &o, round_specs, 7, 100 << 10, msg) ? 3 : 0;
}

static void test_seccomp(void)
{
	int st = in_child(no_uring_child, NULL);

	if (st == 77) {
		skips++;
		printf("SKIP seccomp: cannot install a filter\n");
		return;
	}
	CHECK(st == 0, "writer under a seccomp filter without io_uring: status %d", st);
	CHECK(check_file(path, round_specs, 7, NULL), "pwrite fallback file reads back");
}

/* ---- damage ----------------------------------------------------------- */

static struct spec base_specs[] = {
	{ VGPU_CKPT_SEC_ALLOCS, 0, 128, 0, 0, 0, 11 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000000000, 0, 0, 0, 0, 12 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000200000, 5000, 0, 0, 0, 13 },
	{ VGPU_CKPT_SEC_MODULE_IMAGE, 0xabcdef, 70000, 1, 0, 0, 14 },
	{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000400000, 300000, 0, VGPU_CKPT_B_RAW, 0, 15 },
	{ VGPU_CKPT_SEC_HANDLES, 0, 48, 0, 0, 0, 16 },
};
#define NBASE (int)(sizeof(base_specs) / sizeof(base_specs[0]))

static uint8_t *base;
static size_t base_len;

static struct vgpu_ckpt_header *hdr_of(uint8_t *b)
{
	return (struct vgpu_ckpt_header *)b;
}

static struct vgpu_ckpt_section *tab_of(uint8_t *b)
{
	return (struct vgpu_ckpt_section *)(b + hdr_of(base)->table_offset);
}

/* Recompute the table and header checksums after editing fields. */
static void reseal(uint8_t *b, size_t len)
{
	struct vgpu_ckpt_header *h = hdr_of(b);

	if (h->table_offset < len && len - h->table_offset >= h->table_size)
		h->table_crc = vgpu_crc32c(0, b + h->table_offset, h->table_size);
	h->header_crc = vgpu_ckpt_header_crc(h);
}

/* Open a damaged copy; expect err and a message containing needle. */
static int refused(const uint8_t *b, size_t len, unsigned flags, const struct vgpu_ckpt_expect *ex,
		   int err, const char *needle, char *msg)
{
	struct vgpu_ckpt_reader *r;
	int ret;

	put_file(path2, b, len);
	ret = vgpu_ckpt_reader_open(&r, path2, ex, flags, msg);
	if (!ret) {
		vgpu_ckpt_reader_close(r);
		snprintf(msg, VGPU_CKPT_MSG, "(opened)");
		return 0;
	}
	return ret == err && strstr(msg, needle) && strstr(msg, path2) == msg;
}

static uint8_t *copy(void)
{
	uint8_t *b = malloc(base_len);

	memcpy(b, base, base_len);
	return b;
}

static void test_truncation(void)
{
	struct vgpu_ckpt_header *h = hdr_of(base);
	struct vgpu_ckpt_section *t = tab_of(base);
	size_t cuts[64];
	int n = 0, ok = 1;
	char msg[VGPU_CKPT_MSG];

	for (size_t c = 0; c <= 4096; c = c ? c * 2 : 1)
		cuts[n++] = c;
	cuts[n++] = 511;
	cuts[n++] = 513;
	for (int i = 0; i < NBASE; i++) {
		cuts[n++] = t[i].offset + t[i].stored_len / 2;
		cuts[n++] = t[i].offset + t[i].stored_len;
	}
	cuts[n++] = h->table_offset;
	cuts[n++] = h->table_offset + 1;
	cuts[n++] = base_len - 64;
	cuts[n++] = base_len - 1;
	for (int i = 0; i < n; i++)
		if (!refused(base, cuts[i], 0, NULL, -EBADMSG, "truncated", msg)) {
			ok = 0;
			printf("  cut at %zu: %s\n", cuts[i], msg);
		}
	CHECK(ok, "truncation at %d points refused as truncated", n);
	refused(base, h->table_offset + 10, 0, NULL, -EBADMSG, "truncated", msg);
	printf("  e.g. %s\n", msg);
	{
		uint8_t *b = malloc(base_len + 1);

		memcpy(b, base, base_len);
		b[base_len] = 0;
		CHECK(refused(b, base_len + 1, 0, NULL, -EBADMSG, "past the end", msg),
		      "a byte appended: %s", msg);
		free(b);
	}
}

static void test_flips(void)
{
	struct vgpu_ckpt_header *h = hdr_of(base);
	struct vgpu_ckpt_section *t = tab_of(base);
	char msg[VGPU_CKPT_MSG], need[96];
	uint8_t *b = copy();
	int ok = 1;

	for (size_t i = 0; i < sizeof(*h); i++) {
		const char *want = i < 8 ? "not a vgpu checkpoint" : i < 12 ? "format version" :
				   i < 16 ? "header size" : "header checksum mismatch";
		int err = i < 8 ? -ENOEXEC : i < 12 ? -EPROTONOSUPPORT : -EBADMSG;

		b[i] ^= 0x20;
		if (!refused(b, base_len, 0, NULL, err, want, msg)) {
			ok = 0;
			printf("  header byte %zu: %s\n", i, msg);
		}
		b[i] ^= 0x20;
	}
	CHECK(ok, "a flipped byte anywhere in the header is refused");
	printf("  e.g. %s\n", (b[100] ^= 1, refused(b, base_len, 0, NULL, -EBADMSG, "", msg), msg));
	b[100] ^= 1;

	ok = 1;
	for (size_t i = sizeof(*h); i < VGPU_CKPT_DATA_OFFSET; i += 61) {
		b[i] ^= 1;
		ok &= refused(b, base_len, VGPU_CKPT_VERIFY, NULL, -EBADMSG, "padding byte at offset",
			      msg);
		b[i] ^= 1;
	}
	CHECK(ok, "a flipped byte in the header's padding is refused: %s", msg);

	ok = 1;
	for (size_t i = 0; i < h->table_size; i++) {
		b[h->table_offset + i] ^= 0x80;
		ok &= refused(b, base_len, 0, NULL, -EBADMSG, "section table checksum mismatch", msg);
		b[h->table_offset + i] ^= 0x80;
	}
	CHECK(ok, "a flipped byte anywhere in the table is refused: %s", msg);

	for (int s = 0; s < NBASE; s++) {
		uint64_t at[3] = { 0, t[s].stored_len / 2, t[s].stored_len - 1 };
		char nb[24];

		if (!t[s].stored_len)
			continue;
		snprintf(need, sizeof(need), "section %d (%s, id 0x%llx): checksum mismatch", s,
			 vgpu_ckpt_section_name(t[s].type, nb), (unsigned long long)t[s].id);
		for (int k = 0; k < 3; k++) {
			struct vgpu_ckpt_reader *r;
			ssize_t n;
			static uint8_t buf[1 << 20];
			uint64_t total = 0;

			b[t[s].offset + at[k]] ^= 4;
			CHECK(refused(b, base_len, VGPU_CKPT_VERIFY, NULL, -EBADMSG, need, msg),
			      "flip in section %d at %llu, verified at open: %s", s,
			      (unsigned long long)at[k], msg);
			/* Without VERIFY the section's reader finds it, before its end. */
			put_file(path2, b, base_len);
			CHECK(vgpu_ckpt_reader_open(&r, path2, NULL, 0, msg) == 0, "open: %s", msg);
			if (r) {
				vgpu_ckpt_read_begin(r, s);
				while ((n = vgpu_ckpt_read(r, buf, 4096)) > 0)
					total += n;
				CHECK(n == -EBADMSG && strstr(vgpu_ckpt_reader_error(r), need) &&
				      (total < t[s].raw_len || !t[s].raw_len),
				      "flip in section %d at %llu, found by read: %zd %s", s,
				      (unsigned long long)at[k], n, vgpu_ckpt_reader_error(r));
				CHECK(section_matches(r, s == 0 ? 1 : 0, &base_specs[s == 0 ? 1 : 0]),
				      "another section still reads");
				vgpu_ckpt_reader_close(r);
			}
			b[t[s].offset + at[k]] ^= 4;
		}
	}
	printf("  e.g. %s\n", (b[t[2].offset + 7] ^= 1,
			       refused(b, base_len, VGPU_CKPT_VERIFY, NULL, 0, "", msg), msg));
	b[t[2].offset + 7] ^= 1;

	/* Padding between sections and before the table. */
	ok = 1;
	for (int s = 0; s < NBASE; s++) {
		uint64_t end = t[s].offset + t[s].stored_len;
		uint64_t next = s + 1 < NBASE ? t[s + 1].offset : h->table_offset;

		if (end == next)
			continue;
		b[end] ^= 1;
		ok &= refused(b, base_len, VGPU_CKPT_VERIFY, NULL, -EBADMSG, "padding", msg);
		b[end] ^= 1;
		b[next - 1] ^= 1;
		ok &= refused(b, base_len, VGPU_CKPT_VERIFY, NULL, -EBADMSG, "padding", msg);
		b[next - 1] ^= 1;
	}
	CHECK(ok, "a flipped byte in the padding between sections is refused: %s", msg);
	CHECK(!memcmp(b, base, base_len), "copy restored");
	free(b);
}

static void test_identity(void)
{
	struct vgpu_ckpt_expect ex = { &gpu_b, DRIVER, 0 };
	struct vgpu_ckpt_gpu twin = gpu_a;
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	uint8_t *b = copy();

	hdr_of(b)->version = 2;
	reseal(b, base_len);
	CHECK(refused(b, base_len, 0, NULL, -EPROTONOSUPPORT,
		      "format version 2; this build reads version 1", msg), "version: %s", msg);
	memcpy(b, base, base_len);
	memcpy(b, "VGPUCKPX", 8);
	CHECK(refused(b, base_len, 0, NULL, -ENOEXEC, "not a vgpu checkpoint", msg),
	      "magic: %s", msg);
	memcpy(b, "\x7f" "ELF\2\1\1\0", 8);
	/* Nothing of what the file holds: it may be anyone's. */
	CHECK(refused(b, base_len, 0, NULL, -ENOEXEC, "not a vgpu checkpoint (bad magic)", msg) &&
	      !strstr(msg, "ELF") && !strstr(msg, "7f45"), "an ELF file: %s", msg);
	memcpy(b, base, base_len);

	CHECK(refused(b, base_len, 0, &ex, -EXDEV, "made on GPU 'NVIDIA H100 80GB HBM3' "
		      "(GPU-5b1e2c3d-0102-0304-0506-0708090a0b0c, sm_90, 81920 MiB), this is "
		      "'host backend'", msg), "another GPU: %s", msg);
	printf("  e.g. %s\n", msg);
	twin.uuid[15] ^= 1;
	ex.gpu = &twin;
	CHECK(vgpu_ckpt_reader_open(&r, path2, &ex, 0, msg) == 0,
	      "a GPU of the same model is fine: %s", msg);
	vgpu_ckpt_reader_close(r);
	ex.match = VGPU_CKPT_SAME_GPU;
	CHECK(refused(b, base_len, 0, &ex, -EXDEV, "(the same GPU is required)", msg),
	      "not this very GPU: %s", msg);
	ex.gpu = NULL;
	ex.driver_version = 12080;
	CHECK(refused(b, base_len, 0, &ex, -EXDEV, "made with CUDA driver 13.0 (13000), newer "
		      "than this one, 12.8 (12080)", msg), "older driver: %s", msg);
	ex.driver_version = 13010;
	CHECK(vgpu_ckpt_reader_open(&r, path2, &ex, 0, msg) == 0, "a newer driver is fine");
	vgpu_ckpt_reader_close(r);
	ex.match = VGPU_CKPT_SAME_DRIVER;
	CHECK(refused(b, base_len, 0, &ex, -EXDEV, "(the same is required)", msg),
	      "not this very driver: %s", msg);
	free(b);
}

/* Fields edited and the checksums made valid again: only bounds checks stand. */
static void test_hostile(void)
{
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	uint8_t *b = copy();
	struct vgpu_ckpt_header *h = hdr_of(b);
	struct vgpu_ckpt_section *t = (struct vgpu_ckpt_section *)(b + h->table_offset);
	static uint8_t buf[1 << 20];
	ssize_t n;

#define HOSTILE(edit, flags, err, needle) do {					\
		memcpy(b, base, base_len);					\
		edit;								\
		reseal(b, base_len);						\
		CHECK(refused(b, base_len, flags, NULL, err, needle, msg),	\
		      "%s: %s", #edit, msg);					\
	} while (0)

	HOSTILE(h->section_count = 0xffffffff, 0, -EBADMSG, "more than the limit");
	HOSTILE(h->section_count = 5, 0, -EBADMSG, "section table of 384 bytes for 5 sections");
	HOSTILE((h->section_count = 7, h->table_size += 64), 0, -EBADMSG,
		"does not end at the end of the file");
	HOSTILE(h->table_offset += 8, 0, -EBADMSG, "must be 4096-aligned");
	HOSTILE(h->table_offset = 1ull << 62, 0, -EBADMSG, "does not end at the end");
	HOSTILE(h->file_size = ~0ull, 0, -EBADMSG, "truncated: the file is");
	HOSTILE(h->flags |= 1ull << 40, 0, -EPROTONOSUPPORT, "unknown header flags");
	HOSTILE(h->reserved[100] = 1, 0, -EPROTONOSUPPORT, "reserved header bytes");
	HOSTILE(memset(h->gpu.name, 'A', sizeof(h->gpu.name)), 0, -EBADMSG, "not terminated");
	HOSTILE(h->parent_id[3] = 1, 0, -EBADMSG, "names a parent but is not incremental");
	HOSTILE(t[2].offset = h->table_offset, 0, -EBADMSG, "run past the section table");
	HOSTILE(t[2].offset = 1ull << 63, 0, -EBADMSG, "run past the section table");
	HOSTILE(t[2].stored_len = t[2].raw_len = ~0ull - 4095, 0, -EBADMSG,
		"run past the section table");
	HOSTILE(t[4].stored_len = t[4].raw_len = h->table_offset - t[4].offset + 1, 0, -EBADMSG,
		"run past the section table");
	HOSTILE(t[3].offset = t[2].offset, 0, -EBADMSG, "overlapping");
	HOSTILE(t[3].offset += 512, 0, -EBADMSG, "unaligned");
	HOSTILE(t[2].offset = 0, 0, -EBADMSG, "overlapping what precedes it");
	HOSTILE(t[2].type = 0x99, 0, -EPROTONOSUPPORT, "section 2 (type 0x99, id 0x7f0000200000): "
		"a section type this build does not know");
	HOSTILE(t[2].type = 0, 0, -EPROTONOSUPPORT, "does not know");
	HOSTILE(t[2].flags = 0x100, 0, -EPROTONOSUPPORT, "unknown flags 0x100");
	HOSTILE(t[2].reserved = 1, 0, -EPROTONOSUPPORT, "reserved field");
	HOSTILE(t[2].compression = 7, 0, -EPROTONOSUPPORT, "unknown compression 7");
	HOSTILE(t[4].raw_len += 1, 0, -EBADMSG,
		"uncompressed, but 300000 stored bytes for 300001 raw");
	HOSTILE(t[2].crc ^= 1, VGPU_CKPT_VERIFY, -EBADMSG, "checksum mismatch");
	HOSTILE(t[1].crc = 1, VGPU_CKPT_VERIFY, -EBADMSG, "section 1 (allocation data, id "
		"0x7f0000000000): checksum mismatch (stored 00000001, computed ");
	HOSTILE(t[4].id = t[2].id, 0, -EBADMSG, "appears twice");
	HOSTILE(t[2].flags = VGPU_CKPT_SF_PARENT, 0, -EBADMSG, "not incremental");
	HOSTILE((h->flags |= VGPU_CKPT_F_INCREMENTAL, t[2].flags = VGPU_CKPT_SF_PARENT), 0,
		-EBADMSG, "refers to the parent but has stored bytes");

	/* An unknown type marked optional is accepted. */
	memcpy(b, base, base_len);
	t[5].type = 0x1234;
	t[5].flags = VGPU_CKPT_SF_OPTIONAL;
	reseal(b, base_len);
	put_file(path2, b, base_len);
	CHECK(vgpu_ckpt_reader_open(&r, path2, NULL, VGPU_CKPT_VERIFY, msg) == 0,
	      "an optional unknown type: %s", msg);
	vgpu_ckpt_reader_close(r);

	/* Compressed data that lies about its raw length. */
	if (have_zstd && base[hdr_of(base)->table_offset + 3 * 64 + 44] == VGPU_CKPT_COMP_ZSTD) {
		for (int d = -1; d <= 1; d += 2) {
			memcpy(b, base, base_len);
			t[3].raw_len += d;
			reseal(b, base_len);
			put_file(path2, b, base_len);
			CHECK(vgpu_ckpt_reader_open(&r, path2, NULL, VGPU_CKPT_VERIFY, msg) == 0,
			      "open: %s", msg);
			vgpu_ckpt_read_begin(r, 3);
			while ((n = vgpu_ckpt_read(r, buf, sizeof(buf))) > 0)
				;
			CHECK(n == -EBADMSG && strstr(vgpu_ckpt_reader_error(r),
						      d > 0 ? "not its raw length" :
						      "more than its raw length"),
			      "raw length %+d: %s", d, vgpu_ckpt_reader_error(r));
			vgpu_ckpt_reader_close(r);
		}
		/* A compressed section whose bytes are not zstd at all. */
		memcpy(b, base, base_len);
		memset(b + t[3].offset, 0x55, t[3].stored_len);
		t[3].crc = vgpu_crc32c(0, b + t[3].offset, t[3].stored_len);
		reseal(b, base_len);
		put_file(path2, b, base_len);
		CHECK(vgpu_ckpt_reader_open(&r, path2, NULL, VGPU_CKPT_VERIFY, msg) == 0, "open");
		vgpu_ckpt_read_begin(r, 3);
		n = vgpu_ckpt_read(r, buf, sizeof(buf));
		CHECK(n == -EBADMSG && strstr(vgpu_ckpt_reader_error(r), "bad compressed data"),
		      "garbage instead of zstd: %s", vgpu_ckpt_reader_error(r));
		vgpu_ckpt_reader_close(r);
	}
	free(b);
#undef HOSTILE
}

/* Random damage: never a crash; anything not resealed is refused. */
static void test_fuzz(void)
{
	static uint8_t buf[1 << 16];
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	uint8_t *b = copy();
	int refused_all = 1, opened = 0, iters = 1500;

	for (int it = 0; it < iters; it++) {
		int seal = rnd(2), muts = 1 + rnd(4);
		size_t hot = hdr_of(base)->table_offset;

		memcpy(b, base, base_len);
		for (int m = 0; m < muts; m++) {
			/* Mostly the header and table, where the fields are. */
			size_t at = rnd(3) == 0 ? rnd(base_len) :
				    rnd(2) ? rnd(sizeof(struct vgpu_ckpt_header)) :
				    hot + rnd(base_len - hot);
			b[at] ^= 1u << rnd(8);
			if (rnd(4) == 0)
				b[at] = rnd(2) ? 0xff : 0;
		}
		if (!memcmp(b, base, base_len))
			continue;
		if (seal)
			reseal(b, base_len);
		put_file(path2, b, base_len);
		if (vgpu_ckpt_reader_open(&r, path2, NULL, VGPU_CKPT_VERIFY, msg))
			continue;
		opened++;
		if (!seal)
			refused_all = 0;
		for (unsigned i = 0; i < vgpu_ckpt_count(r); i++) {
			uint64_t total = 0;
			ssize_t n = 0;

			if (vgpu_ckpt_read_begin(r, i))
				continue;
			while ((n = vgpu_ckpt_read(r, buf, 1 + rnd(sizeof(buf)))) > 0)
				total += n;
			if (n == 0 && total != vgpu_ckpt_section_at(r, i)->raw_len)
				refused_all = 0;
		}
		vgpu_ckpt_reader_close(r);
	}
	CHECK(refused_all, "random damage without resealing is always refused");
	printf("  fuzz: %d mutated files, %d opened (all resealed, harmless edits)\n", iters, opened);
	free(b);
}

/* ---- incremental ------------------------------------------------------ */

static void test_incremental(void)
{
	struct spec ps[] = {
		{ VGPU_CKPT_SEC_ALLOC_DATA, 1, 4 << 20, 0, 0, 0, 21 },
		{ VGPU_CKPT_SEC_ALLOC_DATA, 2, 100000, 0, 0, 0, 22 },
		{ VGPU_CKPT_SEC_MODULE_IMAGE, 7, 300000, 1, 0, 0, 23 },
	};
	struct spec cs[] = {
		{ VGPU_CKPT_SEC_ALLOC_DATA, 1, 4 << 20, 0, 0, 0, 31 },	/* changed */
		{ VGPU_CKPT_SEC_ALLOC_DATA, 2, 100000, 0, 0, 1, 22 },	/* the parent's */
		{ VGPU_CKPT_SEC_MODULE_IMAGE, 7, 300000, 1, 0, 1, 23 },
		{ VGPU_CKPT_SEC_ALLOC_DATA, 3, 5000, 0, 0, 0, 33 },	/* new */
	};
	struct spec gs[] = {
		{ VGPU_CKPT_SEC_ALLOC_DATA, 1, 4 << 20, 0, 0, 1, 31 },	/* from the child */
		{ VGPU_CKPT_SEC_ALLOC_DATA, 2, 100000, 0, 0, 1, 22 },	/* from the parent */
	};
	char pp[320], cp[320], gp[320], qp[320], msg[VGPU_CKPT_MSG];
	struct vgpu_ckpt_reader *p = NULL, *c = NULL, *q = NULL, *r = NULL;
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	uint8_t *b;
	size_t len;

	snprintf(pp, sizeof(pp), "%s/parent.vgc", dir);
	snprintf(cp, sizeof(cp), "%s/child.vgc", dir);
	snprintf(gp, sizeof(gp), "%s/grandchild.vgc", dir);
	snprintf(qp, sizeof(qp), "%s/other.vgc", dir);
	wopts(&o, have_zstd ? 1 : 0, 0);
	CHECK(write_file(pp, &o, ps, 3, 1 << 20, msg) == 0, "parent: %s", msg);
	CHECK(write_file(qp, &o, ps, 3, 1 << 20, msg) == 0, "another parent: %s", msg);
	CHECK(vgpu_ckpt_reader_open(&p, pp, NULL, VGPU_CKPT_VERIFY, msg) == 0, "%s", msg);
	CHECK(vgpu_ckpt_reader_open(&q, qp, NULL, VGPU_CKPT_VERIFY, msg) == 0, "%s", msg);
	if (!p || !q)
		return;
	o.parent = p;
	CHECK(write_file(cp, &o, cs, 4, 1 << 20, msg) == 0, "child: %s", msg);
	CHECK(check_file(cp, cs, 4, p), "child with its parent reads back");
	CHECK(vgpu_ckpt_reader_open(&c, cp, NULL, VGPU_CKPT_VERIFY, msg) == 0, "%s", msg);
	if (!c)
		return;
	CHECK(vgpu_ckpt_header(c)->flags & VGPU_CKPT_F_INCREMENTAL, "flagged incremental");
	CHECK(vgpu_ckpt_section_at(c, 1)->stored_len == 0, "a reference stores nothing");
	CHECK(vgpu_ckpt_read_begin(c, 1) == -EINVAL &&
	      strstr(vgpu_ckpt_reader_error(c), "in the parent checkpoint, which is not attached"),
	      "reference without the parent: %s", vgpu_ckpt_reader_error(c));
	CHECK(vgpu_ckpt_attach_parent(c, q) == -EXDEV &&
	      strstr(vgpu_ckpt_reader_error(c), "its parent is checkpoint"),
	      "another parent refused: %s", vgpu_ckpt_reader_error(c));
	printf("  e.g. %s\n", vgpu_ckpt_reader_error(c));
	CHECK(vgpu_ckpt_attach_parent(p, q) == -EINVAL, "a full checkpoint has no parent");
	CHECK(vgpu_ckpt_attach_parent(c, p) == 0, "the right parent: %s", vgpu_ckpt_reader_error(c));

	o.parent = c;
	CHECK(write_file(gp, &o, gs, 2, 1 << 20, msg) == 0, "grandchild: %s", msg);
	CHECK(vgpu_ckpt_reader_open(&r, gp, NULL, VGPU_CKPT_VERIFY, msg) == 0, "%s", msg);
	if (r) {
		CHECK(vgpu_ckpt_attach_parent(r, c) == 0, "%s", vgpu_ckpt_reader_error(r));
		CHECK(section_matches(r, 0, &gs[0]) && section_matches(r, 1, &gs[1]),
		      "a chain of two parents reads back");
		vgpu_ckpt_reader_close(r);
	}

	/* The writer refuses references the parent cannot satisfy. */
	o.parent = p;
	unlink(path);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "%s", msg);
	CHECK(vgpu_ckpt_ref_parent(w, VGPU_CKPT_SEC_ALLOC_DATA, 99) == -ENOENT &&
	      strstr(vgpu_ckpt_writer_error(w), "the parent has no allocation data section with id 0x63"),
	      "missing in the parent: %s", vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	o.parent = NULL;
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "%s", msg);
	CHECK(vgpu_ckpt_ref_parent(w, VGPU_CKPT_SEC_ALLOC_DATA, 2) == -EINVAL,
	      "a reference without a parent: %s", vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	CHECK(access(path, F_OK) && no_temp(dir), "nothing left behind");

	/* The parent rewritten since: its header checksum changed. */
	b = get_file(pp, &len);
	if (b) {
		struct vgpu_ckpt_reader *p2;

		hdr_of(b)->created_ns++;
		hdr_of(b)->header_crc = vgpu_ckpt_header_crc(hdr_of(b));
		put_file(path2, b, len);
		free(b);
		vgpu_ckpt_reader_close(c);
		CHECK(vgpu_ckpt_reader_open(&c, cp, NULL, 0, msg) == 0 &&
		      vgpu_ckpt_reader_open(&p2, path2, NULL, 0, msg) == 0, "%s", msg);
		CHECK(vgpu_ckpt_attach_parent(c, p2) == -EXDEV &&
		      strstr(vgpu_ckpt_reader_error(c), "has changed since"),
		      "a rewritten parent: %s", vgpu_ckpt_reader_error(c));
		vgpu_ckpt_reader_close(p2);
	}
	/* A reference whose length no longer matches the parent's section. */
	b = get_file(cp, &len);
	if (b) {
		struct vgpu_ckpt_section *t = (void *)(b + hdr_of(b)->table_offset);

		t[1].raw_len++;
		hdr_of(b)->table_crc = vgpu_crc32c(0, t, hdr_of(b)->table_size);
		hdr_of(b)->header_crc = vgpu_ckpt_header_crc(hdr_of(b));
		put_file(path2, b, len);
		free(b);
		vgpu_ckpt_reader_close(c);
		CHECK(vgpu_ckpt_reader_open(&c, path2, NULL, 0, msg) == 0, "%s", msg);
		CHECK(vgpu_ckpt_attach_parent(c, p) == -EBADMSG &&
		      strstr(vgpu_ckpt_reader_error(c), "differs from the parent's"),
		      "a reference that does not match: %s", vgpu_ckpt_reader_error(c));
	}
	vgpu_ckpt_reader_close(c);
	vgpu_ckpt_reader_close(p);
	vgpu_ckpt_reader_close(q);
}

/* A full file at pp, and at cp an incremental one on it whose PARENT section
 * says @named (NULL: no such section). */
static int chain_files(const char *pp, const char *cp, const char *named, char *msg)
{
	static const struct spec ps = { VGPU_CKPT_SEC_ALLOC_DATA, 1, 100000, 0, 0, 0, 51 };
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_reader *p;
	struct vgpu_ckpt_writer *w;
	int ret;

	wopts(&o, 0, 0);
	unlink(pp);
	unlink(cp);
	ret = write_file(pp, &o, &ps, 1, 1 << 20, msg);
	if (!ret)
		ret = vgpu_ckpt_reader_open(&p, pp, NULL, 0, msg);
	if (ret)
		return ret;
	o.parent = p;
	ret = vgpu_ckpt_writer_open(&w, cp, &o, msg);
	if (!ret) {
		if (named)
			ret = vgpu_ckpt_begin(w, VGPU_CKPT_SEC_PARENT, 0, 0, 0) ||
			      vgpu_ckpt_write(w, named, strlen(named)) || vgpu_ckpt_end(w);
		if (!ret)
			ret = vgpu_ckpt_ref_parent(w, VGPU_CKPT_SEC_ALLOC_DATA, 1);
		if (!ret)
			ret = vgpu_ckpt_finish(w);
		if (ret)
			snprintf(msg, VGPU_CKPT_MSG, "%s", vgpu_ckpt_writer_error(w));
		vgpu_ckpt_writer_close(w);
	}
	vgpu_ckpt_reader_close(p);
	return ret;
}

/* Chains of parents opened by their PARENT sections, and record tables. */
static void test_chain_records(void)
{
	char pp[320], cp[320], sub[320], moved[320], msg[VGPU_CKPT_MSG];
	struct vgpu_ckpt_reader *r = NULL, *rr;
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	uint64_t recs[5] = { 1, 2, 3, 4, 5 };
	void *rec;
	size_t n, len;
	unsigned ri;

	snprintf(pp, sizeof(pp), "%s/chain-parent.vgc", dir);
	snprintf(cp, sizeof(cp), "%s/chain-child.vgc", dir);
	snprintf(sub, sizeof(sub), "%s/elsewhere", dir);
	snprintf(moved, sizeof(moved), "%s/elsewhere/chain-parent.vgc", dir);
	CHECK(chain_files(pp, cp, pp, msg) == 0, "chain: %s", msg);
	CHECK(vgpu_ckpt_open_chain(&r, cp, NULL, VGPU_CKPT_VERIFY, msg) == 0, "open chain: %s", msg);
	if (r) {
		CHECK(vgpu_ckpt_chain_length(r) == 2, "two files in the chain");
		vgpu_ckpt_resolve(r, (unsigned)vgpu_ckpt_find(r, VGPU_CKPT_SEC_ALLOC_DATA, 1), &rr, &ri);
		CHECK(rr == vgpu_ckpt_parent(r) && vgpu_ckpt_section_at(rr, ri)->stored_len == 100000,
		      "a reference resolves to the parent's stored bytes");
		vgpu_ckpt_reader_close(r);	/* closes the parent it adopted */
	}
	/* The parent named where it is not, but beside its child: found. */
	CHECK(mkdir(sub, 0700) == 0 && chain_files(pp, cp, moved, msg) == 0, "chain: %s", msg);
	CHECK(vgpu_ckpt_open_chain(&r, cp, NULL, 0, msg) == 0, "parent beside the child: %s", msg);
	vgpu_ckpt_reader_close(r);
	unlink(pp);
	CHECK(vgpu_ckpt_open_chain(&r, cp, NULL, 0, msg) == -ENOENT && !r &&
	      strstr(msg, "chain-parent.vgc, is missing"), "a missing parent: %s", msg);
	CHECK(chain_files(pp, cp, NULL, msg) == 0, "chain: %s", msg);
	CHECK(vgpu_ckpt_open_chain(&r, cp, NULL, 0, msg) == -EBADMSG &&
	      strstr(msg, "does not say where its parent is"), "no parent path: %s", msg);
	rmdir(sub);

	/* A record table: aux records of the size asked, then a blob. */
	wopts(&o, 0, 0);
	unlink(path);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "%s", msg);
	CHECK(vgpu_ckpt_begin(w, VGPU_CKPT_SEC_STREAMS, 0, 2, 0) == 0 &&
	      vgpu_ckpt_write(w, recs, sizeof(recs)) == 0 && vgpu_ckpt_end(w) == 0 &&
	      vgpu_ckpt_begin(w, VGPU_CKPT_SEC_EVENTS, 0, 9, 0) == 0 &&
	      vgpu_ckpt_write(w, recs, sizeof(recs)) == 0 && vgpu_ckpt_end(w) == 0 &&
	      vgpu_ckpt_finish(w) == 0, "records: %s", vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	CHECK(vgpu_ckpt_reader_open(&r, path, NULL, 0, msg) == 0, "%s", msg);
	if (!r)
		return;
	CHECK(vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_STREAMS, 0, 16, 1 << 20, &rec, &n, &len) == 0 &&
	      n == 2 && len == sizeof(recs) && !memcmp(rec, recs, len), "two records and a blob");
	free(rec);
	CHECK(vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_EVENTS, 0, 8, 1 << 20, &rec, &n, &len) == -EBADMSG &&
	      !rec && !n && strstr(vgpu_ckpt_reader_error(r), "its 9 records overrun it"),
	      "more records than the section holds: %s", vgpu_ckpt_reader_error(r));
	CHECK(vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_STREAMS, 0, 16, 8, &rec, &n, &len) == -EBADMSG &&
	      strstr(vgpu_ckpt_reader_error(r), "too large"), "over the cap: %s",
	      vgpu_ckpt_reader_error(r));
	CHECK(vgpu_ckpt_read_records(r, VGPU_CKPT_SEC_HANDLES, 0, 8, 1 << 20, &rec, &n, &len) == 0 &&
	      !rec && !n, "no such table: none");
	vgpu_ckpt_reader_close(r);
}

/* ---- hostile names and files (issue 10) ------------------------------ */

/*
 * dir/ddd.../ddd.../name, exactly len characters; the folders are made
 * when mk (no component is over 250, so only the whole is long).
 */
static char *long_path(size_t len, char fill, int mk)
{
	char *p = malloc(len + 1);
	size_t n = strlen(dir);

	memcpy(p, dir, n + 1);
	while (len - n - 1 > 250) {
		p[n++] = '/';
		memset(p + n, fill, 200);
		n += 200;
		p[n] = 0;
		if (mk && mkdir(p, 0700) && errno != EEXIST)
			CHECK(0, "mkdir of a %zu-character path: %s", n, strerror(errno));
	}
	p[n++] = '/';
	memset(p + n, 'f', len - n);
	p[len] = 0;
	memcpy(p + len - 4, ".vgc", 4);
	return p;
}

/* A message that fits, says ... for the long name, and names its end. */
static int bounded(const char *msg, const char *name)
{
	size_t n = strlen(name);

	return strlen(msg) < VGPU_CKPT_MSG && strstr(msg, "...") &&
	       strstr(msg, name + (n > 40 ? n - 40 : 0));
}

static const char shadow[] = "root:$y$j9T$Qx0secretsecret:19000:0:99999:7:::\n"
			     "daemon:*:19000:0:99999:7:::\n";

/* Nothing of shadow's bytes: no word of it, nor in hex. */
static int echoes(const char *msg)
{
	return strstr(msg, "root") || strstr(msg, "secret") || strstr(msg, "726f6f74") ||
	       strstr(msg, "$y$") || strstr(msg, "19000");
}

static void test_show(void)
{
	char buf[VGPU_CKPT_NAME], in[600];

	CHECK(!strcmp(vgpu_ckpt_show("/var/lib/vgpu/a.vgc", buf), "/var/lib/vgpu/a.vgc"),
	      "a plain name as it is: %s", buf);
	CHECK(!strcmp(vgpu_ckpt_show("a\x1b[2J\\b\n\xff", buf), "a\\x1b[2J\\x5cb\\x0a\\xff"),
	      "control bytes, '\\', non-ASCII escaped: %s", buf);
	memset(in, 'a', sizeof(in) - 1);
	in[sizeof(in) - 1] = 0;
	memcpy(in + sizeof(in) - 9, "tail.vgc", 8);
	vgpu_ckpt_show(in, buf);
	CHECK(strlen(buf) == VGPU_CKPT_NAME - 1 && !strncmp(buf, "...", 3) &&
	      strstr(buf, "aaatail.vgc"), "a long name: ... and its tail: %s", buf);
	memset(in, '\x01', sizeof(in) - 1);
	in[sizeof(in) - 1] = 0;
	vgpu_ckpt_show(in, buf);
	CHECK(strlen(buf) <= VGPU_CKPT_NAME - 1 && !strncmp(buf, "...\\x01", 7) &&
	      !strcmp(buf + strlen(buf) - 4, "\\x01"), "no escape cut in half: %s", buf);
}

/* Paths of 500 to 4,095 characters (and one over PATH_MAX), missing and real. */
static void test_long_paths(void)
{
	static const size_t lens[] = { 500, 1000, 4095 };
	static const struct spec one = { VGPU_CKPT_SEC_STREAMS, 0, 1000, 0, 0, 0, 61 };
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	uint8_t *good;
	size_t good_len;
	char *p;
	int ret;

	wopts(&o, 0, 0);
	unlink(path);
	CHECK(write_file(path, &o, &one, 1, 1000, msg) == 0, "%s", msg);
	good = get_file(path, &good_len);
	if (!good)
		return;
	for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		p = long_path(lens[k], 'm', 0);
		ret = vgpu_ckpt_reader_open(&r, p, NULL, 0, msg);
		CHECK(ret == -ENOENT && !r && bounded(msg, p) && strstr(msg, "cannot open"),
		      "missing, %zu characters: %d %s", lens[k], ret, msg);
		ret = vgpu_ckpt_open_chain(&r, p, NULL, VGPU_CKPT_VERIFY, msg);
		CHECK(ret == -ENOENT && !r && bounded(msg, p), "chain, missing, %zu characters: %s",
		      lens[k], msg);
		free(p);

		p = long_path(lens[k], 'd', 1);
		put_file(p, good, good_len);
		ret = vgpu_ckpt_reader_open(&r, p, NULL, VGPU_CKPT_VERIFY, msg);
		CHECK(ret == 0, "a file at %zu characters: %s", lens[k], msg);
		vgpu_ckpt_reader_close(r);
		ret = vgpu_ckpt_open_chain(&r, p, NULL, VGPU_CKPT_VERIFY, msg);
		CHECK(ret == 0, "its chain: %s", msg);
		vgpu_ckpt_reader_close(r);
		/* Each error goes through the message with the name first. */
		put_file(p, shadow, sizeof(shadow) - 1);
		ret = vgpu_ckpt_reader_open(&r, p, NULL, 0, msg);
		CHECK(ret == -ENOEXEC && bounded(msg, p) && strstr(msg, "bad magic") &&
		      !echoes(msg), "not a checkpoint, %zu characters: %s", lens[k], msg);
		put_file(p, good, good_len - 1);
		ret = vgpu_ckpt_reader_open(&r, p, NULL, 0, msg);
		CHECK(ret == -EBADMSG && bounded(msg, p) && strstr(msg, "truncated"),
		      "truncated, %zu characters: %s", lens[k], msg);
		unlink(p);
		free(p);
	}
	p = long_path(PATH_MAX + 100, 'm', 0);
	ret = vgpu_ckpt_reader_open(&r, p, NULL, 0, msg);
	CHECK(ret == -ENAMETOOLONG && bounded(msg, p), "over PATH_MAX: %d %s", ret, msg);
	free(p);
	free(good);
}

/* A child whose PARENT section names a path of about 4,000 characters. */
static void test_long_parent(void)
{
	char pp[320], cp[320], msg[VGPU_CKPT_MSG], evil[400];
	struct vgpu_ckpt_reader *r;
	char *lp = long_path(4000, 'p', 1);
	int ret;

	snprintf(pp, sizeof(pp), "%s/lp-parent.vgc", dir);
	snprintf(cp, sizeof(cp), "%s/lp-child.vgc", dir);
	CHECK(chain_files(pp, cp, lp, msg) == 0, "chain: %s", msg);
	ret = vgpu_ckpt_open_chain(&r, cp, NULL, 0, msg);
	CHECK(ret == -ENOENT && !r && bounded(msg, lp) && strstr(msg, "is missing"),
	      "its parent, named by 4,000 characters, missing: %s", msg);
	CHECK(rename(pp, lp) == 0, "parent to the long path: %s", strerror(errno));
	ret = vgpu_ckpt_open_chain(&r, cp, NULL, VGPU_CKPT_VERIFY, msg);
	CHECK(ret == 0 && vgpu_ckpt_chain_length(r) == 2, "the parent there: %s", msg);
	vgpu_ckpt_reader_close(r);
	put_file(lp, shadow, sizeof(shadow) - 1);
	ret = vgpu_ckpt_open_chain(&r, cp, NULL, 0, msg);
	CHECK(ret == -ENOEXEC && strlen(msg) < VGPU_CKPT_MSG && strstr(msg, "bad magic") &&
	      strstr(msg, "fff.vgc") && !echoes(msg), "the parent is not a checkpoint: %s", msg);
	unlink(lp);
	free(lp);

	/* A recorded name that would drive a terminal is escaped. */
	snprintf(evil, sizeof(evil), "%s/evil\x1b[2J\x07\n.vgc", dir);
	CHECK(chain_files(pp, cp, evil, msg) == 0, "chain: %s", msg);
	ret = vgpu_ckpt_open_chain(&r, cp, NULL, 0, msg);
	CHECK(ret == -ENOENT && strstr(msg, "evil\\x1b[2J\\x07\\x0a.vgc") && !strchr(msg, '\x1b') &&
	      !strchr(msg, '\n'), "escaped: %s", msg);
	unlink(pp);
	unlink(cp);
}

static int fifo_child(void *arg)
{
	const char *fifo = arg;
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	int fd, ret;

	alarm(10);	/* a reader that blocks fails the test, not hangs it */
	ret = vgpu_ckpt_reader_open(&r, fifo, NULL, 0, msg);
	if (ret != -EINVAL || !strstr(msg, "is not a regular file (a FIFO)")) {
		printf("FAIL a FIFO by path: %d %s\n", ret, msg);
		return 1;
	}
	ret = vgpu_ckpt_open_chain(&r, fifo, NULL, 0, msg);
	if (ret != -EINVAL || !strstr(msg, "is not a regular file")) {
		printf("FAIL a FIFO's chain: %d %s\n", ret, msg);
		return 1;
	}
	fd = open(fifo, O_RDONLY | O_NONBLOCK);
	ret = vgpu_ckpt_reader_open_fd(&r, fd, NULL, NULL, 0, msg);
	close(fd);
	if (ret != -EINVAL || strcmp(msg, "checkpoint is not a regular file (a FIFO)")) {
		printf("FAIL a FIFO's descriptor: %d %s\n", ret, msg);
		return 1;
	}
	return 0;
}

/* Only regular files; a FIFO never blocks the caller. */
static void test_not_regular(void)
{
	char fifo[320], pp[320], cp[320], msg[VGPU_CKPT_MSG];
	struct vgpu_ckpt_reader *r;
	int ret, st;

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(pp, sizeof(pp), "%s/fifo-parent.vgc", dir);
	snprintf(cp, sizeof(cp), "%s/fifo-child.vgc", dir);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
	st = in_child(fifo_child, fifo);
	CHECK(st == 0, "a FIFO is refused at once: status %d (142: blocked)", st);

	/* A child whose parent is the FIFO. */
	CHECK(chain_files(pp, cp, fifo, msg) == 0, "chain: %s", msg);
	alarm(10);
	ret = vgpu_ckpt_open_chain(&r, cp, NULL, 0, msg);
	alarm(0);
	CHECK(ret == -EINVAL && strstr(msg, "it builds on fifo") &&
	      strstr(msg, "is not a regular file (a FIFO)"), "a FIFO as the parent: %s", msg);

	ret = vgpu_ckpt_reader_open(&r, dir, NULL, 0, msg);
	CHECK(ret == -EINVAL && strstr(msg, "is not a regular file (a directory)") &&
	      strstr(msg, dir) == msg, "a directory: %s", msg);
	ret = vgpu_ckpt_reader_open(&r, "/dev/null", NULL, 0, msg);
	CHECK(ret == -EINVAL && !strcmp(msg, "/dev/null is not a regular file (a character device)"),
	      "/dev/null: %s", msg);
	unlink(fifo);
	unlink(pp);
	unlink(cp);
}

/* A file beginning with "root:" (think /etc/shadow): nothing of it is said. */
static void test_no_echo(void)
{
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	int ret;

	put_file(path2, shadow, sizeof(shadow) - 1);
	ret = vgpu_ckpt_reader_open(&r, path2, NULL, VGPU_CKPT_VERIFY, msg);
	CHECK(ret == -ENOEXEC && strstr(msg, "not a vgpu checkpoint (bad magic)") && !echoes(msg),
	      "a shadow file: %s", msg);
	printf("  e.g. %s\n", msg);
	ret = vgpu_ckpt_open_chain(&r, path2, NULL, VGPU_CKPT_VERIFY, msg);
	CHECK(ret == -ENOEXEC && !echoes(msg), "its chain: %s", msg);
	/* Long enough for a header: the magic is still all it is judged by. */
	{
		char big[2048];

		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = shadow[i % (sizeof(shadow) - 1)];
		put_file(path2, big, sizeof(big));
		ret = vgpu_ckpt_reader_open(&r, path2, NULL, 0, msg);
		CHECK(ret == -ENOEXEC && !echoes(msg), "a long shadow file: %s", msg);
	}
	unlink(path2);
}

static int nonblocking(int fd)
{
	return fcntl(fd, F_GETFL) & O_NONBLOCK;
}

/* vgpu_ckpt_reader_open_fd: the caller's descriptor stays the caller's. */
static void test_open_fd(void)
{
	static const struct spec one = { VGPU_CKPT_SEC_STREAMS, 0, 5000, 0, 0, 0, 71 };
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	void *buf;
	size_t len;
	int fd, ret;

	wopts(&o, 0, 0);
	unlink(path);
	CHECK(write_file(path, &o, &one, 1, 1000, msg) == 0, "%s", msg);
	fd = open(path, O_RDONLY | O_NONBLOCK);
	ret = vgpu_ckpt_reader_open_fd(&r, fd, "session 7", NULL, VGPU_CKPT_VERIFY, msg);
	CHECK(ret == 0 && r && vgpu_ckpt_reader_fd(r) != fd && !nonblocking(fd),
	      "by descriptor (its own, blocking): %s", msg);
	close(fd);
	if (r) {
		int rfd = vgpu_ckpt_reader_fd(r);

		CHECK(fcntl(rfd, F_GETFD) == FD_CLOEXEC, "the reader's is close-on-exec");
		CHECK(vgpu_ckpt_read_whole(r, 0, 1 << 20, &buf, &len) == 0 && len == 5000,
		      "reads after the caller closed its own: %s", vgpu_ckpt_reader_error(r));
		free(buf);
		CHECK(vgpu_ckpt_read_begin(r, 5) == -EINVAL &&
		      strstr(vgpu_ckpt_reader_error(r), "session 7: ") ==
		      vgpu_ckpt_reader_error(r), "messages name it: %s", vgpu_ckpt_reader_error(r));
		vgpu_ckpt_reader_close(r);
		CHECK(fcntl(rfd, F_GETFD) < 0, "closed with the reader");
	}
	fd = open(path, O_RDONLY);
	ret = vgpu_ckpt_reader_open_fd(&r, fd, NULL, NULL, 0, msg);
	vgpu_ckpt_reader_close(r);
	CHECK(ret == 0 && fcntl(fd, F_GETFD) >= 0, "the caller's descriptor outlives the reader");
	close(fd);
	ret = vgpu_ckpt_reader_open_fd(&r, fd, NULL, NULL, 0, msg);
	CHECK(ret == -EBADF && !r && strstr(msg, "checkpoint: "), "a closed descriptor: %s", msg);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	ret = vgpu_ckpt_reader_open_fd(&r, fd, "x", NULL, 0, msg);
	CHECK(ret == -EINVAL && !strcmp(msg, "x is not a regular file (a directory)"),
	      "a directory's descriptor: %s", msg);
	close(fd);
	fd = open(path2, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(write(fd, shadow, sizeof(shadow) - 1) > 0, "write");
	ret = vgpu_ckpt_reader_open_fd(&r, fd, NULL, NULL, 0, msg);
	CHECK(ret == -ENOEXEC && !echoes(msg), "a shadow file's descriptor: %s", msg);
	close(fd);
	unlink(path2);
}

/* vgpu_ckpt_open_chain_fds: the caller's files, checked to be the chain. */
static void test_chain_fds(void)
{
	char pp[320], cp[320], qp[320], fifo[320], msg[VGPU_CKPT_MSG];
	static const struct spec ps = { VGPU_CKPT_SEC_ALLOC_DATA, 1, 100000, 0, 0, 0, 51 };
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_reader *r;
	int fds[4], ret;

	snprintf(pp, sizeof(pp), "%s/fds-parent.vgc", dir);
	snprintf(cp, sizeof(cp), "%s/fds-child.vgc", dir);
	snprintf(qp, sizeof(qp), "%s/fds-other.vgc", dir);
	snprintf(fifo, sizeof(fifo), "%s/fds-fifo", dir);
	/* Another full file with the same section: only its identity differs. */
	wopts(&o, 0, 0);
	unlink(qp);
	CHECK(write_file(qp, &o, &ps, 1, 1 << 20, msg) == 0, "%s", msg);
	CHECK(chain_files(pp, cp, "/nowhere/fds-parent\x1b.vgc", msg) == 0, "chain: %s", msg);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
	fds[0] = open(cp, O_RDONLY);
	fds[1] = open(pp, O_RDONLY);
	fds[2] = open(qp, O_RDONLY);
	fds[3] = open(fifo, O_RDONLY | O_NONBLOCK);

	ret = vgpu_ckpt_open_chain_fds(&r, fds, 2, "restore", NULL, VGPU_CKPT_VERIFY, msg);
	CHECK(ret == 0 && vgpu_ckpt_chain_length(r) == 2, "child and parent: %s", msg);
	if (r) {
		CHECK(vgpu_ckpt_reader_fd(r) != fds[0] &&
		      vgpu_ckpt_reader_fd(vgpu_ckpt_parent(r)) != fds[1], "their own descriptors");
		vgpu_ckpt_reader_close(r);
	}
	CHECK(fcntl(fds[0], F_GETFD) >= 0 && fcntl(fds[1], F_GETFD) >= 0,
	      "the caller's descriptors stay open");
	ret = vgpu_ckpt_open_chain_fds(&r, fds, 1, "restore", NULL, 0, msg);
	CHECK(ret == -ENOENT && !r && strstr(msg, "/nowhere/fds-parent\\x1b.vgc, was not given"),
	      "its parent not given: %s", msg);
	ret = vgpu_ckpt_open_chain_fds(&r, fds, 3, "restore", NULL, 0, msg);
	CHECK(ret == -EINVAL && !r && strstr(msg, "descriptor 2 is no parent"),
	      "one too many: %s", msg);
	ret = vgpu_ckpt_open_chain_fds(&r, fds + 1, 1, "restore", NULL, 0, msg);
	CHECK(ret == 0 && vgpu_ckpt_chain_length(r) == 1, "a full file alone: %s", msg);
	vgpu_ckpt_reader_close(r);
	ret = vgpu_ckpt_open_chain_fds(&r, (int[]){ fds[1], fds[0] }, 2, "restore", NULL, 0, msg);
	CHECK(ret == -EINVAL && !r, "child and parent swapped: %s", msg);
	ret = vgpu_ckpt_open_chain_fds(&r, (int[]){ fds[0], fds[2] }, 2, "restore", NULL, 0, msg);
	CHECK(ret == -EXDEV && !r && strstr(msg, "its parent is checkpoint") &&
	      strstr(msg, "restore (parent 1)"), "another checkpoint as the parent: %s", msg);
	ret = vgpu_ckpt_open_chain_fds(&r, (int[]){ fds[0], fds[0] }, 2, "restore", NULL, 0, msg);
	CHECK(ret == -EXDEV && !r, "itself as its parent: %s", msg);
	alarm(10);
	ret = vgpu_ckpt_open_chain_fds(&r, (int[]){ fds[0], fds[3] }, 2, "restore", NULL, 0, msg);
	alarm(0);
	CHECK(ret == -EINVAL && !r && !strcmp(msg, "restore (parent 1) is not a regular file (a FIFO)"),
	      "a FIFO as the parent: %s", msg);
	ret = vgpu_ckpt_open_chain_fds(&r, (int[]){ fds[3] }, 1, NULL, NULL, 0, msg);
	CHECK(ret == -EINVAL && !strcmp(msg, "checkpoint is not a regular file (a FIFO)"),
	      "a FIFO: %s", msg);
	ret = vgpu_ckpt_open_chain_fds(&r, fds, 0, "restore", NULL, 0, msg);
	CHECK(ret == -EINVAL && !r, "no descriptor: %s", msg);
	{
		int many[VGPU_CKPT_MAX_CHAIN + 1];

		for (int i = 0; i <= VGPU_CKPT_MAX_CHAIN; i++)
			many[i] = fds[i % 2];
		ret = vgpu_ckpt_open_chain_fds(&r, many, VGPU_CKPT_MAX_CHAIN + 1, "restore", NULL,
					       0, msg);
		CHECK(ret == -EINVAL && !r, "more than VGPU_CKPT_MAX_CHAIN: %s", msg);
	}
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	unlink(pp);
	unlink(cp);
	unlink(qp);
	unlink(fifo);
}

/*
 * Seeds for tests/fuzz/fuzz_ckpt.c (test_ckpt --fuzz-seeds DIR): real files
 * from this writer, framed as the harness reads its input (byte 0: the mode,
 * 0x80 "reseal"; a chain: the child's length, the child, the parent). Each
 * under 64 KiB.
 */
static int seed_put(const char *out, const char *name, uint8_t mode, const char *child,
		    const char *parent)
{
	size_t clen = 0, plen = 0;
	uint8_t *c = get_file(child, &clen), *p = parent ? get_file(parent, &plen) : NULL;
	uint8_t head[5] = { mode, (uint8_t)clen, (uint8_t)(clen >> 8), (uint8_t)(clen >> 16),
			    (uint8_t)(clen >> 24) };
	size_t hlen = mode & 1 ? 5 : 1;	/* a chain: the child's length */
	char f[600];
	FILE *fp;
	int ok;

	snprintf(f, sizeof(f), "%s/%s", out, name);
	fp = fopen(f, "w");
	ok = fp && c && (!parent || p) &&
	     fwrite(head, 1, hlen, fp) == hlen &&
	     fwrite(c, 1, clen, fp) == clen && (!parent || fwrite(p, 1, plen, fp) == plen);
	if (fp && fclose(fp))
		ok = 0;
	free(c);
	free(p);
	if (ok && hlen + clen + plen > 64 << 10)
		printf("%s: %zu bytes, over 64 KiB\n", name, hlen + clen + plen);
	return ok ? 0 : -EIO;
}

static int fuzz_seeds(const char *out)
{
	static const struct spec full[] = {
		{ VGPU_CKPT_SEC_ALLOCS, 0, 48, 0, 0, 0, 1 },
		{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000200000ull, 3000, 1, 0, 0, 2 },
		{ VGPU_CKPT_SEC_ALLOC_DATA, 0x7f0000400000ull, 0, 0, 0, 0, 3 },
		{ VGPU_CKPT_SEC_MODULES, 0, 40, 0, 0, 0, 4 },
		{ VGPU_CKPT_SEC_CONTEXT, 0, 64, 0, VGPU_CKPT_B_RAW, 0, 5 },
	};
	static const struct spec pspec[] = {
		{ VGPU_CKPT_SEC_ALLOCS, 0, 32, 0, 0, 0, 11 },
		{ VGPU_CKPT_SEC_ALLOC_DATA, 1, 2000, 1, 0, 0, 12 },
		{ VGPU_CKPT_SEC_ALLOC_DATA, 2, 1000, 0, 0, 0, 13 },
	};
	static const uint64_t recs[4] = { 1, 2, 3, 4 };
	char pp[320], cp[320], fp[320], msg[VGPU_CKPT_MSG];
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_reader *p;
	struct vgpu_ckpt_writer *w;
	int ret = 0;

	snprintf(fp, sizeof(fp), "%s/seed-full.vgc", dir);
	snprintf(pp, sizeof(pp), "%s/seed-parent.vgc", dir);
	snprintf(cp, sizeof(cp), "%s/seed-child.vgc", dir);
	for (int z = 0; z <= have_zstd && !ret; z++) {
		char name[32];

		wopts(&o, z ? 3 : 0, 0);
		unlink(fp);
		ret = write_file(fp, &o, full, 5, 1000, msg);
		snprintf(name, sizeof(name), "full%s", z ? "-zstd" : "");
		if (!ret)
			ret = seed_put(out, name, 0, fp, NULL);
		snprintf(name, sizeof(name), "full%s-resealed", z ? "-zstd" : "");
		if (!ret)
			ret = seed_put(out, name, 0x80, fp, NULL);
		snprintf(name, sizeof(name), "full%s-expect", z ? "-zstd" : "");
		if (!ret)
			ret = seed_put(out, name, 0xb0, fp, NULL);
		/* An incremental child on its parent: its own records, a PARENT
		 * section naming the parent, references to two of its sections. */
		unlink(pp);
		unlink(cp);
		if (!ret)
			ret = write_file(pp, &o, pspec, 3, 1000, msg);
		if (!ret)
			ret = vgpu_ckpt_reader_open(&p, pp, NULL, 0, msg);
		if (ret)
			break;
		o.parent = p;
		ret = vgpu_ckpt_writer_open(&w, cp, &o, msg);
		if (!ret) {
			ret = vgpu_ckpt_begin(w, VGPU_CKPT_SEC_PARENT, 0, 0, 0) ||
			      vgpu_ckpt_write(w, "/var/lib/vgpu/seed-parent.vgc", 29) || vgpu_ckpt_end(w) ||
			      vgpu_ckpt_begin(w, VGPU_CKPT_SEC_STREAMS, 0, 2, 0) ||
			      vgpu_ckpt_write(w, recs, sizeof(recs)) || vgpu_ckpt_end(w) ||
			      vgpu_ckpt_ref_parent(w, VGPU_CKPT_SEC_ALLOC_DATA, 1) ||
			      vgpu_ckpt_ref_parent(w, VGPU_CKPT_SEC_ALLOC_DATA, 2) ||
			      vgpu_ckpt_finish(w);
			if (ret)
				snprintf(msg, sizeof(msg), "%s", vgpu_ckpt_writer_error(w));
			vgpu_ckpt_writer_close(w);
		}
		vgpu_ckpt_reader_close(p);
		for (int m = 0; m < 3 && !ret; m++) {
			snprintf(name, sizeof(name), "chain%s-%d", z ? "-zstd" : "", m);
			ret = seed_put(out, name, (uint8_t)(0xc1 | m << 1), cp, pp);
		}
		if (!ret)
			ret = seed_put(out, z ? "child-alone-zstd" : "child-alone", 0x80, cp, NULL);
	}
	/* A child alone whose recorded parent path is 4,000 hostile bytes: the
	 * "was not given" message names it (finding 1 of issue 10). */
	if (!ret) {
		char *lp = malloc(4001);

		memset(lp, 'p', 4000);
		memcpy(lp, "/\x1b[2J\a", 6);
		lp[4000] = 0;
		ret = chain_files(pp, cp, lp, msg);
		free(lp);
		if (!ret)
			ret = seed_put(out, "child-long-parent", 0x83, cp, NULL);
	}
	if (ret)
		printf("fuzz seeds: %s\n", msg);
	return ret ? 1 : 0;
}

/* ---- failures while writing ------------------------------------------ */

static const struct spec big = { VGPU_CKPT_SEC_ALLOC_DATA, 1, 4 << 20, 0, 0, 0, 41 };

/* Write big to target; expect err with needle; nothing left, old content kept. */
static int fails_cleanly(const char *d, const char *target, unsigned flags, int err,
			 const char *needle)
{
	struct vgpu_ckpt_writer_opts o;
	char msg[VGPU_CKPT_MSG] = "";
	int ret;

	put_file(target, "old", 3);
	wopts(&o, 0, flags);
	o.nbufs = 4;
	o.buf_size = 256 << 10;
	ret = write_file(target, &o, &big, 1, 1 << 20, msg);
	printf("  %s: %s\n", flags ? "pwrite" : "io_uring", msg);
	CHECK(ret == err && strstr(msg, needle) && strstr(msg, target) == msg,
	      "error %d, expected %d: %s", ret, err, msg);
	CHECK(no_temp(d), "no temporary file left");
	CHECK(file_is(target, "old"), "the previous checkpoint is untouched");
	return ret == err && no_temp(d) && file_is(target, "old") ? 0 : 1;
}

static int fsize_child(void *arg)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };

	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl))
		return 77;
	return fails_cleanly(dir, path, *(unsigned *)arg, -EFBIG, "File too large");
}

static int put_str(const char *p, const char *s)
{
	int fd = open(p, O_WRONLY);
	int ok = fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s);

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* Not root: root of a user namespace of our own, with our ids mapped. */
static int become_root(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -1;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (put_str("/proc/self/uid_map", map) || put_str("/proc/self/setgroups", "deny"))
		return -1;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	return put_str("/proc/self/gid_map", map);
}

/* A 1 MiB tmpfs in a mount namespace of our own: a real ENOSPC. */
static int enospc_child(void *arg)
{
	char mnt[300], target[320];

	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	snprintf(target, sizeof(target), "%s/checkpoint.vgc", mnt);
	if (unshare(CLONE_NEWNS) && become_root())
		return 77;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("vgpu-test", mnt, "tmpfs", 0, "size=1m"))
		return 77;
	return fails_cleanly(mnt, target, *(unsigned *)arg, -ENOSPC, "No space left on device");
}

static void test_out_of_space(void)
{
	char mnt[300];

	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	mkdir(mnt, 0700);
	for (unsigned f = 0; f <= VGPU_CKPT_W_NO_URING; f++) {
		int st = in_child(fsize_child, &f);

		CHECK(st == 0, "RLIMIT_FSIZE (%s): status %d", f ? "pwrite" : "io_uring", st);
		st = in_child(enospc_child, &f);
		if (st == 77) {
			skips++;
			printf("SKIP ENOSPC on a small tmpfs: cannot mount one here\n");
		} else {
			CHECK(st == 0, "full disk (%s): status %d", f ? "pwrite" : "io_uring", st);
		}
	}
	rmdir(mnt);
}

/* Runs in a fresh process (exec): the parent has loaded libzstd already. */
static int no_zstd_child(void *arg)
{
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	struct vgpu_ckpt_reader *r;
	char msg[VGPU_CKPT_MSG];
	int ret, bad = 0;

	(void)arg;
	wopts(&o, 3, 0);
	ret = vgpu_ckpt_writer_open(&w, path2, &o, msg);
	printf("  %s\n", msg);
	bad |= ret != -ENOPKG || !strstr(msg, "compression was asked for, but libzstd.so.1 "
					 "cannot be loaded");
	bad |= !no_temp(dir);
	/* A compressed file: its table and checksums still read, its data not. */
	ret = vgpu_ckpt_reader_open(&r, path, NULL, VGPU_CKPT_VERIFY, msg);
	if (ret)
		return 2;
	ret = vgpu_ckpt_read_begin(r, 3);
	printf("  %s\n", vgpu_ckpt_reader_error(r));
	bad |= ret != -ENOPKG || !strstr(vgpu_ckpt_reader_error(r), "is zstd-compressed, and "
					 "libzstd.so.1 cannot be loaded");
	vgpu_ckpt_reader_close(r);
	return bad;
}

static void test_misuse(void)
{
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	char msg[VGPU_CKPT_MSG], tmp[340];
	uint8_t x = 1;

	put_file(path, "old", 3);
	wopts(&o, 0, 0);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "%s", msg);
	CHECK(vgpu_ckpt_write(w, &x, 1) == -EINVAL &&
	      strstr(vgpu_ckpt_writer_error(w), "no section begun"), "write outside a section");
	CHECK(vgpu_ckpt_begin(w, 1, 1, 0, 0) == -EINVAL, "the first error sticks");
	CHECK(vgpu_ckpt_finish(w) == -EINVAL, "and finish fails");
	vgpu_ckpt_writer_close(w);
	CHECK(file_is(path, "old") && no_temp(dir), "nothing replaced, nothing left");

	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "%s", msg);
	CHECK(vgpu_ckpt_begin(w, VGPU_CKPT_SEC_STREAMS, 0, 0, 0) == 0 &&
	      vgpu_ckpt_write(w, &x, 1) == 0, "a section");
	CHECK(vgpu_ckpt_finish(w) == -EINVAL && strstr(vgpu_ckpt_writer_error(w), "still open"),
	      "finish with a section open: %s", vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == 0, "%s", msg);
	CHECK(put_section(w, &big, 1 << 20) == 0, "4 MiB written");
	vgpu_ckpt_writer_close(w);	/* abort */
	CHECK(file_is(path, "old") && no_temp(dir), "abort: nothing replaced, nothing left");

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	put_file(tmp, "busy", 4);
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == -EEXIST &&
	      strstr(msg, "in progress?"), "temporary name taken: %s", msg);
	CHECK(file_is(tmp, "busy"), "someone else's temporary file is left alone");
	unlink(tmp);
	o.gpu = NULL;
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == -EINVAL, "no GPU: %s", msg);
	wopts(&o, 0, 0);
	o.nbufs = 1;
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == -EINVAL, "one buffer: %s", msg);
	o.nbufs = 0;
	o.buf_size = 1000;
	CHECK(vgpu_ckpt_writer_open(&w, path, &o, msg) == -EINVAL, "odd buffer size: %s", msg);
	CHECK(no_temp(dir), "nothing left");
}

static int exec_no_zstd(void *arg)
{
	(void)arg;
	setenv("VGPU_ZSTD", "libvgpu-test-no-such-zstd.so.1", 1);
	execl("/proc/self/exe", "test_ckpt", "--no-zstd", dir, (char *)NULL);
	return 126;
}

int main(int argc, char **argv)
{
	const char *t = getenv("TMPDIR");
	char msg[VGPU_CKPT_MSG];
	struct vgpu_ckpt_writer_opts o;
	struct io_uring ring;
	int st;

	if (argc == 3 && !strcmp(argv[1], "--no-zstd")) {
		snprintf(dir, sizeof(dir), "%s", argv[2]);
		snprintf(path, sizeof(path), "%s/checkpoint.vgc", dir);
		snprintf(path2, sizeof(path2), "%s/damaged.vgc", dir);
		return no_zstd_child(NULL);
	}
	snprintf(dir, sizeof(dir), "%s/test_ckpt.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/checkpoint.vgc", dir);
	snprintf(path2, sizeof(path2), "%s/damaged.vgc", dir);
	have_zstd = vgpu_zstd(NULL) != NULL;
	if (argc == 3 && !strcmp(argv[1], "--fuzz-seeds")) {
		char cmd[300];

		st = fuzz_seeds(argv[2]);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("could not remove %s\n", dir);
		return st;
	}
	have_uring = io_uring_queue_init(4, &ring, 0) == 0;
	if (have_uring)
		io_uring_queue_exit(&ring);
	if (!have_zstd)
		printf("SKIP compression: no libzstd.so.1\n");
	if (!have_uring)
		printf("note: io_uring unavailable here; only the pwrite path runs\n");

	test_crc();
	test_chain_records();
	test_show();
	test_long_paths();
	test_long_parent();
	test_not_regular();
	test_no_echo();
	test_open_fd();
	test_chain_fds();
	test_round_trips();
	test_reserve();
	test_seccomp();

	wopts(&o, have_zstd ? 3 : 0, 0);
	unlink(path);
	CHECK(write_file(path, &o, base_specs, NBASE, 40000, msg) == 0, "base file: %s", msg);
	base = get_file(path, &base_len);
	CHECK(base && check_file(path, base_specs, NBASE, NULL), "base file reads back");
	if (base) {
		test_truncation();
		test_flips();
		test_identity();
		test_hostile();
		test_fuzz();
		if (have_zstd) {
			st = in_child(exec_no_zstd, NULL);
			CHECK(st == 0, "without libzstd: status %d", st);
		}
	}
	test_incremental();
	test_out_of_space();
	test_misuse();

	free(base);
	if (!failures && !getenv("VGPU_TEST_KEEP")) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("could not remove %s\n", dir);
	}
	printf("test_ckpt: %d checks, %d failed (%d skipped)\n", checks, failures, skips);
	return failures ? 1 : 0;
}
