/* SPDX-License-Identifier: MIT */
/*
 * vgpu's NVML inside: what nvmlInit got from the daemon, and the question
 * asked again for what changes (memory, processes). nvml_client.c.
 */
#ifndef VGPU_NVML_STATE_H
#define VGPU_NVML_STATE_H

#include "vgpu/query.h"
/* The unversioned names are calls of their own here (NVML 1's ABI). */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include "vgpu_nvml.h"

#define NVML_EXPORT __attribute__((visibility("default")))

/* A query's answer, with room for every process. */
struct nvml_answer {
	struct vgpu_query_reply r;
	struct vgpu_query_process proc[VGPU_QUERY_MAX_PROCS];
};

struct nvmlDevice_st {
	unsigned int index;
};

/* nvmlInit's answer (the devices do not change), or NULL before it. */
const struct vgpu_query_reply *nvml_snapshot(void);

/* The daemon asked now: NVML_SUCCESS with *a filled, or why not. */
nvmlReturn_t nvml_ask(struct nvml_answer *a);

/* @dev as an index of the snapshot's devices (NVML_SUCCESS), or why not. */
nvmlReturn_t nvml_device(nvmlDevice_t dev, unsigned int *index);

/* The handle of device @index (< VGPU_MAX_DEVICES). */
nvmlDevice_t nvml_handle(unsigned int index);

/* Takes or gives back a reference (nvmlInit*, nvmlShutdown). */
nvmlReturn_t nvml_ref(unsigned int flags);
nvmlReturn_t nvml_unref(void);

/* @s into @out of @len bytes: NVML_ERROR_INSUFFICIENT_SIZE when it does not fit. */
nvmlReturn_t nvml_copy_str(char *out, unsigned int len, const char *s);

#endif
