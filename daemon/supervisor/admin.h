/* SPDX-License-Identifier: MIT */
/*
 * admin.c: requests on vgpud's control socket. The supervisor accepts the
 * connections and reads each request (with its descriptors) through its
 * io_uring; admin.c keeps them with their callers, has them checked
 * (ctl_request.c) and answers from what the supervisor lists.
 */
#ifndef VGPU_ADMIN_H
#define VGPU_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl_request.h"
#include "vgpu/ctl.h"

#define ADMIN_MAX_SESSIONS 1024

struct ckpt_answer;

/*
 * The descriptors a request brings are the operation's to duplicate what it
 * keeps; admin.c closes them all once it returns. Every operation gets the
 * caller: a session that is not @who's (ctl_may)
 * is treated as one that does not exist, not listed and "no session N".
 */
struct admin_ops {
	/* Fills up to max records (only session @id unless it is 0). */
	size_t (*list_sessions)(const struct ctl_caller *who, struct vgpu_ctl_session *out,
				size_t max, uint64_t id);
	/* Orders session @id's checkpoint into @fd (the caller's file, to be
	 * named @path); the answer comes later through admin_checkpointed(slot).
	 * Else -errno, and why in @why. */
	int (*checkpoint)(const struct ctl_caller *who, int slot, uint64_t id, uint32_t flags,
			  const char *path, int fd, char *why, size_t len);
	/* Orders session @id's move to another worker (onto GPU @gpu; -1:
	 * its own), answered the same way. */
	int (*migrate)(const struct ctl_caller *who, int slot, uint64_t id, int gpu, char *why,
		       size_t len);
	/* Registers the suspended session in the chain @fds (@nfds files, the
	 * checkpoint named @path first) to come back on GPU @gpu (-1: GPU 0)
	 * once it is checked: 0 and the answer later through admin_restored(),
	 * or -errno and why now. */
	int (*restore)(const struct ctl_caller *who, int slot, const char *path, int gpu,
		       const int *fds, unsigned nfds, char *why, size_t len);
	/* The process-checkpoint action @a on process @pid's session (onto GPU
	 * @gpu, -1: its own): 1 and @now filled when answered at once, 0 when
	 * the answer comes later through admin_process_done(slot), or -errno
	 * and why. */
	int (*process)(const struct ctl_caller *who, int slot, uint32_t pid,
		       const struct vgpu_ctl_process_req *a, int gpu, struct vgpu_ctl_process *now,
		       char *why, size_t len);
};

/* admin_gid: members act on every session, as root does; (gid_t)-1: none. */
void admin_init(const struct admin_ops *ops, gid_t admin_gid);
/* Takes an accepted connection and who is on its other end (SO_PEERCRED,
 * SO_PEERGROUPS): its slot, or -1 (closed: too many, or no credentials). */
int admin_add(int fd);
int admin_fd(int slot);
/* Where the slot's request, and the descriptors with it, are received
 * (recvmsg, MSG_CMSG_CLOEXEC). */
struct msghdr *admin_msg(int slot);
/* The read finished with res bytes (or -errno): answer and close. */
void admin_done(int slot, ssize_t res);
void admin_close_all(void);
/* The worker's answer to a checkpoint that slot asked for. */
void admin_checkpointed(int slot, const struct ckpt_answer *a);
/* The checkpoint slot asked for will not come: err and why. */
void admin_abort(int slot, int err, const char *why);
/* The process action slot asked for: done (err 0, its record), or err and why. */
void admin_process_done(int slot, int err, const char *why, const struct vgpu_ctl_process *rec);
/* The restore slot asked for: registered (err 0), or err and why. */
void admin_restored(int slot, int err, const char *why);

#endif
