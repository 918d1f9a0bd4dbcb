// SPDX-License-Identifier: MIT
/*
 * cuGetProcAddress: the driver's own symbol lookup, which the CUDA runtime
 * (static or shared), cuBLAS, PyTorch and Triton use instead of dlsym. Given a
 * base name ("cuMemAlloc"), the CUDA version the caller was built for and a
 * stream mode, it returns the exact ABI variant the real driver would
 * (cuMemAlloc at 3010, cuMemAlloc_v2 from 3020; cuStreamQuery_ptsz for the
 * per-thread default stream), taken from the generated procaddr_table.h and
 * pointing at our own exported definition of that symbol.
 *
 * Semantics: those of the CUDA 13.0 driver (580.159.04), measured by
 * tests/gpu/procaddr_probe.c over every name, version boundary and flag:
 *  - flags other than DEFAULT (0), LEGACY_STREAM (1), PER_THREAD_DEFAULT_STREAM
 *    (2) or both (3), or cudaVersion above ours (13000): CUDA_ERROR_INVALID_VALUE,
 *    *pfn and *symbolStatus left as they were.
 *  - DEFAULT is the legacy stream: a per-thread build's cuda.h wrapper turns 0
 *    into PER_THREAD_DEFAULT_STREAM before calling. PER_THREAD_DEFAULT_STREAM
 *    (3 too) searches only the _ptds/_ptsz variants of a name that has any
 *    (cuMemcpyHtoD at 3020 per-thread: nothing; _v2_ptds from 7000), else its
 *    legacy ones (cuInit).
 *  - cudaVersion is compared unsigned: a negative one finds the newest variant.
 *  - cuGetProcAddress_v2, nothing found: CUDA_SUCCESS, *pfn = NULL, and
 *    *symbolStatus (if given) CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND for an
 *    unknown name or CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
 *  - cuGetProcAddress (11.3 ABI), nothing found: CUDA_ERROR_NOT_FOUND, *pfn
 *    left as it was.
 *  - names are base names only: "cuMemAlloc_v2" or "cuStreamQuery_ptsz" are
 *    unknown, as they are to the driver.
 *  - symbol or pfn NULL: the driver crashes; we return CUDA_ERROR_INVALID_VALUE.
 * The real driver also answers the OpenGL/EGL/VDPAU interop names (cuGLInit...),
 * which the toolkit's stub does not export and neither do we: unknown here.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "log.h"
#include "procaddr_table.h"
#include "unsupported.h"

#if VGPU_PROCADDR_CUDA_VERSION != CUDA_VERSION
#error "runtime/exports/procaddr_table.h was made from other CUDA headers: make regen-exports"
#endif

static int entry_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct vgpu_procaddr_entry *)elem)->name);
}

/*
 * Newest variant of [v, v + n) usable at version, or NULL. Unsigned, as the
 * driver compares: version -1 asks for the newest.
 */
static const struct vgpu_procaddr_variant *
newest(const struct vgpu_procaddr_variant *v, unsigned int n, unsigned int version)
{
	const struct vgpu_procaddr_variant *best = NULL;

	for (unsigned int i = 0; i < n; i++)
		if ((unsigned int)v[i].version <= version)
			best = &v[i];
	return best;
}

#define KNOWN_FLAGS \
	((cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))

/* The variant for (symbol, cudaVersion, flags), or NULL with *status why not. */
static const struct vgpu_export *find(const char *symbol, int cudaVersion, cuuint64_t flags,
				      CUdriverProcAddressQueryResult *status)
{
	const struct vgpu_procaddr_entry *e;
	const struct vgpu_procaddr_variant *v, *first;

	e = bsearch(symbol, vgpu_procaddr_entries,
		    sizeof(vgpu_procaddr_entries) / sizeof(vgpu_procaddr_entries[0]),
		    sizeof(vgpu_procaddr_entries[0]), entry_cmp);
	if (!e) {
		vlog_debug("cuGetProcAddress(%s): unknown symbol", symbol);
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return NULL;
	}
	first = &vgpu_procaddr_variants[e->first];
	if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e->npt)
		v = newest(first + e->nlegacy, e->npt, (unsigned int)cudaVersion);
	else
		v = newest(first, e->nlegacy, (unsigned int)cudaVersion);
	vlog_debug("cuGetProcAddress(%s, %d, %#llx) = %s", symbol, cudaVersion,
		   (unsigned long long)flags, v ? vgpu_exports[v->sym].name : "(none)");
	if (!v) {
		*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return NULL;
	}
	*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return &vgpu_exports[v->sym];
}

/* What both ABIs share: the arguments checked, then *pfn set when the
 * symbol is found (left as it was when not), *status why not. */
static CUresult proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *status)
{
	const struct vgpu_export *x;

	if (!symbol || !pfn || (flags & ~KNOWN_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	if (cudaVersion > VGPU_PROCADDR_CUDA_VERSION) {
		vlog_debug("cuGetProcAddress(%s, %d): newer than driver %d", symbol, cudaVersion,
			   VGPU_PROCADDR_CUDA_VERSION);
		return CUDA_ERROR_INVALID_VALUE;
	}
	x = find(symbol, cudaVersion, flags, status);
	if (x)
		*pfn = x->addr;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
					 cuuint64_t flags,
					 CUdriverProcAddressQueryResult *symbolStatus)
{
	CUdriverProcAddressQueryResult status;
	CUresult rc = proc_address(symbol, pfn, cudaVersion, flags, &status);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (status != CU_GET_PROC_ADDRESS_SUCCESS)
		*pfn = NULL;
	if (symbolStatus)
		*symbolStatus = status;
	return CUDA_SUCCESS;
}

/* The CUDA 11.3 ABI: no symbolStatus, and "not found" is an error. */
VGPU_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
				      cuuint64_t flags)
{
	CUdriverProcAddressQueryResult status;
	CUresult rc = proc_address(symbol, pfn, cudaVersion, flags, &status);

	if (rc == CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_SUCCESS)
		return CUDA_ERROR_NOT_FOUND;
	return rc;
}
