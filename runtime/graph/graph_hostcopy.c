// SPDX-License-Identifier: MIT
/*
 * Graph copy nodes with a host end, explicit (cuGraphAddMemcpyNode and the
 * generic calls) or captured (a pageable cudaMemcpyAsync while the stream
 * captures).
 *
 * An end in the pinned pool (cuMemHostAlloc) is mapped at the same address
 * in the worker: the node names it as it names device memory. The worker
 * cannot reach the program's pageable (or registered) memory when a graph
 * runs, so such an end is staged: a pool block of its own holds the bytes
 * and a callback of ours, run in this process by the worker at every
 * launch (as host nodes are), fills it before the copy (to the device) or
 * empties it into the program's memory after (from the device). The
 * worker makes the pair one node (daemon/worker/graph/graph_hostcopy.c);
 * the program sees a copy node whose parameters name its own memory
 * (vgpu_graph_copy_answer puts them back).
 *
 * A staged end's block and callback live as long as the session, as host
 * node callbacks do, one for each end (address, shape, direction) however
 * many nodes name it: the node, its graph's clones and instances all name
 * them, and the driver copies graphs without telling. Launches of two
 * instances (or clones) of one graph that overlap share the block, as they
 * would share a pinned buffer the program named: order them (CUDA orders
 * launches in one stream).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "calls_hand_gen.h"
#include "client.h"
#include "driver.h"
#include "graph.h"
#include "graph_hostcopy.h"
#include "init.h"
#include "memory.h"
#include "unsupported.h"

/* One staged end. The block holds width bytes a row, height rows a layer,
 * depth layers, packed; the program's end keeps its own pitches. */
struct staged {
	uint8_t *host;		/* the program's first byte */
	uint8_t *stage;		/* a pinned pool block */
	uint64_t pitch, rows;	/* the program's end: bytes a row, rows a layer */
	uint64_t width, height, depth;
	bool up;		/* to the device: the block is filled before */
	uint64_t cookie;	/* staged_run on this */
	struct staged *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct staged *all;

static void CUDA_CB staged_run(void *arg)
{
	const struct staged *s = arg;

	for (uint64_t z = 0; z < s->depth; z++)
		for (uint64_t y = 0; y < s->height; y++) {
			uint8_t *h = s->host + (z * s->rows + y) * s->pitch;
			uint8_t *t = s->stage + (z * s->height + y) * s->width;

			if (s->up)
				memcpy(t, h, s->width);
			else
				memcpy(h, t, s->width);
		}
}

/* A staged end for the program's @host with its pitches; *cookie names the
 * callback. */
static CUresult stage(uint8_t *host, uint64_t pitch, uint64_t rows, uint64_t width,
		      uint64_t height, uint64_t depth, bool up, struct staged **out,
		      uint64_t *cookie)
{
	struct staged *s;
	uint64_t bytes;
	void *block = NULL;
	CUresult rc;

	if (!host || !width || !height || !depth ||
	    __builtin_mul_overflow(width, height, &bytes) ||
	    __builtin_mul_overflow(bytes, depth, &bytes) || bytes > SIZE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((height > 1 || depth > 1) && pitch < width)
		return CUDA_ERROR_INVALID_VALUE;
	if (depth > 1 && rows < height)
		return CUDA_ERROR_INVALID_VALUE;
	/* One block for one end: a program that captures the same copy at
	 * every step (jacobiCudaGraphs) makes no more. */
	pthread_mutex_lock(&lock);
	for (s = all; s; s = s->next)
		if (s->host == host && s->pitch == pitch && s->rows == rows &&
		    s->width == width && s->height == height && s->depth == depth && s->up == up)
			break;
	pthread_mutex_unlock(&lock);
	if (s) {
		*out = s;
		*cookie = s->cookie;
		return CUDA_SUCCESS;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = vgpu_host_alloc_staging(&block, (size_t)bytes))) {
		free(s);
		return rc;
	}
	*s = (struct staged){ .host = host, .stage = block, .pitch = pitch, .rows = rows,
			      .width = width, .height = height, .depth = depth, .up = up };
	if (!(s->cookie = *cookie = vgpu_callback_keep(staged_run, s))) {
		cuMemFreeHost(block);
		free(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&lock);
	s->next = all;
	all = s;
	pthread_mutex_unlock(&lock);
	*out = s;
	return CUDA_SUCCESS;
}

/* How the worker reaches one end of a copy. */
enum reach { REACH_DEVICE, REACH_POOL, REACH_STAGED };

static CUresult reach_of(CUmemorytype t, uint64_t addr, enum reach *out)
{
	struct vgpu_session *s;
	CUresult rc;

	switch (t) {
	case CU_MEMORYTYPE_DEVICE:
		*out = REACH_DEVICE;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_HOST:
	case CU_MEMORYTYPE_UNIFIED:
		if ((rc = vgpu_session(&s)))
			return rc;
		switch (vgpu_mem_classify(s, addr, 1, NULL)) {
		case VGPU_MEM_POOL:
			*out = REACH_POOL;
			break;
		case VGPU_MEM_DEVICE:
			*out = REACH_DEVICE;
			break;
		default:	/* the program's own memory */
			*out = REACH_STAGED;
		}
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
		return vgpu_unsupported("a graph copy node with an array");
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult vgpu_graph_copy_desc(const CUDA_MEMCPY3D *c, struct vgpu_node_params *v)
{
	enum reach sr, dr;
	uint64_t src, dst, cookie = 0;
	struct staged *st;
	CUresult rc;

	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->srcLOD || c->dstLOD || c->reserved0 || c->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)c->srcHost : c->srcDevice;
	dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)c->dstHost : c->dstDevice;
	if ((rc = reach_of(c->srcMemoryType, src, &sr)) ||
	    (rc = reach_of(c->dstMemoryType, dst, &dr)))
		return rc;
	src += c->srcXInBytes + (c->srcY + c->srcZ * c->srcHeight) * c->srcPitch;
	dst += c->dstXInBytes + (c->dstY + c->dstZ * c->dstHeight) * c->dstPitch;
	*v = (struct vgpu_node_params){
		.type = CU_GRAPH_NODE_TYPE_MEMCPY, .src = src, .dst = dst,
		.src_pitch = c->srcPitch, .dst_pitch = c->dstPitch,
		.src_rows = c->srcHeight, .dst_rows = c->dstHeight,
		.width = c->WidthInBytes, .height = c->Height, .depth = c->Depth,
	};
	if (sr != REACH_STAGED && dr != REACH_STAGED)
		return CUDA_SUCCESS;
	if (sr == REACH_STAGED && dr == REACH_STAGED)
		return vgpu_unsupported("a graph copy node between two pageable host buffers");
	if ((sr == REACH_STAGED && dr != REACH_DEVICE) || (dr == REACH_STAGED && sr != REACH_DEVICE))
		return vgpu_unsupported("a graph copy node between pageable and pinned host memory");
	if (sr == REACH_STAGED) {
		rc = stage((uint8_t *)(uintptr_t)src, c->srcPitch, c->srcHeight, c->WidthInBytes,
			   c->Height, c->Depth, true, &st, &cookie);
		if (rc)
			return rc;
		v->src = (uintptr_t)st->stage;
		v->src_pitch = c->WidthInBytes;
		v->src_rows = c->Height;
		v->id = 1;
	} else {
		rc = stage((uint8_t *)(uintptr_t)dst, c->dstPitch, c->dstHeight, c->WidthInBytes,
			   c->Height, c->Depth, false, &st, &cookie);
		if (rc)
			return rc;
		v->dst = (uintptr_t)st->stage;
		v->dst_pitch = c->WidthInBytes;
		v->dst_rows = c->Height;
		v->id = 2;
	}
	v->value = (uint32_t)cookie;
	v->elem = (uint32_t)(cookie >> 32);
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_copy_answer(CUDA_MEMCPY3D *c)
{
	struct vgpu_array *a;

	if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY) {
		if (!(a = vgpu_array_by_id((uintptr_t)c->srcArray)))
			return CUDA_ERROR_INVALID_VALUE;
		c->srcArray = (CUarray)a;
	}
	if (c->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
		if (!(a = vgpu_array_by_id((uintptr_t)c->dstArray)))
			return CUDA_ERROR_INVALID_VALUE;
		c->dstArray = (CUarray)a;
	}
	pthread_mutex_lock(&lock);
	for (struct staged *s = all; s; s = s->next) {
		if (c->srcMemoryType == CU_MEMORYTYPE_HOST && c->srcHost == s->stage && s->up) {
			c->srcHost = s->host;
			c->srcPitch = s->pitch;
			c->srcHeight = s->rows;
		}
		if (c->dstMemoryType == CU_MEMORYTYPE_HOST && c->dstHost == s->stage && !s->up) {
			c->dstHost = s->host;
			c->dstPitch = s->pitch;
			c->dstHeight = s->rows;
		}
	}
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_capture_staged(CUstream h, bool ptds, uint64_t dst, uint64_t src, uint64_t n,
				   bool *done)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_CAPTURE_STAGED } };
	CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
	const CUDA_MEMCPY3D c = {
		.srcMemoryType = CU_MEMORYTYPE_UNIFIED, .srcDevice = src, .srcPitch = n,
		.srcHeight = 1,
		.dstMemoryType = CU_MEMORYTYPE_UNIFIED, .dstDevice = dst, .dstPitch = n,
		.dstHeight = 1,
		.WidthInBytes = n, .Height = 1, .Depth = 1,
	};
	struct vgpu_node_params v;
	struct vgpu_ctx *ctx;
	uint32_t sid;
	CUresult rc;

	*done = false;
	if (!vgpu_graph_capturing())
		return CUDA_SUCCESS;
	if ((rc = vgpu_hand_cuStreamIsCapturing(ptds, h, &status)))
		return rc;
	if (status == CU_STREAM_CAPTURE_STATUS_NONE)
		return CUDA_SUCCESS;
	if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	*done = true;
	if ((rc = vgpu_stream_resolve(h, ptds, &ctx, &sid)))
		return rc;
	if ((rc = vgpu_graph_copy_desc(&c, &v)))
		return rc;
	if (!v.id)	/* the caller staged only what the worker cannot reach */
		return CUDA_ERROR_INVALID_VALUE;
	r.sqe.ctx = ctx->id;
	r.sqe.stream = sid;
	r.payload = &v;
	r.payload_len = sizeof(v);
	return vgpu_call(&r);
}

/* ---- copies with an array end -------------------------------------------- */

bool vgpu_graph_copy_has_array(const CUDA_MEMCPY3D *c)
{
	return c && (c->srcMemoryType == CU_MEMORYTYPE_ARRAY ||
		     c->dstMemoryType == CU_MEMORYTYPE_ARRAY);
}

/* One end as an array copy names it: an array by id, or an address the
 * worker reaches (device memory, the pinned pool). */
static CUresult array_copy_end(CUmemorytype t, const void *host, CUdeviceptr dev, CUarray arr,
			       size_t x, size_t y, size_t z, size_t pitch, size_t height,
			       struct vgpu_copy_end *e)
{
	struct vgpu_array *a;
	enum reach r;
	uint64_t addr = t == CU_MEMORYTYPE_HOST ? (uintptr_t)host : dev;
	CUresult rc;

	*e = (struct vgpu_copy_end){ .x = x, .y = y, .z = z };
	if (t == CU_MEMORYTYPE_ARRAY) {
		if ((rc = vgpu_array_resolve(arr, &a)))
			return rc == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : rc;
		e->kind = VGPU_COPY_END_ARRAY;
		e->ref = a->id;
		return CUDA_SUCCESS;
	}
	if ((rc = reach_of(t, addr, &r)))
		return rc;
	if (r == REACH_STAGED)
		return vgpu_unsupported("a graph copy node between an array and pageable host "
					"memory");
	e->kind = VGPU_COPY_END_ADDR;
	e->ref = addr;
	e->pitch = pitch;
	e->height = height;
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_add_array_copy(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
				   const CUgraphEdgeData *edges, size_t ndeps,
				   const CUDA_MEMCPY3D *c)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_ADD_ARRAY_COPY } };
	struct vgpu_array_copy ac = { .width = c->WidthInBytes, .height = c->Height,
				      .depth = c->Depth };
	struct vgpu_ctx *ctx;
	uint32_t gid;
	uint8_t *buf;
	CUresult rc = vgpu_graph_lookup(g, &ctx, &gid);

	if (rc)
		return rc;
	if (!out || (ndeps && !deps) || ndeps > VGPU_MAX_GRAPH_NODES)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->srcLOD || c->dstLOD || c->reserved0 || c->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = array_copy_end(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray,
				 c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch, c->srcHeight,
				 &ac.src)) ||
	    (rc = array_copy_end(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray,
				 c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch, c->dstHeight,
				 &ac.dst)))
		return rc;
	if (vgpu_graph_edges_plain(edges, ndeps))
		edges = NULL;	/* the ordinary edges: none sent */
	buf = malloc(sizeof(ac) + ndeps * (sizeof(uint32_t) + sizeof(*edges)));
	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(buf, &ac, sizeof(ac));
	rc = vgpu_graph_node_ids(g, deps, ndeps, (uint32_t *)(buf + sizeof(ac)));
	if (!rc) {
		r.sqe.ctx = ctx->id;
		r.sqe.arg[0] = gid;
		r.sqe.arg[1] = ndeps;
		rc = vgpu_graph_edges_call(&r, buf, sizeof(ac) + ndeps * sizeof(uint32_t), edges,
					   ndeps);
	}
	free(buf);
	if (!rc)
		rc = vgpu_graph_node_made(g, (uint32_t)r.cqe.val[0], CU_GRAPH_NODE_TYPE_MEMCPY, out);
	return rc;
}
