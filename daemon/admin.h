/* SPDX-License-Identifier: MIT */
/*
 * admin.c: requests on vgpud's control socket. The supervisor accepts the
 * connections and reads each request through its io_uring; admin.c keeps
 * them, checks them and answers from what the supervisor lists.
 */
#ifndef VGPU_ADMIN_H
#define VGPU_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vgpu/ctl.h"

#define ADMIN_MAX_SESSIONS 1024

struct admin_ops {
	/* Fills up to max records (only session @id unless it is 0). */
	size_t (*list_sessions)(struct vgpu_ctl_session *out, size_t max, uint64_t id);
};

void admin_init(const struct admin_ops *ops);
/* Takes an accepted connection: its slot, or -1 (closed: too many). */
int admin_add(int fd);
int admin_fd(int slot);
/* Where the slot's request is read to. */
void *admin_buffer(int slot, size_t *len);
/* The read finished with res bytes (or -errno): answer and close. */
void admin_done(int slot, ssize_t res);
void admin_close_all(void);

#endif
