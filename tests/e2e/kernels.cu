// SPDX-License-Identifier: MIT
/*
 * Every kernel of kernels.cuh, checked against values computed on the host,
 * with <<<>>> and cudaLaunchKernel; a 4 KiB by-value parameter; __device__
 * and __constant__ globals through cudaMemcpyToSymbol/FromSymbol and
 * cudaGetSymbolAddress; cudaFuncGetAttributes. Built twice: with the default
 * static CUDA runtime (kernels) and with -cudart shared (kernels_shared).
 */
#include <math.h>

#include "e2e.h"
#include "kernels.cuh"

__device__ unsigned g_table[1024];
__device__ unsigned g_init[4] = { 1, 2, 3, 4 };
__device__ unsigned long long g_counter;
__constant__ unsigned c_coef[16] = { 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25 };

static void vecadd(void)
{
	const int n = 1000003;
	float *a = (float *)malloc(n * 4), *b = (float *)malloc(n * 4), *c = (float *)malloc(n * 4);
	float *da, *db, *dc;
	int bad = 0;

	for (int i = 0; i < n; i++) {
		a[i] = i * 0.5f;
		b[i] = (n - i) * 0.25f;
	}
	CHECK(cudaMalloc(&da, n * 4));
	CHECK(cudaMalloc(&db, n * 4));
	CHECK(cudaMalloc(&dc, n * 4));
	CHECK(cudaMemcpy(da, a, n * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, b, n * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemset(dc, 0, n * 4));
	vgpu_vecadd_f32<<<(n + 255) / 256, 256>>>(da, db, dc, n);
	EXPECT_OK(cudaGetLastError());
	CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		bad += c[i] != a[i] + b[i];
	EXPECT(bad == 0, "vecadd: %d wrong elements", bad);

	/* Fewer threads than elements: the grid-stride loop covers the rest. */
	CHECK(cudaMemset(dc, 0, n * 4));
	vgpu_vecadd_f32<<<7, 96>>>(db, da, dc, n);
	EXPECT_OK(cudaGetLastError());
	CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += c[i] != b[i] + a[i];
	EXPECT(bad == 0, "vecadd, small grid: %d wrong elements", bad);

	/* cudaLaunchKernel with an argument array. */
	{
		int m = n / 2;
		void *args[] = { &da, &db, &dc, &m };

		CHECK(cudaMemset(dc, 0, n * 4));
		EXPECT_OK(cudaLaunchKernel((const void *)vgpu_vecadd_f32, dim3(64), dim3(128), args, 0, 0));
		CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
		bad = 0;
		for (int i = 0; i < n; i++)
			bad += c[i] != (i < m ? a[i] + b[i] : 0.0f);
		EXPECT(bad == 0, "cudaLaunchKernel vecadd: %d wrong elements", bad);
	}
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	free(a);
	free(b);
	free(c);
	e2e_section("vecadd");
}

static void saxpy(void)
{
	const int n = 1 << 20;
	const float alpha = 2.5f;
	float *x = (float *)malloc(n * 4), *y = (float *)malloc(n * 4), *r = (float *)malloc(n * 4);
	float *dx, *dy;
	int bad = 0;

	for (int i = 0; i < n; i++) {
		x[i] = sinf((float)i) * 100.0f;
		y[i] = (float)(i % 1000) / 7.0f;
	}
	CHECK(cudaMalloc(&dx, n * 4));
	CHECK(cudaMalloc(&dy, n * 4));
	CHECK(cudaMemcpy(dx, x, n * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dy, y, n * 4, cudaMemcpyHostToDevice));
	vgpu_saxpy_f32<<<512, 256>>>(alpha, dx, dy, n);
	EXPECT_OK(cudaGetLastError());
	vgpu_saxpy_f32<<<512, 256>>>(-1.0f, dx, dy, n);
	EXPECT_OK(cudaGetLastError());
	CHECK(cudaMemcpy(r, dy, n * 4, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		float want = fmaf(-1.0f, x[i], fmaf(alpha, x[i], y[i]));

		bad += memcmp(&r[i], &want, 4) != 0;
	}
	EXPECT(bad == 0, "saxpy: %d elements differ from fmaf on the host", bad);
	CHECK(cudaFree(dx));
	CHECK(cudaFree(dy));
	free(x);
	free(y);
	free(r);
	e2e_section("saxpy");
}

static void iota_checksum(void)
{
	const unsigned long long n = 10000019;
	const unsigned base = 0xFFFFFF00u;	/* wraps around 2^32 */
	unsigned *d, *h = (unsigned *)malloc(n * 4);
	unsigned long long *dsum, sum = 0, want = 0;
	unsigned long long bad = 0;

	CHECK(cudaMalloc(&d, n * 4));
	CHECK(cudaMalloc(&dsum, 8));
	CHECK(cudaMemset(dsum, 0, 8));
	vgpu_iota_u32<<<1024, 256>>>(d, base, n);
	EXPECT_OK(cudaGetLastError());
	vgpu_checksum_u32<<<1024, 256>>>(d, n, dsum);
	EXPECT_OK(cudaGetLastError());
	CHECK(cudaMemcpy(&sum, dsum, 8, cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
	for (unsigned long long i = 0; i < n; i++) {
		unsigned v = base + (unsigned)i;

		want += v;
		bad += h[i] != v;
	}
	EXPECT(bad == 0, "iota: %llu wrong elements", bad);
	EXPECT(sum == want, "checksum: device %llu, host %llu", sum, want);
	printf("checksum of iota(%u, %llu) = %llu\n", base, n, sum);

	/* The checksum adds to what is there. */
	vgpu_checksum_u32<<<3, 32>>>(d, 1000, dsum);
	CHECK(cudaMemcpy(&sum, dsum, 8, cudaMemcpyDeviceToHost));
	for (unsigned i = 0; i < 1000; i++)
		want += base + i;
	EXPECT(sum == want, "second checksum: device %llu, host %llu", sum, want);
	CHECK(cudaFree(d));
	CHECK(cudaFree(dsum));
	free(h);
	e2e_section("iota+checksum");
}

static void fill(void)
{
	const unsigned long long n = 3 * 1000 * 1000 + 1;
	unsigned *d, *h = (unsigned *)malloc((n + 16) * 4);
	unsigned long long bad = 0;

	CHECK(cudaMalloc(&d, (n + 16) * 4));
	CHECK(cudaMemset(d, 0xFF, (n + 16) * 4));
	vgpu_fill_u32<<<100, 128>>>(d + 8, 0x12345678u, n);
	EXPECT_OK(cudaGetLastError());
	CHECK(cudaMemcpy(h, d, (n + 16) * 4, cudaMemcpyDeviceToHost));
	for (unsigned long long i = 0; i < n + 16; i++)
		bad += h[i] != (i >= 8 && i < n + 8 ? 0x12345678u : 0xFFFFFFFFu);
	EXPECT(bad == 0, "fill: %llu wrong elements (with the guards)", bad);
	vgpu_fill_u32<<<1, 1>>>(d, 7, 0);	/* nothing */
	EXPECT_OK(cudaGetLastError());
	CHECK(cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost));
	EXPECT(h[0] == 0xFFFFFFFFu, "fill of 0 elements wrote %08x", h[0]);
	CHECK(cudaFree(d));
	free(h);
	e2e_section("fill");
}

static void big_param(void)
{
	static struct vgpu_big s;
	unsigned *d, h[1024];
	int bad = 0;

	for (unsigned i = 0; i < 1024; i++)
		s.v[i] = i * 7 + 3;
	CHECK(cudaMalloc(&d, sizeof(h)));
	CHECK(cudaMemset(d, 0, sizeof(h)));
	vgpu_big_param<<<4, 256>>>(s, d);
	EXPECT_OK(cudaGetLastError());
	CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	for (unsigned i = 0; i < 1024; i++)
		bad += h[i] != i * 7 + 3;
	EXPECT(bad == 0, "4 KiB parameter: %d wrong words", bad);

	/* Parameters are copied at launch: change s, launch again at once. */
	for (unsigned i = 0; i < 1024; i++)
		s.v[i] = ~i;
	vgpu_big_param<<<1, 1024>>>(s, d);
	for (unsigned i = 0; i < 1024; i++)
		s.v[i] = 0;
	CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	bad = 0;
	for (unsigned i = 0; i < 1024; i++)
		bad += h[i] != ~i;
	EXPECT(bad == 0, "4 KiB parameter, second launch: %d wrong words", bad);
	CHECK(cudaFree(d));
	e2e_section("4 KiB by-value parameter");
}

static void symbols(void)
{
	unsigned h[1024], back[1024], init[4] = { 0, 0, 0, 0 }, coef[16];
	unsigned long long cnt = 0x0123456789abcdefull, cnt_back = 0;
	unsigned *p = NULL;
	size_t size = 0;
	int bad = 0;

	/* Initialised globals come with the module. */
	EXPECT_OK(cudaMemcpyFromSymbol(init, g_init, sizeof(init)));
	EXPECT(init[0] == 1 && init[1] == 2 && init[2] == 3 && init[3] == 4,
	       "g_init = {%u, %u, %u, %u}", init[0], init[1], init[2], init[3]);
	EXPECT_OK(cudaMemcpyFromSymbol(coef, c_coef, sizeof(coef)));
	for (unsigned i = 0; i < 16; i++)
		bad += coef[i] != 10 + i;
	EXPECT(bad == 0, "__constant__ c_coef: %d wrong", bad);

	for (unsigned i = 0; i < 1024; i++)
		h[i] = i * i;
	EXPECT_OK(cudaMemcpyToSymbol(g_table, h, sizeof(h)));
	EXPECT_OK(cudaMemcpyFromSymbol(back, g_table, sizeof(back)));
	EXPECT(!memcmp(h, back, sizeof(h)), "g_table read back differs");

	/* With offsets. */
	EXPECT_OK(cudaMemcpyToSymbol(g_table, h, 64, 16 * sizeof(unsigned)));	/* [16..31] = h[0..15] */
	EXPECT_OK(cudaMemcpyFromSymbol(back, g_table, 32 * sizeof(unsigned), 8 * sizeof(unsigned)));
	bad = 0;
	for (unsigned i = 0; i < 32; i++) {
		unsigned idx = i + 8;

		bad += back[i] != (idx >= 16 && idx < 32 ? h[idx - 16] : h[idx]);
	}
	EXPECT(bad == 0, "g_table with offsets: %d wrong", bad);
	EXPECT_OK(cudaMemcpyToSymbol(g_counter, &cnt, 8));
	EXPECT_OK(cudaMemcpyFromSymbol(&cnt_back, g_counter, 8));
	EXPECT(cnt == cnt_back, "g_counter %llx", cnt_back);

	/* __constant__ is writable from the host. */
	for (unsigned i = 0; i < 16; i++)
		coef[i] = 100 + i;
	EXPECT_OK(cudaMemcpyToSymbol(c_coef, coef, sizeof(coef)));
	memset(coef, 0, sizeof(coef));
	EXPECT_OK(cudaMemcpyFromSymbol(coef, c_coef, sizeof(coef)));
	bad = 0;
	for (unsigned i = 0; i < 16; i++)
		bad += coef[i] != 100 + i;
	EXPECT(bad == 0, "__constant__ after cudaMemcpyToSymbol: %d wrong", bad);

	/* The symbol's address works like any device pointer. */
	EXPECT_OK(cudaGetSymbolSize(&size, g_table));
	EXPECT(size == sizeof(h), "cudaGetSymbolSize(g_table) = %zu", size);
	EXPECT_OK(cudaGetSymbolAddress((void **)&p, g_table));
	if (p) {
		vgpu_fill_u32<<<4, 64>>>(p, 0x5a5a5a5au, 512);
		EXPECT_OK(cudaGetLastError());
		EXPECT_OK(cudaMemcpyFromSymbol(back, g_table, sizeof(back)));
		bad = 0;
		for (unsigned i = 0; i < 1024; i++)
			bad += back[i] != (i < 512 ? 0x5a5a5a5au : h[i]);
		EXPECT(bad == 0, "g_table after a kernel filled half: %d wrong", bad);
		memset(back, 0, sizeof(back));
		EXPECT_OK(cudaMemcpy(back, p + 512, 512 * 4, cudaMemcpyDeviceToHost));
		EXPECT(!memcmp(back, h + 512, 512 * 4), "cudaMemcpy from a symbol's address differs");
	}
	/* Async symbol copies on a stream. */
	{
		cudaStream_t s;

		CHECK(cudaStreamCreate(&s));
		EXPECT_OK(cudaMemcpyToSymbolAsync(g_table, h, sizeof(h), 0, cudaMemcpyHostToDevice, s));
		EXPECT_OK(cudaMemcpyFromSymbolAsync(back, g_table, sizeof(back), 0,
						    cudaMemcpyDeviceToHost, s));
		EXPECT_OK(cudaStreamSynchronize(s));
		EXPECT(!memcmp(h, back, sizeof(h)), "async symbol copies differ");
		CHECK(cudaStreamDestroy(s));
	}
	e2e_section("__device__ and __constant__ symbols");
}

static void attributes(void)
{
	struct cudaFuncAttributes fa;
	int nb = 0;

	memset(&fa, 0, sizeof(fa));
	EXPECT_OK(cudaFuncGetAttributes(&fa, (const void *)vgpu_big_param));
	EXPECT(fa.maxThreadsPerBlock > 0 && fa.maxThreadsPerBlock <= 1024,
	       "maxThreadsPerBlock %d", fa.maxThreadsPerBlock);
	EXPECT_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, vgpu_vecadd_f32, 256, 0));
	EXPECT(nb > 0, "occupancy of vecadd with 256 threads: %d blocks", nb);
	e2e_section("function attributes");
}

int main(void)
{
	int n = 0;

	CHECK(cudaGetDeviceCount(&n));
	EXPECT(n >= 1, "%d devices", n);
	vecadd();
	saxpy();
	iota_checksum();
	fill();
	big_param();
	symbols();
	attributes();
	CHECK(cudaDeviceSynchronize());
	return e2e_finish("kernels");
}
