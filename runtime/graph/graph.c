// SPDX-License-Identifier: MIT
/*
 * Stream capture and CUDA graphs. A capture runs in the worker, on the
 * worker's stream: what the program submits meanwhile is recorded there by
 * the driver, so a graph and its instances live in the worker under ids
 * issued here, and the handles given to the program carry those ids.
 * Beginning and ending a capture, counting nodes and instantiating wait for
 * the worker (they can fail); launches, uploads and destroys are posted.
 *
 * Capture queries are answered here while no capture is active anywhere in
 * the session (the common case: cudart asks often), and by the worker
 * otherwise. What they cannot give: the capturing graph and its dependency
 * nodes (NULL and 0). Graph nodes are graph_node.c's.
 */
#include <pthread.h>
#include <stdlib.h>

#include "driver.h"	/* cuda.h as the driver sees it: before capture.h */
#include "calls_hand_gen.h"
#include "capture.h"
#include "entry.h"
#include "graph.h"
#include "handles.h"
#include "init.h"
#include "unsupported.h"

struct graph {
	uint32_t magic;
	uint32_t id;
	struct vgpu_ctx *ctx;
};

static uint32_t captures;	/* begun and not yet ended, session-wide */
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static CUresult graph_resolve(void *h, uint32_t magic, struct graph **out)
{
	struct graph *g = h;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!g || g->magic != magic)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = g;
	return CUDA_SUCCESS;
}

static struct graph *graph_new(enum vgpu_kind k, uint32_t magic, struct vgpu_ctx *ctx)
{
	struct graph *g = vgpu_obj_new(sizeof(*g), offsetof(struct graph, id), k);

	if (!g)
		return NULL;
	g->magic = magic;
	g->ctx = ctx;
	return g;
}

static void graph_free(struct graph *g, enum vgpu_kind k)
{
	vgpu_id_free(k, g->id);
	g->magic = 0;
	free(g);
}

/* ---- capture ------------------------------------------------------------ */

CUresult vgpu_hand_cuStreamBeginCapture(bool ptds, CUstream h, CUstreamCaptureMode mode)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe;
	uint32_t sid;
	CUresult rc = vgpu_enter_stream(h, ptds, &ctx, &sid);

	if (rc)
		return rc;
	if ((unsigned int)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(VGPU_OP_STREAM_BEGIN_CAPTURE, ctx->id, sid, mode, 0, 0, 0, 0, &cqe);
	if (!rc)
		__atomic_add_fetch(&captures, 1, __ATOMIC_ACQ_REL);
	return rc;
}

VGPU_EXPORT CUresult cuStreamBeginCapture(CUstream hStream)
{
	return vgpu_hand_cuStreamBeginCapture(false, hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

VGPU_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
	return vgpu_hand_cuStreamBeginCapture(true, hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

/* Captures into a graph the program made: the graph ending each. */
struct into {
	uint32_t ctx, sid;
	CUgraph graph;
	uint32_t graph_id;
	struct into *next;
};

static pthread_mutex_t into_lock = PTHREAD_MUTEX_INITIALIZER;
static struct into *intos;

/* The graph a capture on (ctx, sid) records into, if it has id @id,
 * forgotten; NULL: none. */
static CUgraph into_take(uint32_t ctx, uint32_t sid, uint64_t id)
{
	struct into **p, *e;
	CUgraph g = NULL;

	pthread_mutex_lock(&into_lock);
	for (p = &intos; (e = *p); p = &e->next)
		if (e->ctx == ctx && e->sid == sid) {
			*p = e->next;
			g = e->graph_id == id ? e->graph : NULL;
			free(e);
			break;
		}
	pthread_mutex_unlock(&into_lock);
	return g;
}

/* A graph destroyed while a capture records into it: no longer named. */
static void into_drop(CUgraph g)
{
	struct into *e;

	pthread_mutex_lock(&into_lock);
	for (e = intos; e; e = e->next)
		if (e->graph == g)
			e->graph = NULL, e->graph_id = 0;
	pthread_mutex_unlock(&into_lock);
}

CUresult vgpu_hand_cuStreamBeginCaptureToGraph(bool ptds, CUstream h, CUgraph hg,
					       const CUgraphNode *deps,
					       const CUgraphEdgeData *edges, size_t ndeps,
					       CUstreamCaptureMode mode)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_STREAM_BEGIN_CAPTURE_TO_GRAPH } };
	struct vgpu_ctx *ctx;
	struct graph *g;
	struct into *e;
	uint32_t sid, *ids = NULL;
	CUresult rc = vgpu_enter_stream(h, ptds, &ctx, &sid);

	if (!rc)
		rc = graph_resolve(hg, VGPU_GRAPH_MAGIC, &g);
	if (rc)
		return rc;
	if ((unsigned int)mode > CU_STREAM_CAPTURE_MODE_RELAXED || (ndeps && !deps) ||
	    ndeps > VGPU_MAX_GRAPH_NODES)
		return CUDA_ERROR_INVALID_VALUE;
	if (g->ctx != ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!vgpu_graph_edges_plain(edges, ndeps))
		return vgpu_unsupported("cuStreamBeginCaptureToGraph with edge data");
	e = calloc(1, sizeof(*e));
	if (!e || (ndeps && !(ids = malloc(ndeps * sizeof(*ids))))) {
		free(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = vgpu_graph_node_ids(hg, deps, ndeps, ids);
	if (!rc) {
		r.sqe.ctx = ctx->id;
		r.sqe.stream = sid;
		r.sqe.arg[0] = mode;
		r.sqe.arg[1] = g->id;
		r.sqe.arg[2] = ndeps;
		r.payload = ids;
		r.payload_len = ndeps * sizeof(*ids);
		rc = r.payload_len <= vgpu_payload_max() ? vgpu_call(&r)
							 : CUDA_ERROR_NOT_SUPPORTED;
	}
	free(ids);
	if (rc) {
		free(e);
		return rc;
	}
	__atomic_add_fetch(&captures, 1, __ATOMIC_ACQ_REL);
	*e = (struct into){ .ctx = ctx->id, .sid = sid, .graph = hg, .graph_id = g->id };
	pthread_mutex_lock(&into_lock);
	e->next = intos;
	intos = e;
	pthread_mutex_unlock(&into_lock);
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuStreamEndCapture(bool ptds, CUstream h, CUgraph *out)
{
	CUgraph into;
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe;
	struct graph *g;
	uint32_t sid;
	CUresult rc = vgpu_need_out(vgpu_enter_stream(h, ptds, &ctx, &sid), out);

	if (rc)
		return rc;
	g = graph_new(VGPU_K_GRAPH, VGPU_GRAPH_MAGIC, ctx);
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = vgpu_call5(VGPU_OP_STREAM_END_CAPTURE, ctx->id, sid, g->id, 0, 0, 0, 0, &cqe);
	/* The capture is over unless the stream was not capturing at all. */
	if (rc != CUDA_ERROR_ILLEGAL_STATE && __atomic_load_n(&captures, __ATOMIC_ACQUIRE))
		__atomic_sub_fetch(&captures, 1, __ATOMIC_ACQ_REL);
	into = rc == CUDA_ERROR_ILLEGAL_STATE ? NULL : into_take(ctx->id, sid, cqe.val[0]);
	if (rc || cqe.val[0]) {	/* failed, or recorded into the graph it began with */
		graph_free(g, VGPU_K_GRAPH);
		*out = NULL;
		if (!rc && !into)
			rc = CUDA_ERROR_UNKNOWN;
		if (!rc)
			*out = into;
		return rc;
	}
	*out = (CUgraph)g;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuStreamGetCaptureInfo(bool ptds, CUstream h, CUstreamCaptureStatus *status,
					  cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
					  const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe = { 0 };
	uint32_t sid;
	CUresult rc = vgpu_need_out(vgpu_enter_stream(h, ptds, &ctx, &sid), status);

	if (rc)
		return rc;
	if (__atomic_load_n(&captures, __ATOMIC_ACQUIRE)) {
		rc = vgpu_call5(VGPU_OP_STREAM_CAPTURE_INFO, ctx->id, sid, 0, 0, 0, 0, 0, &cqe);
		if (rc)
			return rc;
	}
	vgpu_capture_info_fill((CUstreamCaptureStatus)cqe.val[0], cqe.val[1], status, id, graph,
			       deps, edges, ndeps);
	return CUDA_SUCCESS;
}

bool vgpu_graph_capturing(void)
{
	return __atomic_load_n(&captures, __ATOMIC_ACQUIRE) != 0;
}

CUresult vgpu_hand_cuStreamIsCapturing(bool ptds, CUstream hStream,
				       CUstreamCaptureStatus *captureStatus)
{
	return vgpu_hand_cuStreamGetCaptureInfo(ptds, hStream, captureStatus, NULL, NULL, NULL,
						NULL, NULL);
}

VGPU_EXPORT CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					    cuuint64_t *id_out)
{
	return vgpu_hand_cuStreamGetCaptureInfo(false, hStream, captureStatus_out, id_out, NULL,
						NULL, NULL, NULL);
}

VGPU_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream,
						 CUstreamCaptureStatus *captureStatus_out,
						 cuuint64_t *id_out)
{
	return vgpu_hand_cuStreamGetCaptureInfo(true, hStream, captureStatus_out, id_out, NULL,
						NULL, NULL, NULL);
}

VGPU_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
					       CUstreamCaptureStatus *captureStatus_out,
					       cuuint64_t *id_out, CUgraph *graph_out,
					       const CUgraphNode **dependencies_out,
					       size_t *numDependencies_out)
{
	return vgpu_hand_cuStreamGetCaptureInfo(false, hStream, captureStatus_out, id_out,
						graph_out, dependencies_out, NULL,
						numDependencies_out);
}

VGPU_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
						    CUstreamCaptureStatus *captureStatus_out,
						    cuuint64_t *id_out, CUgraph *graph_out,
						    const CUgraphNode **dependencies_out,
						    size_t *numDependencies_out)
{
	return vgpu_hand_cuStreamGetCaptureInfo(true, hStream, captureStatus_out, id_out, graph_out,
						dependencies_out, NULL, numDependencies_out);
}

/* The calling thread's mode: what cudart swaps around calls that would be
 * unsafe during a global capture. */
VGPU_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!mode || (unsigned int)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	old = thread_mode;
	thread_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

/* ---- graphs ------------------------------------------------------------- */

/* An empty graph, in the worker, in the current context. */
VGPU_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct vgpu_ctx *ctx;
	struct vgpu_cqe cqe;
	struct graph *g;
	CUresult rc = vgpu_enter_ctx(&ctx);

	if (rc)
		return rc;
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	g = graph_new(VGPU_K_GRAPH, VGPU_GRAPH_MAGIC, ctx);
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = vgpu_call5(VGPU_OP_GRAPH_CREATE, ctx->id, 0, g->id, flags, 0, 0, 0, &cqe);
	if (rc) {
		graph_free(g, VGPU_K_GRAPH);
		return rc;
	}
	*phGraph = (CUgraph)g;
	return CUDA_SUCCESS;
}

CUresult vgpu_graph_handle_new(struct vgpu_ctx *ctx, CUgraph *out, uint32_t *id)
{
	struct graph *g = graph_new(VGPU_K_GRAPH, VGPU_GRAPH_MAGIC, ctx);

	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUgraph)g;
	*id = g->id;
	return CUDA_SUCCESS;
}

void vgpu_graph_handle_free(CUgraph h)
{
	struct graph *g = (struct graph *)h;

	if (!g || g->magic != VGPU_GRAPH_MAGIC)
		return;
	vgpu_graph_mem_drop(h, NULL);
	vgpu_graph_nodes_release(h);
	into_drop(h);
	graph_free(g, VGPU_K_GRAPH);
}

CUresult vgpu_graph_lookup(CUgraph h, struct vgpu_ctx **ctx, uint32_t *id)
{
	struct graph *g;
	CUresult rc = graph_resolve(h, VGPU_GRAPH_MAGIC, &g);

	if (!rc) {
		*ctx = g->ctx;
		*id = g->id;
	}
	return rc;
}

CUresult vgpu_graph_exec_lookup(CUgraphExec h, struct vgpu_ctx **ctx, uint32_t *id)
{
	struct graph *g;
	CUresult rc = graph_resolve(h, VGPU_GRAPH_EXEC_MAGIC, &g);

	if (!rc) {
		*ctx = g->ctx;
		*id = g->id;
	}
	return rc;
}

CUresult vgpu_graph_exec_in(CUgraphExec h, const struct vgpu_ctx *ctx, uint32_t *id)
{
	struct vgpu_ctx *ectx;
	CUresult rc;

	*id = 0;
	if (!h)
		return CUDA_SUCCESS;
	rc = vgpu_graph_exec_lookup(h, &ectx, id);
	if (!rc && ectx != ctx)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	return rc;
}

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph, unsigned long long flags)
{
	struct vgpu_cqe cqe;
	struct graph *g, *e;
	CUresult rc = vgpu_need_out(graph_resolve(hGraph, VGPU_GRAPH_MAGIC, &g), out);

	if (rc)
		return rc;
	e = graph_new(VGPU_K_GRAPH_EXEC, VGPU_GRAPH_EXEC_MAGIC, g->ctx);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = vgpu_call5(VGPU_OP_GRAPH_INSTANTIATE, g->ctx->id, 0, g->id, e->id, flags, 0, 0, &cqe);
	if (rc) {
		graph_free(e, VGPU_K_GRAPH_EXEC);
		return rc;
	}
	*out = (CUgraphExec)e;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
						 unsigned long long flags)
{
	return instantiate(phGraphExec, hGraph, flags);
}

/* The old signature: an error node and a log, which stay empty. */
CUresult vgpu_hand_cuGraphInstantiate(CUgraphExec *exec, CUgraph g, CUgraphNode *err_node,
				      char *log, size_t log_size)
{
	if (err_node)
		*err_node = NULL;
	if (log && log_size)
		log[0] = 0;
	return instantiate(exec, g, 0);
}

static CUresult launch(CUgraphExec h, CUstream hs, bool ptds, uint16_t op)
{
	struct vgpu_ctx *ctx;
	struct graph *e;
	uint32_t sid;
	CUresult rc = graph_resolve(h, VGPU_GRAPH_EXEC_MAGIC, &e);

	if (!rc)
		rc = vgpu_stream_resolve(hs, ptds, &ctx, &sid);
	if (rc)
		return rc;
	if (ctx != e->ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	return vgpu_post5(op, ctx->id, sid, e->id, 0, 0, 0, 0);
}

CUresult vgpu_hand_cuGraphInstantiateWithParams(bool ptds, CUgraphExec *exec, CUgraph g,
						CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult rc;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	rc = instantiate(exec, g, p->flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
	p->hErrNode_out = NULL;
	p->result_out = rc ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	if (!rc && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
		rc = launch(*exec, p->hUploadStream, ptds, VGPU_OP_GRAPH_UPLOAD);
	return rc;
}

CUresult vgpu_hand_cuGraphLaunch(bool ptds, CUgraphExec hGraphExec, CUstream hStream)
{
	return launch(hGraphExec, hStream, ptds, VGPU_OP_GRAPH_LAUNCH);
}

CUresult vgpu_hand_cuGraphUpload(bool ptds, CUgraphExec hGraphExec, CUstream hStream)
{
	return launch(hGraphExec, hStream, ptds, VGPU_OP_GRAPH_UPLOAD);
}

static CUresult destroy(void *h, uint32_t magic, enum vgpu_kind k, uint16_t op)
{
	struct graph *g;
	CUresult rc = graph_resolve(h, magic, &g);

	if (rc)
		return rc;
	rc = vgpu_post5(op, g->ctx->id, 0, g->id, 0, 0, 0, 0);
	if (!rc && k == VGPU_K_GRAPH) {
		vgpu_graph_embedded_drop((CUgraph)h, NULL);
		vgpu_graph_embedded_forget((CUgraph)h);
		vgpu_graph_mem_drop((CUgraph)h, NULL);
		vgpu_graph_nodes_release((CUgraph)h);
		into_drop((CUgraph)h);
	}
	if (!rc)	/* reusable once the worker has been told */
		graph_free(g, k);
	return rc;
}

VGPU_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	return destroy(hGraphExec, VGPU_GRAPH_EXEC_MAGIC, VGPU_K_GRAPH_EXEC,
		       VGPU_OP_GRAPH_EXEC_DESTROY);
}

VGPU_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
	return destroy(hGraph, VGPU_GRAPH_MAGIC, VGPU_K_GRAPH, VGPU_OP_GRAPH_DESTROY);
}
