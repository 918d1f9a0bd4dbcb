/* SPDX-License-Identifier: MIT */
/*
 * nvml_view.c: the GPU query (vgpu/query.h) without the supervisor around
 * it, so that unit tests and the fuzzer reach it: the hello checked, and
 * the answer built as one caller may see it. nvml_query.c is the glue.
 */
#ifndef VGPU_NVML_VIEW_H
#define VGPU_NVML_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/query.h"

/* The GPUs as the first worker ready found them (nvml_query.c): memory
 * shared with the workers, written once by one of them. */
#define NVQ_EMPTY	0u
#define NVQ_FILLING	1u
#define NVQ_READY	2u
struct nvq_devtab {
	uint32_t state;			/* NVQ_*: READY stored last (release) */
	uint32_t count;
	uint32_t cuda_driver_version;
	uint32_t backend;
	char driver_version[80];
	struct vgpu_query_device dev[VGPU_MAX_DEVICES];	/* used_mem 0 */
};

/* A session as the supervisor knows it. gpu and device_bytes come from the
 * worker's statistics page, which a worker serving a tenant can write:
 * they are bounded here, never trusted. */
struct nvq_session {
	uint64_t id;
	uint32_t pid, uid;		/* pid as the caller sees it; 0: it cannot */
	uint32_t gpu;
	uint64_t device_bytes;
};

/* 0 when @buf (@len bytes, as received) is a well-formed query hello. */
int nvq_parse(const void *buf, size_t len);

/* Whether the first @len bytes received announce a query (a hello whose
 * flags ask for one); nvq_parse then decides whether it is well-formed. */
bool nvq_is_query(const void *buf, size_t len);

/*
 * The answer to a caller (@uid, @admin) in @r, with room for @max_procs
 * processes: the devices of @dt, the memory and processes of the sessions
 * in @s that the caller may see. Returns the bytes of @r to send.
 */
size_t nvq_view(struct vgpu_query_reply *r, size_t max_procs, const struct nvq_devtab *dt,
		const struct nvq_session *s, size_t n, uint32_t uid, bool admin);

#endif
