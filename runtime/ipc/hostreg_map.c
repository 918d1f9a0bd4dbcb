// SPDX-License-Identifier: MIT
/*
 * cuMemHostRegister(CU_MEMHOSTREGISTER_DEVICEMAP) of the program's own
 * pageable memory without /dev/vgpu. The device can only reach memory the
 * worker has, so the pages covering the range become shared with it:
 *
 *  1. a sealed memfd the size of the covering pages gets their bytes
 *     (copied with process_vm_readv, so a hole in the range fails the call
 *     instead of faulting the program; where seccomp forbids it, with
 *     memcpy once mincore found every page mapped);
 *  2. the worker maps it at the same address and registers it
 *     (daemon/worker/ipc/hostreg_map.c): the device pointer is the host
 *     pointer, as CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
 *     promises; where that address is taken in the worker the call fails;
 *  3. the memfd replaces the program's pages at the same address
 *     (MAP_FIXED): the program and the kernels then see the same pages.
 *
 * cuMemHostUnregister undoes it: the worker unregisters and unmaps, and
 * fresh anonymous pages holding the same bytes replace the memfd's
 * (mremap, in one step).
 *
 * Only private anonymous memory (heap, stack, malloc's, the program's own
 * anonymous mappings) is taken: a file's pages, or pages shared with
 * another process, would stop being that file's or shared once swapped
 * (CUDA_ERROR_NOT_SUPPORTED).
 *
 * What differs from the driver, which pins the pages where they are:
 *  - the edge pages: the whole pages covering the range are shared,
 *    including the bytes of them outside the range (they keep their
 *    values; the worker can see them; a later mapped registration of
 *    another range sharing one of those pages is refused with
 *    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
 *  - during the call, a write another thread makes to the range between
 *    the copy and the swap is lost; the pages are shared, not private, so
 *    a fork()ed child shares them instead of copying on write; they are
 *    readable and writable (read-only with CU_MEMHOSTREGISTER_READ_ONLY)
 *    whatever they were before.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "client.h"
#include "fdpass.h"
#include "hostreg_map.h"
#include "log.h"
#include "vmm.h"

struct swap {
	uint64_t a;			/* the registration's base, as the program gave it */
	uint64_t start, end;		/* the pages covering it */
	uint32_t ctx;
};

static struct {
	pthread_mutex_t lock;
	struct swap *v;
	size_t n, cap;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Under S.lock: whether [start, end) shares a page with a mapped registration. */
static bool taken(uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < S.n; i++)
		if (start < S.v[i].end && S.v[i].start < end)
			return true;
	return false;
}

/* Whether every mapping overlapping [start, end) is private and anonymous
 * (heap, stack, malloc's and the program's own): a file's pages, or pages
 * shared with another process, cannot be swapped for a copy without
 * breaking what the program sees. */
static bool private_anon(uint64_t start, uint64_t end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512], perms[8];
	unsigned long long lo, hi, ino;
	bool ok = f != NULL;

	while (ok && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu", &lo, &hi, perms, &ino) != 4)
			continue;
		if (hi <= start || lo >= end)
			continue;
		ok = perms[3] == 'p' && ino == 0;
	}
	if (f)
		fclose(f);
	return ok;
}

/* Whether every page of [start, start + len) is mapped. */
static bool mapped(uint64_t start, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned char v[256];

	for (uint64_t off = 0; off < len; off += 256 * page) {
		uint64_t n = len - off < 256 * page ? len - off : 256 * page;

		if (mincore((void *)(uintptr_t)(start + off), n, v))
			return false;
	}
	return true;
}

/* A sealed memfd holding the bytes of [start, start + len), or -1 (errno). */
static int copy_out(uint64_t start, uint64_t len)
{
	int fd = memfd_create("vgpu-hostreg", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct iovec local, remote = { (void *)(uintptr_t)start, len };
	void *m = MAP_FAILED;
	ssize_t got;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ||
	    (m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		goto fail;
	local = (struct iovec){ m, len };
	got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	/* A seccomp profile may forbid it (containers): every page mapped
	 * will do, and a page the program made unreadable faults, as its own
	 * read of it would. */
	if (got < 0 && (errno == EPERM || errno == ENOSYS) && mapped(start, len)) {
		memcpy(m, (void *)(uintptr_t)start, len);
		got = (ssize_t)len;
	}
	munmap(m, len);
	if (got == (ssize_t)len)
		return fd;
	errno = EFAULT;
fail:
	close(fd);
	return -1;
}

CUresult vgpu_hostreg_map(struct vgpu_ctx *ctx, uint64_t a, uint64_t bytes, unsigned int flags)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = a & ~(page - 1), end = (a + bytes + page - 1) & ~(page - 1);
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC };
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_HOSTREG_MAP, .ctx = ctx->id } };
	int prot = PROT_READ | (flags & CU_MEMHOSTREGISTER_READ_ONLY ? 0 : PROT_WRITE);
	struct vgpu_session *s;
	struct swap *n;
	CUresult rc;
	int fd;

	if ((rc = vgpu_session(&s)))
		return rc;
	if (end <= start)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&S.lock);
	if (taken(start, end)) {
		pthread_mutex_unlock(&S.lock);
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	}
	if (S.n == S.cap) {
		size_t cap = S.cap ? 2 * S.cap : 8;

		if (!(n = realloc(S.v, cap * sizeof(*n)))) {
			pthread_mutex_unlock(&S.lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		S.v = n;
		S.cap = cap;
	}
	if (!private_anon(start, end)) {
		pthread_mutex_unlock(&S.lock);
		vlog_warn("cuMemHostRegister: [%#llx, %#llx) is not private anonymous memory (a "
			  "file's or shared pages): mapped registration of it is not supported",
			  (unsigned long long)start, (unsigned long long)end);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	fd = copy_out(start, end - start);
	if (fd < 0) {
		pthread_mutex_unlock(&S.lock);
		vlog_debug("hostreg: [%#llx, %#llx) cannot be copied: %s", (unsigned long long)start,
			   (unsigned long long)end, strerror(errno));
		return errno == EFAULT ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* The memfd first: the worker keeps it until the entry comes. */
	vgpu_fd_lock();
	m.token = vgpu_fd_token();
	r.sqe.arg[0] = m.token;
	r.sqe.arg[1] = start;
	r.sqe.arg[2] = end - start;
	r.sqe.arg[3] = flags & (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				CU_MEMHOSTREGISTER_READ_ONLY);
	if (vgpu_send_fds(s->sock, &m, sizeof(m), &fd, 1) != (int)sizeof(m))
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	else
		rc = vgpu_call(&r);
	vgpu_fd_unlock();
	if (!rc && r.cqe.val[0] != start)
		rc = CUDA_ERROR_UNKNOWN;	/* the worker promised the same address */
	/* The program's pages become the memfd's, holding the same bytes. */
	if (!rc && mmap((void *)(uintptr_t)start, end - start, prot, MAP_SHARED | MAP_FIXED, fd,
			0) == MAP_FAILED) {
		vlog_err("hostreg: the pages at %#llx cannot be replaced: %s",
			 (unsigned long long)start, strerror(errno));
		vgpu_call5(VGPU_OP_HOSTREG_UNMAP, ctx->id, 0, start, 0, 0, 0, 0, NULL);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	close(fd);
	if (!rc)
		S.v[S.n++] = (struct swap){ .a = a, .start = start, .end = end, .ctx = ctx->id };
	pthread_mutex_unlock(&S.lock);
	return rc;
}

bool vgpu_hostreg_unmap(uint64_t a, CUresult *rc)
{
	struct swap w;
	size_t i;
	void *fresh;

	pthread_mutex_lock(&S.lock);
	for (i = 0; i < S.n && S.v[i].a != a; i++)
		;
	if (i == S.n) {
		pthread_mutex_unlock(&S.lock);
		return false;
	}
	w = S.v[i];
	*rc = vgpu_call5(VGPU_OP_HOSTREG_UNMAP, w.ctx, 0, w.start, 0, 0, 0, 0, NULL);
	if (*rc) {
		pthread_mutex_unlock(&S.lock);
		return true;
	}
	S.v[i] = S.v[--S.n];
	/* Ordinary memory again, with the same bytes, in one step. */
	fresh = mmap(NULL, w.end - w.start, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	if (fresh == MAP_FAILED) {
		vlog_warn("hostreg: no memory to give [%#llx, %#llx) back as private pages; they "
			  "stay shared", (unsigned long long)w.start, (unsigned long long)w.end);
	} else {
		memcpy(fresh, (void *)(uintptr_t)w.start, w.end - w.start);
		if (mremap(fresh, w.end - w.start, w.end - w.start, MREMAP_MAYMOVE | MREMAP_FIXED,
			   (void *)(uintptr_t)w.start) == MAP_FAILED) {
			vlog_warn("hostreg: [%#llx, %#llx) stays shared: %s",
				  (unsigned long long)w.start, (unsigned long long)w.end,
				  strerror(errno));
			munmap(fresh, w.end - w.start);
		}
	}
	pthread_mutex_unlock(&S.lock);
	return true;
}
