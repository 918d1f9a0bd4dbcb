// SPDX-License-Identifier: MIT
/*
 * ToolsContext {21318c60-9714-3248-8ca6-41ff7324c8f2}: per-context queries
 * meant for profilers, which cuBLAS also asks for before a GEMM (seen with
 * cuBLAS 13 on an H200: without the table every GEMM fails). What is known
 * of its slots (reference/interception.md §2, and traces of the real table
 * under cuBLAS 13 with tools/dark-trace): [3] the context's device, [4] a
 * context number, [51] and [39] per-context tool state. The table is as
 * long as the driver's; every other slot logs which one was called and
 * fails.
 */
#include "dark_api.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "log.h"

/* [3] the device of a context (NULL: the current one). */
static CUresult tools_ctx_device(CUcontext ctx, CUdevice *dev)
{
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	return cuCtxGetDevice_v2(dev, ctx);
}

/* [4] a number naming the context; the driver answers 0 for none. */
static CUresult tools_ctx_number(CUcontext ctx, uint64_t *out)
{
	unsigned long long id = 0;

	if (!out)
		return CUDA_ERROR_UNKNOWN;
	if (ctx && cuCtxGetId(ctx, &id) != CUDA_SUCCESS)
		id = 1;
	*out = ctx ? id : 0;
	return CUDA_SUCCESS;
}

/*
 * [51](ctx, 0, &obj) then [39](ctx, obj, &out): a per-context pool of small
 * device buffers that cuBLAS uses around its GEMMs (with zeroed records it
 * fails every GEMM with CUBLAS_STATUS_INTERNAL_ERROR). Laid out as the
 * driver's, seen with tools/dark-trace under cuBLAS 13.1 on an H100: the
 * object holds {1, 0, ctx, 0, 0, 1, ..., [9] state, [11] 1, [15..22] eight
 * records}; each record is {owner, device address, 0x800 bytes, a host
 * object, 1 << 32, the object, previous, next} in a circular list, the eight
 * buffers contiguous; [39] stores 7.
 */
#define TOOLS_CTX_OBJECTS 16
#define TOOLS_CTX_RECORDS 8
#define TOOLS_CTX_RECORD_BYTES 0x800

struct tools_ctx_object;

struct tools_ctx_record {
	const void *owner;
	uint64_t dptr;
	uint64_t size;
	const void *host;
	uint64_t flags;
	struct tools_ctx_object *obj;
	struct tools_ctx_record *prev, *next;
	uint64_t rest[17];		/* 200 bytes in all */
};

static struct tools_ctx_object {
	uint64_t one;
	uint64_t zero1;
	CUcontext ctx;
	uint64_t zero2[2];
	uint64_t one2;
	uint64_t zero3[3];
	const uint64_t *state;		/* {ctx, 0, 0, 1} */
	uint64_t zero4;
	uint64_t one3;
	uint64_t zero5[3];
	struct tools_ctx_record *records[TOOLS_CTX_RECORDS];
	uint64_t zero6;
	uint64_t state_mem[8];
	uint64_t owner_mem[32];
	uint64_t host_mem[TOOLS_CTX_RECORDS][10];
	struct tools_ctx_record record_mem[TOOLS_CTX_RECORDS];
} tools_ctx_objects[TOOLS_CTX_OBJECTS];
static pthread_mutex_t tools_ctx_lock = PTHREAD_MUTEX_INITIALIZER;

/* Fills a fresh object for ctx, its buffers allocated in ctx. */
static CUresult tools_ctx_object_init(struct tools_ctx_object *o, CUcontext ctx)
{
	CUdeviceptr base = 0;
	CUcontext popped;
	CUresult rc = cuCtxPushCurrent_v2(ctx);

	if (rc)
		return rc;
	rc = cuMemAlloc_v2(&base, TOOLS_CTX_RECORDS * TOOLS_CTX_RECORD_BYTES);
	cuCtxPopCurrent_v2(&popped);
	if (rc)
		return rc;
	memset(o, 0, sizeof(*o));
	o->one = o->one2 = o->one3 = 1;
	o->ctx = ctx;
	o->state_mem[0] = (uint64_t)(uintptr_t)ctx;
	o->state_mem[3] = 1;
	o->state = o->state_mem;
	for (int i = 0; i < TOOLS_CTX_RECORDS; i++) {
		struct tools_ctx_record *r = &o->record_mem[i];

		r->owner = o->owner_mem;
		r->dptr = base + (uint64_t)i * TOOLS_CTX_RECORD_BYTES;
		r->size = TOOLS_CTX_RECORD_BYTES;
		r->host = o->host_mem[i];
		r->flags = 1ull << 32;
		r->obj = o;
		r->prev = &o->record_mem[(i + TOOLS_CTX_RECORDS - 1) % TOOLS_CTX_RECORDS];
		r->next = &o->record_mem[(i + 1) % TOOLS_CTX_RECORDS];
		o->records[i] = r;
	}
	return CUDA_SUCCESS;
}

static CUresult tools_ctx_get_object(CUcontext ctx, uint64_t handle, struct tools_ctx_object **out)
{
	struct tools_ctx_object *o = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (handle == UINT64_MAX)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!ctx && cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&tools_ctx_lock);
	for (int i = 0; i < TOOLS_CTX_OBJECTS && !o; i++)
		if (tools_ctx_objects[i].ctx == ctx)
			o = &tools_ctx_objects[i];
	for (int i = 0; i < TOOLS_CTX_OBJECTS && !o; i++)
		if (!tools_ctx_objects[i].ctx) {
			rc = tools_ctx_object_init(&tools_ctx_objects[i], ctx);
			if (!rc)
				o = &tools_ctx_objects[i];
			break;
		}
	pthread_mutex_unlock(&tools_ctx_lock);
	if (rc)
		return rc;
	if (!o) {
		vlog_warn("dark API: TOOLS_CONTEXT[51]: more than %d contexts", TOOLS_CTX_OBJECTS);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = o;
	return CUDA_SUCCESS;
}

static CUresult tools_ctx_query39(CUcontext ctx, const struct tools_ctx_object *obj, uint64_t *out)
{
	(void)ctx;
	if (!obj || !out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = 7;
	return CUDA_SUCCESS;
}

VGPU_DARK_TABLE(TOOLS_CONTEXT,
	[3] = (const void *)tools_ctx_device,
	[4] = (const void *)tools_ctx_number,
	[39] = (const void *)tools_ctx_query39,
	[51] = (const void *)tools_ctx_get_object)
