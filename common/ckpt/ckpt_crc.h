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

/*
 * crc of A followed by B, from crc_a of A and crc_b of B (each computed from
 * 0) and B's length: lets several threads checksum pieces of one section.
 */
uint32_t vgpu_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* The portable slice-by-8 path alone (tests compare the two). */
uint32_t vgpu_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* "sse4.2" or "slice-by-8": what vgpu_crc32c uses on this CPU. */
const char *vgpu_crc32c_impl(void);

#endif
