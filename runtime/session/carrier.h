/* SPDX-License-Identifier: MIT */
/* How a session reaches vgpud (carrier.c). */
#ifndef VGPU_RUNTIME_CARRIER_H
#define VGPU_RUNTIME_CARRIER_H

#include "client.h"

/* The hello that opens (or resumes) a session: this process's pid, name
 * and the protocol it speaks. */
VGPU_HIDDEN void vgpu_fill_hello(struct vgpu_hello *h);
/* VGPU_TRANSPORT (auto, kmod, memfd): sets up the /dev/vgpu session when
 * it is to be used, else picks the memfd carrier. */
VGPU_HIDDEN CUresult vgpu_pick_carrier(struct vgpu_session *s);

#endif
