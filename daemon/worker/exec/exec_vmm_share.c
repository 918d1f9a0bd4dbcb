// SPDX-License-Identifier: MIT
/*
 * The client's VMM allocations shared by descriptor: cuMemExportToShareableHandle
 * (a memfd-like descriptor sent on the program's socket), cuMemImportFromShareableHandle
 * (the descriptor the program sent, taken from the stash it waits in, or a fabric
 * handle), and cuMemGetHandleForAddressRange.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "fdpass.h"
#include "log.h"
#include "worker.h"
#include "exec_vmm.h"

/* Takes whatever the program sent on its socket: descriptors for imports
 * are kept (the oldest goes when the stash is full), the rest dropped. */
void worker_fd_drain(struct worker *w)
{
	struct vmm_state *s = vmm_state_of(w);

	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * 4)];
		struct vgpu_fd_msg m;
		struct iovec io = { &m, sizeof(m) };
		struct msghdr h = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		int fds[4], cut = 0;
		unsigned n;
		ssize_t got = recvmsg(w->sock, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (got <= 0)
			return;
		n = vgpu_fds_take(&h, fds, 4, &cut);
		if (!s || got != sizeof(m) || (h.msg_flags & MSG_TRUNC) || cut || n != 1 ||
		    m.magic != VGPU_FD_MSG_MAGIC) {
			vgpu_fds_close(fds, n);
			continue;
		}
		if (s->stash[s->stash_next].fd >= 0)
			close(s->stash[s->stash_next].fd);
		s->stash[s->stash_next] = (struct fd_stash){ m.token, fds[0] };
		s->stash_next = (s->stash_next + 1) % FD_STASH;
	}
}

/* The descriptor the program sent for @token, waiting a little for it. */
static int fd_for(struct worker *w, struct vmm_state *s, uint64_t token)
{
	for (int tries = 0; tries < 20; tries++) {
		struct pollfd p = { .fd = w->sock, .events = POLLIN | POLLRDHUP };

		worker_fd_drain(w);
		for (int i = 0; i < FD_STASH; i++) {
			if (s->stash[i].fd >= 0 && s->stash[i].token == token) {
				int fd = s->stash[i].fd;

				s->stash[i].fd = -1;
				return fd;
			}
		}
		if (poll(&p, 1, 100) < 0 || (p.revents & (POLLHUP | POLLERR | POLLRDHUP)))
			break;
	}
	return -1;
}

/* Sends fd to the program for @token and closes it here. Never blocks: a
 * program that does not read its socket only loses its own descriptor. */
static CUresult send_fd(struct worker *w, uint64_t token, int fd)
{
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC, .token = token };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec io = { &m, sizeof(m) };
	struct msghdr h = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&h);
	CUresult rc = CUDA_SUCCESS;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(w->sock, &h, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		vlog_info("vmm: a descriptor cannot be sent to the program: %s", strerror(errno));
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	}
	close(fd);
	return rc;
}

/* The channel for other descriptors (pool_ipc.c). */
int worker_fd_take(struct worker *w, uint64_t token)
{
	struct vmm_state *s = vmm_state_of(w);

	return s ? fd_for(w, s, token) : -1;
}

CUresult worker_fd_send(struct worker *w, uint64_t token, int fd)
{
	return send_fd(w, token, fd);
}

enum op_status vmm_op_range_handle(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	uint64_t p = q->arg[0], size = q->arg[1], end;
	struct vmm_state *s = vmm_state_of(w);
	CUresult rc;
	int fd = -1;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!p || !size || q->arg[2] != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
	    (q->arg[3] & ~(uint64_t)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) ||
	    __builtin_add_overflow(p, size, &end))
		return OP_DONE;
	/* The program's own device memory only: one allocation, or mappings. */
	if (!vmem_contains(&w->vmem, p, size) && !(s && vmm_map_covers(s, p, end)))
		return OP_DONE;
	rc = w->B.cuMemGetHandleForAddressRange(&fd, p, size, (CUmemRangeHandleType)q->arg[2],
						q->arg[3]);
	if (rc || fd < 0) {
		call->cqe->result = rc ? rc : CUDA_ERROR_UNKNOWN;
		return OP_DONE;
	}
	call->cqe->result = send_fd(w, q->arg[4], fd);
	return OP_DONE;
}

enum op_status vmm_op_export(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_alloc *a = s ? vmm_alloc_live(s, q->arg[0]) : NULL;
	CUresult rc;
	int fd = -1;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!a || q->arg[2])
		return OP_DONE;
	if (q->arg[1] != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
	    q->arg[1] != CU_MEM_HANDLE_TYPE_FABRIC) {
		vlog_info("vmm: export as handle type %llu is not supported (POSIX descriptors "
			  "and fabric handles only)", (unsigned long long)q->arg[1]);
		call->cqe->result = CUDA_ERROR_NOT_SUPPORTED;
		return OP_DONE;
	}
	if (!(a->prop.requestedHandleTypes & q->arg[1])) {
		vlog_debug("vmm: allocation %llu was not created exportable",
			   (unsigned long long)a->id);
		return OP_DONE;
	}
	if (q->arg[1] == CU_MEM_HANDLE_TYPE_FABRIC) {
		/* A fabric handle is data: it comes back in the reply. */
		CUmemFabricHandle fh;

		memset(&fh, 0, sizeof(fh));
		rc = w->B.cuMemExportToShareableHandle(&fh, a->h, CU_MEM_HANDLE_TYPE_FABRIC, 0);
		if (!rc) {
			memcpy(call->reply, &fh, sizeof(fh));
			call->cqe->val[2] = sizeof(fh);
			a->exported = true;
		}
		call->cqe->result = rc;
		return OP_DONE;
	}
	rc = w->B.cuMemExportToShareableHandle(&fd, a->h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
					       0);
	if (rc || fd < 0) {
		call->cqe->result = rc ? rc : CUDA_ERROR_UNKNOWN;
		return OP_DONE;
	}
	call->cqe->result = send_fd(w, q->arg[3], fd);
	if (!call->cqe->result)
		a->exported = true;
	return OP_DONE;
}

/* The new allocation record of an import, with its backend handle. */
static void imported(struct vmm_state *s, struct op_call *call, struct vmm_alloc *a,
		     unsigned type, uint64_t size)
{
	a->id = s->next_id++;
	a->size = size;
	a->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	a->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a->prop.location.id = 0;
	a->prop.requestedHandleTypes = (CUmemAllocationHandleType)type;
	a->refs = 1;
	a->imported = true;
	s->a[s->na++] = a;
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = a->id;
}

/* A fabric handle is 64 bytes of data: the payload; the driver judges it. */
static enum op_status import_fabric(struct worker *w, struct vmm_state *s, struct op_call *call)
{
	CUmemFabricHandle fh;
	struct vmm_alloc *a;
	CUresult rc;

	if (call->len != sizeof(fh))
		return OP_DONE;
	memcpy(&fh, call->payload, sizeof(fh));
	a = calloc(1, sizeof(*a));
	if (!a) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	rc = w->B.cuMemImportFromShareableHandle(&a->h, &fh, CU_MEM_HANDLE_TYPE_FABRIC);
	if (rc) {
		call->cqe->result = rc;
		free(a);
		return OP_DONE;
	}
	imported(s, call, a, CU_MEM_HANDLE_TYPE_FABRIC, 0);
	return OP_DONE;
}

enum op_status vmm_op_import(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *q = call->sqe;
	struct vmm_state *s = vmm_state_of(w);
	struct vmm_alloc *a = NULL;
	struct stat st;
	CUresult rc;
	int fd;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!s || vmm_grow((void **)&s->a, &s->capa, s->na, sizeof(*s->a))) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	if (q->arg[1] == CU_MEM_HANDLE_TYPE_FABRIC)
		return import_fabric(w, s, call);
	fd = fd_for(w, s, q->arg[0]);
	if (fd < 0) {
		vlog_info("vmm: an import came without its descriptor");
		return OP_DONE;
	}
	if (q->arg[1] != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
		vlog_info("vmm: import of handle type %llu is not supported (POSIX descriptors "
			  "only)", (unsigned long long)q->arg[1]);
		call->cqe->result = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	/* The backend judges what the descriptor is (the driver, or the host
	 * backend's own memfds); it runs with the program's own rights. */
	if (fstat(fd, &st) || S_ISDIR(st.st_mode) || !(a = calloc(1, sizeof(*a)))) {
		call->cqe->result = a ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	rc = w->B.cuMemImportFromShareableHandle(&a->h, (void *)(intptr_t)fd,
						 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (rc) {
		call->cqe->result = rc;
		free(a);
		goto out;
	}
	/* A memfd says its size; the driver's descriptors do not, and the
	 * driver bounds the mappings itself. */
	imported(s, call, a, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
		 S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size % w->vmem.gran == 0
			 ? (uint64_t)st.st_size : 0);
out:
	close(fd);
	return OP_DONE;
}
