// SPDX-License-Identifier: MIT
/*
 * Tensor maps on the host backend. The real driver packs a TMA descriptor
 * the GPU reads; no host kernel uses TMA, so the 128 bytes here are a
 * layout of our own (below). What is refused is exactly what the driver's
 * documentation of cuTensorMapEncodeTiled, ...Im2col and ...Im2colWide
 * says must hold, so bad input fails alike on both backends.
 *
 * Host layout (little endian, the rest zero):
 *   0  u32 magic "VTMH"      4  u8 kind, data type, rank, interleave
 *   8  u8 swizzle, l2 promotion, oob fill, im2col-wide mode
 *  12  u16 channels per pixel, u16 pixels per column
 *  16  u64 global address   24  u32 global dim - 1 [5]
 *  48  u64 global strides [4]
 *  80  u8 box dim - 1 [5]   85  u8 element strides [5]
 *  90  s16 lower corner [3] 96  s16 upper corner [3]
 */
#include <string.h>

#include "host_backend.h"
#include "vgpu/proto.h"

#define HOST_TMAP_MAGIC 0x484d5456u	/* "VTMH" */

struct host_tmap {
	uint32_t magic;
	uint8_t kind, data_type, rank, interleave;
	uint8_t swizzle, l2_promotion, oob_fill, wide_mode;
	uint16_t channels, pixels;
	uint64_t address;
	uint32_t dim_m1[5];
	uint32_t pad;
	uint64_t strides[4];
	uint8_t box_m1[5];
	uint8_t elem_strides[5];
	int16_t lower[3], upper[3];
	uint8_t zero[26];
};

_Static_assert(sizeof(struct host_tmap) == sizeof(CUtensorMap), "host tensor map layout");
_Static_assert(__builtin_offsetof(struct host_tmap, box_m1) == 80, "host tensor map layout");
_Static_assert(__builtin_offsetof(struct host_tmap, lower) == 90, "host tensor map layout");

/* Bits one element takes in global memory. */
static unsigned elem_bits(CUtensorMapDataType t)
{
	switch (t) {
	case CU_TENSOR_MAP_DATA_TYPE_UINT8:
		return 8;
	case CU_TENSOR_MAP_DATA_TYPE_UINT16:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
	case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
		return 16;
	case CU_TENSOR_MAP_DATA_TYPE_UINT32:
	case CU_TENSOR_MAP_DATA_TYPE_INT32:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
	case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
		return 32;
	case CU_TENSOR_MAP_DATA_TYPE_UINT64:
	case CU_TENSOR_MAP_DATA_TYPE_INT64:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
		return 64;
	case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B:
		return 4;	/* 16 x U4 in 8 bytes */
	case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B:
	case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B:
		return 8;	/* 16 values in 16 bytes */
	default:
		return 0;
	}
}

static int packed16(CUtensorMapDataType t)
{
	return t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B || t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

static int is_float(CUtensorMapDataType t)
{
	switch (t) {
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
	case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
	case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
		return 1;
	default:
		return 0;
	}
}

/* The span a swizzle mode permutes within, in bytes (0: none). */
static unsigned swizzle_span(CUtensorMapSwizzle s)
{
	switch (s) {
	case CU_TENSOR_MAP_SWIZZLE_32B:
		return 32;
	case CU_TENSOR_MAP_SWIZZLE_64B:
		return 64;
	case CU_TENSOR_MAP_SWIZZLE_NONE:
		return 0;
	default:
		return 128;
	}
}

static int address_ok(uint64_t a, CUtensorMapDataType t, CUtensorMapInterleave il)
{
	unsigned align = il == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(t) ? 32 : 16;

	return a % align == 0;
}

/* What every encoder requires of the type, global extent and modes. */
static CUresult check_common(CUtensorMapDataType t, cuuint32_t rank, void *addr,
			     const cuuint64_t *dim, const cuuint64_t *strides,
			     const cuuint32_t *estrides, CUtensorMapInterleave il,
			     CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
			     CUtensorMapFloatOOBfill oob)
{
	unsigned smul = il == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(t) ? 32 : 16;

	if (!elem_bits(t) || (unsigned)il > CU_TENSOR_MAP_INTERLEAVE_32B ||
	    (unsigned)sw > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
	    (unsigned)l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
	    (unsigned)oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
		return CUDA_ERROR_INVALID_VALUE;
	if (rank == 0 || rank > VGPU_TMAP_MAX_RANK || (il != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3))
		return CUDA_ERROR_INVALID_VALUE;
	if (!address_ok((uintptr_t)addr, t, il) || !dim || !estrides || (rank > 1 && !strides))
		return CUDA_ERROR_INVALID_VALUE;
	for (cuuint32_t i = 0; i < rank; i++)
		if (dim[i] == 0 || dim[i] > (1ull << 32) || estrides[i] == 0 || estrides[i] > 8)
			return CUDA_ERROR_INVALID_VALUE;
	if (packed16(t) && dim[0] % 128)
		return CUDA_ERROR_INVALID_VALUE;
	if (t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && dim[0] % 2)
		return CUDA_ERROR_INVALID_VALUE;
	for (cuuint32_t i = 0; i + 1 < rank; i++)
		if (strides[i] % smul || strides[i] >= (1ull << 40))
			return CUDA_ERROR_INVALID_VALUE;
	/* The documentation pairs the 32B interleave with the 32B swizzle;
	 * the driver (580) takes it with any swizzle, so does this. */
	if (t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B && il != CU_TENSOR_MAP_INTERLEAVE_NONE)
		return CUDA_ERROR_INVALID_VALUE;
	if (t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
	    sw != CU_TENSOR_MAP_SWIZZLE_NONE && sw != CU_TENSOR_MAP_SWIZZLE_128B &&
	    sw != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B && sw != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B)
		return CUDA_ERROR_INVALID_VALUE;
	if (t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B &&
	    sw != CU_TENSOR_MAP_SWIZZLE_NONE && sw != CU_TENSOR_MAP_SWIZZLE_128B &&
	    sw != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B)
		return CUDA_ERROR_INVALID_VALUE;
	if (oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_float(t))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* With no interleave, the box's inner row must fit the swizzle span. */
static CUresult check_inner(CUtensorMapDataType t, uint64_t inner_elems, CUtensorMapInterleave il,
			    CUtensorMapSwizzle sw)
{
	uint64_t bytes = inner_elems * elem_bits(t) / 8;

	if (il == CU_TENSOR_MAP_INTERLEAVE_NONE && sw != CU_TENSOR_MAP_SWIZZLE_NONE &&
	    bytes > swizzle_span(sw))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* The documentation wants the map 64-byte aligned; the driver (580)
 * writes an unaligned one all the same. */
static CUresult check_map_out(CUtensorMap *m)
{
	CUresult rc = host_check_init();

	if (!rc && !m)
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

static void encode(struct host_tmap *h, uint8_t kind, CUtensorMapDataType t, cuuint32_t rank,
		   void *addr, const cuuint64_t *dim, const cuuint64_t *strides,
		   const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
		   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	memset(h, 0, sizeof(*h));
	h->magic = HOST_TMAP_MAGIC;
	h->kind = kind;
	h->data_type = (uint8_t)t;
	h->rank = (uint8_t)rank;
	h->interleave = (uint8_t)il;
	h->swizzle = (uint8_t)sw;
	h->l2_promotion = (uint8_t)l2;
	h->oob_fill = (uint8_t)oob;
	h->address = (uintptr_t)addr;
	for (cuuint32_t i = 0; i < rank; i++) {
		h->dim_m1[i] = (uint32_t)(dim[i] - 1);
		h->elem_strides[i] = (uint8_t)estrides[i];
		if (i + 1 < rank)
			h->strides[i] = strides[i];
	}
}

CUresult host_cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank,
				     void *addr, const cuuint64_t *dim, const cuuint64_t *strides,
				     const cuuint32_t *box, const cuuint32_t *estrides,
				     CUtensorMapInterleave il, CUtensorMapSwizzle sw,
				     CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	struct host_tmap h;
	CUresult rc = check_map_out(m);

	if (!rc)
		rc = check_common(t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
	if (!rc && !box)
		rc = CUDA_ERROR_INVALID_VALUE;
	for (cuuint32_t i = 0; !rc && i < rank; i++)
		if (box[i] == 0 || box[i] > 256)
			rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && il == CU_TENSOR_MAP_INTERLEAVE_NONE && ((uint64_t)box[0] * elem_bits(t)) % 128)
		rc = CUDA_ERROR_INVALID_VALUE;	/* box[0] * element size: 16-byte multiple */
	if (!rc && packed16(t) && box[0] != 128)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = check_inner(t, box[0], il, sw);
	if (rc)
		return rc;
	encode(&h, VGPU_TMAP_TILED, t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
	for (cuuint32_t i = 0; i < rank; i++)
		h.box_m1[i] = (uint8_t)(box[i] - 1);
	memcpy(m, &h, sizeof(h));
	return CUDA_SUCCESS;
}

/* channelsPerPixel and pixelsPerColumn as both im2col encoders take them. */
static CUresult check_pixels(CUtensorMapDataType t, cuuint32_t channels, cuuint32_t pixels,
			     int pixels_used)
{
	if (channels == 0 || channels > 256 || (packed16(t) && channels != 128))
		return CUDA_ERROR_INVALID_VALUE;
	if (pixels_used && (pixels == 0 || pixels > 1024))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult host_cuTensorMapEncodeIm2col(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank,
				      void *addr, const cuuint64_t *dim, const cuuint64_t *strides,
				      const int *lower, const int *upper, cuuint32_t channels,
				      cuuint32_t pixels, const cuuint32_t *estrides,
				      CUtensorMapInterleave il, CUtensorMapSwizzle sw,
				      CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	struct host_tmap h;
	int lim;
	CUresult rc = check_map_out(m);

	if (!rc && (rank < 3 || rank > 5))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = check_common(t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
	if (!rc && (!lower || !upper))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc)
		return rc;
	/* The offsets' precision shrinks as the spatial dimensions grow. */
	lim = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
	for (cuuint32_t i = 0; i < rank - 2; i++) {
		if (lower[i] < -lim || lower[i] >= lim || upper[i] < -lim || upper[i] >= lim)
			return CUDA_ERROR_INVALID_VALUE;
		/* The box spans dim + upper - lower along spatial dimension i
		 * (W, H, D from dimension 1 on): it must not be empty. */
		if ((int64_t)dim[i + 1] + upper[i] - lower[i] <= 0)
			return CUDA_ERROR_INVALID_VALUE;
	}
	rc = check_pixels(t, channels, pixels, 1);
	if (!rc)
		rc = check_inner(t, channels, il, sw);
	if (rc)
		return rc;
	encode(&h, VGPU_TMAP_IM2COL, t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
	h.channels = (uint16_t)channels;
	h.pixels = (uint16_t)pixels;
	for (cuuint32_t i = 0; i < rank - 2; i++) {
		h.lower[i] = (int16_t)lower[i];
		h.upper[i] = (int16_t)upper[i];
	}
	memcpy(m, &h, sizeof(h));
	return CUDA_SUCCESS;
}

CUresult host_cuTensorMapEncodeIm2colWide(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank,
					  void *addr, const cuuint64_t *dim,
					  const cuuint64_t *strides, int lower, int upper,
					  cuuint32_t channels, cuuint32_t pixels,
					  const cuuint32_t *estrides, CUtensorMapInterleave il,
					  CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle sw,
					  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	struct host_tmap h;
	CUresult rc = check_map_out(m);

	if (!rc && (rank < 3 || rank > 5 || (unsigned)mode > CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = check_common(t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
	if (rc)
		return rc;
	if (lower < -32768 || lower > 32767 || upper < -32768 || upper > 32767 ||
	    (int64_t)dim[1] + upper - lower <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* Only these swizzles (none too: the documentation asks for one, the
	 * driver, 580, takes none); the packed 16-byte types lose the 64-byte
	 * one. */
	if (sw != CU_TENSOR_MAP_SWIZZLE_NONE && sw != CU_TENSOR_MAP_SWIZZLE_128B &&
	    sw != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B &&
	    (sw != CU_TENSOR_MAP_SWIZZLE_64B || packed16(t)))
		return CUDA_ERROR_INVALID_VALUE;
	rc = check_pixels(t, channels, pixels, mode == CU_TENSOR_MAP_IM2COL_WIDE_MODE_W);
	if (!rc)
		rc = check_inner(t, channels, il, sw);
	if (rc)
		return rc;
	encode(&h, VGPU_TMAP_IM2COL_WIDE, t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
	h.wide_mode = (uint8_t)mode;
	h.channels = (uint16_t)channels;
	h.pixels = (uint16_t)pixels;
	h.lower[0] = (int16_t)lower;
	h.upper[0] = (int16_t)upper;
	memcpy(m, &h, sizeof(h));
	return CUDA_SUCCESS;
}

CUresult host_cuTensorMapReplaceAddress(CUtensorMap *m, void *addr)
{
	struct host_tmap h;
	CUresult rc = check_map_out(m);

	if (rc)
		return rc;
	memcpy(&h, m, sizeof(h));
	/* Only a map this backend encoded; the address keeps its rules. */
	if (h.magic != HOST_TMAP_MAGIC || h.kind > VGPU_TMAP_IM2COL_WIDE ||
	    !address_ok((uintptr_t)addr, (CUtensorMapDataType)h.data_type,
			(CUtensorMapInterleave)h.interleave))
		return CUDA_ERROR_INVALID_VALUE;
	h.address = (uintptr_t)addr;
	memcpy(m, &h, sizeof(h));
	return CUDA_SUCCESS;
}
