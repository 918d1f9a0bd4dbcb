// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the control request parser (daemon/supervisor/ctl_request.c),
 * as the supervisor calls it on what came off the control socket.
 *
 * Input: byte 0, the number of descriptors that came with the message
 * (0..255); byte 1, the caller (bit 0: admin; the rest: its uid); byte 2,
 * how many of the caller's groups follow as 4-byte gids (for
 * ctl_is_admin); then the message itself. A request the parser accepts is
 * checked against what ctl.h promises of it: the argument a path that ends
 * in its NUL inside the message (a process action: its fixed argument), as many descriptors as the operation
 * takes, only its flags. The tail is also given, NUL-terminated, to
 * vgpu_ctl_path_for as a socket path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_request.h"

static void check_accepted(const struct ctl_parsed *p, const uint8_t *msg, size_t len)
{
	const struct vgpu_ctl_req *q = p->q;

	if ((const uint8_t *)q != msg || len != sizeof(*q) + q->arg_len)
		__builtin_trap();
	switch (q->op) {
	case VGPU_CTL_SESSIONS:
	case VGPU_CTL_MIGRATE:
		if (p->nfds || p->path || q->arg_len)
			__builtin_trap();
		break;
	case VGPU_CTL_CHECKPOINT:
	case VGPU_CTL_RESTORE:
		if (!p->path || p->path[0] != '/' || strnlen(p->path, q->arg_len) != q->arg_len - 1)
			__builtin_trap();
		if (q->op == VGPU_CTL_CHECKPOINT ? p->nfds != VGPU_CTL_CHECKPOINT_FDS || !q->session
						 : !p->nfds || p->nfds > VGPU_CTL_MAX_FDS ||
						   q->session)
			__builtin_trap();
		break;
	case VGPU_CTL_PROCESS:
		if (p->nfds || p->path || q->arg_len != sizeof(p->proc) || !q->session ||
		    q->session > INT32_MAX || memcmp(&p->proc, q + 1, sizeof(p->proc)) ||
		    p->proc.action < VGPU_CTL_PROC_STATE || p->proc.action > VGPU_CTL_PROC_UNLOCK ||
		    (p->proc.timeout_ms && p->proc.action != VGPU_CTL_PROC_LOCK) ||
		    ((q->flags & VGPU_CTL_F_GPU) && p->proc.action != VGPU_CTL_PROC_RESTORE))
			__builtin_trap();
		for (size_t i = 0; i < sizeof(p->proc.reserved); i++)
			if (p->proc.reserved[i])
				__builtin_trap();
		break;
	default:
		__builtin_trap();
	}
	if (q->flags & ~(VGPU_CTL_F_COMPRESS | VGPU_CTL_F_DIRECT | VGPU_CTL_F_STOP |
			 VGPU_CTL_F_INCREMENTAL | VGPU_CTL_F_GPU))
		__builtin_trap();
	if (p->gpu >= 64 || (p->gpu >= 0) != !!(q->flags & VGPU_CTL_F_GPU))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_caller who = { 0 };
	struct ctl_parsed p;
	gid_t groups[64];
	size_t ngroups, off;
	uint8_t *msg;
	char *sock, path[108];
	const char *why;
	int err;

	if (size < 3)
		return 0;
	ngroups = data[2] % 64;
	off = 3 + ngroups * sizeof(gid_t);
	if (off > size)
		return 0;
	memcpy(groups, data + 3, ngroups * sizeof(gid_t));
	who.uid = data[1] >> 1;
	who.gid = data[1];
	who.admin = ctl_is_admin(who.uid, who.gid, groups, ngroups, data[1] & 1 ? 7 : (gid_t)-1);
	if (!who.uid && !who.admin)
		__builtin_trap();	/* root is always an admin */
	/* A copy of its own, as the supervisor's receive buffer: ASan sees
	 * any read past what came. */
	msg = malloc(size - off + 1);
	if (!msg)
		return 0;
	memcpy(msg, data + off, size - off);
	why = ctl_parse(msg, size - off, data[0], &who, &p, &err);
	if (why ? !err || !*why : err)
		__builtin_trap();
	if (!why)
		check_accepted(&p, msg, size - off);
	/* The same bytes as a socket path. */
	sock = (char *)msg;
	sock[size - off] = 0;
	if (vgpu_ctl_path_for(sock, path, sizeof(path)) && !memchr(path, 0, sizeof(path)))
		__builtin_trap();
	free(msg);
	return 0;
}
