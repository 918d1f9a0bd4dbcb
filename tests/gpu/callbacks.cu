// SPDX-License-Identifier: MIT
/*
 * Host callbacks (cudaLaunchHostFunc, cudaStreamAddCallback) on several
 * streams: each stream's callbacks run in stream order, after the work
 * before them; a callback sees the data a copy before it brought back.
 * The log of each stream is printed after the sync (deterministic).
 */
#include <mutex>
#include <string>

#include "../e2e/e2e.h"

struct note {
	int stream, step;
	unsigned *host;	/* data the copy before it brought back */
	unsigned want;
};

static std::string logs[3];
static std::mutex lock;

static void CUDART_CB on_host(void *arg)
{
	struct note *n = (struct note *)arg;
	char line[96];

	snprintf(line, sizeof(line), "stream %d step %d data %s\n", n->stream, n->step,
		 *n->host == n->want ? "ok" : "WRONG");
	std::lock_guard<std::mutex> g(lock);
	logs[n->stream] += line;
}

static void CUDART_CB on_stream(cudaStream_t s, cudaError_t status, void *arg)
{
	struct note *n = (struct note *)arg;
	char line[96];

	(void)s;
	snprintf(line, sizeof(line), "stream %d callback %d status %s\n", n->stream, n->step,
		 cudaGetErrorName(status));
	std::lock_guard<std::mutex> g(lock);
	logs[n->stream] += line;
}

__global__ void set(unsigned *p, unsigned v, long long spin)
{
	long long t0 = clock64();

	while (clock64() - t0 < spin)
		;
	*p = v;
}

int main(void)
{
	cudaStream_t s[3];
	unsigned *d, *h;
	static struct note notes[3][10];

	CHECK(cudaMalloc(&d, 3 * 10 * sizeof(unsigned)));
	CHECK(cudaMallocHost(&h, 3 * 10 * sizeof(unsigned)));
	memset(h, 0, 3 * 10 * sizeof(unsigned));
	for (int k = 0; k < 3; k++)
		CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
	for (int step = 0; step < 10; step++)
		for (int k = 0; k < 3; k++) {
			struct note *n = &notes[k][step];
			unsigned *slot = d + k * 10 + step;

			*n = (struct note){ k, step, h + k * 10 + step, 1000u * k + step };
			set<<<1, 1, 0, s[k]>>>(slot, n->want, 100000 * (3 - k));
			CHECK(cudaMemcpyAsync(n->host, slot, 4, cudaMemcpyDeviceToHost, s[k]));
			if (step % 3 == 2)
				CHECK(cudaStreamAddCallback(s[k], on_stream, n, 0));
			else
				CHECK(cudaLaunchHostFunc(s[k], on_host, n));
		}
	CHECK(cudaDeviceSynchronize());
	for (int k = 0; k < 3; k++) {
		fputs(logs[k].c_str(), stdout);
		CHECK(cudaStreamDestroy(s[k]));
	}
	for (int k = 0; k < 3; k++)
		EXPECT(logs[k].find("WRONG") == std::string::npos, "stream %d: a callback saw old data", k);
	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(h));
	return e2e_finish("callbacks");
}
