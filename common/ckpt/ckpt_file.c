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
	[VGPU_CKPT_SEC_VMM_RESV] = "VMM reservations",
	[VGPU_CKPT_SEC_VMM_ALLOCS] = "VMM allocations",
	[VGPU_CKPT_SEC_VMM_MAPS] = "VMM mappings",
	[VGPU_CKPT_SEC_VMM_DATA] = "VMM allocation data",
	[VGPU_CKPT_SEC_VMM_STATE] = "VMM state",
	[VGPU_CKPT_SEC_POOLS] = "memory pools",
	[VGPU_CKPT_SEC_POOL_BLOCKS] = "pool blocks",
	[VGPU_CKPT_SEC_STREAM_ATTRS] = "stream attributes",
	[VGPU_CKPT_SEC_CALLS] = "generated calls",
	[VGPU_CKPT_SEC_ARRAYS] = "CUDA arrays",
	[VGPU_CKPT_SEC_ARRAY_DATA] = "CUDA array data",
	[VGPU_CKPT_SEC_TEXOBJS] = "texture and surface objects",
	[VGPU_CKPT_SEC_GRAPHS] = "graphs",
	[VGPU_CKPT_SEC_GRAPH_EXECS] = "graph instances",
};

int vgpu_ckpt_section_known(uint32_t type)
{
	return type < VGPU_CKPT_SEC_NR && names[type];
}

const char *vgpu_ckpt_section_name(uint32_t type, char *buf)
{
	if (type < VGPU_CKPT_SEC_NR && names[type])
		return names[type];
	snprintf(buf, 24, "type 0x%x", type);
	return buf;
}

/* Bytes name[i] takes in a message. */
static size_t shown_len(unsigned char c)
{
	return c < 0x20 || c > 0x7e || c == '\\' ? 4 : 1;
}

static char *show_byte(char *o, unsigned char c)
{
	if (shown_len(c) == 1) {
		*o++ = (char)c;
	} else {
		static const char hex[] = "0123456789abcdef";

		*o++ = '\\';
		*o++ = 'x';
		*o++ = hex[c >> 4];
		*o++ = hex[c & 15];
	}
	return o;
}

/* The end of a long name says most (the file, its folder). */
const char *vgpu_ckpt_show(const char *name, char *buf)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t n = strlen(name), width = 0, from = n;
	char *o = buf;

	for (size_t i = 0; i < n; i++)
		width += shown_len(s[i]);
	if (width > VGPU_CKPT_NAME - 1) {
		/* The longest tail that fits after "...". */
		for (width = 3; from > 0 && width + shown_len(s[from - 1]) <= VGPU_CKPT_NAME - 1;
		     from--)
			width += shown_len(s[from - 1]);
		memcpy(o, "...", 3);
		o += 3;
	} else {
		from = 0;
	}
	for (size_t i = from; i < n; i++)
		o = show_byte(o, s[i]);
	*o = 0;
	return buf;
}

const char *vgpu_ckpt_gpu_describe(const struct vgpu_ckpt_gpu *g, char *buf)
{
	const uint8_t *u = g->uuid;
	char name[sizeof(g->name) + 1], shown[VGPU_CKPT_NAME];

	/* A hostile file's name need not be terminated, nor printable. */
	memcpy(name, g->name, sizeof(g->name));
	name[sizeof(g->name)] = 0;
	snprintf(buf, 256, "'%s' (GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x, sm_%u%u, %llu MiB)", vgpu_ckpt_show(name, shown),
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15], g->cc_major, g->cc_minor,
		 (unsigned long long)(g->total_mem >> 20));
	return buf;
}

uint32_t vgpu_ckpt_header_crc(const struct vgpu_ckpt_header *h)
{
	return vgpu_crc32c(0, h, offsetof(struct vgpu_ckpt_header, header_crc));
}
