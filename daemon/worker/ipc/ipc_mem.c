// SPDX-License-Identifier: MIT
/*
 * CUDA IPC memory handles between vgpu sessions of the same user:
 * cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle.
 *
 * The program carries the 64 bytes to the other process any way it likes,
 * so they must say everything: which worker to ask (the random key naming
 * its server's abstract Unix socket), which export (an id) and the proof
 * (a random 64-bit secret per export). The exporter's worker starts the
 * server on its first export: a thread accepting SEQPACKET connections.
 *
 *  - What is exported: cuMemAlloc carves small allocations from 2 MiB
 *    chunks shared by several allocations of the session, and the device
 *    maps memory by whole granules, so the importer maps the whole physical
 *    allocation under the pointer (the chunk, or a large allocation's own
 *    memory) and gets a pointer to the allocation's base in it. A small
 *    allocation thus shows its chunk neighbours of the same session to the
 *    importer, as the driver's own suballocator does; every physical
 *    allocation of cuMemAlloc is made exportable (vmem.c) so no allocation
 *    has to move. Pool blocks (cuMemAllocAsync) and the program's own VMM
 *    memory are refused, as the driver refuses them.
 *  - Same user only: the exporter answers a connection only when the peer
 *    process has the exporter's own uid (workers become their client's
 *    user; root's clients are served as --worker-user) and the request's
 *    client uid, the uid the asking worker's supervisor took from
 *    SO_PEERCRED when its program connected, is the exporter's client
 *    uid. A session of another user that got the 64 bytes is refused with
 *    CUDA_ERROR_INVALID_HANDLE. The importer checks the answering peer's
 *    uid the same way, so a process squatting a dead exporter's name hands
 *    out nothing.
 *  - Lifetimes: freeing the allocation ends its exports (later opens fail);
 *    memory an importer mapped stays alive until it closes it (its mapping
 *    holds a reference to the physical memory), as CUDA's does. Opening
 *    the same handle again in a session answers the same pointer and
 *    counts one more close.
 *
 * Neither worker trusts the other: the server reads requests of a fixed
 * size with a short wait and never blocks on an answer; the importer reads
 * the answer as input (whole granules within its window, the allocation
 * inside the memory, one descriptor the backend judges) and waits a bounded
 * time.
 *
 * Checkpoints: a session that opened another process's memory is refused
 * (the mapping is not the session's to save). An exporter is checkpointed
 * as usual, its exported allocations as plain ones: the importers keep the
 * memory they mapped; a restored or moved exporter no longer shares it, and
 * handles made before name nothing in its new worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "fdpass.h"
#include "ipc.h"
#include "ipc_wire.h"
#include "log.h"
#include "pool_state.h"

#define IPC_WAIT_MS	2000		/* for the exporter's answer */
#define IPC_POLL_MS	200		/* the server looks at its stop flag */
#define IPC_READ_MS	200		/* for an asker's request */

struct ipc_export {
	uint32_t kind;
	uint64_t id, secret;
	CUdeviceptr base;		/* memory: the allocation */
	uint64_t size, off, bytes;
	int fd;
};

struct ipc_import {
	uint64_t key, id;
	CUdeviceptr p;
	uint64_t bytes;
	uint32_t refs;
};

struct ipc_state {
	int srv;			/* listening; -1 until the first export */
	uint64_t key;
	uint32_t client_uid;
	pthread_t th;
	bool stop;
	pthread_mutex_t lock;		/* the exports: main thread and server */
	struct ipc_export *e;
	size_t n, cap;
	uint64_t next_id;
	struct ipc_import *im;		/* main thread only */
	size_t nim, imcap;
};

static struct ipc_state *state(struct worker *w)
{
	struct ipc_state *x = w->ipc;

	if (x || !(x = calloc(1, sizeof(*x))))
		return x;
	x->srv = -1;
	x->client_uid = w->client_uid;
	pthread_mutex_init(&x->lock, NULL);
	w->ipc = x;
	return x;
}

/* ---- the exporter's server ------------------------------------------------ */

static bool peer_is_us(int sock)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	return !getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &l) && l == sizeof(cr) &&
	       cr.uid == getuid();
}

/* Never blocks: an asker that does not read its socket loses its answer. */
static void answer(int sock, const struct ipc_answer *a, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec io = { (void *)a, sizeof(*a) };
	struct msghdr h = { .msg_iov = &io, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		h.msg_control = cbuf;
		h.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(sock, &h, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		vlog_debug("ipc: an answer cannot be sent: %s", strerror(errno));
}

static void serve_one(struct ipc_state *x, int sock)
{
	struct ipc_answer a = { .magic = IPC_H_MAGIC, .status = CUDA_ERROR_INVALID_HANDLE };
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct ipc_ask q;
	int fd = -1;

	if (!peer_is_us(sock)) {
		vlog_info("ipc: a process of another user asked for an export: refused");
		answer(sock, &a, -1);
		return;
	}
	if (poll(&p, 1, IPC_READ_MS) != 1 ||
	    recv(sock, &q, sizeof(q), MSG_DONTWAIT) != (ssize_t)sizeof(q))
		return;
	if (q.magic != IPC_H_MAGIC || q.zero) {
		answer(sock, &a, -1);
		return;
	}
	if (q.client_uid != x->client_uid) {
		vlog_info("ipc: a session of uid %u asked for an export of uid %u's: refused",
			  q.client_uid, x->client_uid);
		answer(sock, &a, -1);
		return;
	}
	pthread_mutex_lock(&x->lock);
	for (size_t i = 0; i < x->n; i++) {
		struct ipc_export *e = &x->e[i];

		if (e->id != q.id || e->secret != q.secret || e->kind != q.kind)
			continue;
		fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
		a.status = fd < 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
		a.size = e->size;
		a.off = e->off;
		a.bytes = e->bytes;
		break;
	}
	pthread_mutex_unlock(&x->lock);
	answer(sock, &a, fd);
	if (fd >= 0)
		close(fd);
}

static void *serve(void *arg)
{
	struct ipc_state *x = arg;

	while (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = { .fd = x->srv, .events = POLLIN };
		int c;

		if (poll(&p, 1, IPC_POLL_MS) <= 0 || !(p.revents & POLLIN))
			continue;
		c = accept4(x->srv, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve_one(x, c);
		close(c);
	}
	return NULL;
}

static socklen_t name_of(uint64_t key, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, IPC_NAME_FMT,
		     (unsigned long long)key);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* The server, started on the first export. */
static CUresult server_start(struct ipc_state *x)
{
	struct sockaddr_un a;

	if (x->srv >= 0)
		return CUDA_SUCCESS;
	for (int tries = 0; tries < 8 && x->srv < 0; tries++) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		socklen_t l;

		if (s < 0)
			return CUDA_ERROR_OPERATING_SYSTEM;
		if (getrandom(&x->key, sizeof(x->key), 0) != sizeof(x->key)) {
			close(s);
			return CUDA_ERROR_OPERATING_SYSTEM;
		}
		l = name_of(x->key, &a);
		if (!bind(s, (struct sockaddr *)&a, l) && !listen(s, 64))
			x->srv = s;
		else
			close(s);	/* the name is taken: another one */
	}
	if (x->srv < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	if (pthread_create(&x->th, NULL, serve, x)) {
		close(x->srv);
		x->srv = -1;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

/* The program freed an allocation: its exports end (imports made keep theirs). */
static void mem_freed(void *arg, CUdeviceptr p)
{
	struct ipc_state *x = arg;

	pthread_mutex_lock(&x->lock);
	for (size_t i = x->n; i-- > 0;)
		if (x->e[i].kind == IPC_KIND_MEM && x->e[i].base == p) {
			close(x->e[i].fd);
			x->e[i] = x->e[--x->n];
		}
	pthread_mutex_unlock(&x->lock);
}

const char *ipc_ckpt_refusal(struct worker *w)
{
	if (w->ipc && w->ipc->nim)
		return "the session opened CUDA IPC memory of another process "
		       "(cuIpcOpenMemHandle), which checkpoints do not carry";
	return NULL;
}

/* ---- the importer ---------------------------------------------------------- */

/* Asks server @h->key for export @h: the answer and its descriptor. */
static CUresult ask(struct worker *w, const struct ipc_handle *h, struct ipc_answer *a, int *fd)
{
	struct ipc_ask q = { .magic = IPC_H_MAGIC, .kind = h->kind, .client_uid = w->client_uid,
			     .id = h->id, .secret = h->secret };
	struct pollfd p = { .events = POLLIN };
	struct sockaddr_un addr;
	socklen_t l = name_of(h->key, &addr);
	unsigned n = 1;
	int s, got;

	*fd = -1;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	/* The exporter has gone, or is someone else: the handle names nothing. */
	if (connect(s, (struct sockaddr *)&addr, l) || !peer_is_us(s) ||
	    send(s, &q, sizeof(q), MSG_NOSIGNAL) != (ssize_t)sizeof(q)) {
		close(s);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	p.fd = s;
	if (poll(&p, 1, IPC_WAIT_MS) != 1 || !(p.revents & POLLIN)) {
		close(s);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	got = vgpu_recv_fds_exact(s, a, sizeof(*a), fd, &n);
	close(s);
	if (got != (int)sizeof(*a) || a->magic != IPC_H_MAGIC || (a->status && n) ||
	    (!a->status && (n != 1 || *fd < 0))) {
		if (n == 1 && *fd >= 0)
			close(*fd);
		*fd = -1;
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (a->status)
		return a->status == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_ERROR_OUT_OF_MEMORY
							       : CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

static struct ipc_import *import_of(struct ipc_state *x, uint64_t key, uint64_t id)
{
	for (size_t i = 0; x && i < x->nim; i++)
		if (x->im[i].key == key && x->im[i].id == id)
			return &x->im[i];
	return NULL;
}

/* The current context's device (the entry's: OPF_NEEDS_CTX). */
static CUdevice ctx_device_of(struct worker *w)
{
	struct obj_entry *e = obj_get(&w->ctxs, w->cur_ctx);

	return e ? w->devices[(uint32_t)e->aux] : w->devices[0];
}

/* ---- the opcodes ----------------------------------------------------------- */

/* arg0 address; R: slot holds the 64 bytes */
static enum op_status op_get_mem(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = state(w);
	CUdeviceptr p = call->sqe->arg[0];
	struct ipc_handle h = { .magic = IPC_H_MAGIC, .version = IPC_H_VERSION,
				.kind = IPC_KIND_MEM };
	struct ipc_export e = { .kind = IPC_KIND_MEM, .fd = -1 };
	CUdeviceptr base = 0;
	size_t bytes = 0, size = 0, off = 0;
	CUresult rc;

	pools_settle(w);
	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!x) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	/* cuMemAlloc's memory only: not a pool's block, not another process's. */
	if (vmem_range_of(&w->vmem, p, &base, &bytes) ||
	    (w->pools && pool_block_find(w->pools, base) >= 0))
		return OP_DONE;
	pthread_mutex_lock(&x->lock);
	for (size_t i = 0; i < x->n; i++)
		if (x->e[i].kind == IPC_KIND_MEM && x->e[i].base == base) {
			e = x->e[i];
			break;
		}
	pthread_mutex_unlock(&x->lock);
	if (e.id)
		goto out;	/* exported before: the same handle */
	if ((rc = server_start(x))) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	rc = vmem_export_alloc(&w->vmem, base, &e.fd, &size, &off, &bytes);
	if (!rc && getrandom(&e.secret, sizeof(e.secret), 0) != sizeof(e.secret))
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	pthread_mutex_lock(&x->lock);
	if (!rc && x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 8;
		struct ipc_export *n = realloc(x->e, cap * sizeof(*n));

		if (n) {
			x->e = n;
			x->cap = cap;
		} else {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	if (!rc) {
		e.id = ++x->next_id;
		e.base = base;
		e.size = size;
		e.off = off;
		e.bytes = bytes;
		x->e[x->n++] = e;
	}
	pthread_mutex_unlock(&x->lock);
	if (rc) {
		if (e.fd >= 0)
			close(e.fd);
		call->cqe->result = rc;
		return OP_DONE;
	}
	w->vmem.on_free = mem_freed;
	w->vmem.on_free_arg = x;
out:
	h.key = x->key;
	h.id = e.id;
	h.secret = e.secret;
	h.bytes = e.bytes;
	memcpy(call->reply, &h, sizeof(h));
	call->cqe->val[2] = sizeof(h);
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

/* sqe.ctx; arg0 flags; P: the 64 bytes; R: val0 address, val1 bytes */
static enum op_status op_open_mem(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = state(w);
	CUmemGenericAllocationHandle mh = 0;
	struct ipc_import *im, *n;
	struct ipc_answer a;
	struct ipc_handle h;
	struct stat st;
	CUdeviceptr p = 0;
	CUresult rc;
	int fd = -1;

	pools_settle(w);
	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (call->len != sizeof(h) || (call->sqe->arg[0] & ~1ull))
		return OP_DONE;	/* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, or nothing */
	memcpy(&h, call->payload, sizeof(h));
	call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
	if (h.magic != IPC_H_MAGIC || h.version != IPC_H_VERSION || h.kind != IPC_KIND_MEM)
		return OP_DONE;
	if (!x) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	/* The driver's rule: a process does not open its own handles. */
	if (x->srv >= 0 && h.key == x->key) {
		call->cqe->result = CUDA_ERROR_INVALID_CONTEXT;
		return OP_DONE;
	}
	if ((im = import_of(x, h.key, h.id))) {
		if (im->refs == UINT32_MAX)
			return OP_DONE;
		im->refs++;
		p = im->p;
		goto done;
	}
	if (x->nim == x->imcap) {
		size_t cap = x->imcap ? 2 * x->imcap : 8;

		if (!(n = realloc(x->im, cap * sizeof(*n)))) {
			call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
			return OP_DONE;
		}
		x->im = n;
		x->imcap = cap;
	}
	rc = ask(w, &h, &a, &fd);
	/* The answer is another process's word: whole granules in the window,
	 * the allocation inside them, a descriptor the backend judges. */
	if (!rc && (!a.size || a.size % w->vmem.gran || a.size > w->vmem.size || !a.bytes ||
		    a.off >= a.size || a.bytes > a.size - a.off || fstat(fd, &st) ||
		    S_ISDIR(st.st_mode)))
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc)
		rc = w->B.cuMemImportFromShareableHandle(&mh, (void *)(intptr_t)fd,
							 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (fd >= 0)
		close(fd);
	if (!rc && (rc = vmem_map_ipc(&w->vmem, ctx_device_of(w), mh, a.size, a.off, a.bytes,
				      &p)))
		w->B.cuMemRelease(mh);
	if (rc) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	x->im[x->nim++] = (struct ipc_import){ .key = h.key, .id = h.id, .p = p,
					       .bytes = a.bytes, .refs = 1 };
	im = &x->im[x->nim - 1];
done:
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = p;
	call->cqe->val[1] = im->bytes;
	return OP_DONE;
}

/* arg0 address; R: val0 1 when the mapping went (its last close) */
static enum op_status op_close_mem(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = w->ipc;
	CUdeviceptr p = call->sqe->arg[0];
	CUresult rc;
	size_t i;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	for (i = 0; x && i < x->nim && x->im[i].p != p; i++)
		;
	if (!x || i == x->nim)
		return OP_DONE;
	if (--x->im[i].refs) {
		call->cqe->result = CUDA_SUCCESS;
		return OP_DONE;
	}
	/* Nothing of this session may still be using it. */
	rc = w->B.cuCtxSynchronize();
	if (!rc)
		rc = vmem_unmap_ipc(&w->vmem, p);
	if (rc) {
		x->im[i].refs++;
		call->cqe->result = rc;
		return OP_DONE;
	}
	x->im[i] = x->im[--x->nim];
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = 1;
	return OP_DONE;
}

const struct op_desc exec_ipc_ops[] = {
	OP(IPC_GET_MEM, OPF_SYNC_ONLY, op_get_mem),
	OP(IPC_OPEN_MEM, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_open_mem),
	OP(IPC_CLOSE_MEM, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_close_mem),
	{ 0 },
};
