// SPDX-License-Identifier: MIT
/*
 * Unit test for daemon/supervisor/jit_cache.c: arming points the driver at descriptor
 * JIT_CACHE_FD, open on ROOT/.idle until the tenant is known ("none": no
 * cache; NULL: the driver's own; a descriptor already taken: refused);
 * opening makes ROOT/UID with mode 0700 and points the descriptor there; it
 * refuses (closing the descriptor) a link, a folder open to others, a root
 * others may write, and (as root) root's programs served as nobody.
 * Exit 0 = pass.
 */
#include "jit_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char top[] = "/tmp/vgpu-jit-test.XXXXXX";

/* The folder JIT_CACHE_FD names, or "" when it is not open. */
static const char *cache_fd_path(void)
{
	static char buf[PATH_MAX];
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", JIT_CACHE_FD);
	n = readlink(link, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static void arm(const char *root)
{
	char want[PATH_MAX + 32];

	unsetenv("CUDA_CACHE_PATH");
	unsetenv("CUDA_CACHE_DISABLE");
	CHECK(jit_cache_arm(NULL) == 0 && !getenv("CUDA_CACHE_PATH") &&
	      !getenv("CUDA_CACHE_DISABLE") && !*cache_fd_path(), "NULL: the driver's default");
	CHECK(jit_cache_arm("none") == 0 && getenv("CUDA_CACHE_DISABLE") &&
	      !strcmp(getenv("CUDA_CACHE_DISABLE"), "1") && !*cache_fd_path());
	unsetenv("CUDA_CACHE_DISABLE");
	snprintf(want, sizeof(want), "/proc/self/fd/%d", JIT_CACHE_FD);
	CHECK(jit_cache_arm(root) == 0 && getenv("CUDA_CACHE_PATH") &&
	      !strcmp(getenv("CUDA_CACHE_PATH"), want));
	snprintf(want, sizeof(want), "%s/.idle", root);
	CHECK(!strcmp(cache_fd_path(), want), "fd is '%s', want '%s'", cache_fd_path(), want);
	CHECK(jit_cache_arm(root) == -EBUSY, "the descriptor is taken now");
}

static void open_cases(const char *root)
{
	char p[PATH_MAX + 32];
	uid_t me = geteuid();
	gid_t mg = getegid();
	struct stat st;

	CHECK(jit_cache_open("none", me, me, mg) == 0 && *cache_fd_path(), "none: untouched");
	CHECK(jit_cache_open(root, me, me, mg) == 0);
	snprintf(p, sizeof(p), "%s/%u", root, (unsigned)me);
	CHECK(!strcmp(cache_fd_path(), p), "fd is '%s', want '%s'", cache_fd_path(), p);
	CHECK(!stat(p, &st) && (st.st_mode & 0777) == 0700 && st.st_uid == me);
	CHECK(jit_cache_open(root, me, me, mg) == 0, "an existing folder is used again");

	chmod(p, 0750);
	CHECK(jit_cache_open(root, me, me, mg) == -EPERM, "a folder open to others");
	CHECK(!*cache_fd_path(), "refused: the descriptor is closed");
	rmdir(p);
	if (!me)	/* the name is the client's uid; as root it is checked too */
		snprintf(p, sizeof(p), "%s/4321", root);
	CHECK(!symlink(top, p));
	CHECK(jit_cache_open(root, me ? me : 4321, me ? me : 4321, mg) < 0, "a link");
	CHECK(!*cache_fd_path());
	unlink(p);

	chmod(root, 0777);
	CHECK(jit_cache_open(root, me, me, mg) == -EPERM, "a root others may write");
	chmod(root, 0755);
	if (!me) {
		CHECK(jit_cache_open(root, 0, 65534, 65534) == -EACCES, "root served as nobody");
		CHECK(jit_cache_open(root, 65534, 65534, 65534) == 0, "nobody itself");
		snprintf(p, sizeof(p), "%s/65534", root);
		CHECK(!stat(p, &st) && st.st_uid == 65534 && (st.st_mode & 0777) == 0700);
		close(JIT_CACHE_FD);
	}
}

int main(void)
{
	char cmd[64], root[PATH_MAX];

	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(root, sizeof(root), "%s/a/jit", top);	/* two levels missing */
	arm(root);
	open_cases(root);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", top);
	printf("test_jit_cache: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
