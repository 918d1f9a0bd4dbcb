// SPDX-License-Identifier: MIT
#include "ckpt_crc.h"

#include <pthread.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the checkpoint format is little-endian; this code assumes a little-endian host"
#endif

#define POLY 0x82f63b78u

static uint32_t table[8][256];
static int have_hw;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int s = 1; s < 8; s++)
			table[s][i] = (table[s - 1][i] >> 8) ^ table[0][table[s - 1][i] & 0xff];
#if defined(__x86_64__)
	__builtin_cpu_init();
	have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static uint32_t sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v ^= crc;
		crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^
		      table[5][(v >> 16) & 0xff] ^ table[4][(v >> 24) & 0xff] ^
		      table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
		      table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
/*
 * Three independent streams hide the instruction's 3-cycle latency; their
 * CRCs are merged with the "multiply by x^(8n)" operator, applied by the
 * zero-extension tables below (shifting a CRC over n zero bytes).
 */
__attribute__((target("sse4.2")))
static uint32_t hw1(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}

#define LANE 4096u	/* bytes per stream per round */

/* shift[k][b]: the CRC register b << 8k advanced over LANE zero bytes. */
static uint32_t shift[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* Advance register value r over n zero bytes, bit by bit (setup only). */
static uint32_t zeros(uint32_t r, size_t n)
{
	for (size_t i = 0; i < n * 8; i++)
		r = r & 1 ? (r >> 1) ^ POLY : r >> 1;
	return r;
}

static void shift_init(void)
{
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			shift[k][b] = zeros(b << (8 * k), LANE);
}

static uint32_t shift_lane(uint32_t r)
{
	return shift[0][r & 0xff] ^ shift[1][(r >> 8) & 0xff] ^
	       shift[2][(r >> 16) & 0xff] ^ shift[3][r >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t hw(uint32_t crc, const uint8_t *p, size_t len)
{
	pthread_once(&shift_once, shift_init);
	while (len >= 3 * LANE) {
		uint64_t a = crc, b = 0, c = 0;

		for (size_t i = 0; i < LANE; i += 8) {
			uint64_t x, y, z;

			memcpy(&x, p + i, 8);
			memcpy(&y, p + LANE + i, 8);
			memcpy(&z, p + 2 * LANE + i, 8);
			a = __builtin_ia32_crc32di(a, x);
			b = __builtin_ia32_crc32di(b, y);
			c = __builtin_ia32_crc32di(c, z);
		}
		/* Registers are linear: crc(A|B) = shift(crc(A)) ^ crc_from0(B). */
		crc = shift_lane(shift_lane((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
		p += 3 * LANE;
		len -= 3 * LANE;
	}
	return hw1(crc, p, len);
}
#endif

uint32_t vgpu_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, crc_init);
	return ~sw(~crc, buf, len);
}

uint32_t vgpu_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, crc_init);
#if defined(__x86_64__)
	if (have_hw)
		return ~hw(~crc, buf, len);
#endif
	return ~sw(~crc, buf, len);
}

const char *vgpu_crc32c_impl(void)
{
	pthread_once(&once, crc_init);
	return have_hw ? "sse4.2" : "slice-by-8";
}
