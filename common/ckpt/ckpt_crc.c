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

/*
 * Combining: crc(A|B) = crc_b ^ (crc_a advanced over len_b zero bytes), and
 * advancing a register over n zero bytes multiplies it by x^(8n) modulo the
 * polynomial. Powers x^(2^k) are squared once; any x^(8n) is a product of
 * them, one per bit of n.
 */
static uint32_t mul_mod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;

	/* Reflected: bit 31 is x^0. */
	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			prod ^= b;
		b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
	}
	return prod;
}

static uint32_t x2k[64];	/* x^(2^k) mod P */
static pthread_once_t x2k_once = PTHREAD_ONCE_INIT;

static void x2k_init(void)
{
	x2k[0] = 1u << 30;	/* x^1 */
	for (int k = 1; k < 64; k++)
		x2k[k] = mul_mod(x2k[k - 1], x2k[k - 1]);
}

uint32_t vgpu_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	uint32_t p = 1u << 31;	/* x^0 */

	pthread_once(&x2k_once, x2k_init);
	/* x^(8 len_b): bit k of len_b contributes x^(2^(k+3)). */
	for (int k = 3; len_b; len_b >>= 1, k++)
		if (len_b & 1)
			p = mul_mod(x2k[k], p);
	return mul_mod(p, crc_a) ^ crc_b;
}

const char *vgpu_crc32c_impl(void)
{
	pthread_once(&once, crc_init);
	return have_hw ? "sse4.2" : "slice-by-8";
}
