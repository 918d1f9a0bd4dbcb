// SPDX-License-Identifier: MIT
/*
 * Runs of kernel launches as CUDA graphs (see launch_graphs.h).
 *
 * How a run goes:
 *  - Plain asynchronous launches (no cooperative, cluster or priority
 *    attribute, small parameter blocks) into one stream of one context are
 *    held, up to RUN_MAX of them, while the ring has more entries behind
 *    them. Any other entry, or an empty ring, flushes the run first, so
 *    the order of work on every stream is the program's, and nothing waits
 *    for an entry that has not come.
 *  - A run is known by its shape: the function, grid, block, shared memory
 *    and parameter size of each launch. The first time a shape is seen its
 *    launches go one by one; the second time, a graph of it (a chain of
 *    kernel nodes) is built and instantiated, and from then on a run of
 *    that shape is one cuGraphLaunch, after setting the parameters of the
 *    nodes whose parameter bytes changed since the graph's last launch.
 *  - A graph launch in a stream orders its nodes exactly like the same
 *    launches in that stream: the chain runs after the work before it and
 *    before the work after it. Errors are asynchronous either way and come
 *    back at the next synchronizing call.
 *  - Not while any stream of the session captures (a graph launched into a
 *    capturing stream would become a child-graph node in the capture).
 *  - Graphs hold CUfunction handles: an entry that may change what a launch
 *    does (launch_graphs_after: unloading modules, function or context
 *    settings, contexts going away, and any generated call that changes
 *    state) drops them all. So does a shape that fails to build or launch,
 *    which then runs one by one for good.
 *  - VGPU_WORKER_LAUNCH_GRAPHS=0 in vgpud's environment turns it off.
 */
#include <stdlib.h>
#include <string.h>

#include "launch_graphs.h"
#include "log.h"
#include "worker.h"

#define RUN_MIN		4	/* a shorter run is launched one by one */
#define RUN_MAX		32	/* launches held at most */
#define PARAM_MAX	256	/* a launch with more parameter bytes is not held */
#define SHAPES		32	/* shapes remembered (graphs kept at most) */

struct held {
	struct vgpu_sqe sqe;
	uint32_t len;			/* payload bytes: vgpu_launch + params */
	uint8_t payload[sizeof(struct vgpu_launch) + PARAM_MAX];
};

struct node_shape {
	uint32_t func;
	uint32_t smem;
	uint64_t grid, block;
	uint32_t param_bytes;
};

struct shape {
	uint64_t hash;			/* 0: a free slot */
	uint32_t ctx, n;
	uint64_t last_use;
	bool failed;			/* never as a graph */
	struct node_shape nodes[RUN_MAX];
	CUgraph graph;			/* NULL until seen twice */
	CUgraphExec exec;
	CUgraphNode node[RUN_MAX];
	uint8_t params[RUN_MAX][PARAM_MAX];	/* each node's as last launched */
};

struct launch_graphs {
	bool off;
	uint32_t n;			/* launches held */
	uint32_t ctx, stream;
	struct held run[RUN_MAX];
	struct shape shapes[SHAPES];
	bool kept;			/* some slot is taken */
	uint64_t tick;
	uint64_t graphs_built, graph_launches;
};

static struct launch_graphs *state(struct worker *w)
{
	const char *e;

	if (w->launch_graphs)
		return w->launch_graphs;
	w->launch_graphs = calloc(1, sizeof(*w->launch_graphs));
	if (!w->launch_graphs)
		return NULL;
	e = getenv("VGPU_WORKER_LAUNCH_GRAPHS");
	w->launch_graphs->off = e && !strcmp(e, "0");
	return w->launch_graphs;
}

static bool holdable(const struct vgpu_sqe *sqe, const void *payload, int len)
{
	struct vgpu_launch l;

	if (sqe->opcode != VGPU_OP_LAUNCH || sqe->tag || len < (int)sizeof(l) ||
	    len > (int)(sizeof(l) + PARAM_MAX))
		return false;
	memcpy(&l, payload, sizeof(l));
	return l.param_bytes == len - sizeof(l) && !l.flags && !l.cluster_x && !l.priority &&
	       !l.reserved[0] && !l.reserved[1];
}

bool launch_graphs_hold(struct worker *w, const struct vgpu_sqe *sqe, const void *payload, int len)
{
	struct launch_graphs *lg;
	struct held *h;

	if (!holdable(sqe, payload, len) || w->captures)
		return false;
	lg = state(w);
	if (!lg || lg->off)
		return false;
	if (lg->n && (sqe->ctx != lg->ctx || sqe->stream != lg->stream))
		launch_graphs_flush(w);
	if (!lg->n) {
		lg->ctx = sqe->ctx;
		lg->stream = sqe->stream;
	}
	h = &lg->run[lg->n++];
	h->sqe = *sqe;
	h->len = (uint32_t)len;
	memcpy(h->payload, payload, len);
	if (lg->n == RUN_MAX)
		launch_graphs_flush(w);
	return true;
}

static void node_shape_of(const struct held *h, struct node_shape *s)
{
	memset(s, 0, sizeof(*s));
	s->func = (uint32_t)h->sqe.arg[0];
	s->grid = h->sqe.arg[1];
	s->block = h->sqe.arg[2];
	s->smem = (uint32_t)h->sqe.arg[3];
	s->param_bytes = h->len - sizeof(struct vgpu_launch);
}

static uint64_t shape_hash(const struct node_shape *s, uint32_t n, uint32_t ctx)
{
	const uint8_t *p = (const uint8_t *)s;
	uint64_t h = 1469598103934665603ull ^ ctx ^ ((uint64_t)n << 32);

	for (size_t i = 0; i < n * sizeof(*s); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h ? h : 1;
}

static void shape_drop(struct worker *w, struct shape *s)
{
	if (s->exec)
		w->B.cuGraphExecDestroy(s->exec);
	if (s->graph)
		w->B.cuGraphDestroy(s->graph);
	memset(s, 0, sizeof(*s));
}

/* The shape's slot: found, or a free or least recently used one taken. */
static struct shape *shape_slot(struct worker *w, struct launch_graphs *lg,
				const struct node_shape *ns, uint32_t n, bool *found)
{
	uint64_t h = shape_hash(ns, n, lg->ctx);
	struct shape *s, *victim = &lg->shapes[0];

	for (s = lg->shapes; s < lg->shapes + SHAPES; s++) {
		if (s->hash == h && s->ctx == lg->ctx && s->n == n &&
		    !memcmp(s->nodes, ns, n * sizeof(*ns))) {
			*found = true;
			return s;
		}
		if (!s->hash || (victim->hash && s->last_use < victim->last_use))
			victim = s;
	}
	shape_drop(w, victim);
	lg->kept = true;
	victim->hash = h;
	victim->ctx = lg->ctx;
	victim->n = n;
	memcpy(victim->nodes, ns, n * sizeof(*ns));
	*found = false;
	return victim;
}

static void kernel_params(struct worker *w, const struct held *h, CUDA_KERNEL_NODE_PARAMS *kp,
			  void **extra, size_t *pbytes)
{
	struct obj_entry *f = obj_get(&w->funcs, (uint32_t)h->sqe.arg[0]);
	CUlaunchConfig c = worker_launch_config(&h->sqe);

	memset(kp, 0, sizeof(*kp));
	kp->func = f ? f->obj : NULL;
	kp->gridDimX = c.gridDimX;
	kp->gridDimY = c.gridDimY;
	kp->gridDimZ = c.gridDimZ;
	kp->blockDimX = c.blockDimX;
	kp->blockDimY = c.blockDimY;
	kp->blockDimZ = c.blockDimZ;
	kp->sharedMemBytes = c.sharedMemBytes;
	*pbytes = h->len - sizeof(struct vgpu_launch);
	if (!*pbytes)
		return;
	extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	extra[1] = (void *)(h->payload + sizeof(struct vgpu_launch));
	extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
	extra[3] = pbytes;
	extra[4] = CU_LAUNCH_PARAM_END;
	kp->extra = extra;
}

static CUresult build(struct worker *w, struct launch_graphs *lg, struct shape *s)
{
	CUDA_KERNEL_NODE_PARAMS kp;
	void *extra[5];
	size_t pbytes;
	CUresult rc;

	rc = w->B.cuGraphCreate(&s->graph, 0);
	for (uint32_t i = 0; !rc && i < s->n; i++) {
		kernel_params(w, &lg->run[i], &kp, extra, &pbytes);
		if (!kp.func)
			return CUDA_ERROR_INVALID_HANDLE;
		rc = w->B.cuGraphAddKernelNode_v2(&s->node[i], s->graph, i ? &s->node[i - 1] : NULL,
						  i ? 1 : 0, &kp);
		memcpy(s->params[i], lg->run[i].payload + sizeof(struct vgpu_launch), pbytes);
	}
	if (!rc)
		rc = w->B.cuGraphInstantiateWithFlags(&s->exec, s->graph, 0);
	if (!rc)
		lg->graphs_built++;
	return rc;
}

/* Sets the parameters that differ from the graph's last launch. */
static CUresult update(struct worker *w, struct launch_graphs *lg, struct shape *s)
{
	CUDA_KERNEL_NODE_PARAMS kp;
	void *extra[5];
	size_t pbytes;
	CUresult rc;

	for (uint32_t i = 0; i < s->n; i++) {
		const uint8_t *p = lg->run[i].payload + sizeof(struct vgpu_launch);

		pbytes = lg->run[i].len - sizeof(struct vgpu_launch);
		if (!memcmp(s->params[i], p, pbytes))
			continue;
		kernel_params(w, &lg->run[i], &kp, extra, &pbytes);
		rc = w->B.cuGraphExecKernelNodeSetParams_v2(s->exec, s->node[i], &kp);
		if (rc)
			return rc;
		memcpy(s->params[i], p, pbytes);
	}
	return CUDA_SUCCESS;
}

static void one_by_one(struct worker *w, struct launch_graphs *lg)
{
	for (uint32_t i = 0; i < lg->n; i++)
		dispatch_taken(w, &lg->run[i].sqe, lg->run[i].payload, (int)lg->run[i].len);
}

/* As a graph: false when the run must go one by one. */
static bool as_graph(struct worker *w, struct launch_graphs *lg)
{
	struct node_shape ns[RUN_MAX];
	struct shape *s;
	CUstream st;
	CUresult rc;
	bool found;

	for (uint32_t i = 0; i < lg->n; i++) {
		node_shape_of(&lg->run[i], &ns[i]);
		if (!obj_get(&w->funcs, ns[i].func))
			return false;	/* the launch itself reports it */
	}
	st = worker_stream(w, &lg->run[0].sqe, &rc);
	if (rc || worker_use_ctx(w, lg->ctx))
		return false;
	s = shape_slot(w, lg, ns, lg->n, &found);
	s->last_use = ++lg->tick;
	if (!found || s->failed)
		return false;	/* seen once: one by one until it comes back */
	rc = s->exec ? update(w, lg, s) : build(w, lg, s);
	if (!rc) {
		worker_may_print(w);
		rc = w->B.cuGraphLaunch(s->exec, st);
	}
	if (rc) {
		/* The launches go one by one, and report their own errors. */
		vlog_debug("a run of %u launches as a graph: %d; one by one from now on", s->n, rc);
		shape_drop(w, s);
		s->hash = shape_hash(ns, lg->n, lg->ctx);
		s->ctx = lg->ctx;
		s->n = lg->n;
		memcpy(s->nodes, ns, lg->n * sizeof(*ns));
		s->failed = true;
		s->last_use = lg->tick;
		return false;
	}
	lg->graph_launches++;
	return true;
}

void launch_graphs_flush(struct worker *w)
{
	struct launch_graphs *lg = w->launch_graphs;

	if (!lg || !lg->n)
		return;
	if (lg->n < RUN_MIN || !as_graph(w, lg))
		one_by_one(w, lg);
	lg->n = 0;
}

void launch_graphs_forget(struct worker *w)
{
	struct launch_graphs *lg = w->launch_graphs;

	if (!lg || !lg->kept)
		return;
	for (int i = 0; i < SHAPES; i++)
		shape_drop(w, &lg->shapes[i]);
	lg->kept = false;
}

/* Entries after which the graphs kept still launch what the program's
 * launches would: copies, memsets, events, stream waits and syncs,
 * allocations, module loads and lookups, occupancy queries. */
static bool keeps_graphs(uint16_t opcode, uint16_t op_flags)
{
	switch (opcode) {
	case VGPU_OP_NOP:
	case VGPU_OP_CTX_SYNCHRONIZE:
	case VGPU_OP_MEM_GET_INFO:
	case VGPU_OP_MEM_ALLOC:
	case VGPU_OP_MEM_ALLOC_PITCH:
	case VGPU_OP_MEM_FREE:
	case VGPU_OP_HOST_ALLOC:
	case VGPU_OP_HOST_FREE:
	case VGPU_OP_MEM_GET_RANGE:
	case VGPU_OP_MEMSET:
	case VGPU_OP_MEMCPY_HTOD:
	case VGPU_OP_MEMCPY_HTOD_POOL:
	case VGPU_OP_MEMCPY_DTOH_POOL:
	case VGPU_OP_MEMCPY_DTOH:
	case VGPU_OP_MEMCPY_DTOD:
	case VGPU_OP_MEMCPY_HTOD_STAGED:
	case VGPU_OP_MEMCPY_DTOH_STAGED:
	case VGPU_OP_MEMCPY_2D:
	case VGPU_OP_MEMCPY_HTOD_PINNED:
	case VGPU_OP_MEMCPY_DTOH_PINNED:
	case VGPU_OP_PIN_FORGET:
	case VGPU_OP_STREAM_CREATE:
	case VGPU_OP_STREAM_SYNCHRONIZE:
	case VGPU_OP_STREAM_QUERY:
	case VGPU_OP_STREAM_WAIT_EVENT:
	case VGPU_OP_HOST_FUNC:
	case VGPU_OP_EVENT_CREATE:
	case VGPU_OP_EVENT_DESTROY:
	case VGPU_OP_EVENT_RECORD:
	case VGPU_OP_EVENT_SYNCHRONIZE:
	case VGPU_OP_EVENT_QUERY:
	case VGPU_OP_EVENT_ELAPSED:
	case VGPU_OP_MODULE_LOAD:
	case VGPU_OP_MODULE_GET_FUNCTION:
	case VGPU_OP_MODULE_GET_GLOBAL:
	case VGPU_OP_LAUNCH:
	case VGPU_OP_OCCUPANCY:
	case VGPU_OP_OCCUPANCY_CLUSTERS:
	case VGPU_OP_GRAPH_LAUNCH:
		return true;
	}
	/* A generated call that answers and is not kept for a restore is a
	 * query: it changes nothing. */
	return opcode >= VGPU_OP_GEN_BASE && (op_flags & OPF_NO_PRINT) && !(op_flags & OPF_LOGGED);
}

void launch_graphs_after(struct worker *w, uint16_t opcode, uint16_t op_flags)
{
	if (w->launch_graphs && !keeps_graphs(opcode, op_flags))
		launch_graphs_forget(w);
}

void launch_graphs_free(struct worker *w)
{
	launch_graphs_forget(w);
	free(w->launch_graphs);
	w->launch_graphs = NULL;
}
