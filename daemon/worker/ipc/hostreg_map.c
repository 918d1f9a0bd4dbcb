// SPDX-License-Identifier: MIT
/*
 * cuMemHostRegister(CU_MEMHOSTREGISTER_DEVICEMAP) of the program's pageable
 * memory without /dev/vgpu. The runtime (runtime/ipc/hostreg_map.c) puts
 * the pages under a memfd of its own at the same address, holding the same
 * bytes, and sends the memfd; the worker maps it at that same address and
 * registers it with the backend, so kernels reach the very pages the
 * program reads and writes, through a device pointer equal to the host
 * pointer (CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
 * holds). Where the worker already has something at that address the
 * registration fails (CUDA_ERROR_OUT_OF_MEMORY) rather than hand out a
 * device pointer the host pointer would not equal.
 *
 * The memfd is the program's: the worker takes it only sealed against
 * shrinking (a shrunk file would fault the worker on access), a regular
 * file of at least the length asked, at a page-aligned place that is not
 * the session's device window or pinned pool, mapped without replacing
 * anything. Checkpoints refuse sessions holding such registrations (the
 * pages are the program's, mapped from its own file).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ipc.h"
#include "ipc_state.h"
#include "log.h"

#define HOSTREG_MAX	(1ull << 40)	/* bytes in one registration */

static long hostreg_find(const struct ipc_state *x, uint64_t addr)
{
	for (size_t i = 0; x && i < x->nhr; i++)
		if (x->hr[i].addr == addr)
			return (long)i;
	return -1;
}

static bool overlaps_session(struct worker *w, uint64_t a, uint64_t len)
{
	uint64_t pb = (uintptr_t)w->pool.base;

	return (a < w->vmem.base + w->vmem.size && w->vmem.base < a + len) ||
	       (w->pool.size && a < pb + w->pool.size && pb < a + len);
}

/* arg0 token, arg1 address, arg2 bytes, arg3 flags; R: val0 device pointer */
static enum op_status op_hostreg_map(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	uint64_t a = q->arg[1], len = q->arg[2], page = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned int flags = (unsigned int)q->arg[3];
	const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				   CU_MEMHOSTREGISTER_READ_ONLY;
	struct ipc_state *x = ipc_state_get(w);
	int fd = worker_fd_take(w, q->arg[0]), seals;
	struct ipc_hostreg *n;
	struct stat st;
	void *m;
	CUresult rc;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (fd < 0) {
		vlog_info("hostreg: a mapped registration came without its memory");
		return OP_DONE;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (!len || len > HOSTREG_MAX || a % page || len % page || a + len < a ||
	    (flags & ~known) || !(flags & CU_MEMHOSTREGISTER_DEVICEMAP) ||
	    a + len > (1ull << 47) || overlaps_session(w, a, len) || fstat(fd, &st) ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size < len || seals < 0 ||
	    !(seals & F_SEAL_SHRINK) || hostreg_find(x, a) >= 0)
		goto out;
	call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
	if (!x)
		goto out;
	if (x->nhr == x->hrcap) {
		size_t cap = x->hrcap ? 2 * x->hrcap : 8;

		if (!(n = realloc(x->hr, cap * sizeof(*n))))
			goto out;
		x->hr = n;
		x->hrcap = cap;
	}
	m = mmap((void *)(uintptr_t)a, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (m == MAP_FAILED || m != (void *)(uintptr_t)a) {
		if (m != MAP_FAILED)
			munmap(m, len);	/* an old kernel placed it elsewhere */
		vlog_info("hostreg: %#llx+%llu is taken in the worker: the device pointer could "
			  "not equal the host pointer", (unsigned long long)a,
			  (unsigned long long)len);
		goto out;
	}
	rc = w->B.cuMemHostRegister_v2(m, len, (flags & CU_MEMHOSTREGISTER_READ_ONLY) |
					       CU_MEMHOSTREGISTER_PORTABLE |
					       CU_MEMHOSTREGISTER_DEVICEMAP);
	if (rc) {
		munmap(m, len);
		call->cqe->result = rc;
		goto out;
	}
	x->hr[x->nhr++] = (struct ipc_hostreg){ a, len };
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = a;	/* unified addressing: the host address */
out:
	close(fd);
	return OP_DONE;
}

/* Unregisters and unmaps entry @i. */
static CUresult hostreg_end(struct worker *w, struct ipc_state *x, size_t i)
{
	struct ipc_hostreg r = x->hr[i];
	CUresult rc = w->B.cuMemHostUnregister((void *)(uintptr_t)r.addr);

	munmap((void *)(uintptr_t)r.addr, r.len);
	x->hr[i] = x->hr[--x->nhr];
	return rc;
}

/* arg0 address */
static enum op_status op_hostreg_unmap(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = w->ipc;
	long i = hostreg_find(x, call->sqe->arg[0]);
	CUresult rc;

	call->cqe->result = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	if (i < 0)
		return OP_DONE;
	/* Nothing of the session may still be using the pages. */
	rc = w->B.cuCtxSynchronize();
	call->cqe->result = rc ? rc : hostreg_end(w, x, (size_t)i);
	return OP_DONE;
}

void ipc_hostreg_end_all(struct worker *w)
{
	while (w->ipc && w->ipc->nhr)
		hostreg_end(w, w->ipc, w->ipc->nhr - 1);
}

const struct op_desc exec_hostreg_ops[] = {
	OP(HOSTREG_MAP, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_hostreg_map),
	OP(HOSTREG_UNMAP, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_hostreg_unmap),
	{ 0 },
};
