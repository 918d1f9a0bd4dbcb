/* SPDX-License-Identifier: MIT */
/* Reaching vgpud's sockets (dial.c). */
#ifndef VGPU_DIAL_H
#define VGPU_DIAL_H

/* The client socket: $VGPU_SOCKET, else VGPU_DEFAULT_SOCKET. */
const char *vgpu_socket_path(void);
/* A SOCK_SEQPACKET connection to @path (close-on-exec), or -errno. With
 * @recv_timeout_s, a receive waits at most that long. */
int vgpu_dial(const char *path, int recv_timeout_s);

#endif
