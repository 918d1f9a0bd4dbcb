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
#include <sys/stat.h>
#include <unistd.h>

#include "fdpass.h"
#include "print_follow.h"
#include "vmm.h"

static struct {
	pthread_mutex_t lock;
	bool known;
	dev_t dev;
	ino_t ino;
} F = { .lock = PTHREAD_MUTEX_INITIALIZER };

void vgpu_print_follow_sent(void)
{
	struct stat st;

	pthread_mutex_lock(&F.lock);
	F.known = !fstat(STDOUT_FILENO, &st);
	F.dev = st.st_dev;
	F.ino = st.st_ino;
	pthread_mutex_unlock(&F.lock);
}

void vgpu_print_follow(struct vgpu_session *s)
{
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC };
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_PRINT_TO } };
	int fd = STDOUT_FILENO;
	struct stat st;

	if (fstat(STDOUT_FILENO, &st))
		return;
	pthread_mutex_lock(&F.lock);
	if (F.known && st.st_dev == F.dev && st.st_ino == F.ino) {
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
	if (vgpu_send_fds(s->sock, &m, sizeof(m), &fd, 1) == (int)sizeof(m) && !vgpu_post(&r)) {
		F.known = true;
		F.dev = st.st_dev;
		F.ino = st.st_ino;
	}
	vgpu_fd_unlock();
	pthread_mutex_unlock(&F.lock);
}
