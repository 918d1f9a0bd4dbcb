// SPDX-License-Identifier: MIT
#include "ckpt_zstd.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static struct vgpu_zstd z;
static const struct vgpu_zstd *loaded;
static char why_buf[256];

static void *sym(void *h, const char *name, int *missing)
{
	void *p = dlsym(h, name);

	if (!p && !*missing) {
		snprintf(why_buf, sizeof(why_buf), "libzstd has no %s (older than 1.4?)", name);
		*missing = 1;
	}
	return p;
}

static void zstd_open(void)
{
	const char *lib = getenv("VGPU_ZSTD");
	int missing = 0;
	void *h;

	if (!lib || !*lib)
		lib = "libzstd.so.1";
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why_buf, sizeof(why_buf), "%s", dlerror());
		return;
	}
	*(void **)&z.create_cctx = sym(h, "ZSTD_createCCtx", &missing);
	*(void **)&z.free_cctx = sym(h, "ZSTD_freeCCtx", &missing);
	*(void **)&z.cctx_set = sym(h, "ZSTD_CCtx_setParameter", &missing);
	*(void **)&z.cctx_reset = sym(h, "ZSTD_CCtx_reset", &missing);
	*(void **)&z.compress = sym(h, "ZSTD_compressStream2", &missing);
	*(void **)&z.create_dctx = sym(h, "ZSTD_createDCtx", &missing);
	*(void **)&z.free_dctx = sym(h, "ZSTD_freeDCtx", &missing);
	*(void **)&z.dctx_set = sym(h, "ZSTD_DCtx_setParameter", &missing);
	*(void **)&z.dctx_reset = sym(h, "ZSTD_DCtx_reset", &missing);
	*(void **)&z.decompress = sym(h, "ZSTD_decompressStream", &missing);
	*(void **)&z.is_error = sym(h, "ZSTD_isError", &missing);
	*(void **)&z.error_name = sym(h, "ZSTD_getErrorName", &missing);
	if (missing) {
		dlclose(h);
		return;
	}
	loaded = &z;
}

const struct vgpu_zstd *vgpu_zstd(const char **why)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, zstd_open);
	if (!loaded && why)
		*why = why_buf;
	return loaded;
}
