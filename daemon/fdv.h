/* SPDX-License-Identifier: MIT */
/*
 * fdv.c: a message with up to FDV_MAX descriptors over a Unix socket (a
 * chain of checkpoint files and the file written are more than
 * common/fdpass.h carries), and the descriptors of a message received
 * with recvmsg (the control socket's, through io_uring).
 */
#ifndef VGPU_FDV_H
#define VGPU_FDV_H

#include <stddef.h>
#include <sys/socket.h>

#include "ckpt.h"

#define FDV_MAX (VGPU_CKPT_MAX_CHAIN + 1)	/* a file, and a chain of parents */
#define FDV_CMSG_SPACE CMSG_SPACE(sizeof(int) * FDV_MAX)

/* Bytes sent or -errno. */
int fdv_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfds);
/* Bytes received (0: hang-up) or -errno; *nfds: in, the room; out, how many
 * came. Descriptors beyond the room are closed; a message that came with
 * more than that, or was cut, is -EMSGSIZE (what came of it is closed). */
int fdv_recv(int sock, void *buf, size_t len, int *fds, unsigned *nfds);
/* The SCM_RIGHTS descriptors of @m into fds (room @room), those beyond
 * closed; how many. *cut: more came than fit, or the kernel cut them. */
unsigned fdv_take(const struct msghdr *m, int *fds, unsigned room, int *cut);
void fdv_close(int *fds, unsigned nfds);

#endif
