// SPDX-License-Identifier: MIT
/*
 * CUDA arrays, mipmapped arrays, texture and surface objects through the
 * driver API: every copy form round-trips known bytes (host <-> array,
 * device <-> array, array <-> array; 1D, 2D and 3D, with arrays at either
 * end; synchronous, asynchronous on a stream, peer; pageable and pinned
 * host memory, large enough to be staged in pieces), descriptors read
 * back, texture and surface objects made and read back, bad inputs
 * refused. No kernel runs: the host backend has no texture unit.
 *
 *   array_driver           the checks
 *   array_driver hold GO   arrays with contents, a mipmapped array, texture
 *                          and surface objects; prints "ready", waits for the
 *                          file GO (the test checkpoints and moves the
 *                          session), checks all of it is as it was
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver_check.h"

/* Texture references are deprecated; binding them to arrays is tested. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static CUstream stream;

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 17 + (i >> 9));
}

static CUarray array3d(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch,
		       unsigned flags)
{
	CUDA_ARRAY3D_DESCRIPTOR ad = { .Width = w, .Height = h, .Depth = d, .Format = f,
				       .NumChannels = ch, .Flags = flags };
	CUarray a;

	MUST(cuArray3DCreate(&a, &ad));
	return a;
}

/* A 3D copy between host memory (pitch, rows per slice) and an array. */
static CUresult host_array(void *host, size_t pitch, size_t height, CUarray a, size_t w,
			   size_t h, size_t d, bool up, bool async)
{
	CUDA_MEMCPY3D c = { .WidthInBytes = w, .Height = h, .Depth = d };

	if (up) {
		c.srcMemoryType = CU_MEMORYTYPE_HOST;
		c.srcHost = host;
		c.srcPitch = pitch;
		c.srcHeight = height;
		c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		c.dstArray = a;
	} else {
		c.dstMemoryType = CU_MEMORYTYPE_HOST;
		c.dstHost = host;
		c.dstPitch = pitch;
		c.dstHeight = height;
		c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
		c.srcArray = a;
	}
	return async ? cuMemcpy3DAsync(&c, stream) : cuMemcpy3D(&c);
}

/* ---- 1D forms ------------------------------------------------------------------ */

static void one_d(void)
{
	enum { N = 1000 };
	uint8_t in[N * 4], out[N * 4];
	CUDA_ARRAY_DESCRIPTOR d1 = { .Width = N, .Height = 0, .Format = CU_AD_FORMAT_FLOAT,
				     .NumChannels = 1 };
	CUDA_ARRAY_DESCRIPTOR back;
	CUarray a, b, t;
	CUdeviceptr dev;

	MUST(cuArrayCreate(&a, &d1));
	MUST(cuArrayCreate(&b, &d1));
	MUST(cuMemAlloc(&dev, sizeof(in)));
	fill(in, sizeof(in), 1);
	EXPECT_OK(cuMemcpyHtoA(a, 0, in, sizeof(in)), "1D: host to array");
	memset(out, 0, sizeof(out));
	EXPECT_OK(cuMemcpyAtoH(out, a, 0, sizeof(out)), "1D: array to host");
	expect(!memcmp(in, out, sizeof(in)), "1D: the bytes came back", 0);
	EXPECT_OK(cuMemcpyAtoH(out, a, 40, 100), "1D: part of an array to host");
	expect(!memcmp(in + 40, out, 100), "1D: the part's bytes", 0);
	EXPECT_OK(cuMemcpyAtoA(b, 8, a, 0, sizeof(in) - 8), "1D: array to array, shifted");
	EXPECT_OK(cuMemcpyAtoD(dev, b, 8, sizeof(in) - 8), "1D: array to device");
	memset(out, 0, sizeof(out));
	EXPECT_OK(cuMemcpyDtoH(out, dev, sizeof(in) - 8), "1D: device to host");
	expect(!memcmp(in, out, sizeof(in) - 8), "1D: array to array to device kept the bytes", 0);
	fill(in, sizeof(in), 2);
	EXPECT_OK(cuMemcpyHtoD(dev, in, sizeof(in)), "1D: host to device");
	EXPECT_OK(cuMemcpyDtoA(a, 0, dev, sizeof(in)), "1D: device to array");
	EXPECT_OK(cuMemcpyHtoAAsync(b, 0, in + 4, 400, stream), "1D: host to array, async");
	EXPECT_OK(cuMemcpyAtoHAsync(out, a, 0, sizeof(out), stream), "1D: array to host, async");
	EXPECT_OK(cuStreamSynchronize(stream), "1D: stream synchronized");
	expect(!memcmp(in, out, sizeof(in)), "1D: device to array to host kept the bytes", 0);
	EXPECT_OK(cuMemcpyAtoH(out, b, 0, 400), "1D: the async upload read back");
	expect(!memcmp(in + 4, out, 400), "1D: the async upload's bytes", 0);
	EXPECT_RC(cuMemcpyHtoA(a, 8, in, sizeof(in)), CUDA_ERROR_INVALID_VALUE,
		  "1D: a copy past the array's end refused");
	EXPECT_OK(cuArrayGetDescriptor(&back, a), "1D: descriptor");
	expect(back.Width == N && back.Height == 0 && back.Format == CU_AD_FORMAT_FLOAT &&
	       back.NumChannels == 1, "1D: descriptor as made", 0);
	EXPECT_RC(cuArrayGetPlane(&t, a, 0), CUDA_ERROR_INVALID_VALUE,
		  "1D: a float array has no planes");
	MUST(cuMemFree(dev));
	EXPECT_OK(cuArrayDestroy(a), "1D: destroy");
	EXPECT_OK(cuArrayDestroy(b), "1D: destroy the second");
}

/* ---- 2D ------------------------------------------------------------------------ */

static void two_d(void)
{
	enum { W = 37, H = 23, E = 4, PITCH = 200 };
	static uint8_t in[PITCH * H], out[PITCH * H], packed[W * E * H];
	CUDA_MEMCPY2D c;
	CUarray a, b;
	CUdeviceptr dev;
	size_t dpitch;
	bool same = true;

	a = array3d(W, H, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
	b = array3d(W + 5, H + 3, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
	MUST(cuMemAllocPitch(&dev, &dpitch, W * E, H, 4));
	fill(in, sizeof(in), 3);
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = in, .srcPitch = PITCH,
			     .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a,
			     .WidthInBytes = W * E, .Height = H };
	EXPECT_OK(cuMemcpy2D(&c), "2D: pitched host to array");
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a,
			     .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dev,
			     .dstPitch = dpitch, .WidthInBytes = W * E, .Height = H };
	EXPECT_OK(cuMemcpy2D(&c), "2D: array to pitched device memory");
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = dev,
			     .srcPitch = dpitch, .dstMemoryType = CU_MEMORYTYPE_HOST,
			     .dstHost = packed, .dstPitch = W * E, .WidthInBytes = W * E,
			     .Height = H };
	EXPECT_OK(cuMemcpy2D(&c), "2D: device to host");
	for (int y = 0; y < H; y++)
		same &= !memcmp(packed + y * W * E, in + y * PITCH, W * E);
	expect(same, "2D: host to array to device to host kept every row", 0);

	/* Array to array at offsets, then back out through an unaligned copy. */
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a,
			     .srcXInBytes = 2 * E, .srcY = 1,
			     .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = b,
			     .dstXInBytes = 5 * E, .dstY = 3, .WidthInBytes = (W - 2) * E,
			     .Height = H - 1 };
	EXPECT_OK(cuMemcpy2D(&c), "2D: array to array at offsets");
	memset(out, 0, sizeof(out));
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = b,
			     .srcXInBytes = 5 * E, .srcY = 3, .dstMemoryType = CU_MEMORYTYPE_HOST,
			     .dstHost = out, .dstPitch = PITCH, .WidthInBytes = (W - 2) * E,
			     .Height = H - 1 };
	EXPECT_OK(cuMemcpy2DUnaligned(&c), "2D: array to host, unaligned form");
	same = true;
	for (int y = 0; y < H - 1; y++)
		same &= !memcmp(out + y * PITCH, in + (y + 1) * PITCH + 2 * E, (W - 2) * E);
	expect(same, "2D: the region moved between arrays came back", 0);

	/* Async, pageable host: the copy is synchronous for the host buffer. */
	fill(in, sizeof(in), 4);
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = in, .srcPitch = PITCH,
			     .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a,
			     .WidthInBytes = W * E, .Height = H };
	EXPECT_OK(cuMemcpy2DAsync(&c, stream), "2D: host to array, async");
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a,
			     .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = out,
			     .dstPitch = PITCH, .WidthInBytes = W * E, .Height = H };
	EXPECT_OK(cuMemcpy2DAsync(&c, stream), "2D: array to host, async");
	EXPECT_OK(cuStreamSynchronize(stream), "2D: stream synchronized");
	same = true;
	for (int y = 0; y < H; y++)
		same &= !memcmp(out + y * PITCH, in + y * PITCH, W * E);
	expect(same, "2D: async round trip", 0);

	/* Bad copies. */
	c = (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = in, .srcPitch = PITCH,
			     .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a,
			     .dstXInBytes = E, .WidthInBytes = W * E, .Height = H };
	EXPECT_RC(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE, "2D: a row past the array refused");
	c.dstXInBytes = 0;
	c.dstY = 1;
	EXPECT_RC(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE, "2D: a row below the array refused");
	MUST(cuMemFree(dev));
	EXPECT_OK(cuArrayDestroy(a), "2D: destroy");
	EXPECT_OK(cuArrayDestroy(b), "2D: destroy the second");
}

/* ---- 3D, layered, cubemap ------------------------------------------------------ */

static bool region_same(const uint8_t *a, const uint8_t *b, size_t w, size_t h, size_t d,
			size_t pitch, size_t height)
{
	for (size_t z = 0; z < d; z++)
		for (size_t y = 0; y < h; y++)
			if (memcmp(a + (z * height + y) * pitch, b + (z * height + y) * pitch, w))
				return false;
	return true;
}

static void three_d(void)
{
	enum { W = 16, H = 8, D = 5, E = 8 };
	static uint8_t in[W * E * H * D], out[W * E * H * D];
	CUDA_ARRAY3D_DESCRIPTOR back;
	CUDA_MEMCPY3D c;
	CUDA_MEMCPY3D_PEER p;
	CUcontext ctx;
	CUdeviceptr dev;
	uint8_t *pinned;
	CUarray a, b, layered, cube;

	a = array3d(W, H, D, CU_AD_FORMAT_FLOAT, 2, 0);
	b = array3d(W, H, D, CU_AD_FORMAT_FLOAT, 2, 0);
	MUST(cuMemAlloc(&dev, sizeof(in)));
	MUST(cuMemAllocHost((void **)&pinned, sizeof(in)));
	MUST(cuCtxGetCurrent(&ctx));
	fill(in, sizeof(in), 5);
	EXPECT_OK(host_array(in, W * E, H, a, W * E, H, D, true, false), "3D: host to array");
	memset(out, 0, sizeof(out));
	EXPECT_OK(host_array(out, W * E, H, a, W * E, H, D, false, false), "3D: array to host");
	expect(!memcmp(in, out, sizeof(in)), "3D: the bytes came back", 0);

	/* A sub-box from the array to device memory, then to the other array. */
	c = (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a,
			     .srcXInBytes = 2 * E, .srcY = 1, .srcZ = 1,
			     .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dev,
			     .dstPitch = W * E, .dstHeight = H, .dstXInBytes = 2 * E, .dstY = 1,
			     .dstZ = 1, .WidthInBytes = 10 * E, .Height = 6, .Depth = 3 };
	EXPECT_OK(cuMemcpy3D(&c), "3D: a box from the array to device memory");
	c = (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = dev,
			     .srcPitch = W * E, .srcHeight = H, .srcXInBytes = 2 * E, .srcY = 1,
			     .srcZ = 1, .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = b,
			     .dstXInBytes = 2 * E, .dstY = 1, .dstZ = 1, .WidthInBytes = 10 * E,
			     .Height = 6, .Depth = 3 };
	EXPECT_OK(cuMemcpy3D(&c), "3D: the box from device memory to the other array");
	memset(out, 0, sizeof(out));
	EXPECT_OK(host_array(out, W * E, H, b, W * E, H, D, false, false), "3D: read it back");
	expect(region_same(in + (1 * H + 1) * W * E + 2 * E, out + (1 * H + 1) * W * E + 2 * E,
			   10 * E, 6, 3, W * E, H), "3D: the box's bytes", 0);

	/* Pinned host memory, asynchronous, array to array through peer. */
	fill(pinned, sizeof(in), 6);
	EXPECT_OK(host_array(pinned, W * E, H, a, W * E, H, D, true, true),
		  "3D: pinned host to array, async");
	p = (CUDA_MEMCPY3D_PEER){ .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a,
				  .srcContext = ctx, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
				  .dstArray = b, .dstContext = ctx, .WidthInBytes = W * E,
				  .Height = H, .Depth = D };
	EXPECT_OK(cuMemcpy3DPeerAsync(&p, stream), "3D: array to array, peer, async");
	/* The pinned source is read when the copy runs: not reused before. */
	EXPECT_OK(cuStreamSynchronize(stream), "3D: the copies from pinned memory done");
	memcpy(in, pinned, sizeof(in));
	memset(pinned, 0, sizeof(in));
	EXPECT_OK(host_array(pinned, W * E, H, b, W * E, H, D, false, true),
		  "3D: array to pinned host, async");
	EXPECT_OK(cuStreamSynchronize(stream), "3D: stream synchronized");
	expect(!memcmp(in, pinned, sizeof(in)), "3D: pinned async round trip through peer", 0);
	p.srcMemoryType = CU_MEMORYTYPE_HOST;
	p.srcHost = in;
	p.srcPitch = W * E;
	p.srcHeight = H;
	EXPECT_OK(cuMemcpy3DPeer(&p), "3D: pageable host to array, peer");
	EXPECT_OK(host_array(out, W * E, H, b, W * E, H, D, false, false), "3D: read back");
	expect(!memcmp(in, out, sizeof(in)), "3D: the peer copy's bytes", 0);

	EXPECT_OK(cuArray3DGetDescriptor(&back, a), "3D: descriptor");
	expect(back.Width == W && back.Height == H && back.Depth == D && back.NumChannels == 2 &&
	       back.Format == CU_AD_FORMAT_FLOAT && !back.Flags, "3D: descriptor as made", 0);
	c = (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = in,
			     .srcPitch = W * E, .srcHeight = H, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
			     .dstArray = a, .dstZ = 1, .WidthInBytes = W * E, .Height = H,
			     .Depth = D };
	EXPECT_RC(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE, "3D: a slice past the array refused");
	c.dstZ = 0;
	c.dstLOD = 1;
	EXPECT_RC(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE, "3D: a level of detail refused");

	/* Layered and cubemap arrays: layers and faces are slices. */
	layered = array3d(8, 8, 3, CU_AD_FORMAT_UNSIGNED_INT16, 1, CUDA_ARRAY3D_LAYERED);
	cube = array3d(8, 8, 6, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_CUBEMAP);
	fill(in, sizeof(in), 7);
	EXPECT_OK(host_array(in, 16, 8, layered, 16, 8, 3, true, false), "layered: upload");
	EXPECT_OK(host_array(out, 16, 8, layered, 16, 8, 3, false, false), "layered: read back");
	expect(!memcmp(in, out, 16 * 8 * 3), "layered: the bytes", 0);
	EXPECT_OK(host_array(in, 32, 8, cube, 32, 8, 6, true, false), "cubemap: upload");
	EXPECT_OK(host_array(out, 32, 8, cube, 32, 8, 6, false, false), "cubemap: read back");
	expect(!memcmp(in, out, 32 * 8 * 6), "cubemap: the bytes", 0);
	EXPECT_OK(cuArray3DGetDescriptor(&back, cube), "cubemap: descriptor");
	expect(back.Flags == CUDA_ARRAY3D_CUBEMAP && back.Depth == 6, "cubemap: flags kept", 0);
	MUST(cuMemFree(dev));
	MUST(cuMemFreeHost(pinned));
	EXPECT_OK(cuArrayDestroy(a), "3D: destroy");
	EXPECT_OK(cuArrayDestroy(b), "3D: destroy the second");
	EXPECT_OK(cuArrayDestroy(layered), "layered: destroy");
	EXPECT_OK(cuArrayDestroy(cube), "cubemap: destroy");
}

/* Larger than the staging block: pageable copies go in pieces. */
static void large(void)
{
	enum { W = 1100, H = 1000, D = 3, E = 4 };
	size_t n = (size_t)W * E * H * D;
	uint8_t *in = malloc(n), *out = malloc(n);
	CUarray a2, a3;

	if (!in || !out) {
		printf("FATAL out of memory\n");
		exit(1);
	}
	a3 = array3d(W, H, D, CU_AD_FORMAT_FLOAT, 1, 0);
	a2 = array3d(2048, 1024, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
	fill(in, n, 8);
	EXPECT_OK(host_array(in, W * E, H, a3, W * E, H, D, true, false), "large 3D: upload");
	memset(out, 0, n);
	EXPECT_OK(host_array(out, W * E, H, a3, W * E, H, D, false, false), "large 3D: read back");
	expect(!memcmp(in, out, n), "large 3D: every byte (slices larger than the block)", 0);
	EXPECT_OK(host_array(in, 2048 * 4, 1024, a2, 2048 * 4, 1024, 1, true, true),
		  "large 2D: upload, async");
	memset(out, 0, n);
	EXPECT_OK(host_array(out, 2048 * 4, 1024, a2, 2048 * 4, 1024, 1, false, true),
		  "large 2D: read back, async");
	EXPECT_OK(cuStreamSynchronize(stream), "large 2D: synchronized");
	expect(!memcmp(in, out, 2048 * 4 * 1024), "large 2D: every byte (more rows than the block)", 0);
	EXPECT_OK(cuArrayDestroy(a3), "large: destroy");
	EXPECT_OK(cuArrayDestroy(a2), "large: destroy the second");
	free(in);
	free(out);
}

/*
 * Memory requirements: the driver's answer for an array made without
 * deferred mapping is printed (and compared with the native run's); an
 * answer must cover the bytes. The host backend answers.
 */
static void requirements(CUresult rc, const CUDA_ARRAY_MEMORY_REQUIREMENTS *req, size_t bytes,
			 const char *what)
{
	printf("memory requirements of the %s: %s\n", what, rc ? "refused" : "answered");
	if (!rc)
		expect(req->size >= bytes && req->alignment, "memory requirements cover the bytes",
		       rc);
	expect_vgpu(rc != CUDA_ERROR_NOT_SUPPORTED,
		    "memory requirements: not the unsupported default", rc);
}

/* ---- mipmapped arrays ------------------------------------------------------------ */

static void mipmapped(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 64, .Height = 32, .Format = CU_AD_FORMAT_FLOAT,
				      .NumChannels = 1 };
	CUDA_ARRAY_MEMORY_REQUIREMENTS req = { 0 };
	CUDA_ARRAY3D_DESCRIPTOR ld;
	CUmipmappedArray m;
	CUarray l0, l2, again, l4;
	uint8_t in[16 * 8 * 4], out[16 * 8 * 4];

	EXPECT_OK(cuMipmappedArrayCreate(&m, &d, 9), "mipmap: more levels than the size allows");
	EXPECT_OK(cuMipmappedArrayGetLevel(&l4, m, 6), "mipmap: clamped to 7 levels: level 6");
	EXPECT_RC(cuMipmappedArrayGetLevel(&l4, m, 7), CUDA_ERROR_INVALID_VALUE,
		  "mipmap: clamped to 7 levels: no level 7");
	EXPECT_OK(cuArray3DGetDescriptor(&ld, l4), "mipmap: level 6's descriptor");
	expect(ld.Width == 1 && ld.Height == 1, "mipmap: level 6 is 1x1", 0);
	EXPECT_OK(cuMipmappedArrayDestroy(m), "mipmap: destroy the clamped one");
	EXPECT_OK(cuMipmappedArrayCreate(&m, &d, 4), "mipmap: made with 4 levels");
	EXPECT_OK(cuMipmappedArrayGetLevel(&l0, m, 0), "mipmap: level 0");
	EXPECT_OK(cuMipmappedArrayGetLevel(&l2, m, 2), "mipmap: level 2");
	EXPECT_OK(cuMipmappedArrayGetLevel(&again, m, 2), "mipmap: level 2 again");
	expect(again == l2, "mipmap: one handle per level", 0);
	EXPECT_RC(cuMipmappedArrayGetLevel(&l4, m, 4), CUDA_ERROR_INVALID_VALUE,
		  "mipmap: a level past the last refused");
	EXPECT_OK(cuArray3DGetDescriptor(&ld, l2), "mipmap: level 2's descriptor");
	expect(ld.Width == 16 && ld.Height == 8 && ld.Depth == 0, "mipmap: level 2 is 16x8", 0);
	EXPECT_OK(cuArray3DGetDescriptor(&ld, l0), "mipmap: level 0's descriptor");
	expect(ld.Width == 64 && ld.Height == 32, "mipmap: level 0 is 64x32", 0);
	fill(in, sizeof(in), 9);
	EXPECT_OK(host_array(in, 64, 8, l2, 64, 8, 1, true, false), "mipmap: level 2 upload");
	EXPECT_OK(host_array(out, 64, 8, l2, 64, 8, 1, false, false), "mipmap: level 2 read");
	expect(!memcmp(in, out, sizeof(in)), "mipmap: level 2's bytes", 0);
	EXPECT_RC(host_array(in, 64, 8, l2, 64, 9, 1, true, false), CUDA_ERROR_INVALID_VALUE,
		  "mipmap: a copy past level 2 refused");
	requirements(cuMipmappedArrayGetMemoryRequirements(&req, m, 0), &req,
		     (64 * 32 + 32 * 16 + 16 * 8 + 8 * 4) * 4, "mipmap");
	if (under_vgpu()) {
		CUresult rc = cuArrayDestroy(l2);

		expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE,
			    "mipmap: a level is not destroyed on its own", rc);
	}
	EXPECT_OK(cuMipmappedArrayDestroy(m), "mipmap: destroy");
}

/* ---- texture and surface objects ---------------------------------------------------- */

/* Texture references (the legacy API) bound to arrays. */
static void texrefs(CUarray a, CUmipmappedArray m)
{
	CUmipmappedArray mb;
	CUarray_format f;
	CUarray ab;
	CUtexref t;
	int ch;

	MUST(cuTexRefCreate(&t));
	EXPECT_OK(cuTexRefSetArray(t, a, CU_TRSA_OVERRIDE_FORMAT), "texref: bound to an array");
	EXPECT_OK(cuTexRefGetArray(&ab, t), "texref: its array");
	expect(ab == a, "texref: the array it was bound to", 0);
	EXPECT_OK(cuTexRefSetFormat(t, CU_AD_FORMAT_FLOAT, 1), "texref: format set");
	EXPECT_OK(cuTexRefGetFormat(&f, &ch, t), "texref: format read");
	expect(f == CU_AD_FORMAT_FLOAT && ch == 1, "texref: the format", 0);
	EXPECT_OK(cuTexRefSetMipmappedArray(t, m, CU_TRSA_OVERRIDE_FORMAT),
		  "texref: bound to a mipmapped array");
	EXPECT_OK(cuTexRefGetMipmappedArray(&mb, t), "texref: its mipmapped array");
	expect(mb == m, "texref: the mipmapped array it was bound to", 0);
	EXPECT_OK(cuTexRefDestroy(t), "texref: destroy");
}

static void objects(void)
{
	CUDA_RESOURCE_DESC res = { .resType = CU_RESOURCE_TYPE_ARRAY }, rb;
	CUDA_TEXTURE_DESC tex = { .addressMode = { CU_TR_ADDRESS_MODE_CLAMP,
						   CU_TR_ADDRESS_MODE_WRAP,
						   CU_TR_ADDRESS_MODE_BORDER },
				  .filterMode = CU_TR_FILTER_MODE_LINEAR,
				  .flags = CU_TRSF_NORMALIZED_COORDINATES,
				  .borderColor = { 0.25f, 0.5f, 0.75f, 1.0f } }, tb;
	CUDA_RESOURCE_VIEW_DESC view = { .format = CU_RES_VIEW_FORMAT_FLOAT_1X32, .width = 32,
					 .height = 16, .lastMipmapLevel = 1 }, vb;
	CUDA_ARRAY3D_DESCRIPTOR md = { .Width = 32, .Height = 16, .Format = CU_AD_FORMAT_FLOAT,
				       .NumChannels = 1 };
	CUtexObject t, tm, tl;
	CUsurfObject s, s2;
	CUmipmappedArray m;
	CUarray a, plain;
	CUdeviceptr dev;

	a = array3d(32, 16, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
	plain = array3d(32, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0);
	MUST(cuMemAlloc(&dev, 1 << 16));
	res.res.array.hArray = a;
	EXPECT_OK(cuTexObjectCreate(&t, &res, &tex, NULL), "texture object on an array");
	expect(t != 0, "texture object: a value", 0);
	EXPECT_OK(cuTexObjectGetResourceDesc(&rb, t), "texture object: resource read back");
	expect(rb.resType == CU_RESOURCE_TYPE_ARRAY && rb.res.array.hArray == a,
	       "texture object: the array it was made on", 0);
	EXPECT_OK(cuTexObjectGetTextureDesc(&tb, t), "texture object: texture read back");
	/* What the driver keeps of it (H100, driver 580: not the third
	 * address mode of a 2D array, nor always the border colour). */
	expect(tb.addressMode[0] == CU_TR_ADDRESS_MODE_CLAMP &&
	       tb.filterMode == CU_TR_FILTER_MODE_LINEAR &&
	       (tb.flags & CU_TRSF_NORMALIZED_COORDINATES),
	       "texture object: the texture descriptor as made", 0);

	MUST(cuMipmappedArrayCreate(&m, &md, 2));
	res = (CUDA_RESOURCE_DESC){ .resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY };
	res.res.mipmap.hMipmappedArray = m;
	tex.mipmapFilterMode = CU_TR_FILTER_MODE_LINEAR;
	tex.maxMipmapLevelClamp = 1.0f;
	EXPECT_OK(cuTexObjectCreate(&tm, &res, &tex, &view), "texture object on a mipmapped array");
	EXPECT_OK(cuTexObjectGetResourceViewDesc(&vb, tm), "texture object: view read back");
	expect(vb.format == CU_RES_VIEW_FORMAT_FLOAT_1X32 && vb.width == 32 && vb.height == 16 &&
	       vb.lastMipmapLevel == 1, "texture object: the view as made", 0);
	EXPECT_OK(cuTexObjectGetResourceDesc(&rb, tm), "texture object: mipmapped resource");
	expect(rb.res.mipmap.hMipmappedArray == m, "texture object: the mipmapped array", 0);

	res = (CUDA_RESOURCE_DESC){ .resType = CU_RESOURCE_TYPE_LINEAR };
	res.res.linear.devPtr = dev;
	res.res.linear.format = CU_AD_FORMAT_FLOAT;
	res.res.linear.numChannels = 1;
	res.res.linear.sizeInBytes = 4096;
	tex = (CUDA_TEXTURE_DESC){ .filterMode = CU_TR_FILTER_MODE_POINT };
	EXPECT_OK(cuTexObjectCreate(&tl, &res, &tex, NULL), "texture object on linear memory");
	EXPECT_OK(cuTexObjectGetResourceDesc(&rb, tl), "texture object: linear resource");
	expect(rb.res.linear.devPtr == dev && rb.res.linear.sizeInBytes == 4096,
	       "texture object: the linear memory", 0);
	tex.addressMode[1] = (CUaddress_mode)7;
	res = (CUDA_RESOURCE_DESC){ .resType = CU_RESOURCE_TYPE_ARRAY };
	res.res.array.hArray = a;
	EXPECT_RC(cuTexObjectCreate(&t, &res, &tex, NULL), CUDA_ERROR_INVALID_VALUE,
		  "texture object: a bad address mode refused");

	EXPECT_OK(cuSurfObjectCreate(&s, &res), "surface object on a load/store array");
	EXPECT_OK(cuSurfObjectGetResourceDesc(&rb, s), "surface object: resource read back");
	expect(rb.res.array.hArray == a, "surface object: the array", 0);
	res.res.array.hArray = plain;
	/* The driver makes it (H100, driver 580); a kernel's use would fail. */
	EXPECT_OK(cuSurfObjectCreate(&s2, &res), "surface object on an array without SURFACE_LDST");
	EXPECT_OK(cuSurfObjectDestroy(s2), "that surface object destroyed");
	res.res.array.hArray = a;
	EXPECT_OK(cuSurfObjectDestroy(s), "surface object: destroy");
	EXPECT_OK(cuTexObjectDestroy(t), "texture object: destroy");
	EXPECT_OK(cuTexObjectDestroy(tm), "texture object: destroy the mipmapped one");
	EXPECT_OK(cuTexObjectDestroy(tl), "texture object: destroy the linear one");
	texrefs(a, m);
	MUST(cuMipmappedArrayDestroy(m));
	MUST(cuArrayDestroy(a));
	MUST(cuArrayDestroy(plain));
	MUST(cuMemFree(dev));
}

/* ---- bad input ------------------------------------------------------------------ */

static void bad(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 0, .Height = 4, .Format = CU_AD_FORMAT_FLOAT,
				      .NumChannels = 1 };
	CUDA_ARRAY_SPARSE_PROPERTIES sp;
	CUDA_ARRAY_MEMORY_REQUIREMENTS req;
	CUarray a;

	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE, "bad: a zero width refused");
	d.Width = 4;
	d.NumChannels = 3;
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE, "bad: three channels refused");
	d.NumChannels = 1;
	d.Flags = 0x8000;
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE, "bad: an unknown flag refused");
	d.Flags = CUDA_ARRAY3D_CUBEMAP;
	d.Height = 2;
	d.Depth = 6;
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE,
		  "bad: a cubemap that is not square refused");
	d = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = 4, .Height = 4, .Format = CU_AD_FORMAT_FLOAT,
				       .NumChannels = 1 };
	EXPECT_RC(cuArray3DCreate(NULL, &d), CUDA_ERROR_INVALID_VALUE, "bad: no output refused");
	MUST(cuArray3DCreate(&a, &d));
	requirements(cuArrayGetMemoryRequirements(&req, a, 0), &req, 64, "array");
	EXPECT_RC(cuArrayGetSparseProperties(&sp, a), CUDA_ERROR_INVALID_VALUE,
		  "sparse properties of a dense array refused");
	MUST(cuArrayDestroy(a));
	if (under_vgpu()) {
		CUarray gone = a;
		CUresult rc;

		rc = cuArrayDestroy(gone);
		expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "bad: a destroyed array refused", rc);
		d.Flags = CUDA_ARRAY3D_SPARSE;
		rc = cuArray3DCreate(&a, &d);
		expect_vgpu(rc == CUDA_ERROR_NOT_SUPPORTED, "bad: sparse arrays not carried", rc);
	}
}

/* ---- hold: the state a checkpoint and a move carry ------------------------------------ */

static int hold(const char *go)
{
	enum { W = 40, H = 30, D = 4, E = 16 };
	static uint8_t in[W * E * H * D], out[W * E * H * D], lv[20 * 15 * 4], lvout[20 * 15 * 4];
	CUDA_ARRAY3D_DESCRIPTOR md = { .Width = 40, .Height = 30, .Format = CU_AD_FORMAT_FLOAT,
				       .NumChannels = 1 };
	CUDA_RESOURCE_DESC res = { .resType = CU_RESOURCE_TYPE_ARRAY }, rb;
	CUDA_TEXTURE_DESC tex = { .addressMode = { CU_TR_ADDRESS_MODE_MIRROR },
				  .filterMode = CU_TR_FILTER_MODE_LINEAR,
				  .flags = CU_TRSF_NORMALIZED_COORDINATES }, tb;
	CUtexObject t, t2, gone;
	CUsurfObject s;
	CUmipmappedArray m;
	CUarray a, l1, l1b;
	CUtexref ref;
	bool ok = true;

	a = array3d(W, H, D, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_SURFACE_LDST);
	MUST(cuMipmappedArrayCreate(&m, &md, 3));
	MUST(cuMipmappedArrayGetLevel(&l1, m, 1));
	fill(in, sizeof(in), 10);
	fill(lv, sizeof(lv), 11);
	MUST(host_array(in, W * E, H, a, W * E, H, D, true, false));
	MUST(host_array(lv, 80, 15, l1, 80, 15, 1, true, false));
	res.res.array.hArray = a;
	MUST(cuTexObjectCreate(&gone, &res, &tex, NULL));	/* leaves a gap in the values */
	MUST(cuTexObjectCreate(&t, &res, &tex, NULL));
	MUST(cuSurfObjectCreate(&s, &res));
	MUST(cuTexObjectDestroy(gone));
	res.res.array.hArray = l1;
	MUST(cuTexObjectCreate(&t2, &res, &tex, NULL));
	MUST(cuTexRefCreate(&ref));
	MUST(cuTexRefSetArray(ref, a, CU_TRSA_OVERRIDE_FORMAT));
	printf("ready\n");
	fflush(stdout);
	wait_for_file(go, 300);

	ok &= !host_array(out, W * E, H, a, W * E, H, D, false, false) &&
	      !memcmp(in, out, sizeof(in));
	if (!ok)
		printf("FAIL the array's contents\n");
	ok &= !cuMipmappedArrayGetLevel(&l1b, m, 1) && l1b == l1 &&
	      !host_array(lvout, 80, 15, l1, 80, 15, 1, false, false) && !memcmp(lv, lvout, sizeof(lv));
	if (!ok)
		printf("FAIL the mipmapped level's contents\n");
	ok &= !cuTexObjectGetResourceDesc(&rb, t) && rb.res.array.hArray == a &&
	      !cuTexObjectGetTextureDesc(&tb, t) && tb.addressMode[0] == CU_TR_ADDRESS_MODE_MIRROR &&
	      tb.filterMode == CU_TR_FILTER_MODE_LINEAR;
	ok &= !cuTexObjectGetResourceDesc(&rb, t2) && rb.res.array.hArray == l1;
	ok &= !cuSurfObjectGetResourceDesc(&rb, s) && rb.res.array.hArray == a;
	if (!ok)
		printf("FAIL the texture and surface objects\n");
	ok &= !cuTexRefGetArray(&l1b, ref) && l1b == a && !cuTexRefDestroy(ref);
	if (!ok)
		printf("FAIL the texture reference's array\n");
	ok &= !cuTexObjectDestroy(t) && !cuTexObjectDestroy(t2) && !cuSurfObjectDestroy(s) &&
	      !cuMipmappedArrayDestroy(m) && !cuArrayDestroy(a);
	printf("hold: %s\n", ok ? "array state: kept" : "FAIL");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUdevice dev;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2]);
	one_d();
	two_d();
	three_d();
	large();
	mipmapped();
	objects();
	bad();
	return checks_done("array_driver");
}
