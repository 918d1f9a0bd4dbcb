// SPDX-License-Identifier: MIT
/*
 * cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle: the worker
 * makes and reads the 64 bytes (daemon/worker/ipc/ipc_mem.c says what they
 * hold and who may use them); the runtime keeps which pointers it opened,
 * how many times, so that pointer queries, copies and cuMemFree know them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "forward.h"
#include "handles.h"
#include "init.h"
#include "ipc.h"
#include "log.h"
#include "managed.h"
#include "memory.h"

struct opened {
	uint64_t p;
	uint32_t refs;
};

static struct {
	pthread_mutex_t lock;
	struct opened *o;
	size_t n, cap;
} I = { .lock = PTHREAD_MUTEX_INITIALIZER };

static long find(uint64_t p)
{
	for (size_t i = 0; i < I.n; i++)
		if (I.o[i].p == p)
			return (long)i;
	return -1;
}

bool vgpu_ipc_is_open(uint64_t p)
{
	bool r;

	pthread_mutex_lock(&I.lock);
	r = find(p) >= 0;
	pthread_mutex_unlock(&I.lock);
	return r;
}

VGPU_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_IPC_GET_MEM } };
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	uint64_t base, bytes;
	CUresult rc;

	ENTER();
	if (!pHandle)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = vgpu_session(&s)) || (rc = vgpu_ctx_current(&ctx)))
		return rc;
	/* Managed memory is not exported, as the driver's is not (the worker
	 * would share only its device copy). */
	if (!vgpu_is_device(s, dptr) || vgpu_managed_find(dptr, 1, &base, &bytes))
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = dptr;
	return vgpu_call_exact(&r, pHandle, sizeof(*pHandle));
}

VGPU_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
					   unsigned int Flags)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_IPC_OPEN_MEM } };
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	uint64_t p;
	long i;
	CUresult rc;

	ENTER();
	if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = vgpu_session(&s)) || (rc = vgpu_ctx_current(&ctx)))
		return rc;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = Flags;
	r.payload = &handle;
	r.payload_len = sizeof(handle);
	rc = vgpu_call(&r);
	if (rc)
		return rc;
	p = r.cqe.val[0];
	if (!vgpu_is_device(s, p) || !r.cqe.val[1]) {
		vlog_err("worker opened IPC memory at %#llx outside the device window",
			 (unsigned long long)p);
		return CUDA_ERROR_UNKNOWN;
	}
	pthread_mutex_lock(&I.lock);
	if ((i = find(p)) >= 0) {
		I.o[i].refs++;
	} else {
		if (I.n == I.cap) {
			size_t cap = I.cap ? 2 * I.cap : 8;
			struct opened *n = realloc(I.o, cap * sizeof(*n));

			if (!n) {
				pthread_mutex_unlock(&I.lock);
				vgpu_post5(VGPU_OP_IPC_CLOSE_MEM, ctx->id, 0, p, 0, 0, 0, 0);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			I.o = n;
			I.cap = cap;
		}
		I.o[I.n++] = (struct opened){ p, 1 };
		vgpu_mem_note_device(p, r.cqe.val[1], ctx);
	}
	pthread_mutex_unlock(&I.lock);
	*pdptr = p;
	return CUDA_SUCCESS;
}

/* The CUDA 4.x symbol: the same prototype and meaning. */
VGPU_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
					unsigned int Flags)
{
	return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

VGPU_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe c = { 0 };
	long i;
	CUresult rc;

	ENTER();
	if ((rc = vgpu_ctx_current(&ctx)))
		return rc;
	pthread_mutex_lock(&I.lock);
	i = find(dptr);
	pthread_mutex_unlock(&I.lock);
	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(VGPU_OP_IPC_CLOSE_MEM, ctx->id, 0, dptr, 0, 0, 0, 0, &c);
	if (rc)
		return rc;
	pthread_mutex_lock(&I.lock);
	if ((i = find(dptr)) >= 0 && !--I.o[i].refs) {
		I.o[i] = I.o[--I.n];
		vgpu_mem_forget_device(dptr);
	}
	pthread_mutex_unlock(&I.lock);
	return CUDA_SUCCESS;
}
