/* SPDX-License-Identifier: MIT */
/* pcopy.c: memcpy of large staged pieces, split among helper threads. */
#ifndef VGPU_RUNTIME_PCOPY_H
#define VGPU_RUNTIME_PCOPY_H

#include <stddef.h>

#include "client.h"

/* memcpy(dst, src, len); pieces of 2 MiB and more are split. Thread-safe. */
VGPU_HIDDEN void vgpu_copy_parallel(void *dst, const void *src, size_t len);

#endif
