// SPDX-License-Identifier: MIT
/*
 * Unit test for runtime/session/init.c, device.c and the contexts (context.c,
 * primary_ctx.c, ctx_config.c) without a daemon:
 * the session and the ring calls are faked below by a small model of the
 * worker's context table (daemon/worker/exec/exec_ctx.c). Exit 0 = pass.
 *
 * Build (from the repo root):
 *   gcc -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE -I include \
 *     -I common -I runtime -I /usr/local/cuda/include \
 *     tests/unit/test_context.c runtime/session/init.c runtime/api/device.c \
 *     runtime/api/context.c runtime/api/primary_ctx.c runtime/api/ctx_config.c \
 *     runtime/session/ids.c common/log.c -lpthread -o test_context
 */
#include "calls_hand_gen.h"
#include "client.h"
#include "dark_api.h"
#include "handles.h"
#include "init.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* These calls are written once, as vgpu_hand_NAME; their exported ABI
 * variants are generated (calls_hand_gen.c, not linked here). */
#define cuCtxDestroy(c) vgpu_hand_cuCtxDestroy(c)
#define cuCtxDestroy_v2(c) vgpu_hand_cuCtxDestroy(c)
#define cuCtxPopCurrent(p) vgpu_hand_cuCtxPopCurrent(p)
#define cuCtxPopCurrent_v2(p) vgpu_hand_cuCtxPopCurrent(p)
#define cuCtxPushCurrent(c) vgpu_hand_cuCtxPushCurrent(c)
#define cuCtxPushCurrent_v2(c) vgpu_hand_cuCtxPushCurrent(c)
#define cuDeviceGetUuid(u, d) vgpu_hand_cuDeviceGetUuid(u, d)
#define cuDeviceGetUuid_v2(u, d) vgpu_hand_cuDeviceGetUuid(u, d)
#define cuDevicePrimaryCtxRelease(d) vgpu_hand_cuDevicePrimaryCtxRelease(d)
#define cuDevicePrimaryCtxRelease_v2(d) vgpu_hand_cuDevicePrimaryCtxRelease(d)
#define cuDevicePrimaryCtxReset(d) vgpu_hand_cuDevicePrimaryCtxReset(d)
#define cuDevicePrimaryCtxReset_v2(d) vgpu_hand_cuDevicePrimaryCtxReset(d)

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                              \
		}                                                                \
	} while (0)

/* ---- Fake session and worker -------------------------------------------- */

#define NDEV 2

static struct vgpu_device_info devinfo[NDEV];
static struct vgpu_session sess;
static bool connected;

/* The worker's model: which ids it maps, primary refs per device. */
#define WMAX 4096
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static int wmap[WMAX];		/* 0 none, 1 created, 2 primary */
static int wprimary_refs[NDEV];
static int nops[VGPU_OP_MAX];
static struct vgpu_sqe last;

CUresult vgpu_session(struct vgpu_session **out)
{
	connected = true;
	*out = &sess;
	return CUDA_SUCCESS;
}

struct vgpu_session *vgpu_session_peek(void)
{
	return connected ? &sess : NULL;
}

void vgpu_sticky_clear(void)
{
}

bool vgpu_session_dead(void)
{
	return false;
}

CUresult vgpu_call5(uint16_t op, uint32_t ctx, uint32_t stream, uint64_t a0, uint64_t a1,
		    uint64_t a2, uint64_t a3, uint64_t a4, struct vgpu_cqe *out)
{
	CUresult rc = CUDA_SUCCESS;

	(void)a3;
	(void)a4;
	pthread_mutex_lock(&wlock);
	nops[op]++;
	last = (struct vgpu_sqe){ .opcode = op, .ctx = ctx, .stream = stream,
				  .arg = { a0, a1, a2, a3, a4 } };
	memset(out, 0, sizeof(*out));
	switch (op) {
	case VGPU_OP_PRIMARY_RETAIN:
		if (a1 >= NDEV || a0 >= WMAX)
			rc = CUDA_ERROR_INVALID_DEVICE;
		else if (wmap[a0] == 2)
			wprimary_refs[a1]++;
		else if (wmap[a0])
			rc = CUDA_ERROR_INVALID_VALUE;
		else {
			wmap[a0] = 2;
			wprimary_refs[a1]++;
		}
		break;
	case VGPU_OP_PRIMARY_RELEASE:
		if (a0 >= WMAX || wmap[a0] != 2) {
			rc = CUDA_ERROR_INVALID_CONTEXT;
			break;
		}
		if (!--wprimary_refs[a0 - 1])
			wmap[a0] = 0;
		break;
	case VGPU_OP_PRIMARY_RESET:
	case VGPU_OP_PRIMARY_SET_FLAGS:
		rc = a0 < NDEV ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
		break;
	case VGPU_OP_CTX_CREATE:
		if (a0 >= WMAX || wmap[a0])
			rc = CUDA_ERROR_INVALID_VALUE;
		else
			wmap[a0] = 1;
		break;
	case VGPU_OP_CTX_DESTROY:
		if (a0 >= WMAX || wmap[a0] != 1)
			rc = CUDA_ERROR_INVALID_CONTEXT;
		else
			wmap[a0] = 0;
		break;
	case VGPU_OP_CTX_SYNCHRONIZE:
	case VGPU_OP_CTX_SET_CACHE_CONFIG:
	case VGPU_OP_CTX_SET_SHMEM_CONFIG:
		rc = ctx < WMAX && wmap[ctx] ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
		break;
	default:
		rc = CUDA_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_unlock(&wlock);
	out->result = rc;
	return rc;
}

static int cls_calls;
static CUcontext cls_last;

void vgpu_cls_context_destroyed(CUcontext ctx)
{
	__atomic_add_fetch(&cls_calls, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&cls_last, ctx, __ATOMIC_RELAXED);
}

static int ops(enum vgpu_op op)
{
	int n;

	pthread_mutex_lock(&wlock);
	n = nops[op];
	pthread_mutex_unlock(&wlock);
	return n;
}

static void setup(void)
{
	for (int i = 0; i < NDEV; i++) {
		struct vgpu_device_info *d = &devinfo[i];

		snprintf(d->name, sizeof(d->name), "NVIDIA H100 80GB HBM3 #%d", i);
		for (int b = 0; b < 16; b++)
			d->uuid[b] = (uint8_t)(16 * i + b);
		d->total_mem = 85520809984ull;
		d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = 9;
		d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] = 0;
		d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
		d->attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32;
		d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] = 0;
		d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] = 0x1b + i;
		d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] = 0;
		d->attr[CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED] = 1;
		d->attr[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = 132;
	}
	sess.wl.driver_version = 13000;
	sess.ring.devinfo = devinfo;
	sess.ring.device_count = NDEV;
}

/* ---- Tests -------------------------------------------------------------- */

static void test_before_init(void)
{
	CUcontext c;
	int n;

	CHECK(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
	CHECK(cuCtxGetCurrent(&c) == CUDA_ERROR_NOT_INITIALIZED);
	CHECK(cuDevicePrimaryCtxRetain(&c, 0) == CUDA_ERROR_NOT_INITIALIZED);
	CHECK(cuCtxSynchronize() == CUDA_ERROR_NOT_INITIALIZED);
	CHECK(vgpu_initialized() == CUDA_ERROR_NOT_INITIALIZED);
	CHECK(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(vgpu_initialized() == CUDA_ERROR_NOT_INITIALIZED);
	CHECK(cuDriverGetVersion(&n) == CUDA_SUCCESS && n == 13000);
	CHECK(cuDriverGetVersion(NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
	CHECK(cuInit(0) == CUDA_SUCCESS);
	CHECK(cuInit(0) == CUDA_SUCCESS);
	CHECK(vgpu_initialized() == CUDA_SUCCESS);
}

static void test_errors(void)
{
	static const CUresult all[] = {
		0, 1, 2, 3, 4, 5, 6, 7, 8, 34, 36, 46, 100, 101, 102, 200, 201, 202, 205,
		206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220,
		221, 222, 223, 224, 225, 226, 300, 301, 302, 303, 304, 400, 401, 402, 500,
		600, 700, 701, 702, 703, 704, 705, 708, 709, 710, 711, 712, 713, 714, 715,
		716, 717, 718, 719, 720, 721, 800, 801, 802, 803, 804, 805, 806, 807, 808,
		809, 810, 811, 812, 900, 901, 902, 903, 904, 905, 906, 907, 908, 909, 910,
		911, 912, 913, 914, 915, 916, 999,
	};
	const char *s;

	CHECK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s) == CUDA_SUCCESS &&
	      !strcmp(s, "CUDA_ERROR_INVALID_VALUE"));
	CHECK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s) == CUDA_SUCCESS &&
	      !strcmp(s, "invalid argument"));
	CHECK(cuGetErrorString(CUDA_SUCCESS, &s) == CUDA_SUCCESS && !strcmp(s, "no error"));
	CHECK(cuGetErrorName(CUDA_ERROR_UNKNOWN, &s) == CUDA_SUCCESS &&
	      !strcmp(s, "CUDA_ERROR_UNKNOWN"));
	CHECK(cuGetErrorString(CUDA_ERROR_LAUNCH_FAILED, &s) == CUDA_SUCCESS &&
	      !strcmp(s, "unspecified launch failure"));
	s = "x";
	CHECK(cuGetErrorName((CUresult)12345, &s) == CUDA_ERROR_INVALID_VALUE && s == NULL);
	s = "x";
	CHECK(cuGetErrorString((CUresult)9, &s) == CUDA_ERROR_INVALID_VALUE && s == NULL);
	CHECK(cuGetErrorString((CUresult)-1, &s) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuGetErrorName(CUDA_SUCCESS, NULL) == CUDA_ERROR_INVALID_VALUE);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		const char *n = NULL, *str = NULL;

		CHECK(cuGetErrorName(all[i], &n) == CUDA_SUCCESS && n && !strncmp(n, "CUDA_", 5));
		CHECK(cuGetErrorString(all[i], &str) == CUDA_SUCCESS && str && *str);
	}
}

static void test_devices(void)
{
	char name[256], bus[32];
	unsigned int mem32;
	size_t mem;
	CUdevice d;
	CUuuid u;
	CUdevprop p;
	int n, v, maj, min;

	CHECK(cuDeviceGetCount(&n) == CUDA_SUCCESS && n == NDEV);
	CHECK(cuDeviceGetCount(NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGet(&d, 1) == CUDA_SUCCESS && d == 1);
	CHECK(cuDeviceGet(&d, NDEV) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGet(&d, -1) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetName(name, sizeof(name), 1) == CUDA_SUCCESS &&
	      !strcmp(name, "NVIDIA H100 80GB HBM3 #1"));
	CHECK(cuDeviceGetName(name, 7, 0) == CUDA_SUCCESS && !strcmp(name, "NVIDIA"));
	CHECK(cuDeviceGetName(name, 0, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGetUuid_v2(&u, 1) == CUDA_SUCCESS && u.bytes[0] == 16 && u.bytes[15] == 31);
	CHECK(cuDeviceGetUuid(&u, 0) == CUDA_SUCCESS && u.bytes[15] == 15);
	CHECK(cuDeviceTotalMem_v2(&mem, 0) == CUDA_SUCCESS && mem == 85520809984ull);
	CHECK(cuDeviceTotalMem(&mem32, 0) == CUDA_SUCCESS && mem32 == 0xffffffffu);
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) ==
		      CUDA_SUCCESS && v == 132);
	CHECK(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 5) ==
	      CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) ==
	      CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceComputeCapability(&maj, &min, 0) == CUDA_SUCCESS && maj == 9 && min == 0);
	CHECK(cuDeviceGetProperties(&p, 0) == CUDA_SUCCESS && p.maxThreadsPerBlock == 1024 &&
	      p.SIMDWidth == 32);
	CHECK(cuDeviceGetPCIBusId(bus, sizeof(bus), 1) == CUDA_SUCCESS &&
	      !strcmp(bus, "0000:1c:00.0"));
	CHECK(cuDeviceGetByPCIBusId(&d, "0000:1c:00.0") == CUDA_SUCCESS && d == 1);
	CHECK(cuDeviceGetByPCIBusId(&d, "0000:1B:00") == CUDA_SUCCESS && d == 0);
	CHECK(cuDeviceGetByPCIBusId(&d, "1c:00.0") == CUDA_SUCCESS && d == 1);
	CHECK(cuDeviceGetByPCIBusId(&d, "0000:99:00.0") == CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetByPCIBusId(&d, "bogus") == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceCanAccessPeer(&v, 0, 0) == CUDA_SUCCESS && v == 0);
	CHECK(cuDeviceCanAccessPeer(&v, 0, 1) == CUDA_SUCCESS && v == 0);
	CHECK(cuDeviceCanAccessPeer(&v, 0, 7) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0) ==
	      CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1) ==
		      CUDA_SUCCESS && v == 0);
	CHECK(cuDeviceGetExecAffinitySupport(&v, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0) ==
		      CUDA_SUCCESS && v == 0);
	CHECK(vgpu_device_attr(0, CU_DEVICE_ATTRIBUTE_WARP_SIZE) == 32);
	CHECK(vgpu_device_attr(9, CU_DEVICE_ATTRIBUTE_WARP_SIZE) == 0);
}

/* What the static cudart does: peek, make current, then retain. */
static void test_primary(void)
{
	CUcontext h, h2, cur;
	CUdevice d;
	unsigned int flags, ver;
	unsigned long long id1, id2;
	int active, retains = ops(VGPU_OP_PRIMARY_RETAIN);
	int releases = ops(VGPU_OP_PRIMARY_RELEASE), cls = cls_calls;

	CHECK(vgpu_primary_ctx_peek(0, &h) == CUDA_SUCCESS && h);
	CHECK(vgpu_primary_ctx_peek(NDEV, &h2) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuCtxSetCurrent(h) == CUDA_SUCCESS);
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == h);
	CHECK(cuCtxGetDevice(&d) == CUDA_SUCCESS && d == 0);
	CHECK(cuCtxGetApiVersion(NULL, &ver) == CUDA_SUCCESS && ver == 3020);
	CHECK(cuCtxGetId(NULL, &id1) == CUDA_SUCCESS && id1);
	/* Not retained: the worker has no mapping; nothing is sent. */
	{
		struct vgpu_ctx *vc;
		int syncs = ops(VGPU_OP_CTX_SYNCHRONIZE);

		CHECK(cuCtxSynchronize() == CUDA_ERROR_CONTEXT_IS_DESTROYED);
		CHECK(cuCtxSynchronize_v2(h) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
		CHECK(vgpu_ctx_current(&vc) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
		CHECK(vgpu_ctx_resolve(h, &vc) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
		CHECK(ops(VGPU_OP_CTX_SYNCHRONIZE) == syncs);
	}
	CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && !active);

	CHECK(cuDevicePrimaryCtxRetain(&h2, 0) == CUDA_SUCCESS && h2 == h);
	CHECK(ops(VGPU_OP_PRIMARY_RETAIN) == retains + 1);
	CHECK(last.arg[0] == 1 && last.arg[1] == 0);	/* id = device + 1 */
	CHECK(cuDevicePrimaryCtxRetain(&h2, 0) == CUDA_SUCCESS && h2 == h);
	CHECK(ops(VGPU_OP_PRIMARY_RETAIN) == retains + 1);	/* counted here */
	CHECK(cuCtxGetId(h, &id2) == CUDA_SUCCESS && id2 == id1);
	CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && active);
	CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
	CHECK(last.opcode == VGPU_OP_CTX_SYNCHRONIZE && last.ctx == 1);
	CHECK(cuCtxSynchronize_v2(h) == CUDA_SUCCESS && last.ctx == 1);

	/* Flags: v1 refuses an active context, v2 does not. */
	CHECK(cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC) ==
	      CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE);
	CHECK(cuDevicePrimaryCtxSetFlags_v2(0, CU_CTX_SCHED_BLOCKING_SYNC) == CUDA_SUCCESS);
	CHECK(last.opcode == VGPU_OP_PRIMARY_SET_FLAGS && last.arg[1] == CU_CTX_SCHED_BLOCKING_SYNC);
	CHECK(cuDevicePrimaryCtxSetFlags_v2(0, 3) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDevicePrimaryCtxSetFlags_v2(0, 0x100) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuCtxGetFlags(&flags) == CUDA_SUCCESS && flags == CU_CTX_SCHED_BLOCKING_SYNC);
	CHECK(cuDevicePrimaryCtxSetFlags_v2(0, 0) == CUDA_SUCCESS);

	/* Cache config, priorities (the limits are generated: test_calls_gen). */
	{
		int lo = 1, hi = 1;
		CUfunc_cache cc;
		CUsharedconfig sc;

		CHECK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1) == CUDA_SUCCESS);
		CHECK(cuCtxGetCacheConfig(&cc) == CUDA_SUCCESS && cc == CU_FUNC_CACHE_PREFER_L1);
		CHECK(cuCtxSetCacheConfig((CUfunc_cache)9) == CUDA_ERROR_INVALID_VALUE);
		CHECK(cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE) ==
		      CUDA_SUCCESS);
		CHECK(cuCtxGetSharedMemConfig(&sc) == CUDA_SUCCESS &&
		      sc == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
		CHECK(cuCtxGetStreamPriorityRange(&lo, &hi) == CUDA_SUCCESS && lo == 0 && hi == -5);
		CHECK(cuCtxGetStreamPriorityRange(NULL, NULL) == CUDA_SUCCESS);
	}

	/* Release: the last one tells the worker and runs the CLS destructors. */
	CHECK(cuDevicePrimaryCtxRelease_v2(0) == CUDA_SUCCESS);
	CHECK(ops(VGPU_OP_PRIMARY_RELEASE) == releases && cls_calls == cls);
	CHECK(cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
	CHECK(ops(VGPU_OP_PRIMARY_RELEASE) == releases + 1);
	CHECK(cls_calls == cls + 1 && cls_last == h);
	CHECK(cuDevicePrimaryCtxRelease_v2(0) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(wmap[1] == 0 && wprimary_refs[0] == 0);
	/* Still current, still answers local queries. */
	CHECK(cuCtxGetDevice(&d) == CUDA_SUCCESS && d == 0);
	CHECK(cuCtxSynchronize() == CUDA_ERROR_CONTEXT_IS_DESTROYED);
	CHECK(cuCtxGetId(NULL, &id2) == CUDA_SUCCESS && id2 != id1);	/* a new instance */

	/* Reset: destructors, RESET, and the release the active state owed. */
	CHECK(cuDevicePrimaryCtxRetain(&h2, 0) == CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&h2, 0) == CUDA_SUCCESS);
	cls = cls_calls;
	releases = ops(VGPU_OP_PRIMARY_RELEASE);
	CHECK(cuDevicePrimaryCtxReset_v2(0) == CUDA_SUCCESS);
	CHECK(ops(VGPU_OP_PRIMARY_RESET) >= 1 && ops(VGPU_OP_PRIMARY_RELEASE) == releases + 1);
	CHECK(cls_calls == cls + 1);
	CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && !active);
	CHECK(wmap[1] == 0 && wprimary_refs[0] == 0);
	CHECK(cuDevicePrimaryCtxRelease(0) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuDevicePrimaryCtxReset(0) == CUDA_SUCCESS);	/* inactive: no-op */
	CHECK(cuDevicePrimaryCtxRetain(&h2, 0) == CUDA_SUCCESS);	/* for what follows */
}

static void test_created(void)
{
	CUcontext c, c2, cur, prim, popped;
	CUctxCreateParams params;
	CUexecAffinityParam aff;
	CUdevice d;
	unsigned long long u1, u2;
	uint32_t id;
	int cls = cls_calls;

	CHECK(cuCtxGetCurrent(&prim) == CUDA_SUCCESS && prim);
	CHECK(cuCtxCreate_v4(&c, NULL, 0, 1) == CUDA_SUCCESS);
	id = (uint32_t)last.arg[0];
	CHECK(last.opcode == VGPU_OP_CTX_CREATE && id > VGPU_MAX_DEVICES && last.arg[1] == 1);
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c);
	CHECK(cuCtxGetDevice(&d) == CUDA_SUCCESS && d == 1);
	CHECK(cuCtxGetDevice_v2(&d, prim) == CUDA_SUCCESS && d == 0);
	CHECK(cuCtxSynchronize() == CUDA_SUCCESS && last.ctx == id);

	/* Push/pop. */
	CHECK(cuCtxPushCurrent_v2(prim) == CUDA_SUCCESS);
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == prim);
	CHECK(cuCtxPopCurrent_v2(&popped) == CUDA_SUCCESS && popped == prim);
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c);
	CHECK(cuCtxPushCurrent_v2(NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuCtxPushCurrent_v2((CUcontext)(uintptr_t)0x1234) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuCtxSetCurrent((CUcontext)(uintptr_t)0x1234) == CUDA_ERROR_INVALID_CONTEXT);

	/* Destroy pops it from this thread's stack. */
	CHECK(cuCtxGetId(c, &u1) == CUDA_SUCCESS);
	CHECK(cuCtxDestroy_v2(c) == CUDA_SUCCESS);
	CHECK(last.opcode == VGPU_OP_CTX_DESTROY && last.arg[0] == id);
	CHECK(cls_calls == cls + 1 && cls_last == c);
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == prim);
	CHECK(cuCtxDestroy_v2(c) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuCtxDestroy_v2(prim) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuCtxGetDevice_v2(&d, c) == CUDA_ERROR_INVALID_CONTEXT);

	/* Re-created at the same address with the same id: a new uid. */
	CHECK(cuCtxCreate_v2(&c2, CU_CTX_SCHED_YIELD, 0) == CUDA_SUCCESS);
	CHECK(cuCtxGetId(c2, &u2) == CUDA_SUCCESS && u2 != u1);
	CHECK(cuCtxGetFlags(&(unsigned int){ 0 }) == CUDA_SUCCESS);
	CHECK(cuCtxDestroy(c2) == CUDA_SUCCESS);

	/* Unsupported creation parameters. */
	memset(&params, 0, sizeof(params));
	params.execAffinityParams = &aff;
	params.numExecAffinityParams = 1;
	CHECK(cuCtxCreate_v4(&c, &params, 0, 0) == CUDA_ERROR_NOT_SUPPORTED);
	memset(&params, 0, sizeof(params));
	CHECK(cuCtxCreate_v4(&c, &params, 0, 0) == CUDA_SUCCESS);
	CHECK(cuCtxDestroy(c) == CUDA_SUCCESS);
	CHECK(cuCtxCreate_v3(&c, &aff, 1, 0, 0) == CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuCtxCreate(&c, 0, 9) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuCtxCreate(&c, 0x100, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuCtxCreate(NULL, 0, 0) == CUDA_ERROR_INVALID_VALUE);

	/* Pop everything: no current context. */
	while (cuCtxPopCurrent(NULL) == CUDA_SUCCESS)
		;
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL);
	CHECK(cuCtxGetDevice(&d) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(prim) == CUDA_SUCCESS);
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == prim);
}

/* A context destroyed by another thread reads as destroyed on this one. */
static pthread_barrier_t bar;
static CUcontext shared_ctx;

static void *other_thread(void *arg)
{
	CUdevice d;
	CUcontext cur;

	(void)arg;
	CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL);	/* per thread */
	CHECK(cuCtxPushCurrent(shared_ctx) == CUDA_SUCCESS);
	CHECK(cuCtxGetDevice(&d) == CUDA_SUCCESS && d == 1);
	pthread_barrier_wait(&bar);	/* main destroys it */
	pthread_barrier_wait(&bar);
	CHECK(cuCtxGetDevice(&d) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
	CHECK(cuCtxPopCurrent(&cur) == CUDA_SUCCESS && cur == shared_ctx);
	return NULL;
}

static void test_cross_thread(void)
{
	pthread_t t;
	CUcontext cur;

	CHECK(cuCtxCreate(&shared_ctx, 0, 1) == CUDA_SUCCESS);
	CHECK(cuCtxPopCurrent(&cur) == CUDA_SUCCESS && cur == shared_ctx);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t, NULL, other_thread, NULL);
	pthread_barrier_wait(&bar);
	CHECK(cuCtxDestroy(shared_ctx) == CUDA_SUCCESS);
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&bar);
}

/* 8 threads retain and release device 1's primary context at once: the
 * worker's count ends where it started and matches ours. */
static void *retain_loop(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		CUcontext h;

		if (cuDevicePrimaryCtxRetain(&h, 1) != CUDA_SUCCESS)
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
		if (cuDevicePrimaryCtxRelease_v2(1) != CUDA_SUCCESS)
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *create_loop(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++) {
		CUcontext c;
		CUdevice d;

		if (cuCtxCreate(&c, 0, 0) != CUDA_SUCCESS ||
		    cuCtxGetDevice(&d) != CUDA_SUCCESS || cuCtxDestroy(c) != CUDA_SUCCESS)
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[8];
	unsigned int flags;
	int active, creates = ops(VGPU_OP_CTX_CREATE);

	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, i % 2 ? retain_loop : create_loop, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	CHECK(cuDevicePrimaryCtxGetState(1, &flags, &active) == CUDA_SUCCESS && !active);
	CHECK(wprimary_refs[1] == 0 && wmap[2] == 0);
	CHECK(ops(VGPU_OP_CTX_CREATE) == creates + 4 * 2000);
	CHECK(ops(VGPU_OP_PRIMARY_RETAIN) >= 1);
	for (int i = VGPU_MAX_DEVICES + 1; i < WMAX; i++)
		if (wmap[i]) {
			CHECK(!"a created context left on the worker");
			break;
		}
}

int main(void)
{
	vgpu_log_init("test_context", VGPU_LOG_ERROR);
	setup();
	test_before_init();
	test_errors();
	test_devices();
	test_primary();
	test_created();
	test_cross_thread();
	test_threads();
	if (failures) {
		fprintf(stderr, "test_context: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_context: ok\n");
	return 0;
}
