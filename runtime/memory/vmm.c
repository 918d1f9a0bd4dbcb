// SPDX-License-Identifier: MIT
/*
 * The virtual memory API (cuMemAddressReserve, cuMemCreate, cuMemMap, ...).
 * The worker owns the state: reservations come out of the session's device
 * window, allocations are named by ids it issues, and it checks that every
 * mapping puts the caller's own memory into the caller's own reservations.
 * Addresses in the window are device memory to the rest of the runtime, so
 * copies, memsets and kernels on mapped ranges take the device paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "calls_hand_gen.h"
#include "driver.h"
#include "fdpass.h"
#include "init.h"
#include "log.h"
#include "memory.h"
#include "unsupported.h"
#include "vmm.h"

/* The current context's id, or 0 with none (the API needs no context). */
static uint32_t ctx_id(void)
{
	struct vgpu_ctx *ctx = NULL;

	return vgpu_ctx_current(&ctx) || !ctx ? 0 : ctx->id;
}

static CUresult call(uint16_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
		     uint64_t a4, struct vgpu_cqe *c)
{
	struct vgpu_session *s;
	CUresult rc = vgpu_session(&s);

	return rc ? rc : vgpu_call5(op, ctx_id(), 0, a0, a1, a2, a3, a4, c);
}

/* Sends @r (arguments, payload and reply room set) in the current context
 * or in none; an answer must fill the reply room exactly. */
static CUresult send_req(struct vgpu_req *r, bool in_ctx)
{
	struct vgpu_session *s;
	CUresult rc = vgpu_session(&s);

	if (rc)
		return rc;
	r->sqe.ctx = in_ctx ? ctx_id() : 0;
	rc = vgpu_call(r);
	if (!rc && r->reply && r->cqe.val[2] != r->reply_cap)
		rc = CUDA_ERROR_UNKNOWN;	/* a worker that answered something else */
	return rc;
}

VGPU_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
					 CUdeviceptr addr, unsigned long long flags)
{
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	if (!ptr)
		return CUDA_ERROR_INVALID_VALUE;
	rc = call(VGPU_OP_VMM_RESERVE, size, alignment, addr, flags, 0, &c);
	if (!rc)
		*ptr = c.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	ENTER();
	return call(VGPU_OP_VMM_ADDR_FREE, ptr, size, 0, 0, 0, NULL);
}

VGPU_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				 const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_VMM_CREATE, .arg = { size, flags } },
			      .payload = prop, .payload_len = sizeof(*prop) };
	CUresult rc;

	ENTER();
	if (!handle || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	rc = send_req(&r, true);
	if (!rc)
		*handle = r.cqe.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	ENTER();
	return call(VGPU_OP_VMM_RELEASE, handle, 0, 0, 0, 0, NULL);
}

VGPU_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			      CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	ENTER();
	return call(VGPU_OP_VMM_MAP, ptr, size, offset, handle, flags, NULL);
}

VGPU_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	ENTER();
	return call(VGPU_OP_VMM_UNMAP, ptr, size, 0, 0, 0, NULL);
}

VGPU_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
				    size_t count)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_VMM_SET_ACCESS, .arg = { ptr, size } },
			      .payload = desc };

	ENTER();
	/* One descriptor per device at most is meaningful; the worker takes
	 * no more than it has devices' worth. */
	if (!desc || !count || count > VGPU_MAX_DEVICES)
		return CUDA_ERROR_INVALID_VALUE;
	r.payload_len = (uint32_t)(count * sizeof(*desc));
	return send_req(&r, true);
}

VGPU_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
				    CUdeviceptr ptr)
{
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	if (!flags || !location)
		return CUDA_ERROR_INVALID_VALUE;
	rc = call(VGPU_OP_VMM_GET_ACCESS, ptr, (uint64_t)location->type,
		  (uint64_t)(int64_t)location->id, 0, 0, &c);
	if (!rc)
		*flags = c.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
						   const CUmemAllocationProp *prop,
						   CUmemAllocationGranularity_flags option)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_VMM_GRANULARITY,
				       .arg = { (uint64_t)option } },
			      .payload = prop, .payload_len = sizeof(*prop) };
	CUresult rc;

	ENTER();
	if (!granularity || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	rc = send_req(&r, false);
	if (!rc)
		*granularity = r.cqe.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
							    CUmemGenericAllocationHandle handle)
{
	CUmemAllocationProp p;
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_VMM_PROPS, .arg = { handle } },
			      .reply = &p, .reply_cap = sizeof(p) };
	CUresult rc;

	ENTER();
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	rc = send_req(&r, false);
	if (!rc)
		*prop = p;
	return rc;
}

VGPU_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
						 void *addr)
{
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	rc = call(VGPU_OP_VMM_RETAIN, (uintptr_t)addr, 0, 0, 0, 0, &c);
	if (!rc)
		*handle = c.val[0];
	return rc;
}

CUresult vgpu_vmm_lookup(uint64_t p, struct vgpu_vmm_info *in)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_VMM_LOOKUP, .arg = { p } },
			      .reply = in, .reply_cap = sizeof(*in) };

	return send_req(&r, false);
}

/* ---- sharing by descriptor ------------------------------------------------------ */

/* The session's socket carries descriptors both ways (struct vgpu_fd_msg):
 * one exchange at a time, so that each finds its own. */
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t next_token(void)
{
	static uint64_t n;

	return ((uint64_t)getpid() << 32) | (__atomic_add_fetch(&n, 1, __ATOMIC_RELAXED) & 0xffffffffu);
}

/* The descriptor the worker sent for @token, already on the socket. */
static CUresult take_fd(struct vgpu_session *s, uint64_t token, int *out)
{
	for (;;) {
		struct pollfd p = { .fd = s->sock, .events = POLLIN };
		struct vgpu_fd_msg m;
		unsigned n = 1;
		int fd = -1, got;

		if (poll(&p, 1, 5000) != 1 || !(p.revents & POLLIN))
			return CUDA_ERROR_OPERATING_SYSTEM;
		got = vgpu_recv_fds_exact(s->sock, &m, sizeof(m), &fd, &n);
		if (got < 0 && got != -EMSGSIZE)
			return CUDA_ERROR_OPERATING_SYSTEM;
		if (got == (int)sizeof(m) && n == 1 && m.magic == VGPU_FD_MSG_MAGIC &&
		    m.token == token) {
			*out = fd;
			return CUDA_SUCCESS;
		}
		if (n == 1 && fd >= 0)
			close(fd);	/* a stale one: an earlier export that gave up */
		if (got == 0)
			return CUDA_ERROR_OPERATING_SYSTEM;
	}
}

VGPU_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
						  CUmemGenericAllocationHandle handle,
						  CUmemAllocationHandleType handleType,
						  unsigned long long flags)
{
	struct vgpu_session *s;
	uint64_t token = next_token();
	CUresult rc;
	int fd = -1;

	ENTER();
	if (!shareableHandle)
		return CUDA_ERROR_INVALID_VALUE;
	if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
	    handleType != CU_MEM_HANDLE_TYPE_FABRIC) {
		vlog_info("cuMemExportToShareableHandle: handle type %d is not supported "
			  "(POSIX descriptors and fabric handles only)", (int)handleType);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if ((rc = vgpu_session(&s)))
		return rc;
	if (handleType == CU_MEM_HANDLE_TYPE_FABRIC) {
		CUmemFabricHandle fh;
		struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_VMM_EXPORT,
					       .arg = { handle, handleType, flags } },
				      .reply = &fh, .reply_cap = sizeof(fh) };

		rc = send_req(&r, true);
		if (!rc)
			memcpy(shareableHandle, &fh, sizeof(fh));
		return rc;
	}
	pthread_mutex_lock(&fd_lock);
	rc = vgpu_call5(VGPU_OP_VMM_EXPORT, ctx_id(), 0, handle, handleType, flags, token, 0,
			NULL);
	if (!rc)
		rc = take_fd(s, token, &fd);
	pthread_mutex_unlock(&fd_lock);
	if (!rc)
		*(int *)shareableHandle = fd;
	return rc;
}

VGPU_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
						    void *osHandle,
						    CUmemAllocationHandleType shHandleType)
{
	struct vgpu_fd_msg m = { .magic = VGPU_FD_MSG_MAGIC, .token = next_token() };
	int fd = (int)(intptr_t)osHandle;
	struct vgpu_session *s;
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	ENTER();
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (shHandleType == CU_MEM_HANDLE_TYPE_FABRIC) {
		struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_VMM_IMPORT,
					       .arg = { 0, shHandleType } },
				      .payload = osHandle, .payload_len = sizeof(CUmemFabricHandle) };

		if (!osHandle)
			return CUDA_ERROR_INVALID_VALUE;
		rc = send_req(&r, true);
		if (!rc)
			*handle = r.cqe.val[0];
		return rc;
	}
	if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
		vlog_info("cuMemImportFromShareableHandle: handle type %d is not supported "
			  "(POSIX descriptors and fabric handles only)", (int)shHandleType);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = vgpu_session(&s)))
		return rc;
	/* The descriptor first: the worker keeps it until the entry comes. */
	pthread_mutex_lock(&fd_lock);
	if (vgpu_send_fds(s->sock, &m, sizeof(m), &fd, 1) != (int)sizeof(m))
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	else
		rc = vgpu_call5(VGPU_OP_VMM_IMPORT, ctx_id(), 0, m.token, shHandleType, 0, 0, 0,
				&c);
	pthread_mutex_unlock(&fd_lock);
	if (!rc)
		*handle = c.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
						   CUmemRangeHandleType handleType,
						   unsigned long long flags)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	uint64_t token = next_token();
	CUresult rc;
	int fd = -1;

	ENTER();
	if (!handle || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
	    (flags & ~(unsigned long long)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = vgpu_session(&s)) || (rc = vgpu_ctx_current(&ctx)))
		return rc;
	pthread_mutex_lock(&fd_lock);
	rc = vgpu_call5(VGPU_OP_VMM_RANGE_HANDLE, ctx->id, 0, dptr, size, handleType, flags, token,
			NULL);
	if (!rc)
		rc = take_fd(s, token, &fd);
	pthread_mutex_unlock(&fd_lock);
	if (!rc)
		*(int *)handle = fd;
	return rc;
}

/* The same channel for the pools' descriptors (pool.c). */
void vgpu_fd_lock(void)
{
	pthread_mutex_lock(&fd_lock);
}

void vgpu_fd_unlock(void)
{
	pthread_mutex_unlock(&fd_lock);
}

bool vgpu_fd_trylock(void)
{
	return !pthread_mutex_trylock(&fd_lock);
}

uint64_t vgpu_fd_token(void)
{
	return next_token();
}

CUresult vgpu_fd_take(struct vgpu_session *s, uint64_t token, int *fd)
{
	return take_fd(s, token, fd);
}

/* ---- what vgpu cannot do yet ------------------------------------------------- */

/* Every variant lands here: there is no CUDA array to map. */
CUresult vgpu_hand_cuMemMapArrayAsync(bool ptds, CUarrayMapInfo *mapInfoList, unsigned int count,
				      CUstream hStream)
{
	(void)ptds;
	(void)mapInfoList;
	(void)count;
	(void)hStream;
	ENTER();
	return vgpu_unsupported("cuMemMapArrayAsync (CUDA arrays do not exist in vgpu)");
}
