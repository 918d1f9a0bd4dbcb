/* SPDX-License-Identifier: MIT */
/*
 * The content digest of include/vgpu/ckpt.h (VGPU_CKPT_DIGEST) in C: the
 * daemon's for pinned host memory, the host backend's kernel, and the
 * reference the GPU kernel (daemon/checkpoint/gpu_digest.cu) is tested against.
 * Keep the three in step: the constants are the format's.
 */
#ifndef VGPU_CONTENT_DIGEST_H
#define VGPU_CONTENT_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct content_digest {
	uint64_t a, b;
};

static inline uint64_t digest_fmix_a(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t digest_fmix_b(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Word w at index i (from the allocation's start) into d. */
static inline void digest_word(struct content_digest *d, uint64_t w, uint64_t i)
{
	d->a += digest_fmix_a(w ^ (i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
	d->b += digest_fmix_b(((w << 29) | (w >> 35)) ^
			      (i * 0xd6e8feb86659fd93ull + 0xa0761d6478bd642full));
}

/* len bytes at p, whose first word has index first; adds to d. */
static inline void digest_bytes(struct content_digest *d, const void *p, size_t len,
				uint64_t first)
{
	const uint8_t *b = p;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		digest_word(d, w, first + i / 8);
	}
	if (i < len) {
		uint64_t w = 0;

		memcpy(&w, b + i, len - i);	/* little-endian, zero-padded */
		digest_word(d, w, first + i / 8);
	}
}

#endif
