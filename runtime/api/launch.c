// SPDX-License-Identifier: MIT
/*
 * Kernel launches and host functions, all posted without waiting.
 *
 * A launch is checked here against the function's cached attributes and
 * the device snapshot (block size, grid and block dimensions, dynamic
 * shared memory), so that the errors the driver returns synchronously are
 * returned synchronously; what only the GPU can tell comes back at the next
 * synchronous call. kernelParams are packed at the cached offsets into the
 * parameter block the kernel sees; `extra` (BUFFER_POINTER/BUFFER_SIZE) is
 * that block already, sent as given. The entry is built in a per-thread
 * buffer: no allocation per launch, no lock but the client's submit lock.
 *
 * cuLaunchKernelEx attributes:
 *   COOPERATIVE, CLUSTER_DIMENSION, PRIORITY     sent to the worker
 *   PROGRAMMATIC_EVENT, LAUNCH_COMPLETION_EVENT  the event is recorded
 *       right after the kernel: it fires when the kernel is done, later
 *       than the driver would (when blocks trigger or have all started),
 *       which is safe for every waiter except a kernel that spins until
 *       its partner has started
 *   PROGRAMMATIC_STREAM_SERIALIZATION            ignored: without it the
 *       kernel waits for the previous one in full, which is correct (PDL
 *       only overlaps), and griddepcontrol.wait returns at once
 *   ACCESS_POLICY_WINDOW, SYNCHRONIZATION_POLICY, CLUSTER_SCHEDULING_POLICY,
 *   MEM_SYNC_DOMAIN(_MAP), PREFERRED_CLUSTER_DIMENSION,
 *   PREFERRED_SHARED_MEMORY_CARVEOUT, NVLINK_UTIL_CENTRIC_SCHEDULING
 *                                                ignored: hints, or scopes
 *       whose default is the conservative one
 *   DEVICE_UPDATABLE_KERNEL_NODE (graphs only), unknown ids: INVALID_VALUE
 */
#include <stdlib.h>
#include <string.h>

#include "calls_hand_gen.h"
#include "driver.h"
#include "entry.h"
#include "graph.h"
#include "handles.h"
#include "init.h"

/* One launch entry: header and parameter block, built per thread. */
static __thread union {
	struct vgpu_launch l;
	uint8_t b[sizeof(struct vgpu_launch) + VGPU_MAX_PARAM_BYTES];
} entry;

#define MAX_AFTER 2	/* events recorded behind a launch */

struct launch {
	unsigned int grid[3], block[3];
	unsigned int smem;
	CUstream stream;
	bool ptds;
	void **params, **extra;
	uint32_t cluster[3];
	int32_t priority;
	uint32_t flags;		/* VGPU_LAUNCH_* */
	const struct vgpu_event *after[MAX_AFTER];
	int nafter;
};

/* The limits cuLaunchKernel checks before anything is queued. */
static CUresult check_dims(const struct vgpu_func *f, const struct launch *L, CUdevice dev)
{
	/* VGPU_DIM_PACK's widths: 31 bits for x, 16 for y and z. */
	static const unsigned int pack_max[3] = { 0x7fffffffu, 0xffffu, 0xffffu };
	static const CUdevice_attribute grid_attr[3] = {
		CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
		CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
	};
	static const CUdevice_attribute block_attr[3] = {
		CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
		CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
	};
	const struct vgpu_device_info *d;
	uint64_t threads = 1;
	int max_threads, max_smem;
	CUresult rc = vgpu_device_info(dev, &d);

	if (rc)
		return rc;
	for (int i = 0; i < 3; i++) {
		int gmax = d->attr[grid_attr[i]], bmax = d->attr[block_attr[i]];

		if (!L->grid[i] || !L->block[i] || L->grid[i] > pack_max[i] ||
		    L->block[i] > pack_max[i])
			return CUDA_ERROR_INVALID_VALUE;
		if ((gmax > 0 && L->grid[i] > (unsigned int)gmax) ||
		    (bmax > 0 && L->block[i] > (unsigned int)bmax))
			return CUDA_ERROR_INVALID_VALUE;
		threads *= L->block[i];
	}
	/* 0: the worker could not read the attribute; let the driver judge. */
	max_threads = f->info->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	if (max_threads > 0 && threads > (uint64_t)max_threads)
		return CUDA_ERROR_INVALID_VALUE;
	max_smem = __atomic_load_n(&f->info->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES],
				   __ATOMIC_RELAXED);
	if (L->smem > (unsigned int)max_smem)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; L->cluster[0] && i < 3; i++)
		if (!L->cluster[i] || L->grid[i] % L->cluster[i])
			return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	return CUDA_SUCCESS;
}

/* All of the grid must be resident at once. */
static CUresult check_cooperative(struct vgpu_func *f, const struct launch *L, CUdevice dev)
{
	uint64_t grid = (uint64_t)L->grid[0] * L->grid[1] * L->grid[2];
	int per_sm = 0;
	CUresult rc = cuOccupancyMaxActiveBlocksPerMultiprocessor(
		&per_sm, (CUfunction)f, L->block[0] * L->block[1] * L->block[2], L->smem);

	if (rc)
		return rc;
	if (grid > (uint64_t)per_sm * vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT))
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	return CUDA_SUCCESS;
}

/* The parameter block from `extra`; *bytes stays 0 when it names none. */
static CUresult from_extra(void **extra, uint8_t *dst, uint32_t *bytes)
{
	const void *ptr = NULL;
	const size_t *size = NULL;

	for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			ptr = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			size = extra[i + 1];
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (!ptr || !size)	/* one without the other has no effect */
		return CUDA_SUCCESS;
	if (*size > VGPU_MAX_PARAM_BYTES)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(dst, ptr, *size);
	*bytes = *size;
	return CUDA_SUCCESS;
}

static CUresult pack_params(const struct vgpu_func *f, const struct launch *L, uint8_t *dst,
			    uint32_t *bytes)
{
	const struct vgpu_func_info *fi = f->info;
	CUresult rc;

	*bytes = 0;
	if (L->params && L->extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (L->extra) {
		rc = from_extra(L->extra, dst, bytes);
		if (rc || *bytes || !fi->param_count)
			return rc;
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!fi->param_count)
		return CUDA_SUCCESS;
	if (!L->params)
		return CUDA_ERROR_INVALID_VALUE;
	/* Padding between parameters must not carry the last launch's bytes. */
	memset(dst, 0, fi->param_bytes);
	for (uint32_t i = 0; i < fi->param_count; i++) {
		if (!L->params[i])
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(dst + fi->param[i].offset, L->params[i], fi->param[i].size);
	}
	*bytes = fi->param_bytes;
	return CUDA_SUCCESS;
}

static CUresult launch(CUfunction h, struct launch *L)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_LAUNCH } };
	struct vgpu_func *f;
	struct vgpu_ctx *ctx;
	uint32_t sid, bytes;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_func_resolve(h, &f);
	if (!rc)	/* a capture may make it a graph node's function */
		vgpu_func_remember(f);
	if (!rc)
		rc = vgpu_stream_resolve(L->stream, L->ptds, &ctx, &sid);
	if (!rc)
		rc = check_dims(f, L, ctx->dev);
	if (!rc && (L->flags & VGPU_LAUNCH_COOPERATIVE))
		rc = check_cooperative(f, L, ctx->dev);
	if (!rc)
		rc = pack_params(f, L, entry.b + sizeof(entry.l), &bytes);
	if (rc)
		return rc;
	entry.l = (struct vgpu_launch){
		.param_bytes = bytes,
		.cluster_x = L->cluster[0],
		.cluster_y = L->cluster[1],
		.cluster_z = L->cluster[2],
		.priority = L->priority,
		.flags = L->flags,
	};
	r.sqe.ctx = ctx->id;
	r.sqe.stream = sid;
	r.sqe.arg[0] = f->id;
	r.sqe.arg[1] = VGPU_DIM_PACK(L->grid[0], L->grid[1], L->grid[2]);
	r.sqe.arg[2] = VGPU_DIM_PACK(L->block[0], L->block[1], L->block[2]);
	r.sqe.arg[3] = L->smem;
	r.payload = entry.b;
	r.payload_len = sizeof(entry.l) + bytes;
	rc = vgpu_post(&r);
	for (int i = 0; !rc && i < L->nafter; i++)
		rc = vgpu_post5(VGPU_OP_EVENT_RECORD, ctx->id, sid, L->after[i]->id, 0, 0, 0, 0);
	return rc;
}

static CUresult launch_kernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			      unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
			      CUstream stream, bool ptds, void **params, void **extra,
			      uint32_t flags)
{
	struct launch L = {
		.grid = { gx, gy, gz },
		.block = { bx, by, bz },
		.smem = smem,
		.stream = stream,
		.ptds = ptds,
		.params = params,
		.extra = extra,
		.flags = flags,
	};

	return launch(f, &L);
}

CUresult vgpu_hand_cuLaunchKernel(bool ptds, CUfunction f, unsigned int gridDimX,
				  unsigned int gridDimY, unsigned int gridDimZ,
				  unsigned int blockDimX, unsigned int blockDimY,
				  unsigned int blockDimZ, unsigned int sharedMemBytes,
				  CUstream hStream, void **kernelParams, void **extra)
{
	return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			     sharedMemBytes, hStream, ptds, kernelParams, extra, 0);
}

CUresult vgpu_hand_cuLaunchCooperativeKernel(bool ptds, CUfunction f, unsigned int gridDimX,
					     unsigned int gridDimY, unsigned int gridDimZ,
					     unsigned int blockDimX, unsigned int blockDimY,
					     unsigned int blockDimZ, unsigned int sharedMemBytes,
					     CUstream hStream, void **kernelParams)
{
	return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			     sharedMemBytes, hStream, ptds, kernelParams, NULL,
			     VGPU_LAUNCH_COOPERATIVE);
}

static CUresult after_event(struct launch *L, CUevent h, int flags)
{
	struct vgpu_event *ev;

	if (vgpu_event_resolve(h, &ev))
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags || L->nafter == MAX_AFTER)
		return CUDA_ERROR_INVALID_VALUE;
	L->after[L->nafter++] = ev;
	return CUDA_SUCCESS;
}

static CUresult attribute(struct launch *L, const CUlaunchAttribute *a)
{
	const CUlaunchAttributeValue *v = &a->value;

	switch (a->id) {
	case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
		if (v->cooperative)
			L->flags |= VGPU_LAUNCH_COOPERATIVE;
		else
			L->flags &= ~VGPU_LAUNCH_COOPERATIVE;
		return CUDA_SUCCESS;
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		L->cluster[0] = v->clusterDim.x;
		L->cluster[1] = v->clusterDim.y;
		L->cluster[2] = v->clusterDim.z;
		return L->cluster[0] ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CLUSTER_SIZE;
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		L->priority = v->priority;
		return CUDA_SUCCESS;
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		return after_event(L, v->programmaticEvent.event, v->programmaticEvent.flags);
	case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
		return after_event(L, v->launchCompletionEvent.event,
				   v->launchCompletionEvent.flags);
	case CU_LAUNCH_ATTRIBUTE_IGNORE:
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
	case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult vgpu_hand_cuLaunchKernelEx(bool ptds, const CUlaunchConfig *config, CUfunction f,
				    void **params, void **extra)
{
	struct launch L = { .ptds = ptds, .params = params, .extra = extra };
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	L.grid[0] = config->gridDimX;
	L.grid[1] = config->gridDimY;
	L.grid[2] = config->gridDimZ;
	L.block[0] = config->blockDimX;
	L.block[1] = config->blockDimY;
	L.block[2] = config->blockDimZ;
	L.smem = config->sharedMemBytes;
	L.stream = config->hStream;
	for (unsigned int i = 0; i < config->numAttrs; i++) {
		rc = attribute(&L, &config->attrs[i]);
		if (rc)
			return rc;
	}
	return launch(f, &L);
}

/* ---- host functions ------------------------------------------------------- */

static CUresult host_func(CUstream h, bool ptds, void (*fn)(void *), void *data)
{
	struct vgpu_ctx *ctx;
	uint32_t sid;
	uint64_t cookie;
	CUresult rc = vgpu_stream_resolve(h, ptds, &ctx, &sid);

	if (rc)
		return rc;
	cookie = vgpu_graph_capturing() ? vgpu_callback_keep(fn, data)
					: vgpu_callback_cookie(fn, data);
	if (!cookie)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = vgpu_post5(VGPU_OP_HOST_FUNC, ctx->id, sid, cookie, 0, 0, 0, 0);
	if (rc)
		vgpu_callback_cancel(cookie);	/* a kept one stays */
	return rc;
}

CUresult vgpu_hand_cuLaunchHostFunc(bool ptds, CUstream h, CUhostFn fn, void *data)
{
	CUresult rc = vgpu_enter_nonnull(fn);

	if (rc)
		return rc;
	return host_func(h, ptds, fn, data);
}

/* cuStreamAddCallback's callback also gets the stream and a status. */
struct stream_cb {
	CUstreamCallback fn;
	CUstream stream;
	void *data;
};

static void run_stream_cb(void *arg)
{
	struct stream_cb c = *(struct stream_cb *)arg;

	free(arg);
	c.fn(c.stream, CUDA_SUCCESS, c.data);
}

CUresult vgpu_hand_cuStreamAddCallback(bool ptds, CUstream h, CUstreamCallback fn, void *data,
				       unsigned int flags)
{
	struct stream_cb *c;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!fn || flags)
		return CUDA_ERROR_INVALID_VALUE;
	c = malloc(sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*c = (struct stream_cb){ .fn = fn, .stream = h, .data = data };
	rc = host_func(h, ptds, run_stream_cb, c);
	if (rc)
		free(c);
	return rc;
}
