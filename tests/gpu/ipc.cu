// SPDX-License-Identifier: MIT
/*
 * CUDA IPC between two processes, as cuda-samples' simpleIPC does it: the
 * process forks before either touches CUDA; the parent allocates (a small
 * and a large buffer), fills them with a kernel, launches a second kernel
 * and records an interprocess event after it, and hands the memory and
 * event handles to the child through a socket pair. The child opens them,
 * makes its stream wait for the event, doubles every word with a kernel
 * of its own, and closes. The parent checks every word: (i + 1000) * 2.
 * The same lines natively and through vgpu.
 */
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../e2e/e2e.h"

#define SMALL	(64 * 1024)		/* words */
#define LARGE	(4 * 1024 * 1024)	/* words: 16 MiB, its own physical memory */

struct handoff {
	cudaIpcMemHandle_t small, large;
	cudaIpcEventHandle_t ev;
};

__global__ void fill(int *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = i;
}

__global__ void add(int *p, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] += v;
}

__global__ void twice(int *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] *= 2;
}

static int child(int sock)
{
	struct handoff h;
	int *small, *large;
	cudaEvent_t ev;
	char done = 1;

	if (read(sock, &h, sizeof(h)) != (ssize_t)sizeof(h))
		return 2;
	CHECK(cudaSetDevice(0));
	CHECK(cudaIpcOpenEventHandle(&ev, h.ev));
	CHECK(cudaIpcOpenMemHandle((void **)&small, h.small, cudaIpcMemLazyEnablePeerAccess));
	CHECK(cudaIpcOpenMemHandle((void **)&large, h.large, cudaIpcMemLazyEnablePeerAccess));
	/* The parent's second kernel may still run: wait for its event. */
	CHECK(cudaStreamWaitEvent(0, ev, 0));
	twice<<<SMALL / 256, 256>>>(small, SMALL);
	twice<<<LARGE / 256, 256>>>(large, LARGE);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaIpcCloseMemHandle(small));
	CHECK(cudaIpcCloseMemHandle(large));
	CHECK(cudaEventDestroy(ev));
	if (write(sock, &done, 1) != 1)
		return 2;
	return e2e_failures ? 1 : 0;
}

static int count_bad(const int *h, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		bad += h[i] != (i + 1000) * 2;
	return bad;
}

int main(void)
{
	struct handoff h;
	int *small, *large, *host;
	cudaStream_t s;
	cudaEvent_t ev;
	int sv[2], st = -1, bad, attr = 0;
	char done = 0;
	pid_t pid;

	/* Fork first: a child must not inherit an initialized CUDA. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(sv[0]);
		_exit(child(sv[1]));
	}
	close(sv[1]);

	CHECK(cudaSetDevice(0));
	CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrIpcEventSupport, 0));
	printf("ipc: event support %s\n", attr ? "yes" : "no");
	CHECK(cudaMalloc(&small, SMALL * sizeof(int)));
	CHECK(cudaMalloc(&large, LARGE * sizeof(int)));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess));
	fill<<<SMALL / 256, 256, 0, s>>>(small, SMALL);
	fill<<<LARGE / 256, 256, 0, s>>>(large, LARGE);
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaIpcGetMemHandle(&h.small, small));
	CHECK(cudaIpcGetMemHandle(&h.large, large));
	CHECK(cudaIpcGetEventHandle(&h.ev, ev));
	add<<<SMALL / 256, 256, 0, s>>>(small, SMALL, 1000);
	add<<<LARGE / 256, 256, 0, s>>>(large, LARGE, 1000);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(ev, s));
	EXPECT(write(sv[0], &h, sizeof(h)) == (ssize_t)sizeof(h), "the handoff failed");
	EXPECT(read(sv[0], &done, 1) == 1 && done, "the child did not finish its work");
	waitpid(pid, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status %#x", st);
	printf("ipc: the other process opened, waited, computed and closed: %s\n",
	       WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");

	host = (int *)malloc(LARGE * sizeof(int));
	if (!host)
		return 2;
	CHECK(cudaMemcpy(host, small, SMALL * sizeof(int), cudaMemcpyDeviceToHost));
	bad = count_bad(host, SMALL);
	EXPECT(bad == 0, "%d wrong words in the small buffer", bad);
	printf("ipc: small buffer, %d words: %s\n", SMALL, bad ? "wrong" : "ok");
	CHECK(cudaMemcpy(host, large, LARGE * sizeof(int), cudaMemcpyDeviceToHost));
	bad = count_bad(host, LARGE);
	EXPECT(bad == 0, "%d wrong words in the large buffer", bad);
	printf("ipc: large buffer, %d words: %s\n", LARGE, bad ? "wrong" : "ok");
	free(host);
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(small));
	CHECK(cudaFree(large));
	return e2e_finish("ipc");
}
