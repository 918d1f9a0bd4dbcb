/* SPDX-License-Identifier: MIT */
/* VGPU_TRACE=1: the driver entry points called, by name (trace.c). */
#ifndef VGPU_RUNTIME_TRACE_H
#define VGPU_RUNTIME_TRACE_H

#include "client.h"

VGPU_HIDDEN extern int vgpu_trace_on;
/* Names the exported symbol that holds @where. */
VGPU_HIDDEN void vgpu_trace_caller(const void *where);

#endif
