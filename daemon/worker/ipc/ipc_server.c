// SPDX-License-Identifier: MIT
/*
 * CUDA IPC between vgpu sessions of the same user: how workers find and
 * trust each other (ipc_mem.c and ipc_event.c use it).
 *
 * The program carries a handle's 64 bytes to the other process any way it
 * likes, so they must say everything: which worker to ask (the random key
 * naming its server's abstract Unix socket), which export (an id) and the
 * proof (a random 64-bit secret per export). The exporter's worker starts
 * the server on its first export: a thread accepting SEQPACKET connections,
 * one question and one answer each.
 *
 * Same user only: the exporter answers a connection only when the peer
 * process has the exporter's own uid (workers become their client's user;
 * root's clients are served as --worker-user) and the question's client
 * uid, the uid the asking worker's supervisor took from SO_PEERCRED when
 * its program connected, is the exporter's client uid. A session of
 * another user that got the 64 bytes is refused with
 * CUDA_ERROR_INVALID_HANDLE. (Where root's sessions are served as nobody,
 * a worker of nobody's session that had been taken over could lie about
 * its client uid: it would still need the handle's secret.) The importer
 * checks the answering peer's uid the same way, so a process squatting a
 * gone exporter's name hands out nothing.
 *
 * Neither worker trusts the other: the server reads a question of a fixed
 * size with a short wait and never blocks on an answer; the importer reads
 * the answer as input (ipc_mem.c and ipc_event.c check what it holds) and
 * waits a bounded time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fdpass.h"
#include "ipc.h"
#include "ipc_state.h"
#include "log.h"

#define IPC_WAIT_MS	2000		/* for the exporter's answer */
#define IPC_POLL_MS	200		/* the server looks at its stop flag */
#define IPC_READ_MS	200		/* for an asker's question */

struct ipc_state *ipc_state_get(struct worker *w)
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

static bool peer_is_us(int sock)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	return !getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &l) && l == sizeof(cr) &&
	       cr.uid == getuid();
}

/* ---- the exporter's server ------------------------------------------------ */

/* Never blocks: an asker that does not read its socket loses its answer. */
static void answer(int sock, const struct ipc_answer *a, int fd)
{
	int rc = vgpu_send_fd_nowait(sock, a, sizeof(*a), fd);

	if (rc < 0)
		vlog_debug("ipc: an answer cannot be sent: %s", strerror(-rc));
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
	/* Exactly one question (MSG_TRUNC: a longer one says its length). */
	if (poll(&p, 1, IPC_READ_MS) != 1 ||
	    recv(sock, &q, sizeof(q), MSG_DONTWAIT | MSG_TRUNC) != (ssize_t)sizeof(q))
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
		a.status = CUDA_SUCCESS;
		if (e->fd >= 0 && (fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0)) < 0)
			a.status = CUDA_ERROR_OUT_OF_MEMORY;
		e->opened |= !a.status;
		a.size = e->size;
		a.off = e->off;
		a.bytes = e->bytes;
		memcpy(a.data, e->data, sizeof(a.data));
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

/* ---- the table of exports ---------------------------------------------------- */

bool ipc_export_find(struct ipc_state *x, uint32_t kind, uint64_t what, struct ipc_export *out)
{
	bool found = false;

	pthread_mutex_lock(&x->lock);
	for (size_t i = 0; i < x->n && !found; i++)
		if (x->e[i].kind == kind && x->e[i].what == what) {
			*out = x->e[i];
			found = true;
		}
	pthread_mutex_unlock(&x->lock);
	return found;
}

CUresult ipc_export_add(struct ipc_state *x, struct ipc_export *e)
{
	CUresult rc = server_start(x);

	if (!rc && getrandom(&e->secret, sizeof(e->secret), 0) != sizeof(e->secret))
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
		e->id = ++x->next_id;
		x->e[x->n++] = *e;
	}
	pthread_mutex_unlock(&x->lock);
	if (rc && e->fd >= 0) {
		close(e->fd);
		e->fd = -1;
	}
	return rc;
}

void ipc_exports_end(struct ipc_state *x, uint32_t kind, uint64_t what)
{
	pthread_mutex_lock(&x->lock);
	for (size_t i = x->n; i-- > 0;)
		if (x->e[i].kind == kind && x->e[i].what == what) {
			if (x->e[i].fd >= 0)
				close(x->e[i].fd);
			x->e[i] = x->e[--x->n];
		}
	pthread_mutex_unlock(&x->lock);
}

void ipc_handle_of(const struct ipc_state *x, const struct ipc_export *e, struct ipc_handle *h)
{
	memset(h, 0, sizeof(*h));
	h->magic = IPC_H_MAGIC;
	h->version = IPC_H_VERSION;
	h->kind = (uint16_t)e->kind;
	h->key = x->key;
	h->id = e->id;
	h->secret = e->secret;
	h->bytes = e->bytes;
}

enum op_status ipc_reply_handle(const struct ipc_state *x, const struct ipc_export *e,
				struct op_call *call)
{
	struct ipc_handle h;

	ipc_handle_of(x, e, &h);
	memcpy(call->reply, &h, sizeof(h));
	call->cqe->val[2] = sizeof(h);
	call->cqe->result = CUDA_SUCCESS;
	return OP_DONE;
}

bool ipc_own_handle(const struct ipc_state *x, const struct ipc_handle *h)
{
	return x->srv >= 0 && h->key == x->key;
}

CUresult ipc_handle_in(const struct ipc_state *x, const void *bytes, uint16_t kind,
		       struct ipc_handle *h)
{
	memcpy(h, bytes, sizeof(*h));
	if (h->magic != IPC_H_MAGIC || h->version != IPC_H_VERSION || h->kind != kind)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (ipc_own_handle(x, h))
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

/* ---- the importer ---------------------------------------------------------- */

CUresult ipc_ask(struct worker *w, const struct ipc_handle *h, struct ipc_answer *a, int *fd)
{
	struct ipc_ask q = { .magic = IPC_H_MAGIC, .kind = h->kind, .client_uid = w->client_uid,
			     .id = h->id, .secret = h->secret };
	struct pollfd p = { .events = POLLIN };
	struct sockaddr_un addr;
	socklen_t l = name_of(h->key, &addr);
	unsigned n = 1, want = h->kind == IPC_KIND_MEM;
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
	if (got != (int)sizeof(*a) || a->magic != IPC_H_MAGIC || n != (a->status ? 0 : want)) {
		if (n == 1 && *fd >= 0)
			close(*fd);
		*fd = -1;
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (!n)
		*fd = -1;
	if (a->status)
		return a->status == CUDA_ERROR_OUT_OF_MEMORY ? CUDA_ERROR_OUT_OF_MEMORY
							       : CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

/* ---- the session ------------------------------------------------------------ */

void ipc_session_end(struct worker *w)
{
	struct ipc_state *x = w->ipc;

	if (!x)
		return;
	if (x->srv >= 0) {
		__atomic_store_n(&x->stop, true, __ATOMIC_RELEASE);
		pthread_join(x->th, NULL);
		close(x->srv);
	}
	for (size_t i = 0; i < x->n; i++)
		if (x->e[i].fd >= 0)
			close(x->e[i].fd);
	for (size_t i = 0; i < x->nim; i++)
		vmem_unmap_ipc(&w->vmem, x->im[i].p);
	ipc_hostreg_end_all(w);
	if (w->vmem.on_free_arg == x) {
		w->vmem.on_free = NULL;
		w->vmem.on_free_arg = NULL;
	}
	pthread_mutex_destroy(&x->lock);
	free(x->e);
	free(x->im);
	free(x->hr);
	free(x);
	w->ipc = NULL;
}

const char *ipc_move_refusal(struct worker *w)
{
	struct ipc_state *x = w->ipc;
	const char *why = NULL;

	if (!x)
		return NULL;
	pthread_mutex_lock(&x->lock);
	for (size_t i = 0; i < x->n && !why; i++)
		if (x->e[i].opened)
			why = x->e[i].kind == IPC_KIND_MEM
				      ? "another process opened memory the session exported "
					"(cuIpcGetMemHandle): moved, it would share it no more"
				      : "another process opened an event the session exported "
					"(cuIpcGetEventHandle): moved, it would share it no more";
	pthread_mutex_unlock(&x->lock);
	return why;
}

const char *ipc_ckpt_refusal(struct worker *w)
{
	struct obj_entry *e;
	uint32_t i;

	if (w->ipc && w->ipc->nim)
		return "the session opened CUDA IPC memory of another process "
		       "(cuIpcOpenMemHandle), which checkpoints do not carry";
	if (w->ipc && w->ipc->nhr)
		return "the session registered pageable memory for the device (DEVICEMAP), "
		       "which checkpoints do not carry";
	obj_for_each(&w->events, i, e)
		if (e->aux & IPC_EVENT_IMPORTED)
			return "the session opened a CUDA IPC event of another process "
			       "(cuIpcOpenEventHandle), which checkpoints do not carry";
	return NULL;
}
