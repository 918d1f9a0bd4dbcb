// SPDX-License-Identifier: MIT
/*
 * Copies: pinned 4 KiB (median latency, us), pinned 64 MiB and 1 GiB
 * (GB/s), pageable 64 MiB and 1 GiB (GB/s), each direction.
 *
 *   copy [pinned|pageable|small]...   (default: all)
 */
#include <cuda_runtime.h>
#include <string.h>

#include "bench.h"

#define CK(call)                                                                 \
	do {                                                                     \
		cudaError_t e_ = (call);                                         \
		if (e_ != cudaSuccess) {                                         \
			fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorName(e_));                           \
			exit(1);                                                 \
		}                                                                \
	} while (0)

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static double lat[10000];

static void small(void *host, void *dev)
{
	for (int dir = 0; dir < 2; dir++) {
		for (int i = 0; i < 1000; i++)
			CK(dir ? cudaMemcpy(host, dev, 4096, cudaMemcpyDeviceToHost)
			       : cudaMemcpy(dev, host, 4096, cudaMemcpyHostToDevice));
		for (int i = 0; i < 10000; i++) {
			double t0 = bench_now_us();

			CK(dir ? cudaMemcpy(host, dev, 4096, cudaMemcpyDeviceToHost)
			       : cudaMemcpy(dev, host, 4096, cudaMemcpyHostToDevice));
			lat[i] = bench_now_us() - t0;
		}
		bench_report(dir ? "pinned_4k_d2h_us" : "pinned_4k_h2d_us", bench_median(lat, 10000), "us");
	}
}

/* GB/s of the best of `reps` copies of `size` bytes (after one warm-up). */
static void big(const char *sort, void *host, void *dev, size_t size, int reps)
{
	char name[64];

	for (int dir = 0; dir < 2; dir++) {
		double best = 1e30;

		for (int i = 0; i <= reps; i++) {
			double t0 = bench_now_us(), us;

			CK(dir ? cudaMemcpy(host, dev, size, cudaMemcpyDeviceToHost)
			       : cudaMemcpy(dev, host, size, cudaMemcpyHostToDevice));
			us = bench_now_us() - t0;
			if (i && us < best)
				best = us;
		}
		snprintf(name, sizeof(name), "%s_%s_%s_gbs", sort, size >= GiB ? "1g" : "64m",
			 dir ? "d2h" : "h2d");
		bench_report(name, size / best / 1e3, "GB/s");
	}
}

static bool want(int argc, char **argv, const char *what)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], what))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	void *dev, *pinned, *pageable;

	CK(cudaMalloc(&dev, GiB));
	if (want(argc, argv, "small") || want(argc, argv, "pinned")) {
		CK(cudaMallocHost(&pinned, GiB));
		memset(pinned, 1, GiB);
		if (want(argc, argv, "small"))
			small(pinned, dev);
		if (want(argc, argv, "pinned")) {
			big("pinned", pinned, dev, 64 * MiB, 10);
			big("pinned", pinned, dev, GiB, 3);
		}
		CK(cudaFreeHost(pinned));
	}
	if (want(argc, argv, "pageable")) {
		pageable = malloc(GiB);
		memset(pageable, 1, GiB);	/* touched: no page faults timed */
		big("pageable", pageable, dev, 64 * MiB, 10);
		big("pageable", pageable, dev, GiB, 3);
		free(pageable);
	}
	CK(cudaFree(dev));
	return 0;
}
