// SPDX-License-Identifier: MIT
/*
 * Runs of launches as graphs (daemon/worker/launch_graphs.c), against a
 * fake driver that writes down every kernel it would run, in order, with
 * its parameter bytes: whatever the worker does with graphs, the kernels
 * must run in the program's order with the program's parameters. Random
 * programs of launches (several functions, streams, contexts, parameter
 * sizes) with other entries and empty-ring moments among them; then the
 * graphs must really be used, updated in place, dropped after a module
 * unload, and a driver refusing to build them must change nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_graphs.h"
#include "worker.h"

#include "check.h"

#define MAXRAN 20000

struct ran {			/* a kernel the fake driver ran */
	uint32_t func;		/* the function's id */
	uint32_t stream, ctx;
	uint32_t grid;
	uint32_t nbytes;
	uint8_t bytes[64];
};

static struct ran want[MAXRAN], got[MAXRAN];
static int nwant, ngot, others_run;
static int graphs_made, graphs_gone, graph_launches, node_updates;
static int fail_add_node;
static uint32_t cur_ctx, cur_stream;

/* ---- the fake driver: a graph is a chain of nodes; a node a copy of its
 * launch. CUfunction values are func id + 0x1000. */
struct fnode {
	int index;
	CUDA_KERNEL_NODE_PARAMS p;
	uint8_t bytes[256];
	size_t nbytes;
};
struct fgraph {
	struct fnode nodes[64];
	int n;
};

static void take_params(struct fnode *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
	n->p = *p;
	n->nbytes = 0;
	if (p->extra) {
		n->nbytes = *(size_t *)p->extra[3];
		memcpy(n->bytes, p->extra[1], n->nbytes);
	}
	n->p.extra = NULL;
}

static void run_kernel(uint32_t func, uint32_t grid, const void *bytes, size_t n)
{
	struct ran *r = &got[ngot < MAXRAN ? ngot++ : MAXRAN - 1];

	r->func = func;
	r->stream = cur_stream;
	r->ctx = cur_ctx;
	r->grid = grid;
	r->nbytes = (uint32_t)n;
	memcpy(r->bytes, bytes, n);
}

static CUresult f_graph_create(CUgraph *g, unsigned int flags)
{
	(void)flags;
	*g = calloc(1, sizeof(struct fgraph));
	graphs_made++;
	return CUDA_SUCCESS;
}

static CUresult f_add_kernel_node(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
				  size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct fgraph *fg = (struct fgraph *)g;

	if (fail_add_node)
		return CUDA_ERROR_NOT_SUPPORTED;
	/* a chain: each node after the one before */
	if (fg->n ? (ndeps != 1 || deps[0] != (CUgraphNode)&fg->nodes[fg->n - 1]) : ndeps != 0)
		return CUDA_ERROR_INVALID_VALUE;
	take_params(&fg->nodes[fg->n], p);
	fg->nodes[fg->n].index = fg->n;
	*node = (CUgraphNode)&fg->nodes[fg->n++];
	return CUDA_SUCCESS;
}

static CUresult f_instantiate(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
	struct fgraph *copy = malloc(sizeof(*copy));

	(void)flags;
	memcpy(copy, g, sizeof(*copy));
	*exec = (CUgraphExec)copy;
	return CUDA_SUCCESS;
}

static CUresult f_exec_set(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct fgraph *e = (struct fgraph *)exec;
	int i = ((struct fnode *)node)->index;	/* a node of the exec's graph */

	if (i < 0 || i >= e->n || e->nodes[i].p.func != p->func)
		return CUDA_ERROR_INVALID_VALUE;
	take_params(&e->nodes[i], p);
	node_updates++;
	return CUDA_SUCCESS;
}

static CUresult f_launch(CUgraphExec exec, CUstream s)
{
	struct fgraph *e = (struct fgraph *)exec;

	cur_stream = (uint32_t)(uintptr_t)s;
	for (int i = 0; i < e->n; i++)
		run_kernel((uint32_t)((uintptr_t)e->nodes[i].p.func - 0x1000), e->nodes[i].p.gridDimX,
			   e->nodes[i].bytes, e->nodes[i].nbytes);
	graph_launches++;
	return CUDA_SUCCESS;
}

static CUresult f_exec_destroy(CUgraphExec e)
{
	free(e);
	return CUDA_SUCCESS;
}

static CUresult f_graph_destroy(CUgraph g)
{
	free(g);
	graphs_gone++;
	return CUDA_SUCCESS;
}

/* ---- the worker around it: the entries it would run one by one ---------- */
CUstream worker_stream(struct worker *w, const struct vgpu_sqe *sqe, CUresult *err)
{
	(void)w;
	*err = CUDA_SUCCESS;
	return (CUstream)(uintptr_t)sqe->stream;
}

CUresult worker_use_ctx(struct worker *w, uint32_t ctx_id)
{
	(void)w;
	cur_ctx = ctx_id;
	return CUDA_SUCCESS;
}

CUlaunchConfig worker_launch_config(const struct vgpu_sqe *s)
{
	return (CUlaunchConfig){ .gridDimX = VGPU_DIM_X(s->arg[1]), .gridDimY = 1, .gridDimZ = 1,
				 .blockDimX = VGPU_DIM_X(s->arg[2]), .blockDimY = 1, .blockDimZ = 1 };
}

void dispatch_taken(struct worker *w, const struct vgpu_sqe *sqe, const void *payload, int len)
{
	if (sqe->opcode == VGPU_OP_LAUNCH) {
		cur_stream = sqe->stream;
		cur_ctx = sqe->ctx;
		run_kernel((uint32_t)sqe->arg[0], VGPU_DIM_X(sqe->arg[1]),
			   (const uint8_t *)payload + sizeof(struct vgpu_launch),
			   len - sizeof(struct vgpu_launch));
	} else {
		others_run++;
	}
	launch_graphs_after(w, sqe->opcode, 0);
}

/* ---- programs -------------------------------------------------------------- */
struct launch_entry {
	struct vgpu_sqe sqe;
	uint8_t payload[sizeof(struct vgpu_launch) + 64];
	int len;
};

static void make_launch(struct launch_entry *e, uint32_t func, uint32_t stream, uint32_t ctx,
			uint32_t grid, const uint8_t *bytes, uint32_t nbytes, uint32_t flags, uint32_t tag)
{
	struct vgpu_launch l = { .param_bytes = nbytes, .flags = flags };
	struct ran *r = &want[nwant < MAXRAN ? nwant++ : MAXRAN - 1];

	memset(e, 0, sizeof(*e));
	e->sqe.opcode = VGPU_OP_LAUNCH;
	e->sqe.tag = tag;
	e->sqe.ctx = ctx;
	e->sqe.stream = stream;
	e->sqe.arg[0] = func;
	e->sqe.arg[1] = VGPU_DIM_PACK(grid, 1, 1);
	e->sqe.arg[2] = VGPU_DIM_PACK(32, 1, 1);
	memcpy(e->payload, &l, sizeof(l));
	memcpy(e->payload + sizeof(l), bytes, nbytes);
	e->len = (int)(sizeof(l) + nbytes);
	r->func = func;
	r->stream = stream;
	r->ctx = ctx;
	r->grid = grid;
	r->nbytes = nbytes;
	memcpy(r->bytes, bytes, nbytes);
}

static void submit(struct worker *w, struct launch_entry *e)
{
	if (!launch_graphs_hold(w, &e->sqe, e->payload, e->len)) {
		launch_graphs_flush(w);
		dispatch_taken(w, &e->sqe, e->payload, e->len);
	}
}

static void other(struct worker *w, uint16_t opcode)
{
	struct vgpu_sqe sqe = { .opcode = opcode };

	launch_graphs_flush(w);
	dispatch_taken(w, &sqe, NULL, 0);
}

/* A training-loop-like program: a step of STEP launches repeated, some
 * parameters changing each step, the ring running dry now and then. */
static void loop_program(struct worker *w, unsigned int seed, int steps)
{
	enum { STEP = 12 };
	struct { uint32_t func, stream, grid, nbytes; uint8_t bytes[64]; } step[STEP];
	struct launch_entry e;

	srand(seed);
	for (int i = 0; i < STEP; i++) {
		step[i].func = 1 + rand() % 4;
		step[i].stream = rand() % 8 ? 3 : 4;
		step[i].grid = 1 + rand() % 3;
		step[i].nbytes = (step[i].func - 1) * 16;	/* a function's own size */
		for (uint32_t b = 0; b < step[i].nbytes; b++)
			step[i].bytes[b] = (uint8_t)rand();
	}
	for (int s = 0; s < steps; s++) {
		for (int i = 0; i < STEP; i++) {
			if (step[i].nbytes && rand() % 3 == 0)
				step[i].bytes[rand() % step[i].nbytes] ^= (uint8_t)(1 + rand() % 255);
			make_launch(&e, step[i].func, step[i].stream, 1, step[i].grid, step[i].bytes,
				    step[i].nbytes, 0, 0);
			submit(w, &e);
			if (rand() % 40 == 0)
				launch_graphs_flush(w);	/* the ring ran dry */
		}
		if (rand() % 2)
			other(w, VGPU_OP_EVENT_RECORD);
		else
			launch_graphs_flush(w);
	}
	launch_graphs_flush(w);
}

/* Anything goes: contexts, streams, synchronous and cooperative launches. */
static void random_program(struct worker *w, unsigned int seed, int n)
{
	struct launch_entry e;
	uint8_t bytes[64];

	srand(seed);
	for (int i = 0; i < n; i++) {
		int k = rand() % 20;
		uint32_t nbytes = (uint32_t)(rand() % 5) * 8;

		for (uint32_t b = 0; b < nbytes; b++)
			bytes[b] = (uint8_t)rand();
		if (k == 0)
			launch_graphs_flush(w);
		else if (k == 1)
			other(w, VGPU_OP_MEMCPY_HTOD);
		else
			make_launch(&e, 1 + rand() % 2, rand() % 2, 1 + (rand() % 10 == 0), 1, bytes,
				    nbytes, rand() % 30 == 0 ? VGPU_LAUNCH_COOPERATIVE : 0,
				    rand() % 30 == 0 ? 5 : 0), submit(w, &e);
	}
	launch_graphs_flush(w);
}

static bool same_runs(void)
{
	if (ngot != nwant)
		return false;
	for (int i = 0; i < nwant; i++)
		if (got[i].func != want[i].func || got[i].stream != want[i].stream ||
		    got[i].ctx != want[i].ctx || got[i].grid != want[i].grid ||
		    got[i].nbytes != want[i].nbytes || memcmp(got[i].bytes, want[i].bytes, want[i].nbytes))
			return false;
	return true;
}

static void reset_runs(void)
{
	nwant = ngot = others_run = 0;
	graph_launches = node_updates = 0;
}

static void setup(struct worker *w)
{
	memset(w, 0, sizeof(*w));
	w->B.cuGraphCreate = f_graph_create;
	w->B.cuGraphAddKernelNode_v2 = f_add_kernel_node;
	w->B.cuGraphInstantiateWithFlags = f_instantiate;
	w->B.cuGraphExecKernelNodeSetParams_v2 = f_exec_set;
	w->B.cuGraphLaunch = f_launch;
	w->B.cuGraphExecDestroy = f_exec_destroy;
	w->B.cuGraphDestroy = f_graph_destroy;
	obj_table_init(&w->funcs, "function");
	for (uintptr_t id = 1; id <= 4; id++)
		obj_insert(&w->funcs, (uint32_t)id, (void *)(0x1000 + id), 0, NULL);
}

int main(void)
{
	struct worker w;
	int gone, as_graphs = 0, updates = 0;

	setup(&w);

	/* a loop: graphs built, launched, updated in place; order and bytes kept */
	for (unsigned int seed = 1; seed <= 20; seed++) {
		reset_runs();
		loop_program(&w, seed, 60);
		CHECK(same_runs(), "seed %u: the kernels as the program launched them", seed);
		as_graphs += graph_launches > 0;
		updates += node_updates > 0;
	}
	CHECK(as_graphs >= 15, "runs went as graphs (%d programs of 20)", as_graphs);
	CHECK(updates >= 15, "changed parameters set in place (%d programs of 20)", updates);
	for (unsigned int seed = 100; seed < 120; seed++) {
		reset_runs();
		random_program(&w, seed, 3000);
		CHECK(same_runs(), "seed %u: a random program keeps its order", seed);
	}

	/* unloading a module drops every graph; the next runs are right */
	reset_runs();
	loop_program(&w, 3, 20);
	CHECK(same_runs() && graph_launches > 0, "a loop after the random programs");
	gone = graphs_gone;
	CHECK(graphs_made > gone, "graphs kept");
	other(&w, VGPU_OP_MODULE_UNLOAD);
	CHECK(graphs_gone == graphs_made, "a module unload drops them all (%d of %d)", graphs_gone,
	      graphs_made);
	reset_runs();
	loop_program(&w, 7, 20);
	CHECK(same_runs(), "after the unload");

	/* a driver that will not build them: the same kernels, one by one */
	launch_graphs_forget(&w);
	fail_add_node = 1;
	reset_runs();
	loop_program(&w, 8, 40);
	CHECK(same_runs(), "no graphs: the same kernels");
	CHECK(graph_launches == 0, "no graph launched");
	fail_add_node = 0;

	/* a capture in progress: nothing held */
	reset_runs();
	w.captures = 1;
	loop_program(&w, 9, 20);
	CHECK(same_runs() && graph_launches == 0, "captures: one by one");
	w.captures = 0;
	launch_graphs_free(&w);

	/* turned off */
	setenv("VGPU_WORKER_LAUNCH_GRAPHS", "0", 1);
	reset_runs();
	loop_program(&w, 10, 40);
	CHECK(same_runs() && graph_launches == 0, "VGPU_WORKER_LAUNCH_GRAPHS=0");
	launch_graphs_free(&w);
	CHECK(graphs_gone == graphs_made, "every graph destroyed (%d of %d)", graphs_gone, graphs_made);
	obj_table_free(&w.funcs);

	printf("test_launch_graphs: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
