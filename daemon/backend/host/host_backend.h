/* SPDX-License-Identifier: MIT */
/*
 * The host backend, private: one emulated device whose memory is host
 * memory at the same addresses (a device pointer is a host pointer), and
 * whose streams run everything at once, in submission order.
 *
 * Locks. host.lock guards every object table and every field of contexts,
 * streams, events, modules, functions and physical allocations. host.map
 * (a rwlock) guards the address map: copies, memsets and kernels hold it
 * shared for as long as they touch emulated memory, so no mapping can go
 * away under them; map changes hold it exclusive. When both are taken,
 * host.lock comes first.
 */
#ifndef VGPU_HOST_BACKEND_H
#define VGPU_HOST_BACKEND_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define HOST_GRANULARITY	(2ull << 20)
#define HOST_DEFAULT_MEM	(8ull << 30)
#define HOST_DRIVER_VERSION	13000
#define HOST_CC_MAJOR		9
#define HOST_CC_MINOR		0
#define HOST_SM_COUNT		132
#define HOST_MAX_THREADS	1024
#define HOST_SMEM_STATIC	(48u << 10)	/* per block without opt-in */
#define HOST_SMEM_OPTIN		(227u << 10)	/* per block with opt-in */
#define HOST_SMEM_PER_SM	(228u << 10)
#define HOST_SMEM_RESERVED	(1u << 10)	/* per block, by the system */
#define HOST_PERSISTING_L2_MAX	32505856u	/* the L2 a context may set aside */
#define HOST_PRIO_LEAST		0
#define HOST_PRIO_GREATEST	(-5)

/* A set of live handles: open addressing on the pointer value. */
struct host_set {
	void **slot;
	size_t cap, used, live;
};

int host_set_add(struct host_set *s, void *p);
int host_set_has(const struct host_set *s, const void *p);
void host_set_del(struct host_set *s, void *p);
/* Calls fn on every member; fn may delete the member it is given. */
void host_set_each(struct host_set *s, void (*fn)(void *p, void *arg), void *arg);
void host_set_free(struct host_set *s);

/* Stream attributes the driver keeps per stream (host_streamops.c). */
struct host_stream_attrs {
	CUaccessPolicyWindow window;
	CUsynchronizationPolicy sync_policy;
	CUlaunchMemSyncDomainMap domain_map;
	CUlaunchMemSyncDomain domain;
};

struct host_ctx {
	int primary;
	int active;		/* primary: retained and not reset since */
	unsigned retain;	/* primary: retain count */
	unsigned flags;
	CUresult sticky;	/* first device-side error, returned ever after */
	size_t limit[10];
	CUfunc_cache cache;
	struct host_stream_attrs legacy_attrs;	/* the NULL stream's (zero: defaults) */
	int legacy_priority;	/* the NULL stream's: the driver takes one */
	struct host_green *green;	/* the green context it converts (host_green.c) */
};

struct host_stream {
	struct host_ctx *ctx;
	unsigned flags;
	int priority;
	struct host_stream_attrs attrs;
};

struct host_event {
	struct host_ctx *ctx;
	unsigned flags;
	int recorded;
	uint64_t ns;		/* CLOCK_MONOTONIC at the last record */
};

struct host_kernel;

struct host_func {
	struct host_module *mod;
	char *name;
	const struct host_kernel *kernel;	/* NULL: no host implementation */
	int layout_mismatch;			/* image's params differ from ours */
	int max_dynamic_smem;
	int carveout;
	int cluster[3];
	int nonportable_cluster;
	int cluster_policy;
	CUfunc_cache cache;
	int ptx_version, binary_version;
};

struct host_global {
	char *name;
	uint64_t offset, size;	/* inside the module's global block */
};

struct host_module {
	struct host_ctx *ctx;
	struct host_func **funcs;
	size_t nfuncs;
	struct host_global *globals;
	size_t nglobals;
	void *block;		/* emulated device memory holding every global */
	size_t block_size;	/* page-rounded, charged to the device budget */
};

struct host_state {
	pthread_mutex_t lock;
	pthread_rwlock_t map;
	int initialized;
	uint64_t mem_total;
	uint64_t mem_used;	/* physical allocations and module globals */
	struct host_ctx primary;
	struct host_set ctxs, streams, events, modules, funcs, allocs;
};

extern struct host_state host;

/* Implementations, named host_<cuda name>, typed as cuda.h declares them. */
#define HOST_DECLARE(fn) extern __typeof__(fn) host_##fn;
VGPU_BACKEND_FUNCS(HOST_DECLARE)
VGPU_GEN_SLOTS_BEGIN
VGPU_BACKEND_GEN_FUNCS(HOST_DECLARE)
VGPU_GEN_SLOTS_END
#undef HOST_DECLARE

/* backend_host.c */
/* The calling thread's context, checked live and not poisoned; under host.lock. */
CUresult host_ctx_get(struct host_ctx **out);
/* The context a stream operation runs in: the stream's, or the current one
 * for the NULL and the special streams; checked as host_ctx_get. Under host.lock. */
CUresult host_stream_ctx(CUstream s, struct host_ctx **out);
/* host_stream_ctx under host.lock, for calls that only check the stream. */
CUresult host_stream_check(CUstream s);
/* Marks ctx poisoned by a device-side error (takes host.lock). */
void host_ctx_poison(struct host_ctx *ctx, CUresult err);
/* Frees everything ctx owns; under host.lock. */
void host_ctx_release_objects(struct host_ctx *ctx);
CUresult host_check_init(void);
/* host_mem_props.c: what a physical allocation may ask for, and is given. */
CUresult host_check_alloc_prop(const CUmemAllocationProp *prop);
void host_granted_prop(CUmemAllocationProp *out, const CUmemAllocationProp *asked);

/* host_memory.c */
enum host_access { HOST_READ = 1, HOST_WRITE = 2 };
/* Whether [p, p + n) lies in emulated device memory or registered host
 * memory, all of it allowing acc. Under host.map (shared or exclusive). */
int host_range_ok(uint64_t p, uint64_t n, unsigned acc);
/* Budget for module globals: reserve and map anonymous zeroed memory as
 * emulated device memory, or give it back. Take host.map themselves. */
CUresult host_global_block_alloc(size_t size, void **out);
void host_global_block_free(void *p, size_t size);
int host_budget_take(uint64_t n);	/* under host.lock; 0 or -1 */
void host_budget_give(uint64_t n);	/* under host.lock */

/* host_module.c */
void host_module_destroy(struct host_module *m);	/* under host.lock */

/* host_exec.c */
void host_stream_destroy(struct host_stream *s);	/* under host.lock */
void host_event_destroy(struct host_event *e);		/* under host.lock */
/* A new stream owned by ctx, or by the current context if NULL. */
CUresult host_stream_new(struct host_ctx *ctx, CUstream *ph, unsigned int flags, int priority);
/* Records e now: every operation before has run. Under host.lock. */
void host_event_mark(struct host_event *e);

/* host_image.c: what a module image holds. */
struct host_image_kernel {
	char *name;
	int nparams;		/* -1: the image does not say */
	uint32_t *param_off, *param_size;
};

struct host_image_global {
	char *name;
	uint64_t size, align;
	uint8_t *init;		/* NULL: zero */
};

struct host_image {
	struct host_image_kernel *kernels;
	size_t nkernels;
	struct host_image_global *globals;
	size_t nglobals;
	int ptx_version, binary_version;
};

CUresult host_image_parse(const void *image, struct host_image *out);
void host_image_free(struct host_image *img);

/* host_streamops.c */
/* A new stream's (or context's NULL stream's) attributes, as the driver's. */
void host_stream_attrs_init(struct host_stream_attrs *a);


/* host_graph.c: graphs, their nodes and instances (host_graph_exec.c).
 * graph_lock guards them all; it is taken before host.lock. */
#define HG_NATTR 32	/* kernel node attributes kept: ids below */

struct hg_graph;

struct hg_dep {
	struct hg_node *from;
	CUgraphEdgeData data;
};

struct hg_node {
	struct hg_graph *g;
	uint64_t serial, orig;		/* its own; (a copy's) the node it copies */
	CUgraphNodeType type;
	CUgraphNodeParams p;		/* kernel: kernelParams point at args */
	void **args;			/* kernel: one pointer a parameter, into block */
	uint8_t *block;
	struct hg_graph *child;		/* GRAPH: the node's own copy */
	struct hg_graph **bodies;	/* CONDITIONAL: its body graphs, nbodies */
	unsigned int nbodies;
	CUmemGenericAllocationHandle mem;	/* MEM_ALLOC: the memory it owns (a copy: 0) */
	size_t mem_size;
	struct hg_dep *in;
	size_t nin, capin;
	int enabled;			/* an instance's: 0 skips it */
	CUkernelNodeAttrValue attr[HG_NATTR];	/* kernel: by CUkernelNodeAttrID */
};

struct hg_graph {
	struct hg_node **nodes;		/* in the order they were added */
	size_t n, cap;
	struct hg_node *owner;		/* a child graph node's graph: its node */
};

struct hg_exec {
	struct hg_graph *g;		/* the copy, nodes in a runnable order */
	uint64_t flags;
};

extern pthread_mutex_t graph_lock;
extern struct host_set graphs, nodes, execs;	/* live handles */
extern const CUgraphEdgeData plain_edge;
/* Under graph_lock: */
struct hg_node *node_get(CUgraphNode h);	/* a live node, or NULL */
int dep_index(const struct hg_node *to, const struct hg_node *from, const CUgraphEdgeData *d);
/* A copy of a graph (an instance's: its nodes enabled); NULL: no memory. */
struct hg_graph *graph_copy(const struct hg_graph *src, int instance);
void graph_free(struct hg_graph *g);
/* A node's own copy of parameters made (it holds none yet), dropped (a child
 * graph's handle with it), or replaced (left as it was on failure). */
CUresult params_set(struct hg_node *n, const CUgraphNodeParams *p);
void params_clear(struct hg_node *n);
CUresult params_replace(struct hg_node *n, const CUgraphNodeParams *p);
/* host_graph_cond.c: a conditional node's bodies made, copied from @src's (an instance's when @instance), dropped;
 * its handles with CU_GRAPH_COND_ASSIGN_DEFAULT given their default at the
 * start of a launch of @g; the node run, bodies by @run. */
/* host_graph_mem.c: a memory node's parameters (an allocation node's memory
 * made, unless it copies a node's), its memory given back. */
CUresult mem_node_set(struct hg_node *n, const CUgraphNodeParams *p);
void mem_node_clear(struct hg_node *n);
CUresult cond_params_set(struct hg_node *n, const CUDA_CONDITIONAL_NODE_PARAMS *p);
CUresult cond_copy(struct hg_node *n, const struct hg_node *src, int instance);
void cond_clear(struct hg_node *n);
void cond_launch_reset(const struct hg_graph *g);
CUresult cond_run(const struct hg_node *n, CUstream s,
		  CUresult (*run)(const struct hg_graph *g, CUstream s));

#endif
