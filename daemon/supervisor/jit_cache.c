// SPDX-License-Identifier: MIT
/*
 * Per-tenant JIT caches (see jit_cache.h). Everything here runs in a
 * worker: jit_cache_arm() after the fork, jit_cache_open() as root with the
 * tenant known. The directories are made and checked through descriptors,
 * never by path below the root, so a link planted by a tenant is refused.
 */
#include "jit_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOBODY 65534
#define IDLE ".idle"	/* the placeholder, root's */

/* @root itself, made if missing: a daemon run as root trusts only a root
 * that only root may change. */
static int open_root(const char *root)
{
	struct stat st;
	int fd;

	if (mkdir(root, 0755) && errno != EEXIST) {
		/* The parent may be missing too (a fresh /var/cache). */
		char *parent = strdup(root), *slash = parent ? strrchr(parent, '/') : NULL;

		if (slash && slash != parent) {
			*slash = 0;
			if (mkdir(parent, 0755) && errno != EEXIST) {
				free(parent);
				return -errno;
			}
		}
		free(parent);
		if (mkdir(root, 0755) && errno != EEXIST)
			return -errno;
	}
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (st.st_uid != geteuid()) || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * The driver checks CUDA_CACHE_PATH at cuInit and then opens files under
 * the path each time: JIT_CACHE_FD names an empty folder of root's until
 * the tenant's takes its place (a worker cannot write there once it has
 * given up root, so nothing compiled before then is kept).
 */
int jit_cache_arm(const char *root)
{
	char path[32];
	int rootfd, fd;

	if (!root)
		return 0;
	if (!strcmp(root, "none"))
		return setenv("CUDA_CACHE_DISABLE", "1", 1) ? -errno : 0;
	if (fcntl(JIT_CACHE_FD, F_GETFD) >= 0)
		return -EBUSY;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", JIT_CACHE_FD);
	if (setenv("CUDA_CACHE_PATH", path, 1))
		return -errno;
	rootfd = open_root(root);
	if (rootfd < 0)
		return rootfd;
	if (mkdirat(rootfd, IDLE, 0755) && errno != EEXIST) {
		close(rootfd);
		return -errno;
	}
	fd = openat(rootfd, IDLE, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rootfd);
	if (fd < 0)
		return -errno;
	if (dup2(fd, JIT_CACHE_FD) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/* JIT_CACHE_FD on @root/@client, or an error. */
static int tenant_folder(const char *root, uid_t client, uid_t uid, gid_t gid)
{
	char name[16];
	struct stat st;
	int rootfd, fd, ret = 0;

	if (geteuid())		/* a daemon run by a user: its own cache */
		uid = geteuid(), gid = getegid();
	else if (uid == NOBODY && client != NOBODY)
		return -EACCES;
	rootfd = open_root(root);
	if (rootfd < 0)
		return rootfd;
	snprintf(name, sizeof(name), "%u", (unsigned)client);
	if (!mkdirat(rootfd, name, 0700) && !geteuid() &&
	    fchownat(rootfd, name, uid, gid, AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rootfd);
	if (fd < 0)
		return ret ? ret : -errno;
	if (!ret && (fstat(fd, &st) || st.st_uid != uid || (st.st_mode & 077)))
		ret = -EPERM;
	if (!ret && dup2(fd, JIT_CACHE_FD) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int jit_cache_open(const char *root, uid_t client, uid_t uid, gid_t gid)
{
	int ret;

	if (!root || !strcmp(root, "none"))
		return 0;
	ret = tenant_folder(root, client, uid, gid);
	if (ret)
		close(JIT_CACHE_FD);	/* no cache rather than root's placeholder */
	return ret;
}
