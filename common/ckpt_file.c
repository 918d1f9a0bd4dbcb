// SPDX-License-Identifier: MIT
/* What the checkpoint writer and reader share: names, descriptions, the header CRC. */
#include "ckpt.h"
#include "ckpt_crc.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const names[VGPU_CKPT_SEC_NR] = {
	[VGPU_CKPT_SEC_ALLOCS] = "allocations",
	[VGPU_CKPT_SEC_ALLOC_DATA] = "allocation data",
	[VGPU_CKPT_SEC_MODULES] = "modules",
	[VGPU_CKPT_SEC_MODULE_IMAGE] = "module image",
	[VGPU_CKPT_SEC_GLOBALS] = "globals",
	[VGPU_CKPT_SEC_FUNCTIONS] = "functions",
	[VGPU_CKPT_SEC_STREAMS] = "streams",
	[VGPU_CKPT_SEC_EVENTS] = "events",
	[VGPU_CKPT_SEC_CONTEXT] = "context settings",
	[VGPU_CKPT_SEC_HANDLES] = "handle map",
	[VGPU_CKPT_SEC_VA] = "address windows",
	[VGPU_CKPT_SEC_CLIENT] = "client",
	[VGPU_CKPT_SEC_DIGESTS] = "content digests",
	[VGPU_CKPT_SEC_PARENT] = "parent path",
};

const char *vgpu_ckpt_section_name(uint32_t type, char *buf)
{
	if (type < VGPU_CKPT_SEC_NR && names[type])
		return names[type];
	snprintf(buf, 24, "type 0x%x", type);
	return buf;
}

const char *vgpu_ckpt_gpu_describe(const struct vgpu_ckpt_gpu *g, char *buf)
{
	const uint8_t *u = g->uuid;

	/* %.*s: a hostile file's name need not be terminated. */
	snprintf(buf, 256, "'%.*s' (GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x, sm_%u%u, %llu MiB)",
		 (int)strnlen(g->name, sizeof(g->name)), g->name,
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15], g->cc_major, g->cc_minor,
		 (unsigned long long)(g->total_mem >> 20));
	return buf;
}

uint32_t vgpu_ckpt_header_crc(const struct vgpu_ckpt_header *h)
{
	return vgpu_crc32c(0, h, offsetof(struct vgpu_ckpt_header, header_crc));
}
