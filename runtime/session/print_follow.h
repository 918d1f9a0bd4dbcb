/* SPDX-License-Identifier: MIT */
/* Device printf follows the program's fd 1 (print_follow.c). */
#ifndef VGPU_PRINT_FOLLOW_H
#define VGPU_PRINT_FOLLOW_H

#include "client.h"

/* The session was given fd 1 as it is now (the hello). */
VGPU_HIDDEN void vgpu_print_follow_sent(void);
/* Before a synchronous call: a new fd 1 goes to the worker first. */
VGPU_HIDDEN void vgpu_print_follow(struct vgpu_session *s);

#endif
