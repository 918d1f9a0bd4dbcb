/* SPDX-License-Identifier: MIT */
/*
 * The runtime *is* the CUDA driver for the program, so it sees cuda.h the way
 * the driver's own build does: with __CUDA_API_VERSION_INTERNAL every name is
 * its raw ABI symbol (cuMemAlloc is the 32-bit v1, cuMemAlloc_v2 the current
 * one, _ptds/_ptsz variants spelled out), and old prototypes are declared.
 */
#ifndef VGPU_RUNTIME_DRIVER_H
#define VGPU_RUNTIME_DRIVER_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

/* Every exported driver entry point. */
#define VGPU_EXPORT __attribute__((visibility("default")))

#endif
