// SPDX-License-Identifier: MIT
/*
 * Memory pools shared between processes through the driver API: a pool
 * made with POSIX descriptor handle types is exported as a descriptor, an
 * allocation of it as 64 bytes of export data; a second process (this
 * program again, "import" mode) gets both through a socket pair, imports
 * the pool and the pointer, sees the bytes, writes, and frees; the first
 * sees the writes. Bad input: a pool without handle types, a pointer of
 * such a pool, forged export data, a pointer through the wrong pool, a
 * pointer whose allocation was freed, an allocation from an imported pool.
 *
 * One line per check on stdout, nothing that depends on addresses, timing
 * or the backend; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "driver_check.h"

#define N 4096			/* words in each allocation */

/* Every word of d is v. */
static bool holds(CUdeviceptr d, uint32_t v)
{
	static uint32_t h[N];

	if (cuMemcpyDtoH(h, d, sizeof(h)))
		return false;
	for (int i = 0; i < N; i++)
		if (h[i] != v)
			return false;
	return true;
}

/* What goes to the importer: three pool descriptors and the export data. */
struct handoff {
	CUmemPoolPtrExportData a;	/* live, from pool 1 */
	CUmemPoolPtrExportData e;	/* live, from pool 1: freed async by the importer */
	CUmemPoolPtrExportData freed;	/* from pool 1, freed since */
};

static int send_all(int sock, const struct handoff *h, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 2)] = { 0 };
	struct iovec io = { (void *)h, sizeof(*h) };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
	return sendmsg(sock, &m, 0) == (ssize_t)sizeof(*h) ? 0 : -1;
}

static int recv_all(int sock, struct handoff *h, int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 2)];
	struct iovec io = { h, sizeof(*h) };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	if (recvmsg(sock, &m, 0) != (ssize_t)sizeof(*h))
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int) * (size_t)n))
		return -1;
	memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)n);
	return 0;
}

/* The second process: imports, reads, writes, frees; bad input. */
/* Bad export data that the driver took anyway (vgpu refuses them): what
 * it imported is freed, or the imported pool could not be destroyed. */
static void forget_import(CUresult rc, CUdeviceptr x)
{
	if (!rc && x)
		cuMemFree(x);
}

static int importer(int sock)
{
	struct handoff h;
	CUmemoryPool ip = NULL, ip2 = NULL, own = NULL;
	CUmemPoolProps props;
	CUmemPoolPtrExportData forged;
	CUdeviceptr p = 0, x = 0;
	CUcontext ctx;
	CUdevice dev;
	CUresult rc;
	int fds[2] = { -1, -1 };
	char done = 1;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	if (recv_all(sock, &h, fds, 2)) {
		fprintf(stderr, "pool_ipc_driver(importer): nothing came from the exporter\n");
		return 2;
	}
	rc = cuMemPoolImportFromShareableHandle(&ip, (void *)(intptr_t)fds[0],
						CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	expect(!rc, "the importer imports the pool", rc);
	rc = cuMemPoolImportFromShareableHandle(&ip2, (void *)(intptr_t)fds[1],
						CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	expect(!rc, "the importer imports a second pool", rc);
	close(fds[0]);
	close(fds[1]);
	if (!ip)
		return 1;
	rc = cuMemPoolImportPointer(&p, ip, &h.a);
	expect(!rc && p, "the importer imports the pointer", rc);
	if (!rc) {
		rc = CUDA_SUCCESS;
		expect(holds(p, 0x11111111u), "the importer sees the exporter's bytes", rc);
		rc = cuMemsetD32(p, 0x22222222u, N);
		if (!rc)
			rc = cuCtxSynchronize();
		expect(!rc, "the importer writes them", rc);
	}

	/* Bad input. */
	rc = cuMemAllocFromPoolAsync(&x, 256, ip, NULL);
	expect(rc != CUDA_SUCCESS, "an imported pool does not allocate", rc);
	rc = cuDeviceSetMemPool(dev, ip);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "an imported pool is no device's current pool",
		    rc);
	memcpy(&forged, &h.a, sizeof(forged));
	for (int i = 16; i < 24; i++)
		forged.reserved[i] ^= 0x5a;	/* vgpu's secret; some bytes to the driver */
	rc = cuMemPoolImportPointer(&x, ip, &forged);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "forged export data are refused", rc);
	forget_import(rc, x);
	memset(&forged, 0, sizeof(forged));
	rc = cuMemPoolImportPointer(&x, ip, &forged);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "export data of zeros are refused", rc);
	forget_import(rc, x);
	if (ip2) {
		rc = cuMemPoolImportPointer(&x, ip2, &h.a);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
			    "a pointer imported through another pool is refused", rc);
		forget_import(rc, x);
	}
	rc = cuMemPoolImportPointer(&x, ip, &h.freed);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a pointer freed by its exporter is refused",
		    rc);
	forget_import(rc, x);
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = dev;
	props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	MUST(cuMemPoolCreate(&own, &props));
	rc = cuMemPoolImportPointer(&x, own, &h.a);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a pointer is not imported into a pool made here",
	       rc);
	rc = cuMemPoolImportPointer(NULL, ip, &h.a);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an import without a result is refused", rc);
	rc = cuMemPoolImportFromShareableHandle(&ip2, (void *)(intptr_t)-1,
						CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	expect(rc != CUDA_SUCCESS, "a pool import of descriptor -1 is refused", rc);
	{
		int pipefd[2];

		if (!pipe(pipefd)) {
			rc = cuMemPoolImportFromShareableHandle(
				&ip2, (void *)(intptr_t)pipefd[0],
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
			expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
				    "a pool import of a pipe is refused", rc);
			close(pipefd[0]);
			close(pipefd[1]);
		}
	}

	if (p) {
		rc = cuMemFree(p);
		expect(!rc, "the importer frees the imported pointer", rc);
	}
	rc = cuMemPoolImportPointer(&x, ip, &h.e);
	expect(!rc && x, "the importer imports a second pointer", rc);
	if (!rc) {
		CUstream s;

		MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		rc = cuMemsetD32Async(x, 0x44444444u, N, s);
		if (!rc)
			rc = cuMemFreeAsync(x, s);
		if (!rc)
			rc = cuStreamSynchronize(s);
		expect(!rc, "the importer writes it and frees it in stream order", rc);
		MUST(cuStreamDestroy(s));
	}
	MUST(cuMemPoolDestroy(own));
	rc = cuMemPoolDestroy(ip);
	expect(!rc, "the importer destroys the imported pool", rc);
	if (write(sock, &done, 1) != 1)
		return 2;
	return failures ? 1 : 0;
}

/*
 * "hold GO": a session holding a shareable pool with memory and a pool
 * imported (from itself) with a pointer mapped, until the file GO exists;
 * a checkpoint meanwhile must be refused (tests/e2e/run pool_ipc_ckpt).
 * Then all of it works on and goes.
 */
static int hold(const char *go)
{
	CUmemoryPool pool, ip;
	CUmemPoolProps props;
	CUmemPoolPtrExportData d;
	CUdeviceptr a, p;
	CUcontext ctx;
	CUdevice dev;
	int fd = -1;
	bool ok;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = dev;
	props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	MUST(cuMemPoolCreate(&pool, &props));
	MUST(cuMemAllocFromPoolAsync(&a, N * 4, pool, NULL));
	MUST(cuMemsetD32(a, 0x33333333u, N));
	MUST(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
					      0));
	MUST(cuMemPoolImportFromShareableHandle(&ip, (void *)(intptr_t)fd,
						CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	MUST(cuMemPoolExportPointer(&d, a));
	MUST(cuMemPoolImportPointer(&p, ip, &d));
	printf("ready\n");
	fflush(stdout);
	while (access(go, F_OK))
		usleep(20000);
	ok = holds(p, 0x33333333u);
	MUST(cuMemFree(p));
	MUST(cuMemPoolDestroy(ip));
	MUST(cuMemFree(a));
	MUST(cuMemPoolDestroy(pool));
	close(fd);
	printf("hold: %s\n", ok ? "the shared memory is still seen" : "the shared memory changed");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	CUmemoryPool pool = NULL, pool2 = NULL, plain = NULL;
	CUmemPoolProps props;
	struct handoff h;
	CUmemPoolPtrExportData d;
	CUdeviceptr a = 0, b = 0, c = 0, e = 0;
	CUcontext ctx;
	CUdevice dev;
	CUstream s;
	CUresult rc;
	int fd = -1, fd2 = -1, sv[2], st = -1;
	char sfd[16], done = 0;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "import"))
		return importer(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2]);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = dev;
	MUST(cuMemPoolCreate(&plain, &props));
	props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	rc = cuMemPoolCreate(&pool, &props);
	expect(!rc, "a pool shareable by descriptor", rc);
	if (rc)
		return 1;
	MUST(cuMemPoolCreate(&pool2, &props));

	MUST(cuMemAllocFromPoolAsync(&a, N * 4, pool, s));
	MUST(cuMemsetD32Async(a, 0x11111111u, N, s));
	MUST(cuMemAllocFromPoolAsync(&b, N * 4, pool, s));
	MUST(cuMemAllocFromPoolAsync(&c, N * 4, plain, s));
	MUST(cuMemAllocFromPoolAsync(&e, N * 4, pool, s));
	MUST(cuStreamSynchronize(s));

	rc = cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	expect(!rc && fd >= 0, "the pool is exported as a descriptor", rc);
	rc = cuMemPoolExportToShareableHandle(&fd2, pool2, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
					      0);
	expect(!rc && fd2 >= 0, "a second pool is exported", rc);
	/* The driver writes less than the 64 bytes: compare zeroed ones. */
	memset(&h.a, 0, sizeof(h.a));
	memset(&d, 0, sizeof(d));
	rc = cuMemPoolExportPointer(&h.a, a);
	expect(!rc, "an allocation of it is exported", rc);
	rc = cuMemPoolExportPointer(&d, a);
	expect(!rc && !memcmp(&d, &h.a, sizeof(d)), "exported again, the same data", rc);
	rc = cuMemPoolExportPointer(&h.e, e);
	expect(!rc, "a third allocation is exported", rc);
	rc = cuMemPoolExportPointer(&h.freed, b);
	expect(!rc, "a second allocation is exported", rc);
	MUST(cuMemFreeAsync(b, s));
	MUST(cuStreamSynchronize(s));

	rc = cuMemPoolExportToShareableHandle(&sv[0], plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
					      0);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "a pool without handle types is not exported", rc);
	rc = cuMemPoolExportPointer(&d, c);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE,
		    "a pointer of a pool without handle types is not exported", rc);
	rc = cuMemPoolExportPointer(&d, a + 256);
	expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a pointer inside an allocation is not exported",
		    rc);
	rc = cuMemPoolExportPointer(NULL, a);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an export without a result is refused", rc);
	if (fd < 0 || fd2 < 0)
		return 1;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	snprintf(sfd, sizeof(sfd), "%d", sv[1]);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		execl("/proc/self/exe", "pool_ipc_driver", "import", sfd, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	{
		int fds[2] = { fd, fd2 };

		if (pid > 0 && send_all(sv[0], &h, fds, 2))
			fprintf(stderr, "pool_ipc_driver: the handoff failed\n");
	}
	if (pid > 0 && read(sv[0], &done, 1) != 1)
		done = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	expect(pid > 0 && done && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "another process imports the pool and the pointer", CUDA_SUCCESS);
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		fprintf(stderr, "pool_ipc_driver: the importer ended with status %#x\n", st);
	expect(holds(a, 0x22222222u), "its writes are seen here", CUDA_SUCCESS);
	expect(holds(e, 0x44444444u), "and those to the third", CUDA_SUCCESS);

	close(fd);
	close(fd2);
	close(sv[0]);
	rc = cuMemFreeAsync(a, s);
	if (!rc)
		rc = cuMemFreeAsync(c, s);
	if (!rc)
		rc = cuMemFreeAsync(e, s);
	if (!rc)
		rc = cuStreamSynchronize(s);
	expect(!rc, "the exporter frees its allocations", rc);
	rc = cuMemPoolDestroy(pool);
	if (!rc)
		rc = cuMemPoolDestroy(pool2);
	if (!rc)
		rc = cuMemPoolDestroy(plain);
	expect(!rc, "the pools are destroyed", rc);
	return checks_done("pool_ipc_driver");
}
