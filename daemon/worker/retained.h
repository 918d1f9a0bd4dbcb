/* SPDX-License-Identifier: MIT */
/*
 * What a worker keeps of each object beyond the driver's handle, so that a
 * checkpoint can describe the object and a restore can make it again: the
 * image a module was loaded from, a function's name, a stream's flags and
 * priority. Stored as the object entry's data (objects.h).
 */
#ifndef VGPU_RETAINED_H
#define VGPU_RETAINED_H

#include <stddef.h>
#include <stdint.h>

struct retained_image {
	size_t len;
	uint8_t bytes[];		/* as the client sent it */
};

struct retained_stream {
	uint32_t flags;
	int32_t priority;
};

#endif
