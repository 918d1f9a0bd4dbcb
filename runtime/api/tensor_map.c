// SPDX-License-Identifier: MIT
/*
 * Tensor maps (TMA descriptors, Triton on Hopper, cuBLASLt, cuDNN). The
 * driver encodes one on the host; here the arguments (arrays copied up to
 * the rank, which is checked first) travel to the worker, whose backend
 * encodes and validates them, and the 128 bytes come back: one synchronous
 * round trip per call, nothing cached (the bytes are the backend's).
 */
#include <string.h>

#include "driver.h"
#include "client.h"
#include "entry.h"
#include "forward.h"
#include "handles.h"
#include "init.h"

/* One round trip that answers a map into *out (left alone on an error). */
static CUresult map_call(uint16_t op, struct vgpu_ctx *ctx, uint64_t arg, const void *in,
			 uint32_t len, CUtensorMap *out)
{
	struct vgpu_req r = { .sqe = { .opcode = op } };

	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = arg;
	r.payload = in;
	r.payload_len = len;
	return vgpu_call_exact(&r, out, sizeof(*out));
}

static CUresult encode(CUtensorMap *out, struct vgpu_tensor_map_req *q)
{
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_ctx_current(&ctx);

	return rc ? rc : map_call(VGPU_OP_TENSOR_MAP_ENCODE, ctx, 0, q, sizeof(*q), out);
}

/* What every encoder reads from the caller: the map's place and the
 * arrays of rank entries (rank - 1 strides). */
static CUresult take_common(struct vgpu_tensor_map_req *q, CUtensorMap *m, uint32_t kind,
			    CUtensorMapDataType type, cuuint32_t rank, void *addr,
			    const cuuint64_t *dim, const cuuint64_t *strides,
			    const cuuint32_t *estrides)
{
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	/* 1..5 dimensions. The documentation wants the map 64-byte aligned;
	 * the driver (580) encodes into an unaligned one all the same. */
	if (!m || rank == 0 || rank > VGPU_TMAP_MAX_RANK || !dim ||
	    !estrides || (rank > 1 && !strides))
		return CUDA_ERROR_INVALID_VALUE;
	memset(q, 0, sizeof(*q));
	q->kind = kind;
	q->data_type = (uint32_t)type;
	q->rank = rank;
	q->global_address = (uintptr_t)addr;
	memcpy(q->global_dim, dim, rank * sizeof(dim[0]));
	if (rank > 1)
		memcpy(q->global_strides, strides, (rank - 1) * sizeof(strides[0]));
	memcpy(q->element_strides, estrides, rank * sizeof(estrides[0]));
	return CUDA_SUCCESS;
}

static void take_modes(struct vgpu_tensor_map_req *q, CUtensorMapInterleave il,
		       CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
		       CUtensorMapFloatOOBfill oob)
{
	q->interleave = (uint32_t)il;
	q->swizzle = (uint32_t)sw;
	q->l2_promotion = (uint32_t)l2;
	q->oob_fill = (uint32_t)oob;
}

VGPU_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
					    cuuint32_t tensorRank, void *globalAddress,
					    const cuuint64_t *globalDim,
					    const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
					    const cuuint32_t *elementStrides,
					    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
					    CUtensorMapL2promotion l2Promotion,
					    CUtensorMapFloatOOBfill oobFill)
{
	struct vgpu_tensor_map_req q;
	CUresult rc = take_common(&q, tensorMap, VGPU_TMAP_TILED, tensorDataType, tensorRank,
				  globalAddress, globalDim, globalStrides, elementStrides);

	if (rc)
		return rc;
	if (!boxDim)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(q.box_dim, boxDim, tensorRank * sizeof(boxDim[0]));
	take_modes(&q, interleave, swizzle, l2Promotion, oobFill);
	return encode(tensorMap, &q);
}

VGPU_EXPORT CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
					     cuuint32_t tensorRank, void *globalAddress,
					     const cuuint64_t *globalDim,
					     const cuuint64_t *globalStrides,
					     const int *pixelBoxLowerCorner,
					     const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
					     cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
					     CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
					     CUtensorMapL2promotion l2Promotion,
					     CUtensorMapFloatOOBfill oobFill)
{
	struct vgpu_tensor_map_req q;
	CUresult rc = take_common(&q, tensorMap, VGPU_TMAP_IM2COL, tensorDataType, tensorRank,
				  globalAddress, globalDim, globalStrides, elementStrides);

	if (rc)
		return rc;
	/* rank - 2 corners: the spatial dimensions (3..5 dimensions only). */
	if (tensorRank < 3 || !pixelBoxLowerCorner || !pixelBoxUpperCorner)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(q.lower, pixelBoxLowerCorner, (tensorRank - 2) * sizeof(int));
	memcpy(q.upper, pixelBoxUpperCorner, (tensorRank - 2) * sizeof(int));
	q.channels_per_pixel = channelsPerPixel;
	q.pixels_per_column = pixelsPerColumn;
	take_modes(&q, interleave, swizzle, l2Promotion, oobFill);
	return encode(tensorMap, &q);
}

VGPU_EXPORT CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap,
						 CUtensorMapDataType tensorDataType,
						 cuuint32_t tensorRank, void *globalAddress,
						 const cuuint64_t *globalDim,
						 const cuuint64_t *globalStrides,
						 int pixelBoxLowerCornerWidth,
						 int pixelBoxUpperCornerWidth,
						 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
						 const cuuint32_t *elementStrides,
						 CUtensorMapInterleave interleave,
						 CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
						 CUtensorMapL2promotion l2Promotion,
						 CUtensorMapFloatOOBfill oobFill)
{
	struct vgpu_tensor_map_req q;
	CUresult rc = take_common(&q, tensorMap, VGPU_TMAP_IM2COL_WIDE, tensorDataType,
				  tensorRank, globalAddress, globalDim, globalStrides,
				  elementStrides);

	if (rc)
		return rc;
	q.lower[0] = pixelBoxLowerCornerWidth;
	q.upper[0] = pixelBoxUpperCornerWidth;
	q.channels_per_pixel = channelsPerPixel;
	q.pixels_per_column = pixelsPerColumn;
	q.wide_mode = (uint32_t)mode;
	take_modes(&q, interleave, swizzle, l2Promotion, oobFill);
	return encode(tensorMap, &q);
}

VGPU_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
	struct vgpu_ctx *ctx;
	CUresult rc = vgpu_enter_ctx(&ctx);

	if (rc)
		return rc;
	/* No map: the driver (580) crashes, vgpu refuses. An unaligned one
	 * the driver takes, so does vgpu. */
	if (!tensorMap)
		return CUDA_ERROR_INVALID_VALUE;
	return map_call(VGPU_OP_TENSOR_MAP_REPLACE, ctx, (uintptr_t)globalAddress, tensorMap,
			sizeof(*tensorMap), tensorMap);
}
