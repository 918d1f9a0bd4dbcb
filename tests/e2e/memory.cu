// SPDX-License-Identifier: MIT
/*
 * Memory and copies: cudaMalloc/cudaFree, cudaMemcpy of every kind
 * (H2D, D2H, D2D, H2H, Default) and size (1 B .. 100 MiB), pageable and
 * pinned host memory (cudaMallocHost, cudaHostAlloc mapped), cudaMemcpyAsync,
 * cudaMemset(Async), cudaMemcpy2D(Async), cudaMemGetInfo.
 *
 *   memory          the test (exit 0 pass, 1 fail)
 *   memory --big    5 GiB each way in single calls, with a checksum (needs
 *                   about 5 GiB of device and 5 GiB of host memory; the host
 *                   backend: VGPU_HOST_DEVICE_MEM=8589934592)
 */
#include <unistd.h>

#include "e2e.h"
#include "kernels.cuh"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void check_bytes(const void *got, size_t n, uint64_t seed, const char *what, size_t size)
{
	long long bad = e2e_pattern_check(got, n, seed);

	EXPECT(bad < 0, "%s, %zu bytes: first wrong byte at %lld", what, size, bad);
}

/* Every kind of cudaMemcpy at one size, between host buffers of one sort. */
static void copies(size_t size, bool pinned)
{
	const char *sort = pinned ? "pinned" : "pageable";
	unsigned char *src, *dst;
	void *d1, *d2;
	uint64_t seed = size * 31 + pinned;
	char what[96];

	if (pinned) {
		CHECK(cudaMallocHost((void **)&src, size));
		CHECK(cudaHostAlloc((void **)&dst, size, cudaHostAllocDefault));
	} else {
		src = (unsigned char *)malloc(size);
		dst = (unsigned char *)malloc(size);
		if (!src || !dst) {
			fprintf(stderr, "out of host memory\n");
			exit(1);
		}
	}
	CHECK(cudaMalloc(&d1, size));
	CHECK(cudaMalloc(&d2, size));

	/* H2D, D2D, D2H */
	e2e_pattern(src, size, seed);
	memset(dst, 0, size);
	EXPECT_OK(cudaMemcpy(d1, src, size, cudaMemcpyHostToDevice));
	EXPECT_OK(cudaMemcpy(d2, d1, size, cudaMemcpyDeviceToDevice));
	EXPECT_OK(cudaMemcpy(dst, d2, size, cudaMemcpyDeviceToHost));
	snprintf(what, sizeof(what), "H2D+D2D+D2H %s", sort);
	check_bytes(dst, size, seed, what, size);

	/* H2H */
	memset(dst, 0, size);
	EXPECT_OK(cudaMemcpy(dst, src, size, cudaMemcpyHostToHost));
	snprintf(what, sizeof(what), "H2H %s", sort);
	check_bytes(dst, size, seed, what, size);

	/* Default, every direction: the pointers say which. */
	e2e_pattern(src, size, seed + 1);
	memset(dst, 0, size);
	EXPECT_OK(cudaMemcpy(d2, src, size, cudaMemcpyDefault));
	EXPECT_OK(cudaMemcpy(d1, d2, size, cudaMemcpyDefault));
	EXPECT_OK(cudaMemcpy(dst, d1, size, cudaMemcpyDefault));
	snprintf(what, sizeof(what), "Default H2D+D2D+D2H %s", sort);
	check_bytes(dst, size, seed + 1, what, size);
	memset(dst, 0, size);
	EXPECT_OK(cudaMemcpy(dst, src, size, cudaMemcpyDefault));
	snprintf(what, sizeof(what), "Default H2H %s", sort);
	check_bytes(dst, size, seed + 1, what, size);

	/* Unaligned offsets on both sides. */
	if (size > 16) {
		size_t n = size - 12;

		e2e_pattern(src + 7, n, seed + 2);
		memset(dst, 0xEE, size);
		EXPECT_OK(cudaMemcpy((char *)d1 + 5, src + 7, n, cudaMemcpyHostToDevice));
		EXPECT_OK(cudaMemcpy((char *)d2 + 3, (char *)d1 + 5, n, cudaMemcpyDeviceToDevice));
		EXPECT_OK(cudaMemcpy(dst + 1, (char *)d2 + 3, n, cudaMemcpyDeviceToHost));
		snprintf(what, sizeof(what), "unaligned %s", sort);
		check_bytes(dst + 1, n, seed + 2, what, size);
		EXPECT(dst[0] == 0xEE && dst[n + 1] == 0xEE, "bytes around an unaligned copy changed");
	}

	EXPECT_OK(cudaFree(d1));
	EXPECT_OK(cudaFree(d2));
	if (pinned) {
		EXPECT_OK(cudaFreeHost(src));
		EXPECT_OK(cudaFreeHost(dst));
	} else {
		free(src);
		free(dst);
	}
}

/*
 * Free memory is device-wide: another program on the GPU (clients8 runs
 * eight at once) may allocate or free between two reads. A round that sees
 * our 256 MiB come and go is the proof; forty tries in a second before
 * calling it wrong.
 */
static bool mem_info_round(char *why, size_t len)
{
	size_t free0, total0, free1, total1, free2, total2;
	void *p;

	CHECK(cudaMemGetInfo(&free0, &total0));
	CHECK(cudaMalloc(&p, 256 * MiB));
	CHECK(cudaMemGetInfo(&free1, &total1));
	CHECK(cudaFree(p));
	CHECK(cudaMemGetInfo(&free2, &total2));
	if (!(total0 > 0 && free0 <= total0))
		snprintf(why, len, "free %zu, total %zu", free0, total0);
	else if (total1 != total0 || total2 != total0)
		snprintf(why, len, "total changed: %zu, %zu, %zu", total0, total1, total2);
	else if (free1 + 256 * MiB > free0)
		snprintf(why, len, "256 MiB allocated: free %zu then %zu", free0, free1);
	else if (free2 + 64 * MiB < free0)
		snprintf(why, len, "freed 256 MiB: free %zu at first, %zu now", free0, free2);
	else
		return true;
	return false;
}

static void mem_info(void)
{
	char why[160] = "";
	bool ok = false;

	/* Programs beside this one (the GPU suite's clients8) allocate too:
	 * a round without them comes within a second. */
	for (int i = 0; i < 40 && !ok; i++) {
		if (i)
			usleep(25000);
		ok = mem_info_round(why, sizeof(why));
	}
	EXPECT(ok, "%s (40 tries in 1 s)", why);
	e2e_section("meminfo");
}

static void alloc_free(void)
{
	void *p[64];
	size_t sizes[] = { 1, 3, 256, 4096, 65537, 2 * MiB, 2 * MiB + 1, 33 * MiB };

	for (unsigned i = 0; i < 64; i++) {
		CHECK(cudaMalloc(&p[i], sizes[i % 8]));
		EXPECT(p[i] != NULL && (uintptr_t)p[i] % 256 == 0, "cudaMalloc gave %p", p[i]);
		for (unsigned j = 0; j < i; j++)
			EXPECT(p[j] != p[i], "two allocations at %p", p[i]);
	}
	/* Each allocation is its own: write a byte at both ends of each. */
	for (unsigned i = 0; i < 64; i++) {
		unsigned char v[2] = { (unsigned char)i, (unsigned char)(i ^ 0x5a) };
		size_t sz = sizes[i % 8];

		CHECK(cudaMemcpy(p[i], &v[0], 1, cudaMemcpyHostToDevice));
		CHECK(cudaMemcpy((char *)p[i] + sz - 1, &v[1], 1, cudaMemcpyHostToDevice));
	}
	for (unsigned i = 0; i < 64; i++) {
		unsigned char v[2] = { 0, 0 };
		size_t sz = sizes[i % 8];

		CHECK(cudaMemcpy(&v[1], (char *)p[i] + sz - 1, 1, cudaMemcpyDeviceToHost));
		CHECK(cudaMemcpy(&v[0], p[i], 1, cudaMemcpyDeviceToHost));
		EXPECT(v[1] == (unsigned char)(i ^ 0x5a) && (sz == 1 || v[0] == (unsigned char)i),
		       "allocation %u: got %02x %02x", i, v[0], v[1]);
	}
	for (unsigned i = 0; i < 64; i += 2)
		EXPECT_OK(cudaFree(p[i]));
	for (unsigned i = 1; i < 64; i += 2)
		EXPECT_OK(cudaFree(p[i]));
	EXPECT_OK(cudaFree(NULL));
	/* Allocate and free many times: nothing may leak. */
	for (unsigned i = 0; i < 200; i++) {
		void *q;

		CHECK(cudaMalloc(&q, 8 * MiB));
		CHECK(cudaFree(q));
	}
	e2e_section("malloc/free");
}

static void all_sizes(void)
{
	static const size_t sizes[] = { 1, 4096, 65536 + 1, 8 * MiB + 3, 100 * MiB };

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		copies(sizes[i], false);
		copies(sizes[i], true);
	}
	e2e_section("memcpy kinds and sizes");
}

/* cudaHostAlloc(Mapped): a kernel writes host memory. */
static void mapped(void)
{
	const unsigned long long n = 1 << 16;
	unsigned *h, *d = NULL;
	unsigned bad = 0;
	int can_map = 0;

	CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
	EXPECT(can_map, "device cannot map host memory");
	CHECK(cudaHostAlloc((void **)&h, n * 4, cudaHostAllocMapped));
	memset(h, 0, n * 4);
	EXPECT_OK(cudaHostGetDevicePointer((void **)&d, h, 0));
	if (d) {
		vgpu_fill_u32<<<64, 256>>>(d, 0xC0FFEEu, n);
		EXPECT_OK(cudaGetLastError());
		EXPECT_OK(cudaDeviceSynchronize());
		for (unsigned long long i = 0; i < n; i++)
			bad += h[i] != 0xC0FFEEu;
		EXPECT(bad == 0, "mapped memory through its device pointer: %u wrong words", bad);
	}
	/* Unified addressing: the host pointer works in a kernel as it is. */
	vgpu_iota_u32<<<64, 256>>>(h, 1000, n);
	EXPECT_OK(cudaGetLastError());
	EXPECT_OK(cudaDeviceSynchronize());
	bad = 0;
	for (unsigned long long i = 0; i < n; i++)
		bad += h[i] != 1000 + i;
	EXPECT(bad == 0, "mapped memory through its host pointer: %u wrong words", bad);
	/* Copies from and to it. */
	{
		unsigned *dev, *back = (unsigned *)malloc(n * 4);

		CHECK(cudaMalloc(&dev, n * 4));
		EXPECT_OK(cudaMemcpy(dev, h, n * 4, cudaMemcpyHostToDevice));
		EXPECT_OK(cudaMemcpy(back, dev, n * 4, cudaMemcpyDeviceToHost));
		EXPECT(!memcmp(back, h, n * 4), "copy of mapped memory differs");
		CHECK(cudaFree(dev));
		free(back);
	}
	EXPECT_OK(cudaFreeHost(h));
	e2e_section("mapped pinned memory");
}

static void async_copies(void)
{
	const size_t size = 16 * MiB + 5;
	unsigned char *hp, *hq, *pg, *pq;
	void *d;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMallocHost((void **)&hp, size));
	CHECK(cudaMallocHost((void **)&hq, size));
	pg = (unsigned char *)malloc(size);
	pq = (unsigned char *)malloc(size);
	CHECK(cudaMalloc(&d, 2 * size));

	e2e_pattern(hp, size, 77);
	memset(hq, 0, size);
	EXPECT_OK(cudaMemcpyAsync(d, hp, size, cudaMemcpyHostToDevice, s));
	EXPECT_OK(cudaMemcpyAsync((char *)d + size, d, size, cudaMemcpyDeviceToDevice, s));
	EXPECT_OK(cudaMemcpyAsync(hq, (char *)d + size, size, cudaMemcpyDeviceToHost, s));
	EXPECT_OK(cudaStreamSynchronize(s));
	check_bytes(hq, size, 77, "cudaMemcpyAsync pinned", size);

	/* Pageable memory with the async call: legal, staged. */
	e2e_pattern(pg, size, 78);
	memset(pq, 0, size);
	EXPECT_OK(cudaMemcpyAsync(d, pg, size, cudaMemcpyHostToDevice, s));
	EXPECT_OK(cudaMemcpyAsync(pq, d, size, cudaMemcpyDeviceToHost, s));
	EXPECT_OK(cudaStreamSynchronize(s));
	check_bytes(pq, size, 78, "cudaMemcpyAsync pageable", size);

	/* Many small async copies in order on one stream: the last write wins. */
	for (unsigned i = 0; i < 256; i++) {
		hp[i] = (unsigned char)i;
		EXPECT_OK(cudaMemcpyAsync(d, &hp[i], 1, cudaMemcpyHostToDevice, s));
	}
	hq[0] = 0;
	EXPECT_OK(cudaMemcpyAsync(hq, d, 1, cudaMemcpyDeviceToHost, s));
	EXPECT_OK(cudaStreamSynchronize(s));
	EXPECT(hq[0] == 255, "in-order async copies: got %u", hq[0]);

	/* The legacy default stream. */
	e2e_pattern(hp, 4096, 79);
	EXPECT_OK(cudaMemcpyAsync(d, hp, 4096, cudaMemcpyHostToDevice, 0));
	EXPECT_OK(cudaMemcpyAsync(hq, d, 4096, cudaMemcpyDeviceToHost, 0));
	EXPECT_OK(cudaStreamSynchronize(0));
	check_bytes(hq, 4096, 79, "cudaMemcpyAsync default stream", 4096);

	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(hp));
	CHECK(cudaFreeHost(hq));
	free(pg);
	free(pq);
	CHECK(cudaStreamDestroy(s));
	e2e_section("cudaMemcpyAsync");
}

static void memsets(void)
{
	const size_t size = MiB + 7;
	unsigned char *h = (unsigned char *)malloc(size), *d;
	cudaStream_t s;
	size_t bad = 0;

	CHECK(cudaMalloc(&d, size));
	CHECK(cudaStreamCreate(&s));
	EXPECT_OK(cudaMemset(d, 0xAB, size));
	EXPECT_OK(cudaMemset(d + 3, 0x11, 1000));
	EXPECT_OK(cudaMemset(d + size - 1, 0x22, 1));
	EXPECT_OK(cudaMemcpy(h, d, size, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < size; i++) {
		unsigned char want = i >= 3 && i < 1003 ? 0x11 : i == size - 1 ? 0x22 : 0xAB;

		bad += h[i] != want;
	}
	EXPECT(bad == 0, "cudaMemset: %zu wrong bytes", bad);

	EXPECT_OK(cudaMemsetAsync(d, 0x5C, size, s));
	EXPECT_OK(cudaMemsetAsync(d + 4096, 0, 4096, s));
	EXPECT_OK(cudaMemcpyAsync(h, d, size, cudaMemcpyDeviceToHost, s));
	EXPECT_OK(cudaStreamSynchronize(s));
	bad = 0;
	for (size_t i = 0; i < size; i++)
		bad += h[i] != (i >= 4096 && i < 8192 ? 0 : 0x5C);
	EXPECT(bad == 0, "cudaMemsetAsync: %zu wrong bytes", bad);
	EXPECT_OK(cudaMemset(d, 0, 0));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
	free(h);
	e2e_section("cudaMemset");
}

static void copies_2d(void)
{
	const size_t w = 1000, h = 37, hpitch = 1024, spitch = 1100;
	unsigned char *src = (unsigned char *)malloc(spitch * h);
	unsigned char *dst = (unsigned char *)malloc(hpitch * h);
	unsigned char *d, *d2;
	size_t pitch, pitch2, bad = 0;
	cudaStream_t s;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMallocPitch((void **)&d, &pitch, w, h));
	EXPECT(pitch >= w, "pitch %zu < width %zu", pitch, w);
	CHECK(cudaMallocPitch((void **)&d2, &pitch2, w, h));
	e2e_pattern(src, spitch * h, 2024);
	memset(dst, 0xEE, hpitch * h);
	EXPECT_OK(cudaMemcpy2D(d, pitch, src, spitch, w, h, cudaMemcpyHostToDevice));
	EXPECT_OK(cudaMemcpy2D(d2, pitch2, d, pitch, w, h, cudaMemcpyDeviceToDevice));
	EXPECT_OK(cudaMemcpy2D(dst, hpitch, d2, pitch2, w, h, cudaMemcpyDeviceToHost));
	for (size_t r = 0; r < h; r++) {
		bad += memcmp(dst + r * hpitch, src + r * spitch, w) != 0;
		for (size_t c = w; c < hpitch; c++)
			bad += dst[r * hpitch + c] != 0xEE;
	}
	EXPECT(bad == 0, "cudaMemcpy2D: %zu wrong rows or padding bytes", bad);

	/* A sub-rectangle: rows 5..14, columns 100..399, async. */
	memset(dst, 0, hpitch * h);
	EXPECT_OK(cudaMemcpy2DAsync(dst, hpitch, d + 5 * pitch + 100, pitch, 300, 10,
				    cudaMemcpyDeviceToHost, s));
	EXPECT_OK(cudaStreamSynchronize(s));
	bad = 0;
	for (size_t r = 0; r < 10; r++)
		bad += memcmp(dst + r * hpitch, src + (r + 5) * spitch + 100, 300) != 0;
	EXPECT(bad == 0, "cudaMemcpy2DAsync sub-rectangle: %zu wrong rows", bad);

	/* Host to host, 2D. */
	memset(dst, 0, hpitch * h);
	EXPECT_OK(cudaMemcpy2D(dst, hpitch, src, spitch, w, h, cudaMemcpyHostToHost));
	bad = 0;
	for (size_t r = 0; r < h; r++)
		bad += memcmp(dst + r * hpitch, src + r * spitch, w) != 0;
	EXPECT(bad == 0, "cudaMemcpy2D H2H: %zu wrong rows", bad);

	CHECK(cudaFree(d));
	CHECK(cudaFree(d2));
	CHECK(cudaStreamDestroy(s));
	free(src);
	free(dst);
	e2e_section("cudaMemcpy2D");
}

/* 5 GiB each way, each in one call: a copy larger than 4 GiB. */
static int big(void)
{
	const size_t size = 5 * GiB;
	const unsigned long long n = size / 4;
	unsigned *h = (unsigned *)malloc(size), *d;
	unsigned long long want = 0, *dsum, got = 0;
	size_t free_b, total_b, bad = 0;
	double t;

	if (!h) {
		printf("memory --big: no 5 GiB of host memory: skipped\n");
		return E2E_SKIP;
	}
	CHECK(cudaMemGetInfo(&free_b, &total_b));
	if (free_b < size + 64 * MiB) {
		printf("memory --big: %zu bytes of device memory free: skipped\n", free_b);
		return E2E_SKIP;
	}
	for (unsigned long long i = 0; i < n; i++) {
		h[i] = (unsigned)e2e_mix(i);
		want += h[i];
	}
	CHECK(cudaMalloc(&d, size));
	CHECK(cudaMalloc(&dsum, sizeof(*dsum)));
	CHECK(cudaMemset(dsum, 0, sizeof(*dsum)));
	t = e2e_now_ms();
	EXPECT_OK(cudaMemcpy(d, h, size, cudaMemcpyHostToDevice));
	fprintf(stderr, "H2D 5 GiB: %.0f ms\n", e2e_now_ms() - t);
	vgpu_checksum_u32<<<1024, 256>>>(d, n, dsum);
	EXPECT_OK(cudaGetLastError());
	EXPECT_OK(cudaMemcpy(&got, dsum, sizeof(got), cudaMemcpyDeviceToHost));
	EXPECT(got == want, "checksum on the device %llx, on the host %llx", got, want);
	memset(h, 0, size);
	t = e2e_now_ms();
	EXPECT_OK(cudaMemcpy(h, d, size, cudaMemcpyDeviceToHost));
	fprintf(stderr, "D2H 5 GiB: %.0f ms\n", e2e_now_ms() - t);
	for (unsigned long long i = 0; i < n; i++)
		bad += h[i] != (unsigned)e2e_mix(i);
	EXPECT(bad == 0, "5 GiB back: %zu wrong words", bad);
	CHECK(cudaFree(d));
	CHECK(cudaFree(dsum));
	free(h);
	e2e_section("5 GiB each way");
	return e2e_finish("memory --big");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--big"))
		return big();
	if (argc > 1) {
		fprintf(stderr, "usage: %s [--big]\n", argv[0]);
		return 2;
	}
	CHECK(cudaSetDevice(0));
	mem_info();
	alloc_free();
	all_sizes();
	mapped();
	async_copies();
	memsets();
	copies_2d();
	return e2e_finish("memory");
}
