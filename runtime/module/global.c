// SPDX-License-Identifier: MIT
/*
 * A module's globals: cuModuleGetGlobal and cuLibraryGetGlobal. The first
 * lookup of a name asks the worker; the answer is kept in the module's
 * table and noted as device memory for pointer queries and copies.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "entry.h"
#include "managed.h"
#include "memory.h"
#include "module.h"

/* ---- globals -------------------------------------------------------------- */

/* Called with m->lock held. */
static CUresult lookup_global(struct module *m, const char *name, size_t len, uint32_t h,
			      void **out)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_MODULE_GET_GLOBAL } };
	struct global *g = malloc(sizeof(*g) + len);
	CUresult rc;

	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r.sqe.ctx = m->m.ctx->id;
	r.sqe.arg[0] = m->m.id;
	r.payload = name;
	r.payload_len = len;
	rc = vgpu_call(&r);
	if (rc) {
		free(g);
		return rc;
	}
	g->addr = r.cqe.val[0];
	g->size = r.cqe.val[1];
	memcpy(g->name, name, len);
	if (vgpu_ntab_put(&m->globals, g->name, h, g)) {
		*out = g;	/* not cached: leaked, harmlessly */
		return CUDA_SUCCESS;
	}
	/* Pointer queries and copies see it as device memory without asking. */
	vgpu_mem_note_device(g->addr, g->size, m->m.ctx);
	*out = g;
	return CUDA_SUCCESS;
}

static CUresult get_global(void *hmod, const char *name, uint64_t *addr, uint64_t *size)
{
	const struct global *g;
	struct module *m;
	void *obj;
	size_t len;
	CUresult rc = vgpu_need_out(vgpu_module_resolve(hmod, &m), name);

	if (rc)
		return rc;
	len = strlen(name) + 1;
	if (len > VGPU_MAX_NAME)
		return CUDA_ERROR_NOT_FOUND;
	rc = vgpu_module_named(m, &m->globals, name, len, lookup_global, &obj);
	if (rc)
		return rc;
	g = obj;
	*addr = g->addr;
	*size = g->size;
	return CUDA_SUCCESS;
}

/* The answer in the program's outputs (either may be NULL): 64-bit, or
 * with @abi32 32-bit, where only an address below 4 GiB can be answered. */
static CUresult global_out(void *hmod, const char *name, void *dptr, void *bytes, bool abi32)
{
	uint64_t addr, size;
	CUresult rc = get_global(hmod, name, &addr, &size);

	if (rc)
		return rc;
	if (abi32 && (addr > UINT32_MAX || size > UINT32_MAX))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (dptr)
		vgpu_put_uint(dptr, abi32 ? sizeof(CUdeviceptr_v1) : sizeof(CUdeviceptr), addr);
	if (bytes)
		vgpu_put_uint(bytes, abi32 ? sizeof(unsigned int) : sizeof(size_t), size);
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
					  const char *name)
{
	return global_out(hmod, name, dptr, bytes, false);
}

VGPU_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
					const char *name)
{
	return global_out(library, name, dptr, bytes, false);
}

/*
 * The static runtime asks for a library's __managed__ variables as it
 * registers them, before any context is current (libraries are
 * context-independent). Such a library is bound to device 0's primary
 * context, which the runtime makes current next; the binding keeps that
 * context retained for the life of the process (its managed variables
 * live in it).
 */
static CUresult bind_for_managed(CUlibrary library, struct module **m)
{
	CUcontext primary;
	CUresult rc = vgpu_module_resolve(library, m);

	if (rc != CUDA_ERROR_INVALID_CONTEXT)
		return rc;
	rc = cuDevicePrimaryCtxRetain(&primary, 0);
	if (rc)
		return rc;
	rc = cuCtxPushCurrent_v2(primary);
	if (!rc) {
		rc = vgpu_module_resolve(library, m);
		cuCtxPopCurrent_v2(NULL);
	}
	if (rc)
		cuDevicePrimaryCtxRelease_v2(0);
	return rc;
}

/* A library's __managed__ variable: a global whose host view managed.c
 * maps at its address, so host code and kernels share it. */
VGPU_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
					 const char *name)
{
	uint64_t addr, size;
	struct module *m;
	CUresult rc = bind_for_managed(library, &m);

	if (!rc)
		rc = get_global(library, name, &addr, &size);
	if (!rc)
		rc = vgpu_managed_adopt(addr, size, m->m.ctx->id);
	if (rc)
		return rc;
	vgpu_mem_note_managed(addr, size, m->m.ctx);
	if (dptr)
		*dptr = addr;
	if (bytes)
		*bytes = size;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuModuleGetGlobal(CUdeviceptr_v1 *dptr, unsigned int *bytes, CUmodule hmod,
				       const char *name)
{
	return global_out(hmod, name, dptr, bytes, true);
}
