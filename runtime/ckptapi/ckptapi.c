// SPDX-License-Identifier: MIT
/*
 * NVIDIA's process-checkpoint API (cuCheckpointProcess*), answered by
 * vgpu's own checkpoint. A tool (cuda-checkpoint, CRIU's plugin) or the
 * process itself names a pid; under vgpu that process's GPU state is in
 * its session's worker, so each call is a request on vgpud's control
 * socket (VGPU_CTL_PROCESS, include/vgpu/ctl.h), which decides who may
 * act on which process: the caller's own uid, root or vgpud's admin
 * group, checked by the daemon from the socket's peer credentials.
 * Another user's process is answered as one vgpu does not serve
 * (INVALID_VALUE).
 *
 * The calls need no cuInit and no session of the caller's: a tool that
 * only checkpoints opens no worker. They go to the daemon of VGPU_SOCKET
 * (the client socket's control socket), the one the target is served by
 * when both run under the same `vgpu run` setup.
 *
 * Differences from NVIDIA's, each for a reason:
 * - cuCheckpointProcessGetRestoreThreadId answers NOT_SUPPORTED (after
 *   checking the pid): no thread of the target restores it, its worker
 *   does, and naming one would have a tool keep it running while it
 *   freezes the rest.
 * - A restore's GPU pairs may only name the GPUs the process was on
 *   (oldUuid == newUuid): moving a session to another GPU is `vgpuctl
 *   migrate --gpu`; another pairing answers NOT_SUPPORTED.
 * - A lock's timeout bounds the wait for the worker's answer to come; a
 *   lock that comes later is undone by the daemon (the process RUNNING,
 *   NOT_READY answered), as NVIDIA leaves the process on a timeout.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cuda.h>

#include "driver.h"
#include "log.h"
#include "vgpu/ctl.h"
#include "vgpu/proto.h"

static CUresult from_errno(int status)
{
	switch (status) {
	case 0:
		return CUDA_SUCCESS;
	case -ESRCH:	/* no session of that process, or another user's */
	case -ENODEV:	/* no such GPU */
		return CUDA_ERROR_INVALID_VALUE;
	case -EBADFD:
		return CUDA_ERROR_ILLEGAL_STATE;
	case -ETIMEDOUT:
	case -EBUSY:	/* another order on the session is under way */
	case -EAGAIN:	/* no idle worker to restore into, yet */
		return CUDA_ERROR_NOT_READY;
	case -EOPNOTSUPP:
		return CUDA_ERROR_NOT_SUPPORTED;
	case -ENOMEM:
		return CUDA_ERROR_OUT_OF_MEMORY;
	default:
		return CUDA_ERROR_UNKNOWN;
	}
}

static int dial_ctl(void)
{
	const char *sock = getenv("VGPU_SOCKET");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (!sock || !*sock)
		sock = VGPU_DEFAULT_SOCKET;
	if (!vgpu_ctl_path_for(sock, a.sun_path, sizeof(a.sun_path)))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* One request on the control socket: the process's state after it in *out;
 * the daemon's errno in *status. */
static CUresult ask_once(int pid, uint32_t action, uint32_t timeout_ms,
			 struct vgpu_ctl_process *out, int *status)
{
	struct {
		struct vgpu_ctl_req q;
		struct vgpu_ctl_process_req a;
	} m;
	struct vgpu_ctl_reply r;
	struct vgpu_ctl_process rec;
	int fd;
	ssize_t n;

	if (pid <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&m, 0, sizeof(m));
	m.q = (struct vgpu_ctl_req){ .magic = VGPU_CTL_MAGIC, .version = VGPU_CTL_VERSION,
				     .op = VGPU_CTL_PROCESS, .session = (uint64_t)pid,
				     .arg_len = sizeof(m.a) };
	m.a.action = action;
	m.a.timeout_ms = timeout_ms;
	fd = dial_ctl();
	if (fd < 0) {
		vlog_warn("cuCheckpointProcess: vgpud's control socket: %s", strerror(-fd));
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (send(fd, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m)) {
		close(fd);
		return CUDA_ERROR_UNKNOWN;
	}
	/* A checkpoint or restore answers once done: wait for it. */
	do
		n = recv(fd, &r, sizeof(r), 0);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(r) || r.magic != VGPU_CTL_MAGIC) {
		close(fd);
		return CUDA_ERROR_UNKNOWN;
	}
	r.message[sizeof(r.message) - 1] = 0;
	*status = r.status;
	if (r.status) {
		close(fd);
		vlog_debug("cuCheckpointProcess on %d: %s", pid, r.message);
		return from_errno(r.status);
	}
	do
		n = recv(fd, &rec, sizeof(rec), 0);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (r.count != 1 || n != sizeof(rec))
		return CUDA_ERROR_UNKNOWN;
	if (out)
		*out = rec;
	return CUDA_SUCCESS;
}

/* A restore waits for an idle worker: the one the checkpoint ended is
 * being replaced, or every worker serves a session (30 s at most). */
static CUresult ask(int pid, uint32_t action, uint32_t timeout_ms, struct vgpu_ctl_process *out)
{
	int status = 0;
	CUresult rc = ask_once(pid, action, timeout_ms, out, &status);

	for (int i = 0; i < 3000 && action == VGPU_CTL_PROC_RESTORE && status == -EAGAIN; i++) {
		usleep(10000);
		status = 0;
		rc = ask_once(pid, action, timeout_ms, out, &status);
	}
	return rc;
}

static bool zeroed(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

VGPU_EXPORT CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)
{
	struct vgpu_ctl_process rec;
	CUresult rc;

	if (!state)
		return CUDA_ERROR_INVALID_VALUE;
	rc = ask(pid, VGPU_CTL_PROC_STATE, 0, &rec);
	if (!rc)
		*state = (CUprocessState)rec.state;
	return rc;
}

VGPU_EXPORT CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
	CUresult rc;

	if (!tid)
		return CUDA_ERROR_INVALID_VALUE;
	rc = ask(pid, VGPU_CTL_PROC_STATE, 0, NULL);
	/* No thread of the process restores it: its worker does (above). */
	return rc ? rc : CUDA_ERROR_NOT_SUPPORTED;
}

VGPU_EXPORT CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
	if (args && (args->reserved0 || !zeroed(args->reserved1, sizeof(args->reserved1))))
		return CUDA_ERROR_INVALID_VALUE;
	return ask(pid, VGPU_CTL_PROC_LOCK, args ? args->timeoutMs : 0, NULL);
}

VGPU_EXPORT CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
	if (args && !zeroed(args->reserved, sizeof(args->reserved)))
		return CUDA_ERROR_INVALID_VALUE;
	return ask(pid, VGPU_CTL_PROC_CHECKPOINT, 0, NULL);
}

VGPU_EXPORT CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
	if (args) {
		if (!zeroed(args->reserved, sizeof(args->reserved)) || args->reserved1 ||
		    (args->gpuPairsCount && !args->gpuPairs))
			return CUDA_ERROR_INVALID_VALUE;
		for (unsigned int i = 0; i < args->gpuPairsCount; i++)
			if (memcmp(&args->gpuPairs[i].oldUuid, &args->gpuPairs[i].newUuid,
				   sizeof(CUuuid)))
				return CUDA_ERROR_NOT_SUPPORTED;	/* vgpuctl migrate --gpu */
	}
	return ask(pid, VGPU_CTL_PROC_RESTORE, 0, NULL);
}

VGPU_EXPORT CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
	if (args && !zeroed(args->reserved, sizeof(args->reserved)))
		return CUDA_ERROR_INVALID_VALUE;
	return ask(pid, VGPU_CTL_PROC_UNLOCK, 0, NULL);
}
