// SPDX-License-Identifier: MIT
/*
 * The worker's memory pools over the host backend, through the opcode
 * handlers as a ring entry reaches them: every value the client sends is
 * checked (pool ids, devices, sizes, streams, addresses, attributes),
 * reuse follows the pool's policy, destroyed pools live on until their
 * last block goes, and a checkpoint's pool records are taken back only
 * when they match the session's memory.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_state.h"
#include "vgpu/ckpt.h"
#include "worker.h"

#include "check.h"

static struct worker W;
static CUstream S1, S2;

/* dispatch.c's, which would bring every handler table along. */
CUstream worker_stream(struct worker *w, const struct vgpu_sqe *sqe, CUresult *err)
{
	struct obj_entry *e;

	*err = CUDA_SUCCESS;
	if (!sqe->stream)
		return NULL;
	e = obj_get(&w->streams, sqe->stream);
	if (!e) {
		*err = CUDA_ERROR_INVALID_HANDLE;
		return NULL;
	}
	return e->obj;
}

/* exec_graph_mem.c's: no graph allocation node here. */
bool graph_mem_free(struct worker *w, CUdeviceptr p, CUstream st, bool async, CUresult *rc)
{
	(void)w, (void)p, (void)st, (void)async, (void)rc;
	return false;
}

static const struct op_desc *find_op(uint16_t code)
{
	for (const struct op_desc *d = exec_pool_ops; d->fn; d++)
		if (d->opcode == code)
			return d;
	return NULL;
}

/* One entry through its handler; the answer's val[0] in *v. */
static CUresult call(uint16_t op, uint32_t stream, uint64_t a0, uint64_t a1, uint64_t a2,
		     uint64_t a3, uint64_t *v)
{
	struct vgpu_sqe sqe = { .opcode = op, .tag = 1, .stream = stream,
				.arg = { a0, a1, a2, a3 } };
	struct vgpu_cqe cqe = { .tag = 1 };
	struct op_call c = { .sqe = &sqe, .cqe = &cqe };
	const struct op_desc *d = find_op(op);

	if (!d)
		return CUDA_ERROR_UNKNOWN;
	d->fn(&W, &c);
	if (v)
		*v = cqe.val[0];
	return (CUresult)cqe.result;
}

static uint64_t attr(uint64_t pool, CUmemPool_attribute a)
{
	uint64_t v = ~0ull;

	return call(VGPU_OP_POOL_GET_ATTR, 0, pool, a, 0, 0, &v) ? ~0ull : v;
}

static uint64_t alloc(uint64_t pool, uint32_t stream, uint64_t bytes)
{
	uint64_t p = 0;

	return call(VGPU_OP_MEM_ALLOC_ASYNC, stream, pool, bytes, 0, 0, &p) ? 0 : p;
}

static CUresult drop(uint32_t stream, uint64_t p)
{
	return call(VGPU_OP_MEM_FREE_ASYNC, stream, p, 0, 0, 0, NULL);
}

static void handlers(void)
{
	uint64_t p, q, r, big = W.vmem.size + 1;

	CHECK(call(VGPU_OP_POOL_CREATE, 0, 1, 0, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "a default pool's id");
	CHECK(call(VGPU_OP_POOL_CREATE, 0, 100, 5, 0, 0, NULL) == CUDA_ERROR_INVALID_DEVICE,
	      "a device the session lacks");
	CHECK(call(VGPU_OP_POOL_CREATE, 0, 100, 0, 1ull << 40, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "handle types beyond 32 bits");
	CHECK(call(VGPU_OP_POOL_CREATE, 0, POOL_MAX_ID, 0, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "an id beyond the table");
	CHECK(call(VGPU_OP_POOL_CREATE, 0, 100, 0, 0, 0, NULL) == CUDA_SUCCESS, "a pool");
	CHECK(call(VGPU_OP_POOL_CREATE, 0, 100, 0, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "its id twice");

	CHECK(call(VGPU_OP_MEM_ALLOC_ASYNC, 1, 999, 64, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "no such pool");
	CHECK(call(VGPU_OP_MEM_ALLOC_ASYNC, 1, 1, 0, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "zero bytes");
	CHECK(call(VGPU_OP_MEM_ALLOC_ASYNC, 1, 1, big, 0, 0, NULL) == CUDA_ERROR_OUT_OF_MEMORY,
	      "more than the window");
	CHECK(call(VGPU_OP_MEM_ALLOC_ASYNC, 77, 1, 64, 0, 0, NULL) == CUDA_ERROR_INVALID_HANDLE,
	      "no such stream");
	p = alloc(1, 1, 1000);
	CHECK(p >= W.vmem.base && p + 1000 <= W.vmem.base + W.vmem.size, "inside the window");
	memset((void *)(uintptr_t)p, 0x5a, 1000);	/* really backed */
	CHECK(attr(1, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 1024, "used, by its size class");

	CHECK(drop(1, p + 256) == CUDA_ERROR_INVALID_VALUE, "a free inside a block");
	CHECK(drop(1, W.vmem.base + W.vmem.size - 4096) == CUDA_ERROR_INVALID_VALUE,
	      "a free of nothing");
	CHECK(drop(77, p) == CUDA_ERROR_INVALID_HANDLE, "a free on no stream");
	CHECK(drop(1, p) == CUDA_SUCCESS, "a free");
	CHECK(drop(1, p) == CUDA_ERROR_INVALID_VALUE, "the same free twice");
	CHECK(attr(1, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0, "nothing used");
	CHECK(attr(1, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 1024, "still reserved (no sync)");
	CHECK(alloc(1, 1, 1000) == p, "the same stream takes it again");

	/* No reuse across streams without a policy that allows it. */
	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 1, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0, 0,
		   NULL) == CUDA_SUCCESS);
	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 1, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 0,
		   0, NULL) == CUDA_SUCCESS);
	CHECK(drop(1, p) == CUDA_SUCCESS);
	q = alloc(1, 2, 1000);
	CHECK(q && q != p, "another stream gets other memory");
	/* Following the program's events (the policy is on by default). */
	pools_event_recorded(&W, 9, 1, S1);
	pools_stream_waited(&W, 2, 9, S2);
	CHECK(alloc(1, 2, 1000) == p, "a stream that waited for an event after the free takes it");
	pools_event_recorded(&W, 10, 2, S2);
	CHECK(drop(2, p) == CUDA_SUCCESS);
	pools_stream_waited(&W, 1, 10, S1);
	r = alloc(1, 1, 1000);
	CHECK(r && r != p && r != q, "an event recorded before the free orders nothing");
	pools_event_recorded(&W, 10, 2, S2);	/* now after the free */
	pools_stream_waited(&W, 3, 10, NULL);
	pools_stream_gone(&W, 3);
	pools_event_gone(&W, 10);
	pools_stream_waited(&W, 1, 10, S1);
	CHECK(alloc(1, 1, 1000) != p, "nor a destroyed event");
	for (size_t i = 0; i < W.pools->nknow; i++)
		CHECK(W.pools->know[i].stream != 3, "a destroyed stream's order is forgotten");
	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 1, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, 0, 0,
		   NULL) == CUDA_SUCCESS);
	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 1, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 1,
		   0, NULL) == CUDA_SUCCESS);
	CHECK(alloc(1, 1, 1000) == p, "with internal dependencies it waits and reuses");
	/* Everything back: p, q, r and the one of the refused reuse. */
	for (size_t i = W.pools->nb; i-- > 0;)
		if (W.pools->b[i].state == BLOCK_LIVE && W.pools->b[i].pool == W.pools->p[1])
			CHECK(drop(1, W.pools->b[i].addr) == CUDA_SUCCESS);
	pools_sync_point(&W);
	CHECK(attr(1, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0, "threshold 0: returned at a sync");
	CHECK(vmem_range_of(&W.vmem, p, &(CUdeviceptr){ 0 }, &(size_t){ 0 }) == CUDA_ERROR_NOT_FOUND,
	      "and gone from the window");

	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 1, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 5, 0, NULL) ==
	      CUDA_ERROR_INVALID_VALUE, "a high mark set to non-zero");
	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 1, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, 0, 0, NULL) ==
	      CUDA_ERROR_INVALID_VALUE, "the current usage set");
	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 1, 99, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(VGPU_OP_POOL_GET_ATTR, 0, 1, 99, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(VGPU_OP_POOL_GET_ATTR, 0, 12345, 1, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(VGPU_OP_POOL_TRIM, 0, 12345, 0, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE);

	/* A destroyed pool keeps its live block until it is freed. */
	r = alloc(100, 1, 5000);
	CHECK(r != 0);
	CHECK(call(VGPU_OP_POOL_DESTROY, 0, 1, 0, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE,
	      "a default pool destroyed");
	CHECK(call(VGPU_OP_POOL_DESTROY, 0, 100, 0, 0, 0, NULL) == CUDA_SUCCESS);
	CHECK(attr(100, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == ~0ull, "its id is gone");
	CHECK(vmem_range_of(&W.vmem, r, &(CUdeviceptr){ 0 }, &(size_t){ 0 }) == CUDA_SUCCESS,
	      "its block lives on");
	CHECK(W.pools->nzombies == 1);
	CHECK(drop(1, r) == CUDA_SUCCESS);
	CHECK(W.pools->nzombies == 0, "the last free takes the pool along");
	CHECK(vmem_range_of(&W.vmem, r, &(CUdeviceptr){ 0 }, &(size_t){ 0 }) == CUDA_ERROR_NOT_FOUND);

	CHECK(call(VGPU_OP_GRAPH_MEM_ATTR, 0, 3, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, 0, 0, NULL) ==
	      CUDA_ERROR_INVALID_DEVICE);
	CHECK(call(VGPU_OP_GRAPH_MEM_ATTR, 0, 0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, 1, 7, NULL) ==
	      CUDA_ERROR_INVALID_VALUE, "a graph high mark set to non-zero");
	CHECK(call(VGPU_OP_GRAPH_MEM_ATTR, 0, 0, 99, 0, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(VGPU_OP_GRAPH_MEM_TRIM, 0, 9, 0, 0, 0, NULL) == CUDA_ERROR_INVALID_DEVICE);
}

/* A block as a captured cuMemAllocAsync makes it (the host backend does
 * not capture, so the capture's part is played here). */
static uint64_t graph_block(uint64_t cid)
{
	CUdeviceptr p = 0;
	struct pool_block *b;

	CHECK(pool_window_alloc(&W, 0, 4096, &p) == CUDA_SUCCESS);
	b = pool_block_add(W.pools, p, 4096, NULL);
	CHECK(b != NULL);
	b->state = BLOCK_GRAPH;
	b->capture = cid;
	pool_graph_note(W.pools, 0, 4096);
	return p;
}

static bool mapped(uint64_t p)
{
	return !vmem_range_of(&W.vmem, p, &(CUdeviceptr){ 0 }, &(size_t){ 0 });
}

static void graphs(void)
{
	uint64_t kept = graph_block(7), inner = graph_block(7), failed = graph_block(8), used = 0;
	uint64_t before = attr(1, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);

	W.pools->b[pool_block_find(W.pools, inner)].graph_freed = true;	/* a captured free */
	pools_capture_end(&W, 8, 0);
	CHECK(!mapped(failed), "a failed capture's memory is released");
	pools_capture_end(&W, 7, 50);
	CHECK(call(VGPU_OP_GRAPH_MEM_ATTR, 0, 0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, 0, 0, &used) ==
	      CUDA_SUCCESS && used == 8192, "graph memory is counted");
	pools_graph_instantiated(&W, 50, 60);
	pools_graph_launched(&W, 60);
	CHECK(drop(1, kept) == CUDA_SUCCESS, "the program frees what a launch allocated");
	CHECK(drop(1, kept) == CUDA_ERROR_INVALID_VALUE, "once");
	CHECK(drop(1, inner) == CUDA_ERROR_INVALID_VALUE, "not what the graph frees itself");
	CHECK(mapped(kept), "the graph keeps its memory");
	pools_graph_launched(&W, 60);
	CHECK(drop(1, kept) == CUDA_SUCCESS, "each launch allocates it again");
	pools_graph_launched(&W, 60);
	pools_graph_gone(&W, 50, 0);
	CHECK(mapped(kept) && mapped(inner), "an instance keeps the graph's memory");
	pools_graph_gone(&W, 0, 60);
	CHECK(!mapped(inner), "with graph and instance gone it is released");
	CHECK(mapped(kept) && attr(1, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == before + 4096,
	      "what the last launch allocated outlives the graph, in the default pool");
	CHECK(call(VGPU_OP_GRAPH_MEM_ATTR, 0, 0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, 0, 0, &used) ==
	      CUDA_SUCCESS && used == 0, "no graph memory left");
	CHECK(drop(1, kept) == CUDA_SUCCESS && attr(1, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == before,
	      "and is freed as pool memory");
	pools_sync_point(&W);
	CHECK(attr(1, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0 && !mapped(kept),
	      "and returned to the window at a sync");
}

static void reset_pools(void)
{
	pools_destroy(&W);
	CHECK(pools_init(&W) == 0);
}

/* Loads saved records with one changed by @spoil; returns pools_load's answer. */
static int load_spoiled(const struct vgpu_ckpt_pool *p, size_t np,
			const struct vgpu_ckpt_pool_block *b, size_t nb,
			void (*spoil)(struct vgpu_ckpt_pool *, struct vgpu_ckpt_pool_block *))
{
	struct vgpu_ckpt_pool pc[8];
	struct vgpu_ckpt_pool_block bc[8];
	const char *why = NULL;
	int ret;

	memcpy(pc, p, np * sizeof(*p));
	memcpy(bc, b, nb * sizeof(*b));
	if (spoil)
		spoil(pc, bc);
	reset_pools();
	ret = pools_load(&W, pc, np, bc, nb, &why);
	if (ret)
		CHECK(why != NULL, "a refusal says why");
	return ret;
}

static void bad_device(struct vgpu_ckpt_pool *p, struct vgpu_ckpt_pool_block *b)
{
	(void)b;
	p[1].device = 7;
}

static void bad_flags(struct vgpu_ckpt_pool *p, struct vgpu_ckpt_pool_block *b)
{
	(void)b;
	p[1].flags |= 0x100;
}

static void bad_addr(struct vgpu_ckpt_pool *p, struct vgpu_ckpt_pool_block *b)
{
	(void)p;
	b[0].addr += 256;
}

static void bad_size(struct vgpu_ckpt_pool *p, struct vgpu_ckpt_pool_block *b)
{
	(void)p;
	b[0].size = 1000;
}

static void bad_pool(struct vgpu_ckpt_pool *p, struct vgpu_ckpt_pool_block *b)
{
	(void)p;
	b[0].pool = 4242;
}

static void twice(struct vgpu_ckpt_pool *p, struct vgpu_ckpt_pool_block *b)
{
	(void)p;
	b[1] = b[0];
}

static void empty_zombie(struct vgpu_ckpt_pool *p, struct vgpu_ckpt_pool_block *b)
{
	(void)b;
	p[1].flags |= VGPU_CKPT_POOL_DESTROYED;
	b[0].pool = b[1].pool = 1;
}

static void checkpoint(void)
{
	struct vgpu_ckpt_pool *p;
	struct vgpu_ckpt_pool_block *b;
	size_t np, nb;
	uint64_t x, y;
	const char *why = NULL;

	CHECK(call(VGPU_OP_POOL_CREATE, 0, 200, 0, 0, 0, NULL) == CUDA_SUCCESS);
	CHECK(call(VGPU_OP_POOL_SET_ATTR, 0, 200, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 1 << 20, 0,
		   NULL) == CUDA_SUCCESS);
	x = alloc(200, 1, 3000);
	y = alloc(200, 1, 3000);
	CHECK(x && y && drop(1, y) == CUDA_SUCCESS);
	CHECK(pools_save(&W, &p, &np, &b, &nb) == 0);
	CHECK(np == 2 && nb == 2, "the default pool and one more; a live and a cached block");

	CHECK(load_spoiled(p, np, b, nb, NULL) == 0, "taken back as saved");
	CHECK(attr(200, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 1 << 20, "its attributes");
	CHECK(attr(200, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 4096 &&
	      attr(200, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 8192, "its accounting");
	CHECK(alloc(200, 2, 3000) == y, "the cached block is reused");
	CHECK(drop(2, y) == CUDA_SUCCESS);
	CHECK(pools_load(&W, p, np, b, nb, &why) == -EBADMSG, "the same blocks twice");

	CHECK(load_spoiled(p, np, b, nb, bad_device) == -EBADMSG, "a device the session lacks");
	CHECK(load_spoiled(p, np, b, nb, bad_flags) == -EBADMSG, "unknown pool flags");
	CHECK(load_spoiled(p, np, b, nb, bad_addr) == -EBADMSG, "a block that is no allocation");
	CHECK(load_spoiled(p, np, b, nb, bad_size) == -EBADMSG, "a block of another size");
	CHECK(load_spoiled(p, np, b, nb, bad_pool) == -EBADMSG, "a block of no pool");
	CHECK(load_spoiled(p, np, b, nb, twice) == -EBADMSG, "one block twice");
	CHECK(load_spoiled(p, np, b, nb, empty_zombie) == -EBADMSG,
	      "a destroyed pool that holds nothing");
	free(p);
	free(b);
}

int main(void)
{
	CUcontext ctx;

	if (vgpu_backend_host_open(&W.B) || W.B.cuInit(0) || W.B.cuDeviceGet(&W.devices[0], 0) ||
	    W.B.cuDevicePrimaryCtxRetain(&ctx, W.devices[0]) || W.B.cuCtxSetCurrent(ctx) ||
	    W.B.cuStreamCreateWithPriority(&S1, CU_STREAM_NON_BLOCKING, 0) ||
	    W.B.cuStreamCreateWithPriority(&S2, CU_STREAM_NON_BLOCKING, 0)) {
		printf("test_pool: host backend did not start\n");
		return 1;
	}
	W.device_count = 1;
	obj_table_init(&W.ctxs, "context");
	obj_table_init(&W.streams, "stream");
	CHECK(obj_insert(&W.streams, 1, S1, 0, NULL) == 0 && obj_insert(&W.streams, 2, S2, 0, NULL) == 0);
	CHECK(vmem_init(&W.vmem, &W.B, 1ull << 30, 0) == CUDA_SUCCESS);
	CHECK(pools_init(&W) == 0);
	handlers();
	graphs();
	checkpoint();
	pools_destroy(&W);
	printf("test_pool: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
