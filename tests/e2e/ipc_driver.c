// SPDX-License-Identifier: MIT
/*
 * CUDA IPC memory handles through the driver API: this process allocates
 * and exports (a small allocation beside a neighbour in its chunk, a large
 * one, one freed since); a second process (this program again, "import"
 * mode) gets the 64-byte handles through a socket pair, opens them, sees
 * the bytes, writes, opens one twice and closes it twice; the first sees
 * the writes, frees the large allocation while the second still has it
 * open, and the second still reads it. An interprocess event recorded
 * after the exporter's writes is opened, waited on, queried, recorded and
 * destroyed by the second. Bad input: forged handles, a freed allocation's
 * handle, a process opening its own handle, cuMemFree of opened memory, an
 * event that is not interprocess.
 *
 *   ipc_driver                      the test above
 *   ipc_driver give FILE            exports, writes the handle to FILE and
 *                                   waits for FILE.go (tests/e2e/run ipc_users)
 *   ipc_driver take FILE [ok]       opens FILE's handle: exit 0 when it is
 *                                   refused with CUDA_ERROR_INVALID_HANDLE
 *                                   (ok: when it opens and shows the bytes)
 *   ipc_driver hold GO              the importer holds the exporter's memory
 *                                   and event until GO.1, the event until
 *                                   GO.2, nothing until GO.3, saying so
 *                                   (tests/e2e/run ipc_ckpt); its writes are
 *                                   seen by the exporter
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
#include <sys/stat.h>
#include <sys/wait.h>

#include "driver_check.h"

#define N	4096			/* words of the small allocations */
#define LARGE	(3u << 20)		/* bytes of the large one */

struct handoff {
	CUipcMemHandle a, l, freed;
	CUipcEventHandle ev;		/* recorded after the writes to a */
};

/* Every word of [d, d + words) is v (the first and last N words). */
static bool holds(CUdeviceptr d, size_t words, uint32_t v)
{
	static uint32_t h[N];
	size_t n = words < N ? words : N;

	for (int k = 0; k < 2; k++) {
		CUdeviceptr at = k ? d + (words - n) * 4 : d;

		if (cuMemcpyDtoH(h, at, n * 4))
			return false;
		for (size_t i = 0; i < n; i++)
			if (h[i] != v)
				return false;
	}
	return true;
}

static void start(void)
{
	CUcontext ctx;
	CUdevice dev;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
}

static bool say(int sock, char c)
{
	return write(sock, &c, 1) == 1;
}

static bool heard(int sock, char want)
{
	char c = 0;

	return read(sock, &c, 1) == 1 && c == want;
}

/* The second process. */
static int importer(int sock)
{
	struct handoff h;
	CUipcMemHandle forged;
	CUipcEventHandle evforged;
	CUevent ev = NULL, ev2 = NULL;
	CUdeviceptr pa = 0, pa2 = 0, pl = 0, x = 0, base = 0;
	size_t size = 0;
	CUresult rc;

	start();
	if (read(sock, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		fprintf(stderr, "ipc_driver(importer): nothing came from the exporter\n");
		return 2;
	}
	rc = cuIpcOpenEventHandle(&ev, h.ev);
	expect(!rc && ev, "the importer opens the event", rc);
	if (rc)
		return 1;
	rc = cuStreamWaitEvent(NULL, ev, 0);
	expect(!rc, "its stream waits for the event", rc);
	rc = cuEventSynchronize(ev);
	expect(!rc, "the event is synchronized with", rc);
	rc = cuEventQuery(ev);
	expect(!rc, "the event is complete", rc);
	rc = cuIpcOpenMemHandle(&pa, h.a, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	expect(!rc && pa, "the importer opens the small allocation", rc);
	if (rc)
		return 1;
	expect(holds(pa, N, 0x11111111u), "it sees the exporter's bytes", CUDA_SUCCESS);
	rc = cuIpcOpenMemHandle(&pa2, h.a, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	expect(!rc && pa2 == pa, "opened again: the same pointer", rc);
	rc = cuIpcOpenMemHandle(&pl, h.l, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	expect(!rc && pl, "the importer opens the large allocation", rc);
	if (rc)
		return 1;
	expect(holds(pl, LARGE / 4, 0x22222222u), "it sees the large allocation's bytes",
	       CUDA_SUCCESS);
	rc = cuMemsetD32(pa, 0x33333333u, N);
	if (!rc)
		rc = cuMemsetD32(pl, 0x44444444u, LARGE / 4);
	if (!rc)
		rc = cuCtxSynchronize();
	expect(!rc, "the importer writes both", rc);

	rc = cuMemGetAddressRange(&base, &size, pa + 64);
	expect_vgpu(!rc && base == pa && size == N * 4, "its address range is the allocation's",
		    rc);
	/* What the driver leaves undefined, vgpu refuses. */
	if (under_vgpu()) {
		forged = h.a;
		forged.reserved[20] ^= 0x5a;	/* inside the proof */
		rc = cuIpcOpenMemHandle(&x, forged, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "a forged handle is refused", rc);
		memset(&forged, 0, sizeof(forged));
		rc = cuIpcOpenMemHandle(&x, forged, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "a handle of zeros is refused", rc);
		rc = cuIpcOpenMemHandle(&x, h.freed, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE,
			    "a freed allocation's handle names nothing", rc);
		rc = cuIpcOpenMemHandle(&x, h.a, 0x80);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "unknown flags are refused", rc);
		rc = cuMemFree(pa);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "cuMemFree of opened memory is refused",
			    rc);
		evforged = h.ev;
		evforged.reserved[20] ^= 0x5a;
		rc = cuIpcOpenEventHandle(&ev2, evforged);
		expect_vgpu(rc == CUDA_ERROR_INVALID_HANDLE, "a forged event handle is refused", rc);
	}
	rc = cuEventRecord(ev, NULL);
	if (!rc)
		rc = cuEventSynchronize(ev);
	expect(!rc, "the importer records the event too", rc);
	rc = cuEventDestroy(ev);
	expect(!rc, "the importer destroys its event", rc);

	if (!say(sock, 'w') || !heard(sock, 'f')) {
		fprintf(stderr, "ipc_driver(importer): the exporter went away\n");
		return 1;
	}
	expect(holds(pl, LARGE / 4, 0x44444444u),
	       "memory the exporter freed lives while the importer has it open", CUDA_SUCCESS);
	rc = cuIpcCloseMemHandle(pa);
	expect(!rc, "the first close", rc);
	expect(holds(pa, N, 0x33333333u), "one open left: still mapped", CUDA_SUCCESS);
	rc = cuIpcCloseMemHandle(pa);
	expect(!rc, "the second close", rc);
	if (under_vgpu()) {
		rc = cuIpcCloseMemHandle(pa);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "a third close is refused", rc);
	}
	rc = cuIpcCloseMemHandle(pl);
	expect(!rc, "the large allocation is closed", rc);
	say(sock, 'd');
	return checks_done("ipc_driver(importer)");
}

static CUresult export_small(CUdeviceptr *a, CUipcMemHandle *h, uint32_t v)
{
	CUresult rc = cuMemAlloc(a, N * 4);

	if (!rc)
		rc = cuMemsetD32(*a, v, N);
	if (!rc)
		rc = cuIpcGetMemHandle(h, *a);
	return rc;
}

/* give FILE: exports, writes the handle, waits for FILE.go. */
static int give(const char *file)
{
	CUipcMemHandle h;
	CUdeviceptr a;
	char go[4096];
	FILE *f;

	start();
	MUST(export_small(&a, &h, 0x77777777u));
	snprintf(go, sizeof(go), "%s.go", file);
	f = fopen(file, "wb");
	if (!f || fwrite(&h, sizeof(h), 1, f) != 1 || fclose(f))
		return 2;
	chmod(file, 0644);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < 1200 && access(go, F_OK); i++)
		usleep(100000);
	return 0;
}

/* take FILE [ok]: opens the handle FILE holds. */
static int take(const char *file, bool ok)
{
	CUipcMemHandle h;
	CUdeviceptr p = 0;
	CUresult rc;
	FILE *f = fopen(file, "rb");

	if (!f || fread(&h, sizeof(h), 1, f) != 1)
		return 2;
	fclose(f);
	start();
	rc = cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	printf("open: %s\n", errname(rc));
	if (ok) {
		expect(!rc && holds(p, N, 0x77777777u), "a session of the same user opens it", rc);
		if (!rc)
			cuIpcCloseMemHandle(p);
	} else {
		expect(rc == CUDA_ERROR_INVALID_HANDLE, "a session of another user is refused", rc);
	}
	return checks_done("ipc_driver(take)");
}

static void wait_go(const char *go)
{
	for (int i = 0; i < 1200 && access(go, F_OK); i++)
		usleep(100000);
}

/* GO.n exists: the harness is done with phase n. */
static void wait_phase(const char *go, int n)
{
	char f[4096];

	snprintf(f, sizeof(f), "%s.%d", go, n);
	wait_go(f);
}

/* hold GO, the importer's side: phase 1 it holds the exporter's memory and
 * event, phase 2 the event only, phase 3 nothing of the exporter's. */
static int hold_importer(int sock, const char *go)
{
	struct handoff h;
	CUdeviceptr p = 0;
	CUevent ev = NULL;
	CUresult rc;

	start();
	if (read(sock, &h, sizeof(h)) != (ssize_t)sizeof(h))
		return 2;
	MUST(cuIpcOpenEventHandle(&ev, h.ev));
	MUST(cuIpcOpenMemHandle(&p, h.a, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	printf("importer ready %d\n", (int)getpid());
	fflush(stdout);
	wait_phase(go, 1);
	rc = cuStreamWaitEvent(NULL, ev, 0);
	if (!rc)
		rc = cuMemsetD32(p, 0x66666666u, N);
	if (!rc)
		rc = cuCtxSynchronize();
	expect(!rc, "the importer writes after the checkpoints", rc);
	say(sock, 'w');
	rc = cuIpcCloseMemHandle(p);
	expect(!rc, "the importer closes the memory", rc);
	printf("importer holds the event only\n");
	fflush(stdout);
	wait_phase(go, 2);
	rc = cuEventDestroy(ev);
	expect(!rc, "the importer destroys the event", rc);
	printf("importer holds nothing of the exporter's\n");
	fflush(stdout);
	wait_phase(go, 3);
	return failures ? 1 : 0;
}

static int hold(const char *go)
{
	struct handoff h;
	CUdeviceptr a;
	CUevent ev;
	char sfd[16];
	int sv[2], st = -1;
	pid_t pid;

	start();
	memset(&h, 0, sizeof(h));
	MUST(export_small(&a, &h.a, 0x55555555u));
	MUST(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
	MUST(cuEventRecord(ev, NULL));
	MUST(cuIpcGetEventHandle(&h.ev, ev));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	snprintf(sfd, sizeof(sfd), "%d", sv[1]);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		execl("/proc/self/exe", "ipc_driver", "import-hold", sfd, go, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	if (pid < 0 || write(sv[0], &h, sizeof(h)) != (ssize_t)sizeof(h))
		return 2;
	printf("exporter ready %d\n", (int)getpid());
	fflush(stdout);
	expect(heard(sv[0], 'w') && holds(a, N, 0x66666666u),
	       "the importer's writes are seen after the checkpoints", CUDA_SUCCESS);
	waitpid(pid, &st, 0);
	expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the importer ends well", CUDA_SUCCESS);
	MUST(cuEventDestroy(ev));
	printf("%s\n", failures ? "failed" : "done");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct handoff h;
	CUipcMemHandle again;
	CUevent ev = NULL, ev2 = NULL, plain = NULL;
	CUstream s;
	CUdeviceptr a = 0, b = 0, l = 0, f = 0, x = 0;
	CUresult rc;
	char sfd[16];
	int sv[2], st = -1;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "import"))
		return importer(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "import-hold"))
		return hold_importer(atoi(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "give"))
		return give(argv[2]);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "take"))
		return take(argv[2], argc == 4 && !strcmp(argv[3], "ok"));
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2]);
	start();
	memset(&h, 0, sizeof(h));
	rc = export_small(&a, &h.a, 0x11111111u);
	expect(!rc, "a small allocation is exported", rc);
	MUST(cuMemAlloc(&b, N * 4));	/* its neighbour */
	MUST(cuMemsetD32(b, 0x55555555u, N));
	MUST(cuMemAlloc(&l, LARGE));
	MUST(cuMemsetD32(l, 0x22222222u, LARGE / 4));
	rc = cuIpcGetMemHandle(&h.l, l);
	expect(!rc, "a large allocation is exported", rc);
	rc = cuIpcGetMemHandle(&again, a);
	expect_vgpu(!rc && !memcmp(&again, &h.a, sizeof(again)), "exported again: the same handle",
		    rc);
	rc = export_small(&f, &h.freed, 0);
	expect(!rc, "a third allocation is exported", rc);
	MUST(cuMemFree(f));
	rc = cuIpcGetMemHandle(NULL, a);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an export without a result is refused", rc);
	rc = cuIpcGetMemHandle(&again, (CUdeviceptr)(uintptr_t)&again);
	expect(rc != CUDA_SUCCESS, "host memory is not exported", rc);
	if (under_vgpu()) {
		CUdeviceptr m = 0;

		MUST(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
		rc = cuIpcGetMemHandle(&again, m);
		expect_vgpu(rc == CUDA_ERROR_INVALID_VALUE, "managed memory is not exported", rc);
		MUST(cuMemFree(m));
	}
	if (under_vgpu()) {
		rc = cuIpcOpenMemHandle(&x, h.a, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		expect_vgpu(rc == CUDA_ERROR_INVALID_CONTEXT,
			    "a process does not open its own handle", rc);
	}

	rc = cuEventCreate(&plain, CU_EVENT_INTERPROCESS);
	expect(rc == CUDA_ERROR_INVALID_VALUE, "an interprocess event must not keep time", rc);
	MUST(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING));
	rc = cuIpcGetEventHandle(&h.ev, plain);
	expect(rc != CUDA_SUCCESS, "an event that is not interprocess is not exported", rc);
	MUST(cuEventDestroy(plain));
	rc = cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
	expect(!rc, "an interprocess event", rc);
	MUST(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	MUST(cuMemsetD32Async(a, 0x11111111u, N, s));
	rc = cuEventRecord(ev, s);
	if (!rc)
		rc = cuIpcGetEventHandle(&h.ev, ev);
	expect(!rc, "recorded after the writes, and exported", rc);
	if (under_vgpu()) {
		rc = cuIpcOpenEventHandle(&ev2, h.ev);
		expect_vgpu(rc == CUDA_ERROR_INVALID_CONTEXT,
			    "a process does not open its own event", rc);
	}
	MUST(cuCtxSynchronize());

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	snprintf(sfd, sizeof(sfd), "%d", sv[1]);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		execl("/proc/self/exe", "ipc_driver", "import", sfd, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	if (pid < 0 || write(sv[0], &h, sizeof(h)) != (ssize_t)sizeof(h))
		fprintf(stderr, "ipc_driver: the handoff failed\n");
	if (pid > 0 && heard(sv[0], 'w')) {
		expect(holds(a, N, 0x33333333u), "the importer's writes are seen here",
		       CUDA_SUCCESS);
		expect(holds(l, LARGE / 4, 0x44444444u), "and those to the large allocation",
		       CUDA_SUCCESS);
		expect(holds(b, N, 0x55555555u), "the neighbour is untouched", CUDA_SUCCESS);
		rc = cuMemFree(l);
		expect(!rc, "the exporter frees the large allocation", rc);
		say(sv[0], 'f');
		heard(sv[0], 'd');
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	expect(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "another process opens, writes and closes", CUDA_SUCCESS);
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		fprintf(stderr, "ipc_driver: the importer ended with status %#x\n", st);
	close(sv[0]);
	rc = cuMemFree(a);
	if (!rc)
		rc = cuMemFree(b);
	if (!rc)
		rc = cuEventDestroy(ev);
	if (!rc)
		rc = cuStreamDestroy(s);
	expect(!rc, "the exporter frees the rest", rc);
	return checks_done("ipc_driver");
}
