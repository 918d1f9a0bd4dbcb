/* SPDX-License-Identifier: MIT */
/*
 * Host implementations of kernels, for the host backend. A module image
 * brings kernels by name; a name listed here runs the C function below
 * over the whole grid; any other name loads but fails to launch with
 * CUDA_ERROR_NOT_SUPPORTED. tests/e2e/kernels.cuh is the CUDA side of every
 * entry (daemon/checkpoint/gpu_digest.cu of vgpu_content_digest, the daemon's own):
 * same extern "C" name, same parameter layout, same semantics.
 *
 * A kernel reads its parameters from the packed buffer at the offsets
 * below (the device layout, as cuFuncGetParamInfo reports it), checks
 * every range it will touch with host_check_range() before touching it,
 * and returns CUDA_ERROR_ILLEGAL_ADDRESS (or _MISALIGNED_ADDRESS) instead
 * of faulting. Device pointers are host pointers in this backend.
 */
#ifndef VGPU_HOST_KERNELS_H
#define VGPU_HOST_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

struct host_launch {
	unsigned grid[3];
	unsigned block[3];
	unsigned shared_bytes;		/* dynamic shared memory */
	const uint8_t *params;		/* each parameter at its offset */
	size_t params_size;
};

struct host_param {
	uint32_t offset, size;
};

struct host_kernel {
	const char *name;
	unsigned nparams;
	const struct host_param *params;
	uint32_t params_size;		/* end of the last parameter */
	CUresult (*run)(const struct host_launch *l);
};

const struct host_kernel *host_kernel_find(const char *name);

/*
 * Whether [ptr, ptr + bytes) is mapped emulated device memory or registered
 * host memory, all of it readable (and writable when asked). Only valid
 * while a launch runs (the backend holds the address map steady).
 */
int host_check_range(const void *ptr, uint64_t bytes, int writable);

#endif
