// SPDX-License-Identifier: MIT
/*
 * CUDA IPC memory handles between vgpu sessions of the same user:
 * cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle. How the
 * handle finds its exporter and who may use it: ipc_server.c.
 *
 *  - What is exported: cuMemAlloc carves small allocations from 2 MiB
 *    chunks shared by several allocations of the session, and the device
 *    maps memory by whole granules, so the importer maps the whole physical
 *    allocation under the pointer (the chunk, or a large allocation's own
 *    memory) and gets a pointer to the allocation's base in it. A small
 *    allocation thus shows its chunk neighbours of the same session to the
 *    importer, as the driver's own suballocator does; every physical
 *    allocation of cuMemAlloc is made exportable (vmem.c) so no allocation
 *    has to move. Pool blocks (cuMemAllocAsync) and the program's own VMM
 *    memory are refused, as the driver refuses them.
 *  - Lifetimes: freeing the allocation ends its exports (later opens fail);
 *    memory an importer mapped stays alive until it closes it (its mapping
 *    holds a reference to the physical memory), as CUDA's does. Opening
 *    the same handle again in a session answers the same pointer and
 *    counts one more close. cuMemFree of opened memory is refused.
 *  - Checkpoints: a session that opened another process's memory is
 *    refused (the mapping is not the session's to save). An exporter is
 *    checkpointed as usual, its exported allocations as plain ones, and
 *    shares on where it is; its move to another worker is refused once
 *    another session opened one of its exports (the new worker's memory
 *    would be another), until the allocation is freed. A session restored
 *    from a file is a copy: handles made before name nothing in it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ipc.h"
#include "ipc_state.h"
#include "log.h"
#include "pool_state.h"

/* The program freed an allocation: its exports end (imports made keep theirs). */
static void mem_freed(void *arg, CUdeviceptr p)
{
	ipc_exports_end(arg, IPC_KIND_MEM, p);
}

static struct ipc_import *import_of(struct ipc_state *x, uint64_t key, uint64_t id)
{
	for (size_t i = 0; x && i < x->nim; i++)
		if (x->im[i].key == key && x->im[i].id == id)
			return &x->im[i];
	return NULL;
}

/* The current context's device (the entry's: OPF_NEEDS_CTX). */
static CUdevice ctx_device_of(struct worker *w)
{
	struct obj_entry *e = obj_get(&w->ctxs, w->cur_ctx);

	return e ? w->devices[(uint32_t)e->aux] : w->devices[0];
}

/* arg0 address; R: slot holds the 64 bytes */
static enum op_status op_get_mem(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = ipc_state_get(w);
	CUdeviceptr p = call->sqe->arg[0];
	struct ipc_export e = { .kind = IPC_KIND_MEM, .fd = -1 };
	CUdeviceptr base = 0;
	size_t bytes = 0, size = 0, off = 0;
	CUresult rc;

	pools_settle(w);
	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (!x) {
		call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
		return OP_DONE;
	}
	/* cuMemAlloc's memory only: not a pool's block, not another process's. */
	if (vmem_range_of(&w->vmem, p, &base, &bytes) ||
	    (w->pools && pool_block_find(w->pools, base) >= 0))
		return OP_DONE;
	if (!ipc_export_find(x, IPC_KIND_MEM, base, &e)) {
		rc = vmem_export_alloc(&w->vmem, base, &e.fd, &size, &off, &bytes);
		if (rc) {
			call->cqe->result = rc;
			return OP_DONE;
		}
		e.what = base;
		e.size = size;
		e.off = off;
		e.bytes = bytes;
		if ((rc = ipc_export_add(x, &e))) {
			call->cqe->result = rc;
			return OP_DONE;
		}
		w->vmem.on_free = mem_freed;
		w->vmem.on_free_arg = x;
	}
	return ipc_reply_handle(x, &e, call);
}

/* sqe.ctx, arg0 flags; P: the 64 bytes; R: val0 address, val1 bytes */
static enum op_status op_open_mem(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = ipc_state_get(w);
	CUmemGenericAllocationHandle mh = 0;
	struct ipc_import *im, *n;
	struct ipc_answer a;
	struct ipc_handle h;
	struct stat st;
	CUdeviceptr p = 0;
	CUresult rc;
	int fd = -1;

	pools_settle(w);
	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	if (call->len != sizeof(h) || (call->sqe->arg[0] & ~1ull))
		return OP_DONE;	/* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, or nothing */
	call->cqe->result = CUDA_ERROR_INVALID_HANDLE;	/* from here on */
	if ((rc = ipc_handle_in(x, call->payload, IPC_KIND_MEM, &h))) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	if ((im = import_of(x, h.key, h.id))) {
		if (im->refs == UINT32_MAX)
			return OP_DONE;
		im->refs++;
		p = im->p;
		goto done;
	}
	if (x->nim == x->imcap) {
		size_t cap = x->imcap ? 2 * x->imcap : 8;

		if (!(n = realloc(x->im, cap * sizeof(*n)))) {
			call->cqe->result = CUDA_ERROR_OUT_OF_MEMORY;
			return OP_DONE;
		}
		x->im = n;
		x->imcap = cap;
	}
	rc = ipc_ask(w, &h, &a, &fd);
	/* The answer is another process's word: whole granules in the window,
	 * the allocation inside them, a descriptor the backend judges. */
	if (!rc && (!a.size || a.size % w->vmem.gran || a.size > w->vmem.size || !a.bytes ||
		    a.off >= a.size || a.bytes > a.size - a.off || fstat(fd, &st) ||
		    S_ISDIR(st.st_mode)))
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (!rc)
		rc = w->B.cuMemImportFromShareableHandle(&mh, (void *)(intptr_t)fd,
							 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (fd >= 0)
		close(fd);
	if (!rc && (rc = vmem_map_ipc(&w->vmem, ctx_device_of(w), mh, a.size, a.off, a.bytes,
				      &p)))
		w->B.cuMemRelease(mh);
	if (rc) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	x->im[x->nim++] = (struct ipc_import){ .key = h.key, .id = h.id, .p = p,
					       .bytes = a.bytes, .refs = 1 };
	im = &x->im[x->nim - 1];
done:
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = p;
	call->cqe->val[1] = im->bytes;
	return OP_DONE;
}

/* sqe.ctx, arg0 address; R: val0 1 when the mapping went (its last close) */
static enum op_status op_close_mem(struct worker *w, struct op_call *call)
{
	struct ipc_state *x = w->ipc;
	CUdeviceptr p = call->sqe->arg[0];
	CUresult rc;
	size_t i;

	call->cqe->result = CUDA_ERROR_INVALID_VALUE;
	for (i = 0; x && i < x->nim && x->im[i].p != p; i++)
		;
	if (!x || i == x->nim)
		return OP_DONE;
	if (--x->im[i].refs) {
		call->cqe->result = CUDA_SUCCESS;
		return OP_DONE;
	}
	/* Nothing of this session may still be using it. */
	rc = w->B.cuCtxSynchronize();
	if (!rc)
		rc = vmem_unmap_ipc(&w->vmem, p);
	if (rc) {
		x->im[i].refs++;
		call->cqe->result = rc;
		return OP_DONE;
	}
	x->im[i] = x->im[--x->nim];
	call->cqe->result = CUDA_SUCCESS;
	call->cqe->val[0] = 1;
	return OP_DONE;
}

const struct op_desc exec_ipc_ops[] = {
	OP(IPC_GET_MEM, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_get_mem),
	OP(IPC_OPEN_MEM, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_open_mem),
	OP(IPC_CLOSE_MEM, OPF_SYNC_ONLY | OPF_NEEDS_CTX, op_close_mem),
	{ 0 },
};
