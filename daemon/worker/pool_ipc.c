// SPDX-License-Identifier: MIT
/*
 * Memory pools shared between processes: cuMemPoolExportToShareableHandle,
 * cuMemPoolImportFromShareableHandle, cuMemPoolExportPointer and
 * cuMemPoolImportPointer, with POSIX descriptors.
 *
 * A pool made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR gives each
 * block its own physical allocation of whole granules, exportable as a
 * descriptor (vmem_alloc_shareable). Sharing it works like this:
 *
 *  - The pool's descriptor is one end of a SOCK_SEQPACKET socket pair; the
 *    exporter's worker keeps the other end and a thread serves it. Whoever
 *    holds the descriptor can ask that thread for the memory of pointers
 *    exported through this pool, and for nothing else.
 *  - Exporting a pointer (a live block of the pool, at its start) enters
 *    the block's descriptor in the pool's table under a fresh id and a
 *    random 64-bit secret; the 64 bytes of CUmemPoolPtrExportData carry
 *    magic, id, secret and size. Freeing the block ends its exports (the
 *    table forgets it): later imports of those bytes fail.
 *  - Importing a pool hands the descriptor to the importer's worker, which
 *    checks it is a Unix SEQPACKET socket and records a pool that cannot
 *    allocate (the driver's rule). Importing a pointer sends the id and
 *    secret to the exporter's thread with a fresh socket for the answer;
 *    the thread answers the block's descriptor only when the pair is in
 *    its table. The importer's worker maps that descriptor at a free place
 *    of its own window (vmem_map_imported); the backend bounds the mapping
 *    by what the descriptor really is, so a lying answer reaches nothing
 *    more than the memory it names. cuMemFree/cuMemFreeAsync of the
 *    imported pointer unmaps it (it is a plain allocation of the importer's
 *    window).
 *
 * Neither worker trusts the other: the exporter's thread reads requests as
 * input from anyone (fixed size, exactly one descriptor, the pair looked
 * up), never blocks on the answer socket, and touches nothing but its
 * table; the importer's worker reads the answer as input (magic, one
 * descriptor, whole granules within its window) and waits a bounded time.
 *
 * The driver's rule holds here too: importers must free imported memory
 * before the exporter frees it. The physical memory stays alive while an
 * importer maps it (its mapping holds a reference), but a block the
 * exporter freed is reused by its pool: an importer still using it then
 * sees the new owner's data.
 *
 * Checkpoints: refused while the session holds an imported pool or a
 * shareable pool with memory (the socket, the thread and the other
 * processes are not part of the session). Imported memory whose pool was
 * destroyed is a plain allocation and is saved as a private copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "fdpass.h"
#include "log.h"
#include "pool_state.h"
#include "worker.h"

#define IPC_MAGIC	0x70697076u	/* "vpip" */
#define IPC_VERSION	1u
#define IPC_WAIT_MS	2000		/* for the exporter's answer */
#define IPC_POLL_MS	200		/* the server looks at its stop flag */

/* CUmemPoolPtrExportData as vgpu fills it. */
struct ptr_data {
	uint32_t magic, version;
	uint64_t id, secret, size;
	uint8_t zero[32];
};
_Static_assert(sizeof(struct ptr_data) == sizeof(CUmemPoolPtrExportData),
	       "export data is 64 bytes");

struct ipc_req {
	uint32_t magic, zero;
	uint64_t id, secret;
};

struct ipc_rep {
	uint32_t magic;
	int32_t status;			/* 0: the descriptor comes with it */
	uint64_t size;
};

struct share_ptr {
	uint64_t id, secret;
	CUdeviceptr addr;
	uint64_t size;
	int fd;				/* the block's physical memory */
};

/* An exported pool: its server end and the pointers exported through it. */
struct pool_share {
	struct mempool *mp;
	int srv, cli;			/* cli: dup'ed for each export of the pool */
	pthread_t th;
	bool stop;
	pthread_mutex_t lock;		/* the table: main thread and server */
	struct share_ptr *e;
	size_t n, cap;
	uint64_t next_id;
};

struct pool_import {
	struct mempool *mp;
	int sock;
};

struct pool_ipc {
	struct pool_share **sh;
	size_t nsh;
	struct pool_import *im;
	size_t nim;
};

/* ---- the exporter's server ------------------------------------------------- */

/* Never blocks: an asker that does not read its socket loses its answer. */
static void answer(int sock, const struct ipc_rep *rep, int fd)
{
	int rc = vgpu_send_fd_nowait(sock, rep, sizeof(*rep), fd);

	if (rc < 0)
		vlog_debug("pool ipc: an answer cannot be sent: %s", strerror(-rc));
}

static void serve_one(struct pool_share *sh, const struct ipc_req *q, int reply)
{
	struct ipc_rep rep = { .magic = IPC_MAGIC, .status = CUDA_ERROR_INVALID_VALUE };
	struct stat st;
	int fd = -1;

	if (fstat(reply, &st) || !S_ISSOCK(st.st_mode))
		return;
	if (q->magic == IPC_MAGIC && !q->zero) {
		pthread_mutex_lock(&sh->lock);
		for (size_t i = 0; i < sh->n; i++) {
			if (sh->e[i].id != q->id || sh->e[i].secret != q->secret)
				continue;
			fd = fcntl(sh->e[i].fd, F_DUPFD_CLOEXEC, 0);
			rep.status = fd < 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
			rep.size = sh->e[i].size;
			break;
		}
		pthread_mutex_unlock(&sh->lock);
	}
	answer(reply, &rep, fd);
	if (fd >= 0)
		close(fd);
}

static void *serve(void *arg)
{
	struct pool_share *sh = arg;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = { .fd = sh->srv, .events = POLLIN };
		struct ipc_req q;
		unsigned n = 1;
		int fd = -1, got;

		if (poll(&p, 1, IPC_POLL_MS) <= 0 || !(p.revents & POLLIN))
			continue;
		got = vgpu_recv_fds_exact(sh->srv, &q, sizeof(q), &fd, &n);
		if (got == (int)sizeof(q) && n == 1 && fd >= 0)
			serve_one(sh, &q, fd);
		if (n == 1 && fd >= 0)
			close(fd);
	}
	return NULL;
}

/* ---- state ------------------------------------------------------------------ */

static void block_freed(struct worker *w, CUdeviceptr p);
static void pool_gone(struct worker *w, struct mempool *mp);

static struct pool_ipc *ipc(struct worker *w)
{
	if (!w->pool_ipc && (w->pool_ipc = calloc(1, sizeof(*w->pool_ipc)))) {
		w->pools->ipc_block_freed = block_freed;
		w->pools->ipc_pool_gone = pool_gone;
	}
	return w->pool_ipc;
}

static struct pool_share *share_of(struct pool_ipc *x, const struct mempool *mp)
{
	for (size_t i = 0; x && i < x->nsh; i++)
		if (x->sh[i]->mp == mp)
			return x->sh[i];
	return NULL;
}

static struct pool_import *import_of(struct pool_ipc *x, const struct mempool *mp)
{
	for (size_t i = 0; x && i < x->nim; i++)
		if (x->im[i].mp == mp)
			return &x->im[i];
	return NULL;
}

/* The pool's share, made on its first export (of the pool or a pointer). */
static CUresult share_get(struct worker *w, struct mempool *mp, struct pool_share **out)
{
	struct pool_ipc *x = ipc(w);
	struct pool_share *sh = share_of(x, mp), **n;
	int sv[2];

	if (sh) {
		*out = sh;
		return CUDA_SUCCESS;
	}
	if (!x || !(n = realloc(x->sh, (x->nsh + 1) * sizeof(*n))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->sh = n;
	if (!(sh = calloc(1, sizeof(*sh))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		free(sh);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	sh->mp = mp;
	sh->srv = sv[0];
	sh->cli = sv[1];
	pthread_mutex_init(&sh->lock, NULL);
	if (pthread_create(&sh->th, NULL, serve, sh)) {
		close(sv[0]);
		close(sv[1]);
		pthread_mutex_destroy(&sh->lock);
		free(sh);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	x->sh[x->nsh++] = sh;
	*out = sh;
	return CUDA_SUCCESS;
}

static void share_end(struct pool_share *sh)
{
	__atomic_store_n(&sh->stop, true, __ATOMIC_RELEASE);
	pthread_join(sh->th, NULL);
	close(sh->srv);
	close(sh->cli);
	for (size_t i = 0; i < sh->n; i++)
		close(sh->e[i].fd);
	pthread_mutex_destroy(&sh->lock);
	free(sh->e);
	free(sh);
}

/* The program freed a block: its exports end (imports made keep theirs). */
static void block_freed(struct worker *w, CUdeviceptr p)
{
	struct pool_ipc *x = w->pool_ipc;

	for (size_t k = 0; x && k < x->nsh; k++) {
		struct pool_share *sh = x->sh[k];

		pthread_mutex_lock(&sh->lock);
		for (size_t i = sh->n; i-- > 0;)
			if (sh->e[i].addr == p) {
				close(sh->e[i].fd);
				sh->e[i] = sh->e[--sh->n];
			}
		pthread_mutex_unlock(&sh->lock);
	}
}

/* Destroyed: its descriptor answers nothing more; an import lets go. */
static void pool_gone(struct worker *w, struct mempool *mp)
{
	struct pool_ipc *x = w->pool_ipc;
	struct pool_import *im = import_of(x, mp);

	for (size_t k = 0; x && k < x->nsh; k++)
		if (x->sh[k]->mp == mp) {
			share_end(x->sh[k]);
			x->sh[k] = x->sh[--x->nsh];
			break;
		}
	if (im) {
		close(im->sock);
		*im = x->im[--x->nim];
	}
}

const char *pool_ipc_ckpt_refusal(struct worker *w)
{
	struct pools *ps = w->pools;

	for (uint32_t i = 1; ps && i < ps->cap + ps->nzombies; i++) {
		struct mempool *mp = i < ps->cap ? ps->p[i] : ps->zombies[i - ps->cap];

		if (!mp)
			continue;
		if (mp->imported)
			return "the session imported a memory pool from another process, which "
			       "checkpoints do not carry";
		if (pool_shareable(mp) && mp->reserved)
			return "the session holds memory of a pool shareable with other processes, "
			       "which checkpoints do not carry";
	}
	return NULL;
}

/* ---- the opcodes --------------------------------------------------------------- */

/* arg0 pool id, arg1 token */
static enum op_status op_export(struct worker *w, struct op_call *call)
{
	struct mempool *mp = pool_by_id(w, call->sqe->arg[0]);
	struct pool_share *sh = NULL;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;
	int fd;

	pools_settle(w);
	if (pool_shareable(mp))
		rc = share_get(w, mp, &sh);
	if (!rc) {
		fd = fcntl(sh->cli, F_DUPFD_CLOEXEC, 0);
		rc = fd < 0 ? CUDA_ERROR_OUT_OF_MEMORY : worker_fd_send(w, call->sqe->arg[1], fd);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

/* A Unix SEQPACKET socket, as an export gives: anything else is refused. */
static bool pool_socket(int fd)
{
	int type = 0, dom = 0;
	socklen_t l1 = sizeof(type), l2 = sizeof(dom);
	struct stat st;

	return !fstat(fd, &st) && S_ISSOCK(st.st_mode) &&
	       !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) && type == SOCK_SEQPACKET &&
	       !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l2) && dom == AF_UNIX;
}

/* arg0 new pool id, arg1 token, arg2 device */
static enum op_status op_import(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct pool_ipc *x = ipc(w);
	struct pool_import *n;
	struct mempool *mp;
	int fd = worker_fd_take(w, s->arg[1]);

	pools_settle(w);
	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (fd < 0) {
		vlog_info("pool ipc: an import came without its descriptor");
		return OP_DONE;
	}
	if (s->arg[2] >= (uint64_t)w->device_count || s->arg[0] <= (uint64_t)w->device_count ||
	    s->arg[0] >= POOL_MAX_ID || (s->arg[0] < w->pools->cap && w->pools->p[s->arg[0]]) ||
	    !pool_socket(fd))
		goto out;
	call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
	if (!x || !(n = realloc(x->im, (x->nim + 1) * sizeof(*n))))
		goto out;
	x->im = n;
	if (!(mp = pool_new(w, (uint32_t)s->arg[0], (uint32_t)s->arg[2])))
		goto out;
	mp->imported = true;
	mp->handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	x->im[x->nim++] = (struct pool_import){ mp, fd };
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
out:
	close(fd);
	return OP_DONE;
}

/* arg0 address; R: the 64 bytes */
static enum op_status op_export_ptr(struct worker *w, struct op_call *call)
{
	struct pools *ps = w->pools;
	CUdeviceptr p = call->sqe->arg[0];
	long i = pool_block_find(ps, p);
	struct pool_share *sh = NULL;
	struct share_ptr *e = NULL;
	struct ptr_data d = { .magic = IPC_MAGIC, .version = IPC_VERSION };
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	pools_settle(w);
	/* A live block of a shareable pool, named by its start. */
	if (i >= 0 && ps->b[i].state == BLOCK_LIVE && pool_shareable(ps->b[i].pool) &&
	    !ps->b[i].pool->destroyed)
		rc = share_get(w, ps->b[i].pool, &sh);
	if (rc) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	pthread_mutex_lock(&sh->lock);
	for (size_t k = 0; k < sh->n && !e; k++)
		if (sh->e[k].addr == p)
			e = &sh->e[k];
	if (!e && sh->n == sh->cap) {
		size_t cap = sh->cap ? sh->cap * 2 : 8;
		struct share_ptr *n = realloc(sh->e, cap * sizeof(*n));

		if (n) {
			sh->e = n;
			sh->cap = cap;
		}
	}
	if (!e && sh->n < sh->cap) {
		struct share_ptr x = { .addr = p, .fd = -1, .id = ++sh->next_id };
		size_t size = 0;

		rc = vmem_export_fd(&w->vmem, p, &x.fd, &size);
		if (!rc && getrandom(&x.secret, sizeof(x.secret), 0) != sizeof(x.secret))
			rc = CUDA_ERROR_OPERATING_SYSTEM;
		if (rc && x.fd >= 0)
			close(x.fd);
		if (!rc) {
			x.size = size;
			sh->e[sh->n] = x;
			e = &sh->e[sh->n++];
		}
	} else if (!e) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (e) {
		d.id = e->id;
		d.secret = e->secret;
		d.size = e->size;
	}
	pthread_mutex_unlock(&sh->lock);
	call->cqe->result = rc;
	if (!rc) {
		memcpy(call->reply, &d, sizeof(d));
		call->cqe->val[2] = sizeof(d);
	}
	return OP_DONE;
}

/* Asks the exporter for the memory @d names: its descriptor and size. */
static CUresult ask(int sock, const struct ptr_data *d, int *fd, uint64_t *size)
{
	struct ipc_req q = { .magic = IPC_MAGIC, .id = d->id, .secret = d->secret };
	struct pollfd p = { .events = POLLIN };
	struct ipc_rep rep;
	unsigned n = 1;
	int rp[2], got;

	*fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rp))
		return CUDA_ERROR_OPERATING_SYSTEM;
	{
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
		struct iovec io = { &q, sizeof(q) };
		struct msghdr h = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&h);

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &rp[1], sizeof(int));
		got = (int)sendmsg(sock, &h, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	close(rp[1]);
	p.fd = rp[0];
	/* The exporter has gone, or does not answer: nothing to map. */
	if (got != (int)sizeof(q) || poll(&p, 1, IPC_WAIT_MS) != 1 || !(p.revents & POLLIN)) {
		close(rp[0]);
		return CUDA_ERROR_INVALID_VALUE;
	}
	got = vgpu_recv_fds_exact(rp[0], &rep, sizeof(rep), fd, &n);
	close(rp[0]);
	if (got != (int)sizeof(rep) || rep.magic != IPC_MAGIC || rep.status || n != 1 ||
	    *fd < 0) {
		if (n == 1 && *fd >= 0)
			close(*fd);
		*fd = -1;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*size = rep.size;
	return CUDA_SUCCESS;
}

/* arg0 imported pool id; P: the 64 bytes; R: val0 address, val1 bytes */
static enum op_status op_import_ptr(struct worker *w, struct op_call *call)
{
	struct mempool *mp = pool_by_id(w, call->sqe->arg[0]);
	struct pool_import *im = mp ? import_of(w->pool_ipc, mp) : NULL;
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr p = 0;
	struct ptr_data d;
	struct stat st;
	uint64_t size = 0;
	CUresult rc;
	int fd = -1;

	pools_settle(w);
	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!im || call->len != sizeof(d))
		return OP_DONE;
	memcpy(&d, call->payload, sizeof(d));
	if (d.magic != IPC_MAGIC || d.version != IPC_VERSION)
		return OP_DONE;
	rc = ask(im->sock, &d, &fd, &size);
	/* The answer is another process's word: whole granules, in the window,
	 * and a descriptor the backend judges (as a VMM import's, never a
	 * directory). */
	if (!rc && (!size || size % w->vmem.gran || size > w->vmem.size ||
		    fstat(fd, &st) || S_ISDIR(st.st_mode)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
							 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (fd >= 0)
		close(fd);
	if (!rc && (rc = vmem_map_imported(&w->vmem, w->devices[mp->dev], h, size, &p)))
		w->B.cuMemRelease(h);
	call->cqe->result = rc;
	call->cqe->val[0] = rc ? 0 : p;
	call->cqe->val[1] = rc ? 0 : size;
	return OP_DONE;
}

const struct op_desc exec_pool_ipc_ops[] = {
	OP(POOL_EXPORT, OPF_SYNC_ONLY, op_export),
	OP(POOL_IMPORT, OPF_SYNC_ONLY, op_import),
	OP(POOL_EXPORT_PTR, OPF_SYNC_ONLY, op_export_ptr),
	OP(POOL_IMPORT_PTR, OPF_SYNC_ONLY, op_import_ptr),
	{ 0 },
};
