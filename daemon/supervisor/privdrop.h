/* SPDX-License-Identifier: MIT */
/*
 * A worker gives up root once its GPU context exists and it knows whose
 * session it serves: it becomes the client's user (uid and gid, no other
 * groups), or, for a client that is root itself, the daemon's own
 * unprivileged user (vgpud --worker-user; default "vgpu", else "nobody").
 * It keeps no capability, gains none through exec (no_new_privs), and is not
 * dumpable, so the client (same uid) cannot ptrace it or read its memory. A
 * compromised worker can then do only what its client could already do.
 * Everything root was needed for is done before (the device files are
 * open) or by the supervisor (/dev/vgpu registration; files are passed as
 * descriptors).
 */
#ifndef VGPU_PRIVDROP_H
#define VGPU_PRIVDROP_H

#include <sys/types.h>

/* @name's uid and primary gid: 0, or -ENOENT when there is no such user. */
int privdrop_user(const char *name, uid_t *uid, gid_t *gid);
/* Becomes @uid/@gid for good (a no-op when not root): 0 or -errno. */
int privdrop(uid_t uid, gid_t gid);

#endif
