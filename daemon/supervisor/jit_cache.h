/* SPDX-License-Identifier: MIT */
/*
 * The driver's JIT cache, one per tenant. PTX that a program loads (cuFFT
 * compiles a kernel or two into every plan) is compiled by the driver in the
 * worker; without its cache every load compiles again (60-90 ms for each of
 * cuFFT's, where a native run finds it in ~/.nv after the first). A worker
 * learns its tenant only after the driver has read CUDA_CACHE_PATH (at
 * cuInit, while the worker waits in the pool: it must exist then), so that
 * path names a fixed descriptor, JIT_CACHE_FD, which the worker points at
 * the tenant's own directory, ROOT/UID (the client's uid; mode 0700, owned
 * by the uid the worker becomes), just before giving up root. Tenants never share a cache: one tenant's compiled
 * code is never served to another. Root's programs get one only when their
 * workers run as a user of their own (--worker-user, vgpu-worker), not as
 * nobody, whose files any daemon run as nobody could change.
 */
#ifndef VGPU_JIT_CACHE_H
#define VGPU_JIT_CACHE_H

#include <sys/types.h>

#define JIT_CACHE_FD		1000
#define JIT_CACHE_DEFAULT	"/var/cache/vgpu/jit"

/* Before cuInit: the driver's cache goes through JIT_CACHE_FD, a
 * placeholder of root's (@root/.idle) for now. @root NULL: the driver's own
 * default ($HOME/.nv); "none": no cache at all. */
int jit_cache_arm(const char *root);
/* With the tenant known, before the privileges go: JIT_CACHE_FD becomes
 * @root/@client, made if missing, owned by @uid:@gid (the worker's). Anything amiss (a link, another owner,
 * group or world access): -errno, the descriptor is closed and the driver
 * finds no cache; -EACCES: root's program, served as nobody. */
int jit_cache_open(const char *root, uid_t client, uid_t uid, gid_t gid);

#endif
