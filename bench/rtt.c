// SPDX-License-Identifier: MIT
/*
 * Round trip of a small synchronous call: cuStreamQuery on an idle stream,
 * driver API, median over 100k calls (and cuCtxGetDevice, answered
 * locally, for reference).
 */
#include <cuda.h>

#include "bench.h"

#define N 100000

#define CK(call)                                                                 \
	do {                                                                     \
		CUresult r_ = (call);                                            \
		if (r_ != CUDA_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, r_); \
			return 1;                                                \
		}                                                                \
	} while (0)

static double t[N];

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUstream s;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuStreamSynchronize(s));
	for (int i = 0; i < 10000; i++)
		CK(cuStreamQuery(s));
	for (int i = 0; i < N; i++) {
		double t0 = bench_now_us();
		CUresult r = cuStreamQuery(s);

		t[i] = bench_now_us() - t0;
		if (r != CUDA_SUCCESS) {
			fprintf(stderr, "cuStreamQuery: %d\n", r);
			return 1;
		}
	}
	bench_report("rtt_stream_query_us", bench_median(t, N), "us");
	CK(cuStreamDestroy(s));
	CK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
