/* SPDX-License-Identifier: MIT */
/* One message and up to VGPU_MAX_FDS descriptors over a Unix socket. */
#ifndef VGPU_FDPASS_H
#define VGPU_FDPASS_H

#include <stddef.h>
#include <sys/socket.h>

/* The most a message carries: a checkpoint file and a chain of 64 parents. */
#define VGPU_MAX_FDS 65
#define VGPU_FDS_CMSG_SPACE CMSG_SPACE(sizeof(int) * VGPU_MAX_FDS)

/* Returns bytes sent or -errno. */
int vgpu_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* The same with one descriptor (none when @fd < 0), never blocking: a full
 * socket is -EAGAIN. */
int vgpu_send_fd_nowait(int sock, const void *buf, size_t len, int fd);
/* Returns bytes received (0 on hang-up) or -errno; *nfds in: room, out: got.
 * Descriptors beyond the room given are closed, never leaked. */
int vgpu_recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds);
/* The same, but a message that brought more than the room, or was cut, is
 * -EMSGSIZE, with every descriptor it brought closed. */
int vgpu_recv_fds_exact(int sock, void *buf, size_t len, int *fds, unsigned *nfds);
/* The SCM_RIGHTS descriptors of @m into fds (room @room), those beyond
 * closed; how many. *cut: more came than fit, or the kernel cut them. */
unsigned vgpu_fds_take(const struct msghdr *m, int *fds, unsigned room, int *cut);
/* Closes each one that is open and marks it -1. */
void vgpu_fds_close(int *fds, unsigned nfds);

#endif
