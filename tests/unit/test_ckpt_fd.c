// SPDX-License-Identifier: MIT
/*
 * The checkpoint writer on a file its caller opened (vgpu_ckpt_writer_open_fd,
 * what a worker gets from vgpuctl): only a regular, empty file open for
 * reading and writing, not appending; a complete file written through the
 * descriptor with no name of the writer's made or renamed; and messages
 * that stay inside their buffer with a name of thousands of characters
 * (werr's "%s: " prefix once pushed the rest past it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ckpt.h"

static const struct vgpu_ckpt_gpu gpu = {
	.name = "host backend",
	.uuid = { 0xaa, 0xbb },
	.cc_major = 8, .cc_minor = 0, .total_mem = 16ull << 30,
};

static char dir[64];

static void opts(struct vgpu_ckpt_writer_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->gpu = &gpu;
	o->driver_version = 13000;
	o->session_id = 7;
	o->nbufs = 2;
	o->buf_size = 64 << 10;
}

/* open_fd on fd refused with err, its message ending in @why. */
static void refused(int fd, const char *name, int err, const char *why)
{
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	char msg[VGPU_CKPT_MSG + 64];
	size_t n, k = strlen(why);
	int ret;

	opts(&o);
	memset(msg, 'X', sizeof(msg));
	ret = vgpu_ckpt_writer_open_fd(&w, fd, name, &o, msg);
	n = strnlen(msg, sizeof(msg));
	CHECK(ret == err && !w, "%s: returned %d, want %d", why, ret, err);
	CHECK(n < VGPU_CKPT_MSG, "%s: message of %zu bytes", why, n);
	CHECK(n >= k && !strcmp(msg + n - k, why), "%s: message '%.80s...'", why, msg);
	CHECK(msg[VGPU_CKPT_MSG] == 'X', "%s: written past the message buffer", why);
}

static void test_refusals(void)
{
	char p[128], *longname = malloc(3001);
	int fd;

	memset(longname, 'a', 3000);
	longname[3000] = 0;
	snprintf(p, sizeof(p), "%s/fifo", dir);
	CHECK(!mkfifo(p, 0600), "mkfifo");
	fd = open(p, O_RDWR);
	refused(fd, "fifo", -EINVAL, "not a regular file");
	close(fd);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	refused(fd, "dir", -EINVAL, "not a regular file");
	close(fd);
	snprintf(p, sizeof(p), "%s/ro", dir);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	fd = open(p, O_RDONLY);
	refused(fd, "ro", -EBADF, "not open for reading and writing (or open for appending)");
	close(fd);
	fd = open(p, O_RDWR | O_APPEND);
	refused(fd, "append", -EBADF, "not open for reading and writing (or open for appending)");
	close(fd);
	snprintf(p, sizeof(p), "%s/full", dir);
	fd = open(p, O_CREAT | O_RDWR, 0600);
	CHECK(write(fd, "root:x:0:0", 10) == 10, "write");
	refused(fd, "full", -EEXIST, "not empty");
	/* the name of 3000 characters: cut, the reason kept, the buffer kept */
	refused(fd, longname, -EEXIST, "not empty");
	close(fd);
	refused(-1, longname, -EBADF, "no file");
	free(longname);
}

static void test_write_through_fd(void)
{
	struct vgpu_ckpt_writer_opts o;
	struct vgpu_ckpt_writer *w;
	struct vgpu_ckpt_reader *r;
	char p[128], name[160], msg[VGPU_CKPT_MSG];
	struct stat st;
	int fd, ret;

	snprintf(p, sizeof(p), "%s/given", dir);
	snprintf(name, sizeof(name), "%s/final.vgc", dir);
	fd = open(p, O_CREAT | O_EXCL | O_RDWR, 0600);
	opts(&o);
	ret = vgpu_ckpt_writer_open_fd(&w, fd, name, &o, msg);
	CHECK(!ret, "open_fd: %s", msg);
	if (ret)
		return;
	close(fd);	/* the writer has its own */
	CHECK(!vgpu_ckpt_begin(w, VGPU_CKPT_SEC_CLIENT, 0, 0, 0) &&
	      !vgpu_ckpt_write(w, "hello", 5) && !vgpu_ckpt_end(w), "a section: %s",
	      vgpu_ckpt_writer_error(w));
	CHECK(!vgpu_ckpt_finish(w), "finish: %s", vgpu_ckpt_writer_error(w));
	vgpu_ckpt_writer_close(w);
	/* written where it was given, under no name of the writer's */
	CHECK(stat(name, &st) && errno == ENOENT, "the writer named the file %s", name);
	CHECK(!vgpu_ckpt_reader_open(&r, p, NULL, VGPU_CKPT_VERIFY, msg), "read back: %s", msg);
	vgpu_ckpt_reader_close(r);
}

int main(void)
{
	char cmd[96];

	snprintf(dir, sizeof(dir), "/tmp/vgpu-ckpt-fd.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_refusals();
	test_write_through_fd();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("note: %s left behind\n", dir);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
