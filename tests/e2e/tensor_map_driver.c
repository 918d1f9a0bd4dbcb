// SPDX-License-Identifier: MIT
/*
 * Tensor maps through the driver API: good encodings succeed, are
 * deterministic and take a new address, and each rule of
 * cuTensorMapEncodeTiled / ...Im2col / ...Im2colWide / ...ReplaceAddress is
 * refused with CUDA_ERROR_INVALID_VALUE. The rules are the driver's (580 on
 * an H100), which takes more than its documentation says: a map not 64-byte
 * aligned, the 32B interleave with another swizzle, an im2col-wide map with
 * no swizzle. Where the driver crashes (no im2col corner, no map to
 * replace the address of), vgpu refuses: checked under vgpu only, on
 * stderr. The bytes themselves are never printed (the host backend's
 * layout is its own): only comparisons.
 *
 * One line per check on stdout; exit 0 pass, 1 fail, 77 skip (a GPU older
 * than compute capability 9.0 has no tensor maps).
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_check.h"

/* A tiled encoding with every argument named, so each check changes one. */
struct tiled {
	CUtensorMapDataType type;
	cuuint32_t rank;
	CUdeviceptr addr;
	cuuint64_t dim[5], strides[4];
	cuuint32_t box[5], estrides[5];
	CUtensorMapInterleave il;
	CUtensorMapSwizzle sw;
	CUtensorMapL2promotion l2;
	CUtensorMapFloatOOBfill oob;
};

static CUdeviceptr base;

/* 64 x 32 floats, rows of 256 bytes, an 16 x 8 box. */
static struct tiled good(void)
{
	struct tiled t = {
		.type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, .rank = 2, .addr = base,
		.dim = { 64, 32, 1, 1, 1 }, .strides = { 256, 256 * 32, 256 * 32, 256 * 32 },
		.box = { 16, 8, 1, 1, 1 }, .estrides = { 1, 1, 1, 1, 1 },
		.il = CU_TENSOR_MAP_INTERLEAVE_NONE, .sw = CU_TENSOR_MAP_SWIZZLE_NONE,
		.l2 = CU_TENSOR_MAP_L2_PROMOTION_NONE, .oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
	};
	return t;
}

static CUresult tiled(CUtensorMap *m, const struct tiled *t)
{
	return cuTensorMapEncodeTiled(m, t->type, t->rank, (void *)(uintptr_t)t->addr, t->dim,
				      t->strides, t->box, t->estrides, t->il, t->sw, t->l2,
				      t->oob);
}

static void refused(CUtensorMap *m, const struct tiled *t, const char *what)
{
	CUresult rc = tiled(m, t);

	expect(rc == CUDA_ERROR_INVALID_VALUE, what, rc);
}

static void tiled_checks(CUtensorMap *m)
{
	CUtensorMap a, b, c;
	struct tiled t = good();
	CUresult rc;

	rc = tiled(&a, &t);
	expect(rc == CUDA_SUCCESS, "tiled: a 2-D float box encodes", rc);
	rc = tiled(&b, &t);
	expect(!rc && !memcmp(&a, &b, sizeof(a)), "tiled: the same arguments give the same map", rc);
	t.addr = base + 4096;
	rc = tiled(&c, &t);
	expect(!rc && memcmp(&a, &c, sizeof(a)), "tiled: another address gives another map", rc);
	rc = cuTensorMapReplaceAddress(&b, (void *)(uintptr_t)(base + 4096));
	expect(!rc && !memcmp(&b, &c, sizeof(b)), "replace address: as if encoded there", rc);
	rc = cuTensorMapReplaceAddress(&b, (void *)(uintptr_t)(base + 8));
	expect(rc == CUDA_ERROR_INVALID_VALUE, "replace address: 8-byte aligned is refused", rc);
	/* Not 64-byte aligned: the driver takes it (the documentation not). */
	memcpy((char *)m + 32, &a, sizeof(a));
	rc = cuTensorMapReplaceAddress((CUtensorMap *)((char *)m + 32),
				       (void *)(uintptr_t)(base + 4096));
	expect(!rc && !memcmp((char *)m + 32, &c, sizeof(c)),
	       "replace address: a map not 64-byte aligned too", rc);
	if (under_vgpu()) {	/* no map: the driver crashes */
		rc = cuTensorMapReplaceAddress(NULL, (void *)(uintptr_t)base);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "replace address: no map is refused",
			    rc);
	}

	t = good();
	t.rank = 5;
	t.dim[2] = 4;
	t.dim[3] = 2;
	t.dim[4] = 2;
	t.strides[1] = 256 * 32;
	t.strides[2] = 256 * 32 * 4;
	t.strides[3] = 256 * 32 * 4 * 2;
	rc = tiled(m, &t);
	expect(rc == CUDA_SUCCESS, "tiled: five dimensions encode", rc);
	t = good();
	t.sw = CU_TENSOR_MAP_SWIZZLE_128B;
	t.box[0] = 32;	/* 128 bytes: the swizzle span */
	rc = tiled(m, &t);
	expect(rc == CUDA_SUCCESS, "tiled: a 128-byte inner box with the 128B swizzle", rc);
	t = good();
	t.type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	t.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
	rc = tiled(m, &t);
	expect(rc == CUDA_SUCCESS, "tiled: NaN fill with a float type", rc);

	t = good();
	memset(m, 0, 2 * sizeof(*m));
	rc = tiled((CUtensorMap *)((char *)m + 32), &t);
	expect(!rc && !memcmp((char *)m + 32, &a, sizeof(a)),
	       "tiled: a map not 64-byte aligned encodes the same", rc);
	t.il = CU_TENSOR_MAP_INTERLEAVE_32B;	/* the documentation: with the 32B swizzle only */
	t.rank = 3;
	t.dim[2] = 2;
	t.strides[1] = 256 * 32;
	t.sw = CU_TENSOR_MAP_SWIZZLE_64B;
	rc = tiled(m, &t);
	expect(rc == CUDA_SUCCESS, "tiled: 32B interleave with the 64B swizzle", rc);
	t.sw = CU_TENSOR_MAP_SWIZZLE_NONE;
	rc = tiled(m, &t);
	expect(rc == CUDA_SUCCESS, "tiled: 32B interleave with no swizzle", rc);
	rc = tiled(NULL, &t);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "tiled: no map", rc);

	t = good();
	t.rank = 0;
	refused(m, &t, "tiled: rank 0");
	t = good();
	t.rank = 6;
	refused(m, &t, "tiled: rank 6");
	t = good();
	t.addr = base + 8;
	refused(m, &t, "tiled: a global address not 16-byte aligned");
	t = good();
	t.addr = base + 16;
	t.rank = 3;
	t.dim[2] = 2;
	t.il = CU_TENSOR_MAP_INTERLEAVE_32B;
	t.sw = CU_TENSOR_MAP_SWIZZLE_32B;
	t.strides[0] = 256;
	t.strides[1] = 256 * 32;
	refused(m, &t, "tiled: 32B interleave with a 16-byte aligned address");
	t = good();
	t.dim[1] = 0;
	refused(m, &t, "tiled: a zero dimension");
	t = good();
	t.dim[1] = (1ull << 32) + 1;
	refused(m, &t, "tiled: a dimension over 2^32");
	t = good();
	t.strides[0] = 264;
	refused(m, &t, "tiled: a stride not a multiple of 16");
	t = good();
	t.strides[0] = 1ull << 40;
	refused(m, &t, "tiled: a stride of 2^40");
	t = good();
	t.box[1] = 0;
	refused(m, &t, "tiled: a zero box dimension");
	t = good();
	t.box[1] = 257;
	refused(m, &t, "tiled: a box dimension over 256");
	t = good();
	t.box[0] = 2;	/* 8 bytes */
	refused(m, &t, "tiled: an inner box row not a multiple of 16 bytes");
	t = good();
	t.estrides[1] = 0;
	refused(m, &t, "tiled: a zero element stride");
	t = good();
	t.estrides[1] = 9;
	refused(m, &t, "tiled: an element stride over 8");
	t = good();
	t.il = CU_TENSOR_MAP_INTERLEAVE_16B;
	refused(m, &t, "tiled: interleave with fewer than 3 dimensions");
	t = good();
	t.sw = CU_TENSOR_MAP_SWIZZLE_32B;	/* 16 floats: 64 bytes */
	refused(m, &t, "tiled: an inner box wider than the swizzle span");
	t = good();
	t.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
	t.type = CU_TENSOR_MAP_DATA_TYPE_INT32;
	refused(m, &t, "tiled: NaN fill with an integer type");
	t = good();
	t.type = (CUtensorMapDataType)99;
	refused(m, &t, "tiled: an unknown data type");
	t = good();
	t.il = (CUtensorMapInterleave)3;
	refused(m, &t, "tiled: an unknown interleave");
	t = good();
	t.sw = (CUtensorMapSwizzle)7;
	refused(m, &t, "tiled: an unknown swizzle");
	t = good();
	t.l2 = (CUtensorMapL2promotion)4;
	refused(m, &t, "tiled: an unknown L2 promotion");
	t = good();
	t.oob = (CUtensorMapFloatOOBfill)2;
	refused(m, &t, "tiled: an unknown out-of-bounds fill");
	t = good();
	rc = cuTensorMapEncodeTiled(m, t.type, t.rank, (void *)(uintptr_t)t.addr, t.dim, t.strides,
				    NULL, t.estrides, t.il, t.sw, t.l2, t.oob);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "tiled: no box array", rc);
}

/* NHWC: 64 channels of fp16, 16 x 16 pixels, 2 images. */
static CUresult im2col(CUtensorMap *m, cuuint32_t rank, const int *lo, const int *hi,
		       cuuint32_t channels, cuuint32_t pixels, CUtensorMapSwizzle sw)
{
	const cuuint64_t dim[5] = { 64, 16, 16, 2, 2 };
	const cuuint64_t strides[4] = { 128, 128 * 16, 128 * 16 * 16, 128 * 16 * 16 * 2 };
	const cuuint32_t es[5] = { 1, 1, 1, 1, 1 };

	return cuTensorMapEncodeIm2col(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, rank,
				       (void *)(uintptr_t)base, dim, strides, lo, hi, channels,
				       pixels, es, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
				       CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
				       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static void im2col_checks(CUtensorMap *m)
{
	const int lo[3] = { -1, -1, 0 }, hi[3] = { -1, -1, 0 };
	const int far[3] = { -128, 0, 0 };
	CUresult rc;

	rc = im2col(m, 4, lo, hi, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_SUCCESS, "im2col: a 4-D NHWC tensor encodes", rc);
	rc = im2col(m, 2, lo, hi, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col: rank 2", rc);
	rc = im2col(m, 4, far, hi, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_SUCCESS, "im2col: corner -128 with 4 dimensions", rc);
	{
		const int over[3] = { -129, 0, 0 };

		rc = im2col(m, 4, over, hi, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
		expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col: corner -129 with 4 dimensions", rc);
	}
	rc = im2col(m, 4, lo, hi, 257, 128, CU_TENSOR_MAP_SWIZZLE_NONE);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col: 257 channels per pixel", rc);
	rc = im2col(m, 4, lo, hi, 64, 1025, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col: 1025 pixels per column", rc);
	rc = im2col(m, 4, lo, hi, 64, 128, CU_TENSOR_MAP_SWIZZLE_64B);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col: 128-byte pixels under the 64B swizzle", rc);
	rc = im2col((CUtensorMap *)((char *)m + 32), 4, lo, hi, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_SUCCESS, "im2col: a map not 64-byte aligned", rc);
	/* No corner: the driver crashes, vgpu refuses. */
	if (under_vgpu()) {
		rc = im2col(m, 4, NULL, hi, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "im2col: no lower corner", rc);
		rc = im2col(m, 4, lo, NULL, 64, 128, CU_TENSOR_MAP_SWIZZLE_128B);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "im2col: no upper corner", rc);
	}
}

static CUresult wide(CUtensorMap *m, int lo, int hi, CUtensorMapIm2ColWideMode mode,
		     CUtensorMapSwizzle sw)
{
	const cuuint64_t dim[4] = { 64, 16, 16, 2 };
	const cuuint64_t strides[3] = { 128, 128 * 16, 128 * 16 * 16 };
	const cuuint32_t es[4] = { 1, 1, 1, 1 };

	return cuTensorMapEncodeIm2colWide(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
					   (void *)(uintptr_t)base, dim, strides, lo, hi, 64, 32,
					   es, CU_TENSOR_MAP_INTERLEAVE_NONE, mode, sw,
					   CU_TENSOR_MAP_L2_PROMOTION_NONE,
					   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static void wide_checks(CUtensorMap *m)
{
	CUresult rc;

	rc = wide(m, -1, -1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_SUCCESS, "im2col wide: a 4-D tensor encodes", rc);
	/* The documentation asks for a swizzle; the driver takes none. */
	rc = wide(m, -1, -1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, CU_TENSOR_MAP_SWIZZLE_NONE);
	expect(rc == CUDA_SUCCESS, "im2col wide: no swizzle", rc);
	rc = wide(m, -1, -1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128, CU_TENSOR_MAP_SWIZZLE_NONE);
	expect(rc == CUDA_SUCCESS, "im2col wide: W128 with no swizzle", rc);
	rc = wide(m, -1, -1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, CU_TENSOR_MAP_SWIZZLE_64B);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col wide: 128-byte pixels under the 64B swizzle",
	       rc);
	rc = wide(m, -1, -1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, CU_TENSOR_MAP_SWIZZLE_32B);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col wide: 128-byte pixels under the 32B swizzle",
	       rc);
	rc = wide(m, -1, -1, (CUtensorMapIm2ColWideMode)2, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col wide: an unknown mode", rc);
	rc = wide(m, -32769, -1, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, CU_TENSOR_MAP_SWIZZLE_128B);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "im2col wide: a lower corner below -32768", rc);
}

int main(void)
{
	CUtensorMap *maps;
	CUcontext ctx;
	CUdevice dev;
	int major = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* a crash shows where */
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&base, 1 << 20) ||
	    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) {
		printf("FATAL setup\n");
		return 1;
	}
	if (major < 9) {
		printf("tensor_map_driver: compute capability %d.x has no tensor maps\n", major);
		return 77;
	}
	maps = aligned_alloc(128, 2 * sizeof(*maps));
	if (!maps) {
		printf("FATAL setup\n");
		return 1;
	}
	tiled_checks(maps);
	im2col_checks(maps);
	wide_checks(maps);
	return checks_done("tensor_map_driver");
}
