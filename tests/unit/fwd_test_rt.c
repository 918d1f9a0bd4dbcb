// SPDX-License-Identifier: MIT
/* The runtime's side of the round-trip test: its session, stood in for. */
#include <stdio.h>
#include <stdlib.h>

#include "client.h"
#include "forward.h"
#include "fwd_test.h"
#include "graph.h"
#include "module.h"

struct fake {
	int kind, seed;
};

static struct fake fakes[FWD_KINDS][9], wrong = { -1, 0 };
static struct vgpu_ctx ctx = { .magic = VGPU_CTX_MAGIC, .id = 1 };
static struct vgpu_module mod = { .magic = VGPU_MODULE_MAGIC, .id = 1, .ctx = &ctx };
static struct module modules[9];
static struct vgpu_event events[9];
static struct vgpu_func *funcs[9];
const int fwd_test_device = 1;

static int seed_of(const void *h, enum fwd_kind kind);

void *fwd_test_handle(enum fwd_kind kind, int gen, int seed)
{
	struct vgpu_gen_obj *o;

	if (kind != FWD_GEN) {
		fakes[kind][seed] = (struct fake){ kind, seed };
		return &fakes[kind][seed];
	}
	/* A live object of a generated kind, as vgpu_fwd_gen_new makes them
	 * (a `del` call frees it). */
	o = calloc(1, sizeof(*o));
	if (!o)
		abort();
	*o = (struct vgpu_gen_obj){ .magic = VGPU_GEN_MAGIC, .kind = (uint32_t)gen,
				    .id = FWD_GEN_ID(gen, seed), .ctx = &ctx };
	if (!fwd_test_worker_gen(o->id, gen))
		fwd_test_worker_gen_put(o->id, gen, fwd_test_obj(FWD_GEN, gen, seed));
	return o;
}

bool fwd_test_made(const void *h, int gen, int seed)
{
	const struct vgpu_gen_obj *o = h;

	return o && o->magic == VGPU_GEN_MAGIC && o->kind == (uint32_t)gen &&
	       fwd_test_worker_gen(o->id, gen) == fwd_test_obj(FWD_NEW, 0, seed);
}

bool fwd_test_gone(int gen, int seed)
{
	return !fwd_test_worker_gen(FWD_GEN_ID(gen, seed), gen);
}

const char *fwd_test_long_name(void)
{
	static char name[VGPU_MAX_NAME + 16];

	memset(name, 'a', sizeof(name) - 1);
	return name;
}

/* Ids of objects made by generated calls, clear of FWD_GEN_ID's. */
uint32_t vgpu_id_alloc(enum vgpu_kind k)
{
	static uint32_t next = 1000;

	(void)k;
	return next++;
}

void vgpu_id_free(enum vgpu_kind k, uint32_t id)
{
	(void)k;
	(void)id;
}

CUresult vgpu_module_resolve(void *h, struct module **out)
{
	int s = seed_of(h, FWD_MODULE);

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	modules[s].m = (struct vgpu_module){ .magic = VGPU_MODULE_MAGIC, .id = (uint32_t)s,
					     .ctx = &ctx };
	*out = &modules[s];
	return CUDA_SUCCESS;
}

void *fwd_test_wrong_handle(void)
{
	return &wrong;
}

/* Which seed of @kind the handle is; 0: not one of them. */
static int seed_of(const void *h, enum fwd_kind kind)
{
	const struct fake *f = h;

	for (int s = 1; s < 9; s++)
		if (f == &fakes[kind][s] && f->kind == (int)kind)
			return s;
	return 0;
}

CUresult vgpu_initialized(void)
{
	return CUDA_SUCCESS;
}

int vgpu_device_count(void)
{
	return 2;
}

uint32_t vgpu_payload_max(void)
{
	return 32768;
}

CUresult vgpu_ctx_current(struct vgpu_ctx **out)
{
	*out = &ctx;
	return CUDA_SUCCESS;
}

/* A context a call names travels as its own id: the seed's (NULL: the
 * current one). */
CUresult vgpu_ctx_resolve(CUcontext h, struct vgpu_ctx **out)
{
	static struct vgpu_ctx named[9];
	int seed = h ? seed_of(h, FWD_CTX) : 0;

	if (h && !seed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!seed) {
		*out = &ctx;
		return CUDA_SUCCESS;
	}
	named[seed] = (struct vgpu_ctx){ .magic = VGPU_CTX_MAGIC, .id = (uint32_t)seed };
	*out = &named[seed];
	return CUDA_SUCCESS;
}

CUresult vgpu_stream_resolve(CUstream h, bool ptds, struct vgpu_ctx **c, uint32_t *id)
{
	int s = seed_of(h, FWD_STREAM);

	(void)ptds;
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	*c = &ctx;
	*id = (uint32_t)s;
	return CUDA_SUCCESS;
}

CUresult vgpu_event_resolve(CUevent h, struct vgpu_event **out)
{
	int s = seed_of(h, FWD_EVENT);

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	events[s] = (struct vgpu_event){ .magic = VGPU_EVENT_MAGIC, .id = (uint32_t)s, .ctx = &ctx };
	*out = &events[s];
	return CUDA_SUCCESS;
}

CUresult vgpu_func_resolve(CUfunction h, struct vgpu_func **out)
{
	int s = seed_of(h, FWD_FUNC);

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!funcs[s]) {
		funcs[s] = calloc(1, sizeof(*funcs[s]));
		if (!funcs[s])
			abort();
	}
	*funcs[s] = (struct vgpu_func){ .magic = VGPU_FUNC_MAGIC, .id = (uint32_t)s, .mod = &mod };
	*out = funcs[s];
	return CUDA_SUCCESS;
}

static CUresult lookup(const void *h, enum fwd_kind kind, struct vgpu_ctx **c, uint32_t *id)
{
	int s = seed_of(h, kind);

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	*c = &ctx;
	*id = (uint32_t)s;
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_lookup(CUgraph h, struct vgpu_ctx **c, uint32_t *id)
{
	return lookup(h, FWD_GRAPH, c, id);
}

CUresult vgpu_graph_exec_lookup(CUgraphExec h, struct vgpu_ctx **c, uint32_t *id)
{
	return lookup(h, FWD_EXEC, c, id);
}

CUresult vgpu_graph_node_lookup(CUgraphNode h, CUgraph *graph, uint32_t *id,
				CUgraphNodeType *type, struct vgpu_ctx **c)
{
	*graph = NULL;
	*type = CU_GRAPH_NODE_TYPE_EMPTY;
	return lookup(h, FWD_NODE, c, id);
}

static uint8_t reply[64 << 10];

static CUresult hand_over(struct vgpu_req *r, bool sync)
{
	struct vgpu_sqe sqe = r->sqe;
	uint8_t *payload = NULL;

	sqe.tag = sync ? 1 : 0;
	sqe.payload_len = r->payload_len;
	if (r->payload_len) {
		payload = malloc(r->payload_len);	/* the worker's private copy */
		if (!payload)
			abort();
		memcpy(payload, r->payload, r->payload_len);
	}
	memset(&r->cqe, 0, sizeof(r->cqe));
	fwd_test_worker_run(&sqe, payload, r->payload_len, &r->cqe, sync ? reply : NULL,
			    sizeof(reply));
	free(payload);
	if (!sync)
		return CUDA_SUCCESS;	/* an error waits for the next synchronous call */
	if (r->cqe.val[2]) {
		if (!r->reply || r->cqe.val[2] > r->reply_cap) {
			fwd_test_fail("the answer fits the reply buffer", __LINE__);
			return CUDA_ERROR_UNKNOWN;
		}
		memcpy(r->reply, reply, r->cqe.val[2]);
	}
	return (CUresult)r->cqe.result;
}

CUresult vgpu_call(struct vgpu_req *r)
{
	return hand_over(r, true);
}

CUresult vgpu_post(struct vgpu_req *r)
{
	return hand_over(r, false);
}
