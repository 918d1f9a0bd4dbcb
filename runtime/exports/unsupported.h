/* SPDX-License-Identifier: MIT */
/*
 * The default behaviour of every CUDA driver entry point vgpu does not
 * implement, and the list of all entry points (both in the generated
 * runtime/exports/exports_gen.c). Usable with or without cuda.h.
 */
#ifndef VGPU_RUNTIME_UNSUPPORTED_H
#define VGPU_RUNTIME_UNSUPPORTED_H

#define VGPU_HIDDEN __attribute__((visibility("hidden")))

/*
 * Logs "NAME: not supported" at warn level the first time it is called for
 * NAME (once per distinct name, from any number of threads) and returns
 * CUDA_ERROR_NOT_SUPPORTED (an int, so that it serves TUs without cuda.h;
 * `return vgpu_unsupported("cuFoo");` is fine in a CUresult function).
 * NAME must stay valid for the life of the process: pass a string literal.
 */
VGPU_HIDDEN int vgpu_unsupported(const char *name);

/* Every function the driver exports, sorted by name (strcmp order). */
struct vgpu_export {
	const char *name;
	void *addr;	/* our definition: strong if any, else the weak default */
};
extern VGPU_HIDDEN const struct vgpu_export vgpu_exports[];
extern VGPU_HIDDEN const unsigned int vgpu_exports_count;

#endif
