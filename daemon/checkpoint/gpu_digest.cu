// SPDX-License-Identifier: MIT
/*
 * The content digest of include/vgpu/ckpt.h on the GPU, built to PTX and
 * shipped inside vgpud (daemon/checkpoint/gpu_digest.c loads it). One block per
 * tile (a piece of an allocation, 16-byte aligned); each thread sums its
 * 16-byte words, the block adds the threads' sums, and thread 0 stores the
 * tile's (a, b) in out[2t], out[2t + 1] (host memory, mapped: no atomics).
 * The host backend runs the same kernel name in C (daemon/backend/host/host_kernels.c).
 */
struct digest_tile {
	unsigned long long addr;	/* device address, 16-byte aligned */
	unsigned long long len;		/* bytes */
	unsigned long long first;	/* index of its first word in the allocation */
	unsigned long long reserved;
};

__device__ __forceinline__ unsigned long long fmix_a(unsigned long long x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

__device__ __forceinline__ unsigned long long fmix_b(unsigned long long x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

__device__ __forceinline__ void word(unsigned long long &a, unsigned long long &b,
				     unsigned long long w, unsigned long long i)
{
	a += fmix_a(w ^ (i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
	b += fmix_b(((w << 29) | (w >> 35)) ^ (i * 0xd6e8feb86659fd93ull + 0xa0761d6478bd642full));
}

extern "C" __global__ void __launch_bounds__(256)
vgpu_content_digest(const digest_tile *tiles, unsigned int ntiles, unsigned long long *out)
{
	__shared__ unsigned long long sa[8], sb[8];

	for (unsigned int t = blockIdx.x; t < ntiles; t += gridDim.x) {
		const digest_tile tile = tiles[t];
		const ulonglong2 *p = (const ulonglong2 *)tile.addr;
		unsigned long long n16 = tile.len / 16, a = 0, b = 0;

		for (unsigned long long k = threadIdx.x; k < n16; k += blockDim.x) {
			ulonglong2 v = p[k];

			word(a, b, v.x, tile.first + 2 * k);
			word(a, b, v.y, tile.first + 2 * k + 1);
		}
		if (threadIdx.x == 0 && tile.len % 16) {
			const unsigned char *c = (const unsigned char *)tile.addr + n16 * 16;
			unsigned long long rest = tile.len % 16, w0 = 0, w1 = 0;

			for (unsigned long long j = 0; j < rest; j++) {
				unsigned long long v = (unsigned long long)c[j] << (8 * (j % 8));

				if (j < 8)
					w0 |= v;
				else
					w1 |= v;
			}
			word(a, b, w0, tile.first + 2 * n16);
			if (rest > 8)
				word(a, b, w1, tile.first + 2 * n16 + 1);
		}
		for (int o = 16; o; o >>= 1) {
			a += __shfl_down_sync(0xffffffffu, a, o);
			b += __shfl_down_sync(0xffffffffu, b, o);
		}
		if ((threadIdx.x & 31) == 0) {
			sa[threadIdx.x / 32] = a;
			sb[threadIdx.x / 32] = b;
		}
		__syncthreads();
		if (threadIdx.x == 0) {
			for (unsigned int wi = 1; wi < blockDim.x / 32; wi++) {
				a += sa[wi];
				b += sb[wi];
			}
			out[2 * t] = a;
			out[2 * t + 1] = b;
		}
		__syncthreads();
	}
}
