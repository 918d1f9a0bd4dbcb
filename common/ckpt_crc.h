/* SPDX-License-Identifier: MIT */
/*
 * CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of the
 * checkpoint format. The SSE4.2 crc32 instruction when the CPU has it,
 * slice-by-8 tables otherwise; both give the same values.
 */
#ifndef VGPU_CKPT_CRC_H
#define VGPU_CKPT_CRC_H

#include <stddef.h>
#include <stdint.h>

/* crc of buf appended to crc; start with 0. crc32c("123456789") = 0xe3069283. */
uint32_t vgpu_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable slice-by-8 path alone (tests compare the two). */
uint32_t vgpu_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* "sse4.2" or "slice-by-8": what vgpu_crc32c uses on this CPU. */
const char *vgpu_crc32c_impl(void);

#endif
