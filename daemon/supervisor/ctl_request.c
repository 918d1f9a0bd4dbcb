// SPDX-License-Identifier: MIT
/*
 * A control request checked field by field (ctl_request.h): the magic, the
 * version, the operation, the flags it allows, every reserved byte zero,
 * the message exactly the request plus its argument, and as many
 * descriptors as the operation takes.
 */
#include "ctl_request.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

bool ctl_is_admin(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups, gid_t admin_gid)
{
	if (uid == 0)
		return true;
	if (admin_gid == (gid_t)-1)
		return false;
	if (gid == admin_gid)
		return true;
	for (size_t i = 0; i < ngroups; i++)
		if (groups[i] == admin_gid)
			return true;
	return false;
}

/* The argument: one absolute path, NUL-terminated. */
static const char *path_arg(const struct vgpu_ctl_req *q, const char *arg)
{
	if (!q->arg_len || memchr(arg, 0, q->arg_len) != arg + q->arg_len - 1)
		return "the path must be one NUL-terminated string";
	if (arg[0] != '/')
		return "the path must be absolute";
	return NULL;
}

/* PROCESS: a pid, and one action with its arguments and nothing else. */
static const char *check_process(const struct vgpu_ctl_req *q, const char *arg, unsigned nfds)
{
	struct vgpu_ctl_process_req a;

	if (!q->session || q->session > INT32_MAX)
		return "process needs a process id";
	if (nfds)
		return "process takes no file descriptor";
	if (q->arg_len != sizeof(a))
		return "process takes its action as the argument";
	memcpy(&a, arg, sizeof(a));
	if (a.action < VGPU_CTL_PROC_STATE || a.action > VGPU_CTL_PROC_UNLOCK)
		return "unknown process action";
	for (size_t i = 0; i < sizeof(a.reserved); i++)
		if (a.reserved[i])
			return "reserved bytes must be zero";
	if (a.timeout_ms && a.action != VGPU_CTL_PROC_LOCK)
		return "only a lock takes a timeout";
	if ((q->flags & VGPU_CTL_F_GPU) && a.action != VGPU_CTL_PROC_RESTORE)
		return "only a restore takes a GPU";
	return NULL;
}

/* The flags, the descriptors and the argument @q's operation takes. */
static const char *check_op(const struct vgpu_ctl_req *q, const char *arg, unsigned nfds,
			    uint32_t *allowed, int *err)
{
	switch (q->op) {
	case VGPU_CTL_SESSIONS:
		if (q->arg_len)
			return "sessions takes no argument";
		if (nfds)
			return "sessions takes no file descriptor";
		return NULL;
	case VGPU_CTL_CHECKPOINT:
		*allowed = VGPU_CTL_F_COMPRESS | VGPU_CTL_F_DIRECT | VGPU_CTL_F_STOP |
			   VGPU_CTL_F_INCREMENTAL;
		if (!q->session)
			return "checkpoint needs a session";
		if (nfds != VGPU_CTL_CHECKPOINT_FDS)
			return nfds ? "checkpoint takes one file descriptor"
				    : "checkpoint needs the file's descriptor (vgpuctl opens it)";
		return path_arg(q, arg);
	case VGPU_CTL_RESTORE:
		*allowed = VGPU_CTL_F_GPU;
		if (q->session)
			return "restore takes no session: the file names it";
		if (!nfds)
			return "restore needs the files' descriptors (vgpuctl opens them)";
		if (nfds > VGPU_CTL_MAX_FDS)
			return "more descriptors than a chain of checkpoints has";
		return path_arg(q, arg);
	case VGPU_CTL_MIGRATE:
		*allowed = VGPU_CTL_F_GPU;
		if (!q->session)
			return "migrate needs a session";
		if (q->arg_len)
			return "migrate takes no argument";
		if (nfds)
			return "migrate takes no file descriptor";
		return NULL;
	case VGPU_CTL_PROCESS:
		*allowed = VGPU_CTL_F_GPU;
		return check_process(q, arg, nfds);
	default:
		*err = EOPNOTSUPP;
		return "unknown operation";
	}
}

const char *ctl_parse(const void *buf, size_t len, unsigned nfds, const struct ctl_caller *who,
		      struct ctl_parsed *out, int *err)
{
	const struct vgpu_ctl_req *q = buf;
	const char *arg = (const char *)(q + 1), *why;
	uint32_t allowed = 0;

	(void)who;	/* every caller may send every operation; the sessions decide */
	memset(out, 0, sizeof(*out));
	*err = EINVAL;
	if (len < sizeof(*q))
		return "a request is at least 64 bytes";
	if (q->magic != VGPU_CTL_MAGIC)
		return "not a vgpu control request (bad magic)";
	*err = EPROTONOSUPPORT;
	if (q->version != VGPU_CTL_VERSION)
		return "unsupported control protocol version";
	*err = EINVAL;
	if (q->arg_len > VGPU_CTL_MAX_ARG || len != sizeof(*q) + q->arg_len)
		return "the message is not the request and its argument";
	for (size_t i = 0; i < sizeof(q->reserved); i++)
		if (q->reserved[i])
			return "reserved bytes must be zero";
	why = check_op(q, arg, nfds, &allowed, err);
	if (why)
		return why;
	if (q->flags & ~allowed)
		return "unknown flags";
	if (q->gpu && !(q->flags & VGPU_CTL_F_GPU))
		return "a GPU index without the GPU flag";
	if (q->gpu >= 64)
		return "GPU index out of range";
	out->q = q;
	out->path = q->arg_len && q->op != VGPU_CTL_PROCESS ? arg : NULL;
	out->gpu = q->flags & VGPU_CTL_F_GPU ? (int)q->gpu : -1;
	out->nfds = nfds;
	if (q->op == VGPU_CTL_PROCESS)
		memcpy(&out->proc, arg, sizeof(out->proc));
	*err = 0;
	return NULL;
}
