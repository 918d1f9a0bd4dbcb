// SPDX-License-Identifier: MIT
/*
 * Prefetching managed memory. Managed memory is the runtime's own
 * (runtime/managed/): its prefetches are answered there. The driver refuses
 * a range that is not managed (CUDA_ERROR_INVALID_VALUE), so any other
 * prefetch of the program's memory is refused: not here, though, but by the
 * worker's driver, after the worker has checked the range is the client's.
 * Synchronous, since the driver answers at once.
 */
#include "calls_hand_gen.h"
#include "client.h"
#include "driver.h"
#include "entry.h"
#include "handles.h"
#include "init.h"
#include "managed.h"
#include "memory.h"

CUresult vgpu_hand_cuMemPrefetchAsync(bool ptds, CUdeviceptr p, size_t n, CUmemLocation loc,
				      unsigned int flags, CUstream h)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe;
	uint32_t sid;
	CUresult rc = vgpu_enter_stream(h, ptds, &ctx, &sid);

	if (rc)
		return rc;
	if (vgpu_managed_prefetch(p, n, loc, flags, &rc))
		return rc;
	return vgpu_call5(VGPU_OP_MEM_PREFETCH, ctx->id, sid, p, n, (uint32_t)loc.type,
			  (uint64_t)(int64_t)loc.id, flags, &cqe);
}

CUmemLocation vgpu_location_of(CUdevice dev)
{
	if (dev == CU_DEVICE_CPU)
		return (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_HOST, .id = 0 };
	return (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev };
}

VGPU_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
					CUstream hStream)
{
	return vgpu_hand_cuMemPrefetchAsync(false, devPtr, count, vgpu_location_of(dstDevice), 0,
					    hStream);
}

VGPU_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
					     CUdevice dstDevice, CUstream hStream)
{
	return vgpu_hand_cuMemPrefetchAsync(true, devPtr, count, vgpu_location_of(dstDevice), 0,
					    hStream);
}

/*
 * A batch is its prefetches in stream order, each to the location whose
 * first index it is at or past. The driver checks the arrays first: indices
 * start at 0, rise, stay below count; no more locations than prefetches;
 * flags 0; not the legacy stream.
 */
CUresult vgpu_hand_cuMemPrefetchBatchAsync(bool ptds, CUdeviceptr *dptrs, size_t *sizes,
					   size_t count, CUmemLocation *locs, size_t *idxs,
					   size_t nlocs, unsigned long long flags, CUstream h)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!count || !dptrs || !sizes || !locs || !idxs || !nlocs || nlocs > count || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((!h && !ptds) || h == CU_STREAM_LEGACY)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t k = 0; k < nlocs; k++)
		if (idxs[k] >= count || (k ? idxs[k] <= idxs[k - 1] : idxs[k] != 0))
			return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0, k = 0; i < count && !rc; i++) {
		while (k + 1 < nlocs && idxs[k + 1] <= i)
			k++;
		rc = vgpu_hand_cuMemPrefetchAsync(ptds, dptrs[i], sizes[i], locs[k], 0, h);
	}
	return rc;
}
