// SPDX-License-Identifier: MIT
/*
 * CUDA IPC memory handles between workers (daemon/worker/ipc/), three
 * sessions in one process over the host backend: an exporter of client uid
 * 1000, an importer of the same user and one of uid 1001. The handle opens
 * for the same user only (the server checks the asking session's client
 * uid, whatever uid the workers run as); it names the allocation, at its
 * base inside the mapped chunk; forged handles, the exporter's own handle
 * and a freed allocation's handle are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ipc.h"
#include "ipc_state.h"
#include "ipc_wire.h"
#include "pool_state.h"
#include "worker.h"

#include "check.h"

/* What ipc_mem.c and ipc_server.c need of the rest of the worker. */
void pools_settle(struct worker *w)
{
	(void)w;
}

long pool_block_find(struct pools *ps, CUdeviceptr p)
{
	(void)ps;
	(void)p;
	return -1;
}

void ipc_hostreg_end_all(struct worker *w)
{
	(void)w;
}

static struct worker E, I, O;	/* exporter, importer, other user's */

static void session(struct worker *w, const struct vgpu_backend *B, CUdevice dev,
		    uint32_t uid, CUdeviceptr hint)
{
	w->B = *B;
	w->client_uid = uid;
	w->device_count = 1;
	w->devices[0] = dev;
	obj_table_init(&w->ctxs, "context");
	obj_table_init(&w->events, "event");
	CHECK(vmem_init(&w->vmem, &w->B, 1ull << 30, hint) == CUDA_SUCCESS, "window");
}

static const struct op_desc *op(uint16_t code)
{
	for (const struct op_desc *d = exec_ipc_ops; d->fn; d++)
		if (d->opcode == code)
			return d;
	return NULL;
}

/* One entry through its handler: the result; val0 and the reply out. */
static CUresult run(struct worker *w, uint16_t code, uint64_t a0, const void *payload,
		    uint32_t len, uint64_t *val0, void *reply)
{
	struct vgpu_sqe s = { .opcode = code, .tag = 1, .arg = { a0 } };
	struct vgpu_cqe c = { 0 };
	uint8_t slot[256] = { 0 };
	struct op_call call = { .sqe = &s, .payload = payload, .len = len, .cqe = &c,
				.reply = slot };

	op(code)->fn(w, &call);
	if (val0)
		*val0 = c.val[0];
	if (reply)
		memcpy(reply, slot, sizeof(CUipcMemHandle));
	return (CUresult)c.result;
}

int main(void)
{
	struct vgpu_backend B;
	CUipcMemHandle h, h2, hf, forged;
	CUdeviceptr a, b, f;
	uint64_t p = 0, p2 = 0, v = 0;
	CUcontext ctx;
	CUdevice dev;

	if (vgpu_backend_host_open(&B) || B.cuInit(0) || B.cuDeviceGet(&dev, 0) ||
	    B.cuDevicePrimaryCtxRetain(&ctx, dev) || B.cuCtxSetCurrent(ctx)) {
		printf("test_ipc: host backend did not start\n");
		return 1;
	}
	session(&E, &B, dev, 1000, 0x210000000000ull);
	session(&I, &B, dev, 1000, 0x220000000000ull);
	session(&O, &B, dev, 1001, 0x230000000000ull);

	CHECK(vmem_alloc(&E.vmem, dev, 4096, &b) == CUDA_SUCCESS, "a neighbour");
	CHECK(vmem_alloc(&E.vmem, dev, 4096, &a) == CUDA_SUCCESS, "an allocation");
	CHECK(vmem_alloc(&E.vmem, dev, 4096, &f) == CUDA_SUCCESS, "one to free");
	memset((void *)(uintptr_t)a, 0x5a, 4096);
	memset((void *)(uintptr_t)b, 0x11, 4096);
	CHECK(run(&E, VGPU_OP_IPC_GET_MEM, a + 100, NULL, 0, NULL, &h) == CUDA_SUCCESS,
	      "exported by an inner pointer");
	CHECK(run(&E, VGPU_OP_IPC_GET_MEM, a, NULL, 0, NULL, &h2) == CUDA_SUCCESS &&
	      !memcmp(&h, &h2, sizeof(h)), "the same handle again");
	CHECK(run(&E, VGPU_OP_IPC_GET_MEM, f, NULL, 0, NULL, &hf) == CUDA_SUCCESS, "third export");
	CHECK(vmem_free(&E.vmem, f) == CUDA_SUCCESS, "freed");
	CHECK(run(&E, VGPU_OP_IPC_GET_MEM, E.vmem.base + (900ull << 20), NULL, 0, NULL, NULL) ==
	      CUDA_ERROR_INVALID_VALUE, "nothing allocated there");

	CHECK(run(&O, VGPU_OP_IPC_OPEN_MEM, 0, &h, sizeof(h), &v, NULL) ==
	      CUDA_ERROR_INVALID_HANDLE, "another user's session is refused");
	CHECK(!O.ipc || !O.ipc->nim, "and holds nothing");
	CHECK(run(&E, VGPU_OP_IPC_OPEN_MEM, 0, &h, sizeof(h), &v, NULL) ==
	      CUDA_ERROR_INVALID_CONTEXT, "the exporter does not open its own handle");
	forged = h;
	forged.reserved[24] ^= 1;	/* the secret */
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 0, &forged, sizeof(forged), &v, NULL) ==
	      CUDA_ERROR_INVALID_HANDLE, "a forged secret");
	forged = h;
	forged.reserved[16] ^= 1;	/* the id */
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 0, &forged, sizeof(forged), &v, NULL) ==
	      CUDA_ERROR_INVALID_HANDLE, "a forged id");
	forged = h;
	forged.reserved[8] ^= 1;	/* the server */
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 0, &forged, sizeof(forged), &v, NULL) ==
	      CUDA_ERROR_INVALID_HANDLE, "no such server");
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 0, &h, 10, &v, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "a short handle");
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 0, &hf, sizeof(hf), &v, NULL) ==
	      CUDA_ERROR_INVALID_HANDLE, "a freed allocation's handle");

	CHECK(ipc_move_refusal(&E) == NULL, "nobody opened anything: the exporter may move");
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 1, &h, sizeof(h), &p, NULL) == CUDA_SUCCESS,
	      "the same user's session opens it");
	CHECK(ipc_move_refusal(&E) != NULL, "opened: the exporter may not move");
	CHECK(p >= I.vmem.base && p < I.vmem.base + I.vmem.size, "in its window");
	CHECK(!memcmp((void *)(uintptr_t)p, (void *)(uintptr_t)a, 4096), "the allocation's bytes");
	memset((void *)(uintptr_t)p, 0x77, 4096);
	CHECK(((unsigned char *)(uintptr_t)a)[4095] == 0x77 &&
	      ((unsigned char *)(uintptr_t)b)[0] == 0x11, "shared, and the neighbour untouched");
	{
		CUdeviceptr base = 0;
		size_t size = 0;

		CHECK(vmem_range_of(&I.vmem, p + 10, &base, &size) == CUDA_SUCCESS && base == p &&
		      size == 4096, "its range is the allocation's");
	}
	CHECK(vmem_free(&I.vmem, p) == CUDA_ERROR_INVALID_VALUE, "not freed as an allocation");
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 0, &h, sizeof(h), &p2, NULL) == CUDA_SUCCESS &&
	      p2 == p, "opened again: the same pointer");
	CHECK(ipc_ckpt_refusal(&I) != NULL, "the importer refuses checkpoints");
	CHECK(ipc_ckpt_refusal(&E) == NULL, "the exporter does not");
	CHECK(run(&I, VGPU_OP_IPC_CLOSE_MEM, p, NULL, 0, &v, NULL) == CUDA_SUCCESS && !v,
	      "first close: still mapped");
	CHECK(run(&I, VGPU_OP_IPC_CLOSE_MEM, p, NULL, 0, &v, NULL) == CUDA_SUCCESS && v == 1,
	      "second close: unmapped");
	CHECK(run(&I, VGPU_OP_IPC_CLOSE_MEM, p, NULL, 0, &v, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "third close");
	CHECK(ipc_ckpt_refusal(&I) == NULL, "nothing held: checkpoints again");
	CHECK(vmem_free(&E.vmem, a) == CUDA_SUCCESS, "the exporter frees it");
	CHECK(run(&I, VGPU_OP_IPC_OPEN_MEM, 0, &h, sizeof(h), &p, NULL) ==
	      CUDA_ERROR_INVALID_HANDLE, "its handle names nothing now");
	CHECK(ipc_move_refusal(&E) == NULL, "freed: the exporter may move again");

	ipc_session_end(&I);
	ipc_session_end(&O);
	ipc_session_end(&E);
	vmem_destroy(&I.vmem);
	vmem_destroy(&O.vmem);
	vmem_destroy(&E.vmem);
	printf("test_ipc: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
