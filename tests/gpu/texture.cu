// SPDX-License-Identifier: MIT
/*
 * CUDA arrays read by kernels through texture objects and written through
 * surface objects: a 2D texture fetched with linear filtering at
 * normalized coordinates, a 3D texture, a layered texture, a surface
 * written by one kernel and read back by another and by a copy, and one
 * level of a mipmapped array fetched with tex2DLod. Values and checksums
 * are printed: the output is the same natively and through vgpu.
 */
#include "../e2e/e2e.h"

static double sum(const float *p, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += p[i];
	return s;
}

/* ---- 2D, linear filtering, normalized coordinates ------------------------------- */

__global__ void fetch2d(cudaTextureObject_t t, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x < w && y < h)	/* between texels: the filter blends four */
		out[y * w + x] = tex2D<float>(t, (x + 0.25f) / w, (y + 0.75f) / h);
}

static cudaTextureObject_t tex_on(cudaArray_t a, cudaTextureFilterMode f, int normalized,
				  cudaTextureAddressMode am)
{
	cudaResourceDesc r = {};
	cudaTextureDesc d = {};
	cudaTextureObject_t t;

	r.resType = cudaResourceTypeArray;
	r.res.array.array = a;
	d.addressMode[0] = d.addressMode[1] = d.addressMode[2] = am;
	d.filterMode = f;
	d.readMode = cudaReadModeElementType;
	d.normalizedCoords = normalized;
	CHECK(cudaCreateTextureObject(&t, &r, &d, NULL));
	return t;
}

static void two_d(float *out)
{
	const int w = 64, h = 48;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	float in[64 * 48];
	cudaArray_t a;
	cudaTextureObject_t t;

	for (int i = 0; i < w * h; i++)
		in[i] = (float)((i * 37) % 101) / 7.0f;
	CHECK(cudaMallocArray(&a, &cd, w, h));
	CHECK(cudaMemcpy2DToArray(a, 0, 0, in, w * 4, w * 4, h, cudaMemcpyHostToDevice));
	t = tex_on(a, cudaFilterModeLinear, 1, cudaAddressModeClamp);
	fetch2d<<<dim3(w / 16, h / 16), dim3(16, 16)>>>(t, out, w, h);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(in, out, sizeof(in), cudaMemcpyDeviceToHost));
	printf("2D linear: [0]=%.5f [100]=%.5f [3071]=%.5f sum=%.4f\n", in[0], in[100], in[3071],
	       sum(in, w * h));
	CHECK(cudaDestroyTextureObject(t));
	CHECK(cudaFreeArray(a));
}

/* ---- 3D --------------------------------------------------------------------------- */

__global__ void fetch3d(cudaTextureObject_t t, float *out, int n)
{
	int x = threadIdx.x, y = threadIdx.y, z = blockIdx.x;

	if (x < n && y < n && z < n)
		out[(z * n + y) * n + x] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f) +
					   tex3D<float>(t, x + 0.9f, y + 0.5f, z + 0.1f);
}

static void three_d(float *out)
{
	const int n = 16;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaMemcpy3DParms p = {};
	static float in[16 * 16 * 16];
	cudaArray_t a;
	cudaTextureObject_t t;

	for (int i = 0; i < n * n * n; i++)
		in[i] = (float)(i % 29) - 3.5f;
	CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(n, n, n)));
	p.srcPtr = make_cudaPitchedPtr(in, n * 4, n, n);
	p.dstArray = a;
	p.extent = make_cudaExtent(n, n, n);
	p.kind = cudaMemcpyHostToDevice;
	CHECK(cudaMemcpy3D(&p));
	t = tex_on(a, cudaFilterModeLinear, 0, cudaAddressModeClamp);
	fetch3d<<<n, dim3(n, n)>>>(t, out, n);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(in, out, sizeof(in), cudaMemcpyDeviceToHost));
	printf("3D: [0]=%.5f [1234]=%.5f sum=%.4f\n", in[0], in[1234], sum(in, n * n * n));
	CHECK(cudaDestroyTextureObject(t));
	CHECK(cudaFreeArray(a));
}

/* ---- layered ------------------------------------------------------------------------ */

__global__ void fetch_layers(cudaTextureObject_t t, float *out, int w, int layers)
{
	int x = threadIdx.x, l = blockIdx.x;

	if (x < w && l < layers)
		out[l * w + x] = tex2DLayered<float>(t, x + 0.5f, 3.5f, l);
}

static void layered(float *out)
{
	const int w = 32, h = 8, layers = 4;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaMemcpy3DParms p = {};
	float in[32 * 8 * 4];
	cudaArray_t a;
	cudaTextureObject_t t;

	for (int i = 0; i < w * h * layers; i++)
		in[i] = (float)(i / (w * h) * 1000 + i % (w * h));
	CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(w, h, layers), cudaArrayLayered));
	p.srcPtr = make_cudaPitchedPtr(in, w * 4, w, h);
	p.dstArray = a;
	p.extent = make_cudaExtent(w, h, layers);
	p.kind = cudaMemcpyHostToDevice;
	CHECK(cudaMemcpy3D(&p));
	t = tex_on(a, cudaFilterModePoint, 0, cudaAddressModeClamp);
	fetch_layers<<<layers, w>>>(t, out, w, layers);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(in, out, w * layers * 4, cudaMemcpyDeviceToHost));
	printf("layered: [0]=%.1f [33]=%.1f [127]=%.1f sum=%.1f\n", in[0], in[33], in[127],
	       sum(in, w * layers));
	CHECK(cudaDestroyTextureObject(t));
	CHECK(cudaFreeArray(a));
}

/* ---- surfaces ------------------------------------------------------------------------ */

__global__ void surf_write(cudaSurfaceObject_t s, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x < w && y < h)
		surf2Dwrite(make_float2(x * 0.5f, y * 2.0f + 1.0f), s, x * (int)sizeof(float2), y);
}

__global__ void surf_read(cudaSurfaceObject_t s, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	float2 v;

	if (x < w && y < h) {
		surf2Dread(&v, s, x * (int)sizeof(float2), y);
		out[y * w + x] = v.x * v.y;
	}
}

static void surfaces(float *out)
{
	const int w = 32, h = 32;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float2>();
	cudaResourceDesc r = {};
	static float2 back[32 * 32];
	static float prod[32 * 32];
	cudaSurfaceObject_t s;
	cudaArray_t a;
	bool same = true;

	CHECK(cudaMallocArray(&a, &cd, w, h, cudaArraySurfaceLoadStore));
	r.resType = cudaResourceTypeArray;
	r.res.array.array = a;
	CHECK(cudaCreateSurfaceObject(&s, &r));
	surf_write<<<dim3(w / 16, h / 16), dim3(16, 16)>>>(s, w, h);
	surf_read<<<dim3(w / 16, h / 16), dim3(16, 16)>>>(s, out, w, h);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy2DFromArray(back, w * 8, a, 0, 0, w * 8, h, cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpy(prod, out, sizeof(prod), cudaMemcpyDeviceToHost));
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			same &= back[y * w + x].x == x * 0.5f && back[y * w + x].y == y * 2.0f + 1.0f;
	printf("surface: written %s, read back sum=%.2f\n", same ? "as expected" : "WRONG",
	       sum(prod, w * h));
	CHECK(cudaDestroySurfaceObject(s));
	CHECK(cudaFreeArray(a));
}

/* ---- a mipmapped array's level -------------------------------------------------------- */

__global__ void fetch_lod(cudaTextureObject_t t, float *out, int n)
{
	int x = threadIdx.x, y = blockIdx.x;

	if (x < n && y < n)	/* level 1, between its texels */
		out[y * n + x] = tex2DLod<float>(t, (x + 0.5f) / n, (y + 0.25f) / n, 1.0f);
}

static void mipmapped(float *out)
{
	const int n = 64, l1 = 32;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaMipmappedArray_t m;
	cudaArray_t level;
	cudaResourceDesc r = {};
	cudaTextureDesc d = {};
	cudaTextureObject_t t;
	static float in[32 * 32];

	for (int i = 0; i < l1 * l1; i++)
		in[i] = (float)(i % 17) * 0.25f;
	CHECK(cudaMallocMipmappedArray(&m, &cd, make_cudaExtent(n, n, 0), 3));
	CHECK(cudaGetMipmappedArrayLevel(&level, m, 1));
	CHECK(cudaMemcpy2DToArray(level, 0, 0, in, l1 * 4, l1 * 4, l1, cudaMemcpyHostToDevice));
	r.resType = cudaResourceTypeMipmappedArray;
	r.res.mipmap.mipmap = m;
	d.addressMode[0] = d.addressMode[1] = cudaAddressModeClamp;
	d.filterMode = cudaFilterModeLinear;
	d.mipmapFilterMode = cudaFilterModePoint;
	d.maxMipmapLevelClamp = 2.0f;
	d.readMode = cudaReadModeElementType;
	d.normalizedCoords = 1;
	CHECK(cudaCreateTextureObject(&t, &r, &d, NULL));
	fetch_lod<<<l1, l1>>>(t, out, l1);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(in, out, sizeof(in), cudaMemcpyDeviceToHost));
	printf("mipmap level 1: [0]=%.5f [500]=%.5f sum=%.4f\n", in[0], in[500], sum(in, l1 * l1));
	CHECK(cudaDestroyTextureObject(t));
	CHECK(cudaFreeMipmappedArray(m));
}

int main(void)
{
	float *out;

	CHECK(cudaMalloc(&out, 1 << 20));
	two_d(out);
	three_d(out);
	layered(out);
	surfaces(out);
	mipmapped(out);
	CHECK(cudaFree(out));
	printf("texture: done\n");
	return 0;
}
