// SPDX-License-Identifier: MIT
/*
 * NVIDIA's process-checkpoint API on a child running kernels: the parent
 * locks the child mid-loop (its calls wait), checkpoints it (its GPU
 * memory leaves the GPU), restores and unlocks it; the child's loop goes
 * on and at its end every word of its buffer was incremented exactly once
 * per launch, before and after. Natively the driver does it; through vgpu
 * the same calls are answered by vgpu's checkpoint (runtime/ckptapi/).
 * stdout is the same both ways (the GPU suite compares it); timings go
 * to stderr.
 *
 *   ckpt_api [MIB]     the child's buffer, MiB (default 256)
 */
#include <cuda.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* inc_u32(p, n): p[i] += 1 for i < n, one thread each. */
static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry inc_u32(.param .u64 p, .param .u32 n)\n{\n"
	"\t.reg .pred %p<2>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<5>;\n"
	"\tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [n];\n"
	"\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %ntid.x;\n\tmov.u32 %r4, %tid.x;\n"
	"\tmad.lo.s32 %r5, %r2, %r3, %r4;\n\tsetp.ge.u32 %p1, %r5, %r1;\n"
	"\t@%p1 bra DONE;\n\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tmul.wide.u32 %rd3, %r5, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
	"\tld.global.u32 %r6, [%rd4];\n\tadd.s32 %r7, %r6, 1;\n\tst.global.u32 [%rd4], %r7;\n"
	"DONE:\n\tret;\n}\n";

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *errname(CUresult rc)
{
	const char *s = NULL;

	return cuGetErrorName(rc, &s) || !s ? "?" : s;
}

#define MUST(call)                                                                   \
	do {                                                                         \
		CUresult rc_ = (call);                                               \
		if (rc_) {                                                           \
			fprintf(stderr, "child: %s -> %s\n", #call, errname(rc_));   \
			_exit(3);                                                    \
		}                                                                    \
	} while (0)

/* The child: launches until the parent says stop (a byte on @stop), after
 * saying "ready" on @ready at its 64th, then checks its buffer. Exit 0 when
 * every word is the number of launches. */
static int child(size_t bytes, int ready, int stop)
{
	uint32_t n = (uint32_t)(bytes / 4), launches = 0, *h;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUdeviceptr p;
	char c;
	size_t bad = 0;

	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuModuleLoadData(&mod, ptx));
	MUST(cuModuleGetFunction(&f, mod, "inc_u32"));
	MUST(cuMemAlloc(&p, bytes));
	MUST(cuMemsetD32(p, 0, n));
	fcntl(stop, F_SETFL, O_NONBLOCK);
	for (;;) {
		void *args[] = { &p, &n };

		MUST(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
		launches++;
		if (launches % 16 == 0)
			MUST(cuCtxSynchronize());
		if (launches == 64 && write(ready, "r", 1) != 1)
			_exit(3);
		if (launches > 64 && read(stop, &c, 1) == 1)
			break;
	}
	h = malloc(bytes);
	if (!h)
		_exit(3);
	MUST(cuMemcpyDtoH(h, p, bytes));
	for (uint32_t i = 0; i < n; i++)
		bad += h[i] != launches;
	fprintf(stderr, "child: %u launches, %zu words wrong\n", launches, bad);
	return bad ? 1 : 0;
}

static bool check(const char *what, CUresult rc, double t0)
{
	printf("%s %s\n", rc ? "FAIL" : "ok  ", what);
	fflush(stdout);
	fprintf(stderr, "%s: %s, %.1f ms\n", what, errname(rc), now_ms() - t0);
	return !rc;
}

static bool state_is(int pid, CUprocessState want, const char *what)
{
	CUprocessState st = CU_PROCESS_STATE_FAILED;
	CUresult rc = cuCheckpointProcessGetState(pid, &st);

	printf("%s state %s\n", !rc && st == want ? "ok  " : "FAIL", what);
	if (rc || st != want)
		fprintf(stderr, "state %s: %s, %d (want %d)\n", what, errname(rc), (int)st, (int)want);
	return !rc && st == want;
}

/* A step failed: give the child its GPU back, so that it can end. */
static void recover(int pid)
{
	CUprocessState st = CU_PROCESS_STATE_RUNNING;

	if (!cuCheckpointProcessGetState(pid, &st) && st == CU_PROCESS_STATE_CHECKPOINTED)
		cuCheckpointProcessRestore(pid, NULL);
	if (!cuCheckpointProcessGetState(pid, &st) && st == CU_PROCESS_STATE_LOCKED)
		cuCheckpointProcessUnlock(pid, NULL);
}

int main(int argc, char **argv)
{
	size_t bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 256) << 20;
	CUcheckpointLockArgs lock;
	int up[2], down[2], status = 0;
	bool ok = true;
	double t;
	pid_t pid;
	char c;

	if (!bytes || pipe(up) || pipe(down))
		return 2;
	pid = fork();	/* before any CUDA call: the child is a driver user of its own */
	if (pid < 0)
		return 2;
	if (!pid) {
		close(up[0]);
		close(down[1]);
		_exit(child(bytes, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	/* NVIDIA's restore wants cuInit called (or persistence mode). */
	if (cuInit(0) || read(up[0], &c, 1) != 1) {
		printf("FAIL the child did not start\n");
		kill(pid, 9);
		waitpid(pid, NULL, 0);
		return 1;
	}
	ok &= state_is(pid, CU_PROCESS_STATE_RUNNING, "running");
	memset(&lock, 0, sizeof(lock));
	lock.timeoutMs = 30000;
	t = now_ms();
	ok = ok && check("lock the child mid-loop", cuCheckpointProcessLock(pid, &lock), t);
	ok = ok && state_is(pid, CU_PROCESS_STATE_LOCKED, "locked");
	t = now_ms();
	ok = ok && check("checkpoint the child", cuCheckpointProcessCheckpoint(pid, NULL), t);
	ok = ok && state_is(pid, CU_PROCESS_STATE_CHECKPOINTED, "checkpointed");
	t = now_ms();
	ok = ok && check("restore the child", cuCheckpointProcessRestore(pid, NULL), t);
	ok = ok && state_is(pid, CU_PROCESS_STATE_LOCKED, "restored");
	t = now_ms();
	ok = ok && check("unlock the child", cuCheckpointProcessUnlock(pid, NULL), t);
	ok = ok && state_is(pid, CU_PROCESS_STATE_RUNNING, "unlocked");
	if (!ok)
		recover(pid);
	usleep(200000);	/* the child launches on */
	if (write(down[1], "s", 1) != 1 || waitpid(pid, &status, 0) != pid) {
		kill(pid, 9);
		waitpid(pid, NULL, 0);
		ok = false;
	}
	ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
	printf("%s the child's buffer counts every launch\n",
	       WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok  " : "FAIL");
	printf("ckpt_api: %s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
