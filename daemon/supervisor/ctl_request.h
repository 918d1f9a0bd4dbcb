/* SPDX-License-Identifier: MIT */
/*
 * ctl_request.c: one control request (include/vgpu/ctl.h) checked as it
 * came off the socket, before anything acts on it: the bytes, how many
 * descriptors came with them, and who sent them. Pure: no I/O, no state,
 * so that it can be fuzzed (tests/fuzz/fuzz_ctl.c).
 */
#ifndef VGPU_CTL_REQUEST_H
#define VGPU_CTL_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vgpu/ctl.h"

/* Who asks, as SO_PEERCRED and SO_PEERGROUPS saw it at accept. */
struct ctl_caller {
	uint32_t pid, uid, gid;
	bool admin;		/* root or the admin group: acts on every session */
};

/* A request that passed: what it asks for. */
struct ctl_parsed {
	const struct vgpu_ctl_req *q;
	const char *path;	/* CHECKPOINT, RESTORE: the argument; else NULL */
	int gpu;		/* VGPU_CTL_F_GPU: its index; else -1 */
	unsigned nfds;		/* descriptors it came with (checked against the op) */
	struct vgpu_ctl_process_req proc;	/* PROCESS: the argument, copied */
};

/*
 * Checks @len bytes received with @nfds descriptors from @who. NULL and
 * *out filled when the request may go on, else why not (and *err, an errno).
 * Whether the session named is one @who may act on is not decided here:
 * that needs the sessions (the supervisor's ctl_may()).
 */
const char *ctl_parse(const void *buf, size_t len, unsigned nfds, const struct ctl_caller *who,
		      struct ctl_parsed *out, int *err);

/* Whether @who may see and act on a session of @uid. */
static inline bool ctl_may(const struct ctl_caller *who, uint32_t uid)
{
	return who->admin || who->uid == uid;
}

/* Whether a caller (uid, primary gid, supplementary groups) is an admin:
 * root, or a member of @admin_gid ((gid_t)-1: no admin group). */
bool ctl_is_admin(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups, gid_t admin_gid);

#endif
