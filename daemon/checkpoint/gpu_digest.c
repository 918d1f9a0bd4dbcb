// SPDX-License-Identifier: MIT
#include "gpu_digest.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE		(1u << 20)	/* bytes a block digests */
#define THREADS		256u		/* the kernel's __launch_bounds__ */
#define MAX_BLOCKS	65535u		/* more tiles: each block takes several */

extern const char vgpu_gpu_digest_ptx[];

struct tile {
	uint64_t addr, len, first, reserved;	/* struct digest_tile of the kernel */
};

/* One per worker process: the kernel in its context, and the tiles and
 * results in mapped host memory. */
static struct {
	pthread_mutex_t lock;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	void *scratch;
	size_t cap;
} dk = { .lock = PTHREAD_MUTEX_INITIALIZER };

__attribute__((format(printf, 3, 4)))
static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EIO;
}

static int load(const struct vgpu_backend *B, CUcontext ctx, char *why, size_t len)
{
	CUresult rc;

	if (dk.ctx == ctx && dk.fn)
		return 0;
	if (dk.mod) {		/* another context now (the session's GPU changed) */
		B->cuCtxSetCurrent(dk.ctx);
		B->cuModuleUnload(dk.mod);
		dk.mod = NULL;
		dk.fn = NULL;
	}
	rc = B->cuCtxSetCurrent(ctx);
	if (!rc)
		rc = B->cuModuleLoadData(&dk.mod, vgpu_gpu_digest_ptx);
	if (!rc)
		rc = B->cuModuleGetFunction(&dk.fn, dk.mod, "vgpu_content_digest");
	if (rc) {
		if (dk.mod)
			B->cuModuleUnload(dk.mod);
		dk.mod = NULL;
		dk.fn = NULL;
		return fail(why, len, "the digest kernel cannot be loaded (CUDA error %d)", rc);
	}
	dk.ctx = ctx;
	return 0;
}

int gpu_digest_prepare(const struct vgpu_backend *B, CUcontext ctx, char *why, size_t why_len)
{
	int ret;

	pthread_mutex_lock(&dk.lock);
	ret = load(B, ctx, why, why_len);
	pthread_mutex_unlock(&dk.lock);
	return ret;
}

/* Room for n tiles and their results, mapped for the GPU. */
static int scratch(const struct vgpu_backend *B, size_t n, char *why, size_t len)
{
	size_t need = n * (sizeof(struct tile) + 2 * sizeof(uint64_t));
	void *p;

	if (need <= dk.cap)
		return 0;
	need = (need + (1u << 16) - 1) & ~(size_t)((1u << 16) - 1);
	p = aligned_alloc(4096, need);
	if (!p)
		return fail(why, len, "out of memory for %zu digest tiles", n);
	if (B->cuMemHostRegister_v2(p, need, CU_MEMHOSTREGISTER_DEVICEMAP)) {
		free(p);
		return fail(why, len, "the digest tiles cannot be mapped for the GPU");
	}
	if (dk.scratch) {
		B->cuMemHostUnregister(dk.scratch);
		free(dk.scratch);
	}
	dk.scratch = p;
	dk.cap = need;
	return 0;
}

int gpu_digest(const struct vgpu_backend *B, CUcontext ctx, const struct digest_range *r,
	       size_t n, struct content_digest *out, char *why, size_t why_len)
{
	struct tile *tiles;
	uint64_t *res;
	size_t nt = 0, t = 0;
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (r[i].addr % 16)
			return fail(why, why_len, "device memory at %#llx is not 16-byte aligned",
				    (unsigned long long)r[i].addr);
		nt += (r[i].len + TILE - 1) / TILE;
		out[i] = (struct content_digest){ 0, 0 };
	}
	if (!nt)
		return 0;
	if (nt > UINT32_MAX)
		return fail(why, why_len, "too much memory to digest at once");
	pthread_mutex_lock(&dk.lock);
	ret = load(B, ctx, why, why_len);
	if (!ret)
		ret = scratch(B, nt, why, why_len);
	if (ret)
		goto out;
	tiles = dk.scratch;
	res = (uint64_t *)(tiles + nt);
	for (size_t i = 0; i < n; i++)
		for (uint64_t off = 0; off < r[i].len; off += TILE)
			tiles[t++] = (struct tile){
				.addr = r[i].addr + off, .first = off / 8,
				.len = r[i].len - off < TILE ? r[i].len - off : TILE };
	{
		unsigned ntiles = (unsigned)nt;
		void *args[] = { &tiles, &ntiles, &res };
		CUlaunchConfig cfg = {
			.gridDimX = ntiles < MAX_BLOCKS ? ntiles : MAX_BLOCKS, .gridDimY = 1,
			.gridDimZ = 1, .blockDimX = THREADS, .blockDimY = 1, .blockDimZ = 1,
			.hStream = NULL,	/* the context's work is drained first */
		};
		CUresult rc = B->cuCtxSetCurrent(ctx);

		if (!rc)
			rc = B->cuLaunchKernelEx(&cfg, dk.fn, args, NULL);
		if (!rc)
			rc = B->cuStreamSynchronize(NULL);
		if (rc) {
			ret = fail(why, why_len, "the digest kernel failed (CUDA error %d)", rc);
			goto out;
		}
	}
	t = 0;
	for (size_t i = 0; i < n; i++)
		for (uint64_t off = 0; off < r[i].len; off += TILE, t++) {
			out[i].a += res[2 * t];
			out[i].b += res[2 * t + 1];
		}
out:
	pthread_mutex_unlock(&dk.lock);
	return ret;
}
