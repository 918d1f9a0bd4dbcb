// SPDX-License-Identifier: MIT
/* The cuda backend: the real driver, loaded at run time, never linked. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "log.h"
#include "vgpu/proto.h"

static int is_vgpu_runtime(void *h)
{
	char real[PATH_MAX];
	void *fn = dlsym(h, "cuInit");
	Dl_info info;

	if (!fn || !dladdr(fn, &info) || !info.dli_fname || !realpath(info.dli_fname, real))
		return 0;
	return !strcmp(strrchr(real, '/') ? strrchr(real, '/') + 1 : real, "libvgpu.so");
}

int vgpu_backend_cuda_open(struct vgpu_backend *b)
{
	const char *path = "libcuda.so.1";
	void *h;

	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		vlog_err("cuda backend: cannot load %s: %s", path, dlerror());
		return -ENOENT;
	}
	/* A libcuda.so.1 that is vgpu's own runtime would loop back to us. */
	if (is_vgpu_runtime(h)) {
		vlog_err("cuda backend: %s is the vgpu runtime, not NVIDIA's driver", path);
		dlclose(h);
		return -ELOOP;
	}
	b->name = "cuda";
	b->kind = VGPU_BACKEND_CUDA;
#define LOAD(fn)							\
	b->fn = (__typeof__(fn) *)dlsym(h, #fn);			\
	if (!b->fn) {							\
		vlog_err("cuda backend: driver lacks %s", #fn);		\
		dlclose(h);						\
		return -ENOSYS;						\
	}
	VGPU_BACKEND_FUNCS(LOAD)
#undef LOAD
	/* A driver older than the headers may lack a generated call. */
#define LOAD_GEN(fn)							\
	b->fn = (__typeof__(fn) *)dlsym(h, #fn);			\
	if (!b->fn)							\
		b->fn = backend_missing_##fn;
VGPU_GEN_SLOTS_BEGIN
	VGPU_BACKEND_GEN_FUNCS(LOAD_GEN)
VGPU_GEN_SLOTS_END
#undef LOAD_GEN
	return 0;
}
