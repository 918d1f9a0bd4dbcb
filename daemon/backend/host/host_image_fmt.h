/* SPDX-License-Identifier: MIT */
/*
 * What the files reading module images share (host_image.c has the format
 * in prose): the fatbin's and cubin's constants, little-endian reads, and
 * the functions one file calls in another.
 *   host_image.c        the model, fatbin entries (inflated), which one is read
 *   host_image_check.c  vgpu_image_check(): declared extents within the bytes
 *   host_image_elf.c    ELF cubins: kernels, parameters, globals
 *   host_image_ptx.c    PTX text: .entry, .global, .const
 */
#ifndef VGPU_DAEMON_HOST_IMAGE_FMT_H
#define VGPU_DAEMON_HOST_IMAGE_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "host_backend.h"

#define FATBINC_MAGIC	0x466243b1u
#define FATBIN_MAGIC	0xba55ed50u
#define FAT_PTX		1
#define FAT_ELF		2
#define FAT_LZ4		0x2000ull
#define FAT_ZSTD	0x8000ull
#define EM_CUDA_	190
#define STO_ENTRY	0x10
#define EIATTR_KPARAM_INFO	0x17
#define MAX_INFLATED	(1ull << 30)
#define DEVICE_ARCH	(HOST_CC_MAJOR * 10 + HOST_CC_MINOR)
#define MAX_PTX_ISA	90	/* 9.0, CUDA 13.0 */
#define MAX_IMAGE	(4ull << 30)	/* as the client's and the worker's */
#define MIN_ENTRY	48	/* the entry header fields every entry has */
#define MAX_ENTRY_HDR	4096

static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* host_image_check.c */
bool host_image_span(uint64_t off, uint64_t n, uint64_t lim, uint64_t *end);
uint64_t host_image_entry_end(const uint8_t *d, uint64_t pos, uint64_t total);
uint32_t host_image_magic_of(const uint8_t *d, size_t len);

/* host_image.c */
struct host_image_kernel *host_image_add_kernel(struct host_image *img, const char *name,
						size_t len);
struct host_image_global *host_image_add_global(struct host_image *img, const char *name,
						size_t len);
int host_image_add_param(struct host_image_kernel *k, uint32_t idx, uint32_t off, uint32_t size);

/* host_image_elf.c */
int host_image_elf_arch(const uint8_t *d);
CUresult host_image_elf_parse(const uint8_t *d, size_t n, struct host_image *img);

/* host_image_ptx.c */
CUresult host_image_ptx_parse(const char *text, size_t n, struct host_image *img, int *target);
int host_image_looks_like_ptx(const char *s, size_t n);

#endif
