// SPDX-License-Identifier: MIT
/*
 * Stream capture and graphs on the host backend: not emulated. Its streams
 * run every operation at once, so there is nothing to record; beginning a
 * capture says so (CUDA_ERROR_NOT_SUPPORTED, logged once) and no stream is
 * ever capturing. Graphs are not emulated either: every graph call says
 * so, and none can be reached with a graph of this backend.
 */
#include "host_backend.h"
#include "capture.h"
#include "log.h"

static CUresult no_graphs(const char *what)
{
	static int said;

	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		vlog_warn("host backend: %s: stream capture and graphs are not emulated", what);
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult host_cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
	CUresult rc = host_stream_check(s);

	(void)mode;
	return rc ? rc : no_graphs("cuStreamBeginCapture");
}

CUresult host_cuStreamEndCapture(CUstream s, CUgraph *graph)
{
	(void)s;
	(void)graph;
	return CUDA_ERROR_ILLEGAL_STATE;	/* never capturing */
}

CUresult host_cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
					CUgraph *graph, const CUgraphNode **deps,
					const CUgraphEdgeData **edges, size_t *ndeps)
{
	CUresult rc = host_stream_check(s);

	if (rc)
		return rc;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	vgpu_capture_info_fill(CU_STREAM_CAPTURE_STATUS_NONE, 0, status, id, graph, deps, edges,
			       ndeps);
	return CUDA_SUCCESS;
}

CUresult host_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
	(void)g;
	(void)nodes;
	(void)n;
	return no_graphs("cuGraphGetNodes");
}

CUresult host_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
	(void)exec;
	(void)g;
	(void)flags;
	return no_graphs("cuGraphInstantiate");
}

CUresult host_cuGraphLaunch(CUgraphExec exec, CUstream s)
{
	(void)exec;
	(void)s;
	return no_graphs("cuGraphLaunch");
}

CUresult host_cuGraphUpload(CUgraphExec exec, CUstream s)
{
	(void)exec;
	(void)s;
	return no_graphs("cuGraphUpload");
}

CUresult host_cuGraphExecDestroy(CUgraphExec exec)
{
	(void)exec;
	return no_graphs("cuGraphExecDestroy");
}

CUresult host_cuGraphDestroy(CUgraph g)
{
	(void)g;
	return no_graphs("cuGraphDestroy");
}

/* Graph nodes: no graph exists on this backend, so neither does a node. */
CUresult host_cuGraphGetRootNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
	(void)g;
	(void)nodes;
	(void)n;
	return no_graphs("cuGraphGetRootNodes");
}

CUresult host_cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
	(void)node;
	(void)type;
	return no_graphs("cuGraphNodeGetType");
}

CUresult host_cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)node;
	(void)p;
	return no_graphs("cuGraphKernelNodeGetParams");
}

CUresult host_cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)node;
	(void)p;
	return no_graphs("cuGraphKernelNodeSetParams");
}

CUresult host_cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node,
						const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)exec;
	(void)node;
	(void)p;
	return no_graphs("cuGraphExecKernelNodeSetParams");
}

CUresult host_cuGraphCreate(CUgraph *g, unsigned int flags)
{
	(void)g;
	(void)flags;
	return no_graphs("cuGraphCreate");
}

CUresult host_cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
				      size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)node;
	(void)g;
	(void)deps;
	(void)ndeps;
	(void)p;
	return no_graphs("cuGraphAddKernelNode");
}

CUresult host_cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
					const CUgraphEdgeData *edges, size_t n)
{
	(void)g;
	(void)from;
	(void)to;
	(void)edges;
	(void)n;
	return no_graphs("cuGraphAddDependencies");
}

/* Nothing captures here, but the thread's mode is kept as the driver keeps it. */
CUresult host_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	static __thread CUstreamCaptureMode cur = CU_STREAM_CAPTURE_MODE_GLOBAL;
	CUstreamCaptureMode old = cur;

	if (!mode || (unsigned int)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	cur = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

/* Nodes of every other kind, built by hand: no graph exists here either. */
CUresult host_cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
				const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p)
{
	(void)node;
	(void)g;
	(void)deps;
	(void)edges;
	(void)ndeps;
	(void)p;
	return no_graphs("cuGraphAddNode");
}

CUresult host_cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams *p)
{
	(void)node;
	(void)p;
	return no_graphs("cuGraphNodeSetParams");
}

CUresult host_cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams *p)
{
	(void)exec;
	(void)node;
	(void)p;
	return no_graphs("cuGraphExecNodeSetParams");
}

CUresult host_cuGraphDestroyNode(CUgraphNode node)
{
	(void)node;
	return no_graphs("cuGraphDestroyNode");
}

CUresult host_cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
					  const CUgraphEdgeData *edges, size_t ndeps,
					  CUstreamCaptureMode mode)
{
	CUresult rc = host_stream_check(s);

	(void)g;
	(void)deps;
	(void)edges;
	(void)ndeps;
	(void)mode;
	return rc ? rc : no_graphs("cuStreamBeginCaptureToGraph");
}

CUresult host_cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
	(void)exec;
	(void)g;
	(void)info;
	return no_graphs("cuGraphExecUpdate");
}

/* Graph queries and edits (exec_graph_query.c): there is no graph to ask. */
CUresult host_cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to,
				 CUgraphEdgeData *edges, size_t *n)
{
	(void)g, (void)from, (void)to, (void)edges, (void)n;
	return no_graphs("cuGraphGetEdges");
}

CUresult host_cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *deps,
					    CUgraphEdgeData *edges, size_t *n)
{
	(void)node, (void)deps, (void)edges, (void)n;
	return no_graphs("cuGraphNodeGetDependencies");
}

CUresult host_cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode *deps,
					      CUgraphEdgeData *edges, size_t *n)
{
	(void)node, (void)deps, (void)edges, (void)n;
	return no_graphs("cuGraphNodeGetDependentNodes");
}

CUresult host_cuGraphRemoveDependencies_v2(CUgraph g, const CUgraphNode *from,
					   const CUgraphNode *to, const CUgraphEdgeData *edges,
					   size_t n)
{
	(void)g, (void)from, (void)to, (void)edges, (void)n;
	return no_graphs("cuGraphRemoveDependencies");
}

/* No stream is ever capturing here. */
CUresult host_cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode *deps,
						   const CUgraphEdgeData *edges, size_t n,
						   unsigned int flags)
{
	CUresult rc = host_stream_check(s);

	(void)deps, (void)edges, (void)n, (void)flags;
	return rc ? rc : CUDA_ERROR_ILLEGAL_STATE;
}

CUresult host_cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *g)
{
	(void)node, (void)g;
	return no_graphs("cuGraphChildGraphNodeGetGraph");
}

CUresult host_cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent *e)
{
	(void)node, (void)e;
	return no_graphs("cuGraphEventRecordNodeGetEvent");
}

CUresult host_cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent *e)
{
	(void)node, (void)e;
	return no_graphs("cuGraphEventWaitNodeGetEvent");
}

CUresult host_cuGraphClone(CUgraph *clone, CUgraph g)
{
	(void)clone, (void)g;
	return no_graphs("cuGraphClone");
}

CUresult host_cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode node, CUgraph clone)
{
	(void)out, (void)node, (void)clone;
	return no_graphs("cuGraphNodeFindInClone");
}

CUresult host_cuGraphKernelNodeGetAttribute(CUgraphNode node, CUkernelNodeAttrID id,
					    CUkernelNodeAttrValue *v)
{
	(void)node, (void)id, (void)v;
	return no_graphs("cuGraphKernelNodeGetAttribute");
}

CUresult host_cuGraphKernelNodeSetAttribute(CUgraphNode node, CUkernelNodeAttrID id,
					    const CUkernelNodeAttrValue *v)
{
	(void)node, (void)id, (void)v;
	return no_graphs("cuGraphKernelNodeSetAttribute");
}

CUresult host_cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D *p)
{
	(void)node, (void)p;
	return no_graphs("cuGraphMemcpyNodeGetParams");
}
