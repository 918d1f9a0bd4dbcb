/* SPDX-License-Identifier: MIT */
/*
 * Driver initialisation state, the device snapshot and context identity,
 * for every runtime file. Every driver entry point except cuInit, cuDriverGetVersion,
 * cuGetErrorName/String and cuGetProcAddress starts with
 *
 *	CUresult rc = vgpu_initialized();
 *	if (rc)
 *		return rc;
 *
 * which answers CUDA_ERROR_NOT_INITIALIZED until cuInit has succeeded, as
 * the driver does (entry.h joins it with the first check or handle most
 * entry points make next). Once it returns CUDA_SUCCESS, vgpu_session_peek()
 * is never NULL.
 */
#ifndef VGPU_RUNTIME_INIT_H
#define VGPU_RUNTIME_INIT_H

#include "client.h"

/* init.c: CUDA_SUCCESS once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED.
 * One atomic load. */
VGPU_HIDDEN CUresult vgpu_initialized(void);
/* That first statement, for the entry points that use it: returns the error. */
#define ENTER()							\
	do {							\
		CUresult init_rc_ = vgpu_initialized();		\
								\
		if (init_rc_)					\
			return init_rc_;			\
	} while (0)

/*
 * device.c: the worker's snapshot of device @dev (struct vgpu_device_info in
 * the shared region; attributes indexed by CUdevice_attribute). Answers
 * CUDA_ERROR_NOT_INITIALIZED before cuInit, CUDA_ERROR_INVALID_DEVICE for an
 * ordinal out of range. Never a round trip.
 */
VGPU_HIDDEN CUresult vgpu_device_info(CUdevice dev, const struct vgpu_device_info **out);
/* Attribute @attr of @dev from the snapshot; 0 when dev or attr is invalid. */
VGPU_HIDDEN int vgpu_device_attr(CUdevice dev, CUdevice_attribute attr);
/* Devices in the snapshot; 0 before cuInit. */
VGPU_HIDDEN int vgpu_device_count(void);

struct vgpu_ctx;
/*
 * primary_ctx.c: the identity of one context *instance*, unique for the
 * life of the process and never 0 (what cuCtxGetId answers). Context
 * objects and ids are both recycled, so a destroyed context and a new one
 * can share the address and the id; compare this instead. A primary
 * context gets a new one each time it becomes active again after a release
 * to zero or a reset.
 */
VGPU_HIDDEN uint64_t vgpu_ctx_uid(struct vgpu_ctx *c);

#endif
