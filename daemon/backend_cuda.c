// SPDX-License-Identifier: MIT
/* The cuda backend: the real driver, loaded at run time, never linked. */
#include <dlfcn.h>
#include <errno.h>

#include "backend.h"
#include "log.h"
#include "vgpu/proto.h"

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
	if (dlsym(h, "vgpu_runtime_marker")) {
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
	return 0;
}
