// SPDX-License-Identifier: MIT
/*
 * NVIDIA's process-checkpoint API (cuCheckpointProcess*) answered by vgpu's
 * checkpoint (runtime/ckptapi/, daemon/supervisor/process_ckpt.c).
 *
 *   ckpt_api_driver self          the process on itself: every state and
 *                                 every refusal of a call in the wrong one,
 *                                 its memory, module and kernel after
 *   ckpt_api_driver target GO     holds memory and a module, says "ready",
 *                                 waits for the file GO, then checks both
 *   ckpt_api_driver tool PID STEP a second process acting on PID: STEP is
 *                                 lock, checkpoint, restore, unlock or all;
 *                                 the state after each is checked
 *   ckpt_api_driver deny PID      another user: every call refused as for a
 *                                 process vgpu does not serve
 */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver_check.h"

#define BYTES (8u << 20)

static CUdeviceptr buf;
static CUfunction poke;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint32_t word(size_t i)
{
	return (uint32_t)(i * 2654435761u) ^ 0x5eed;
}

static void setup(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	uint32_t *h = malloc(BYTES);

	if (!h)
		exit(1);
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuMemAlloc(&buf, BYTES));
	for (size_t i = 0; i < BYTES / 4; i++)
		h[i] = word(i);
	MUST(cuMemcpyHtoD(buf, h, BYTES));
	MUST(cuModuleLoadData(&mod, POKE_U32_PTX));
	MUST(cuModuleGetFunction(&poke, mod, "vgpu_poke_u32"));
	free(h);
}

/* The data is the pattern but for word 0, which a kernel set to @v. */
static void verify(uint32_t v, const char *when)
{
	uint32_t *h = malloc(BYTES);
	CUdeviceptr p = buf;
	void *args[] = { &p, &v };
	size_t bad = BYTES / 4;

	if (!h)
		exit(1);
	EXPECT_OK(cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
		  "a kernel of the module loaded before, %s", when);
	EXPECT_OK(cuMemcpyDtoH(h, buf, BYTES), "the memory read %s", when);
	for (size_t i = 1; i < BYTES / 4 && bad == BYTES / 4; i++)
		if (h[i] != word(i))
			bad = i;
	expect(bad == BYTES / 4 && h[0] == v, "the memory is what it was", CUDA_SUCCESS);
	if (bad != BYTES / 4 || h[0] != v)
		fprintf(stderr, "word %zu is %#x, word 0 %#x (want %#x)\n", bad,
			bad < BYTES / 4 ? h[bad] : 0, h[0], v);
	free(h);
}

static void expect_state(int pid, CUprocessState want, const char *when)
{
	CUprocessState st = CU_PROCESS_STATE_FAILED;
	CUresult rc = cuCheckpointProcessGetState(pid, &st);
	char what[120];

	snprintf(what, sizeof(what), "state %d %s", (int)want, when);
	expect(!rc && st == want, what, rc);
	if (!rc && st != want)
		fprintf(stderr, "  the state is %d\n", (int)st);
}

static int self(void)
{
	int me = getpid();
	CUcheckpointLockArgs lock = { .timeoutMs = 10000 };
	CUcheckpointGpuPair pair;
	CUcheckpointRestoreArgs rargs = { .gpuPairs = &pair, .gpuPairsCount = 1 };
	CUprocessState st;
	int tid = -1;

	setup();
	verify(0x1234, "before");
	expect_state(me, CU_PROCESS_STATE_RUNNING, "at first");
	EXPECT_RC(cuCheckpointProcessUnlock(me, NULL), CUDA_ERROR_ILLEGAL_STATE, "unlock a running process");
	EXPECT_RC(cuCheckpointProcessCheckpoint(me, NULL), CUDA_ERROR_ILLEGAL_STATE,
		  "checkpoint a running process");
	EXPECT_RC(cuCheckpointProcessRestore(me, NULL), CUDA_ERROR_ILLEGAL_STATE, "restore a running process");

	EXPECT_OK(cuCheckpointProcessLock(me, &lock), "lock itself");
	expect_state(me, CU_PROCESS_STATE_LOCKED, "locked");
	EXPECT_RC(cuCheckpointProcessLock(me, NULL), CUDA_ERROR_ILLEGAL_STATE, "lock a locked process");
	EXPECT_RC(cuCheckpointProcessRestore(me, NULL), CUDA_ERROR_ILLEGAL_STATE, "restore a locked process");

	EXPECT_OK(cuCheckpointProcessCheckpoint(me, NULL), "checkpoint itself");
	expect_state(me, CU_PROCESS_STATE_CHECKPOINTED, "checkpointed");
	EXPECT_RC(cuCheckpointProcessLock(me, NULL), CUDA_ERROR_ILLEGAL_STATE, "lock a checkpointed process");
	EXPECT_RC(cuCheckpointProcessUnlock(me, NULL), CUDA_ERROR_ILLEGAL_STATE,
		  "unlock a checkpointed process");
	EXPECT_RC(cuCheckpointProcessCheckpoint(me, NULL), CUDA_ERROR_ILLEGAL_STATE,
		  "checkpoint a checkpointed process");
	/* Another GPU is vgpuctl migrate's; the same one is no remap. */
	memset(&pair, 0, sizeof(pair));
	pair.newUuid.bytes[0] = 1;
	EXPECT_RC(cuCheckpointProcessRestore(me, &rargs), CUDA_ERROR_NOT_SUPPORTED,
		  "restore onto another GPU");
	rargs.gpuPairsCount = 0;
	rargs.reserved1 = 1;
	EXPECT_RC(cuCheckpointProcessRestore(me, &rargs), CUDA_ERROR_INVALID_VALUE,
		  "restore with reserved bytes set");
	rargs.reserved1 = 0;

	EXPECT_OK(cuCheckpointProcessRestore(me, &rargs), "restore itself");
	expect_state(me, CU_PROCESS_STATE_LOCKED, "restored");
	EXPECT_OK(cuCheckpointProcessUnlock(me, NULL), "unlock itself");
	expect_state(me, CU_PROCESS_STATE_RUNNING, "unlocked");
	verify(0x5678, "after the restore");

	/* A second round, the memory freed and made again in between. */
	EXPECT_OK(cuCheckpointProcessLock(me, NULL), "lock again");
	EXPECT_OK(cuCheckpointProcessCheckpoint(me, NULL), "checkpoint again");
	EXPECT_OK(cuCheckpointProcessRestore(me, NULL), "restore again");
	EXPECT_OK(cuCheckpointProcessUnlock(me, NULL), "unlock again");
	verify(0x9abc, "after the second restore");

	lock.reserved0 = 1;
	EXPECT_RC(cuCheckpointProcessLock(me, &lock), CUDA_ERROR_INVALID_VALUE, "lock with reserved bytes set");
	EXPECT_RC(cuCheckpointProcessGetState(me, NULL), CUDA_ERROR_INVALID_VALUE, "state into NULL");
	EXPECT_RC(cuCheckpointProcessGetState(0, &st), CUDA_ERROR_INVALID_VALUE, "state of pid 0");
	EXPECT_RC(cuCheckpointProcessGetState(getppid(), &st), CUDA_ERROR_INVALID_VALUE,
		  "state of a process with no session");
	EXPECT_RC(cuCheckpointProcessLock(getppid(), NULL), CUDA_ERROR_INVALID_VALUE,
		  "lock a process with no session");
	EXPECT_RC(cuCheckpointProcessGetRestoreThreadId(me, NULL), CUDA_ERROR_INVALID_VALUE,
		  "restore thread into NULL");
	EXPECT_RC(cuCheckpointProcessGetRestoreThreadId(me, &tid), CUDA_ERROR_NOT_SUPPORTED,
		  "restore thread: the worker restores, no thread of the process");
	expect_state(me, CU_PROCESS_STATE_RUNNING, "at the end");
	return checks_done("ckpt_api_driver self");
}

static int target(const char *go)
{
	setup();
	verify(0x1111, "before");
	printf("ready\n");
	fflush(stdout);
	while (access(go, F_OK))
		usleep(10000);
	verify(0x2222, "after the other process's checkpoint and restore");
	return checks_done("ckpt_api_driver target");
}

static CUresult step(int pid, const char *s)
{
	CUcheckpointLockArgs lock = { .timeoutMs = 10000 };
	double t0 = now_ms();
	CUresult rc;

	if (!strcmp(s, "lock"))
		rc = cuCheckpointProcessLock(pid, &lock);
	else if (!strcmp(s, "checkpoint"))
		rc = cuCheckpointProcessCheckpoint(pid, NULL);
	else if (!strcmp(s, "restore"))
		rc = cuCheckpointProcessRestore(pid, NULL);
	else
		rc = cuCheckpointProcessUnlock(pid, NULL);
	fprintf(stderr, "%s %d: %.1f ms\n", s, pid, now_ms() - t0);
	return rc;
}

static int tool(int pid, const char *which)
{
	static const char *const steps[] = { "lock", "checkpoint", "restore", "unlock" };
	static const CUprocessState after[] = { CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_CHECKPOINTED,
						CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_RUNNING };

	for (int k = 0; k < 4; k++) {
		if (strcmp(which, "all") && strcmp(which, steps[k]))
			continue;
		EXPECT_OK(step(pid, steps[k]), "%s the other process", steps[k]);
		expect_state(pid, after[k], steps[k]);
	}
	return checks_done("ckpt_api_driver tool");
}

static int deny(int pid)
{
	CUprocessState st;

	EXPECT_RC(cuCheckpointProcessGetState(pid, &st), CUDA_ERROR_INVALID_VALUE,
		  "another user's process: its state");
	EXPECT_RC(cuCheckpointProcessLock(pid, NULL), CUDA_ERROR_INVALID_VALUE,
		  "another user's process: locked");
	EXPECT_RC(cuCheckpointProcessCheckpoint(pid, NULL), CUDA_ERROR_INVALID_VALUE,
		  "another user's process: checkpointed");
	EXPECT_RC(cuCheckpointProcessUnlock(pid, NULL), CUDA_ERROR_INVALID_VALUE,
		  "another user's process: unlocked");
	return checks_done("ckpt_api_driver deny");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "self"))
		return self();
	if (argc == 3 && !strcmp(argv[1], "target"))
		return target(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "tool"))
		return tool(atoi(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "deny"))
		return deny(atoi(argv[2]));
	fprintf(stderr, "usage: %s self | target GO | tool PID lock|checkpoint|restore|unlock|all | deny PID\n",
		argv[0]);
	return 2;
}
