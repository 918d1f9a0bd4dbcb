/* SPDX-License-Identifier: MIT */
/* One message and up to VGPU_MAX_FDS descriptors over a Unix socket. */
#ifndef VGPU_FDPASS_H
#define VGPU_FDPASS_H

#include <stddef.h>

#define VGPU_MAX_FDS 8

/* Returns bytes sent or -errno. */
int vgpu_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Returns bytes received (0 on hang-up) or -errno; *nfds in: room, out: got.
 * Descriptors beyond the room given are closed, never leaked. */
int vgpu_recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds);

#endif
