/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * Bytes per element of a CUDA array format with a channel count: the
 * layout CUDA defines for the formats vgpu carries element by element.
 * 0: a format it does not lay out (block-compressed, YUV), or a channel
 * count the format does not take. Shared by the runtime, the worker's
 * checks and the host backend.
 */
#ifndef VGPU_ARRAY_FORMAT_H
#define VGPU_ARRAY_FORMAT_H

#include <stdint.h>

static inline uint32_t vgpu_array_elem_bytes(uint32_t format, uint32_t channels)
{
	uint32_t per;

	switch (format) {
	case 0x01: case 0x08: per = 1; break;		/* (UN)SIGNED_INT8 */
	case 0x02: case 0x09: case 0x10: per = 2; break;	/* INT16, HALF */
	case 0x03: case 0x0a: case 0x20: per = 4; break;	/* INT32, FLOAT */
	case 0xc0: case 0xc6: return channels == 1 ? 1 : 0;	/* [US]NORM_INT8X1 */
	case 0xc1: case 0xc7: return channels == 2 ? 2 : 0;
	case 0xc2: case 0xc8: return channels == 4 ? 4 : 0;
	case 0xc3: case 0xc9: return channels == 1 ? 2 : 0;	/* [US]NORM_INT16X1 */
	case 0xc4: case 0xca: return channels == 2 ? 4 : 0;
	case 0xc5: case 0xcb: return channels == 4 ? 8 : 0;
	case 0x50: return channels == 4 ? 4 : 0;		/* UNORM_INT_101010_2 */
	default: return 0;
	}
	return channels == 1 || channels == 2 || channels == 4 ? per * channels : 0;
}

/* Whether @format is a CUarray_format of CUDA 13 (the worker passes no
 * other to the driver). */
static inline int vgpu_array_format_known(uint32_t format)
{
	switch (format) {
	case 0x01: case 0x02: case 0x03: case 0x08: case 0x09: case 0x0a: case 0x10: case 0x20:
	case 0x50:
	case 0x91 ... 0x9f:
	case 0xa1 ... 0xa9:
	case 0xb0 ... 0xb5:
	case 0xc0 ... 0xcb:
		return 1;
	}
	return 0;
}

/*
 * The levels a mipmapped array of this shape gets for @want: the driver
 * clamps the count to [1, 1 + log2 of the largest extent] (layers and cube
 * faces are no extent).
 */
static inline uint32_t vgpu_mipmap_levels(uint64_t w, uint64_t h, uint64_t d, uint32_t flags,
					  uint32_t want)
{
	uint64_t big = w > h ? w : h;
	uint32_t most = 1;

	if (!(flags & 0x05) && d > big)		/* CUDA_ARRAY3D_LAYERED, _CUBEMAP */
		big = d;
	while (big >>= 1)
		most++;
	return want < 1 ? 1 : want > most ? most : want;
}

#endif
