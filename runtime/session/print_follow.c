// SPDX-License-Identifier: MIT
/*
 * Device printf follows the program's current fd 1. The worker relays what
 * the driver prints to a descriptor of the program's stdout, the one the
 * hello carried. A program that points fd 1 elsewhere later (dup2, freopen)
 * expects the output there, as natively, where the driver writes to fd 1
 * at each synchronizing call. So before each synchronous call the runtime
 * looks at fd 1 (one fstat: which file it is, by device and inode) and,
 * when it is another file than the worker has, sends it on the session's
 * socket and posts PRINT_TO ahead of the call (daemon/worker/ipc/
 * print_follow.c): that call's output, and all after, go to the new file.
 * A closed fd 1 changes nothing (the output goes where it went).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdpass.h"
#include "print_follow.h"
#include "vmm.h"

/* The file the worker has: read without the lock (a torn read only takes
 * the slow path), written under it. dev 0 ino 0: none known. */
static struct {
	pthread_mutex_t lock;
	uint64_t dev, ino;
} F = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool known(const struct stat *st)
{
	return __atomic_load_n(&F.dev, __ATOMIC_RELAXED) == (uint64_t)st->st_dev &&
	       __atomic_load_n(&F.ino, __ATOMIC_RELAXED) == (uint64_t)st->st_ino;
}

static void remember(const struct stat *st)
{
	__atomic_store_n(&F.dev, (uint64_t)st->st_dev, __ATOMIC_RELAXED);
	__atomic_store_n(&F.ino, (uint64_t)st->st_ino, __ATOMIC_RELAXED);
}

void vgpu_print_follow_sent(void)
{
	struct stat st = { 0 };

	pthread_mutex_lock(&F.lock);
	if (fstat(STDOUT_FILENO, &st))
		st.st_dev = st.st_ino = 0;
	remember(&st);
	pthread_mutex_unlock(&F.lock);
}

void vgpu_print_follow(struct vgpu_session *s)
{
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC };
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_PRINT_TO } };
	int fd = STDOUT_FILENO;
	struct stat st;

	if (fstat(STDOUT_FILENO, &st) || known(&st))
		return;
	pthread_mutex_lock(&F.lock);
	if (known(&st)) {	/* another thread sent it */
		pthread_mutex_unlock(&F.lock);
		return;
	}
	/* The descriptor first: the worker keeps it until the entry comes.
	 * A call made while the channel is held (an import sending its own
	 * descriptor) leaves the change to the next call. */
	if (!vgpu_fd_trylock()) {
		pthread_mutex_unlock(&F.lock);
		return;
	}
	m.token = vgpu_fd_token();
	r.sqe.arg[0] = m.token;
	if (vgpu_send_fds(s->sock, &m, sizeof(m), &fd, 1) == (int)sizeof(m) && !vgpu_post(&r))
		remember(&st);
	vgpu_fd_unlock();
	pthread_mutex_unlock(&F.lock);
}
