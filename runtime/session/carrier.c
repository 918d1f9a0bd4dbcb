// SPDX-License-Identifier: MIT
/*
 * How a session reaches vgpud: the carrier VGPU_TRANSPORT picks (the
 * /dev/vgpu module's rings, or the daemon's socket and a memfd), and the
 * hello that opens it (client.c connects).
 */
#include "carrier.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* /dev/vgpu sessions: the daemon's default rings; the arena holds the
 * payload ring, reply slots and staging (vgpud's defaults need 58 MiB). */
#define KMOD_SQ		256u
#define KMOD_ARENA	(64ull << 20)

void vgpu_fill_hello(struct vgpu_hello *h)
{
	FILE *f = fopen("/proc/self/comm", "r");

	memset(h, 0, sizeof(*h));
	h->magic = VGPU_PROTO_MAGIC;
	h->version = VGPU_PROTO_VERSION;
	h->features = VGPU_FEAT_ALL;
	h->pid = getpid();
	if (f) {
		if (fgets(h->comm, sizeof(h->comm), f))
			h->comm[strcspn(h->comm, "\n")] = 0;
		fclose(f);
	}
}

/* VGPU_TRANSPORT: sets up the /dev/vgpu session when it is to be used. */
CUresult vgpu_pick_carrier(struct vgpu_session *s)
{
	const char *t = getenv("VGPU_TRANSPORT");
	bool forced;
	int ret;

	if (!t || !*t)
		t = "auto";
	if (!strcmp(t, "memfd")) {
		s->carrier = VGPU_CARRIER_MEMFD;
		return CUDA_SUCCESS;
	}
	forced = !strcmp(t, "kmod");
	if (!forced && strcmp(t, "auto")) {
		vlog_err("VGPU_TRANSPORT=%s: want auto, kmod or memfd", t);
		return CUDA_ERROR_SYSTEM_NOT_READY;
	}
	ret = vgpu_kmod_client(&s->kmod, KMOD_SQ, 2 * KMOD_SQ, sizeof(struct vgpu_sqe),
			       sizeof(struct vgpu_cqe), KMOD_ARENA);
	if (!ret) {
		s->carrier = VGPU_CARRIER_KMOD;
		return CUDA_SUCCESS;
	}
	if (forced) {
		vlog_err("VGPU_TRANSPORT=kmod but %s is not usable: %s%s", VGPU_KMOD_DEVICE,
			 strerror(-ret),
			 ret == -ECONNREFUSED ? " (no vgpud is registered as its server)" :
			 ret == -ENOENT ? " (is vgpu.ko loaded and the device in this container?)" : "");
		return CUDA_ERROR_SYSTEM_NOT_READY;
	}
	vlog_debug("%s: %s; using the memfd carrier", VGPU_KMOD_DEVICE, strerror(-ret));
	s->carrier = VGPU_CARRIER_MEMFD;
	return CUDA_SUCCESS;
}
