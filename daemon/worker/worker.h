/* SPDX-License-Identifier: MIT */
/*
 * A worker process serves one session: it owns that session's CUDA
 * contexts and objects and executes its ring entries in order. Handlers for
 * each group of opcodes live in exec_*.c and register in dispatch.c.
 */
#ifndef VGPU_WORKER_H
#define VGPU_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "ckpt_calls.h"
#include "hostpool.h"
#include "objects.h"
#include "pool.h"
#include "ring.h"
#include "stats.h"
#include "vmem.h"

struct worker_config {
	uint32_t sq_entries;
	uint32_t payload_size;
	uint32_t staging_chunk;
	uint32_t staging_chunks;
	uint64_t host_pool_size;
	uint64_t dev_window_size;	/* 0: 8 TiB of address space */
	uint32_t order_wait_ms;		/* a checkpoint or move order waits this long
					 * on a session stalled on its program, then
					 * is refused (0: 5 s) */
	const char *jit_cache;		/* jit_cache.h: root of the tenants' caches */
};

/* Worker -> supervisor over the worker's control socket: a readiness byte
 * (WMSG_READY or WMSG_FAILED) at start, then at most one attach request. */
#define WMSG_FAILED	0
#define WMSG_READY	1
#define WMSG_ATTACH	2	/* attach kmod_session for my client */
#define WMSG_CHECKPOINTED 3	/* struct ckpt_answer (checkpoint.h) */
#define WMSG_RESUME	5	/* a client takes up session kmod_session: where is
				 * its state? (struct resume_reply) */
struct worker_msg {
	uint8_t type;
	uint8_t pad[7];
	uint64_t kmod_session;
};

/* Supervisor -> worker: the answer to WMSG_ATTACH, with the worker fd of
 * /dev/vgpu as SCM_RIGHTS when status is 0. */
struct attach_reply {
	int32_t status;			/* 0 or -errno */
	uint32_t pad;
};

struct worker {
	struct vgpu_backend B;
	struct worker_config cfg;
	int sock;			/* the client's connection */
	int ctl;			/* the supervisor's control socket */
	struct vgpu_kmod kmod;		/* /dev/vgpu carrier: the session mapped */
	uint64_t session_id;
	struct vgpu_ring ring;
	void *region;
	int region_fd, bell_fd;
	uint8_t *pbuf;			/* payload copied out of shared memory */
	int device_count;
	CUdevice devices[VGPU_MAX_DEVICES];
	CUcontext primary[VGPU_MAX_DEVICES];	/* retained at start-up */
	uint32_t primary_refs[VGPU_MAX_DEVICES];	/* this session's retains */
	struct obj_table ctxs, streams, events, modules, funcs, graphs, graph_execs;
	struct obj_table gen_objs;	/* generated kinds (calls.def), aux: the kind */
	struct calls_log calls_log;	/* calls a restore runs again (ckpt_calls.h) */
	struct obj_table greens;	/* green contexts (exec_green.c) */
	uint32_t captures;		/* stream captures begun and not ended */
	uint32_t cur_ctx;		/* ctx id current on the main thread */
	CUresult deferred;		/* first error of an asynchronous call */
	pthread_mutex_t cq_lock;	/* the CQ has two producers */
	struct vmem vmem;
	struct hostpool pool;
	bool dead;			/* the client went away */
	struct global_range *globals;	/* module globals the client looked up */
	size_t nglobals, cap_globals;
	int print_pipe;			/* read end: what the driver prints */
	int print_out;			/* where it goes: the client's stdout */
	pthread_mutex_t print_lock;	/* held while relaying a piece */
	uint32_t print_dirty;		/* the driver may have printed since the
					 * ring thread's last drain (atomic) */
	bool answering_query;		/* ring thread: the entry in hand is
					 * OPF_NO_PRINT */
	struct worker_stats *stats;	/* the supervisor reads it; NULL: none */
	struct ckpt_job *ckpt_job;	/* a checkpoint waiting for its pause */
	struct move_job *move_job;	/* a move waiting for its file */
	struct vgpu_welcome wl;		/* what the client was told: the layout */
	char comm[16];			/* the client's command */
	uint32_t client_pid, client_uid;	/* as SO_PEERCRED saw them */
	bool moved;			/* the session went to another worker */
	uint32_t cb_posted;		/* host callbacks asked for (atomic: graph host
					 * nodes ask from the driver's threads) */
	bool locked;			/* takes no entry until unlocked (ckpt_process.h) */
	uint32_t cb_finished;		/* and acknowledged (callback threads) */
	struct pools *pools;		/* stream-ordered memory pools (pool.c) */
	struct vmm_state *vmm;		/* the client's virtual memory API (exec_vmm.c) */
	struct pool_ipc *pool_ipc;	/* pools shared between processes (pool_ipc.c) */
	struct launch_graphs *launch_graphs;	/* runs of launches (launch_graphs.c) */
	struct ipc_state *ipc;		/* CUDA IPC (daemon/worker/ipc/) */
	struct array_state *arrays;	/* CUDA arrays and texture objects (array/) */
};

/*
 * What a handler does with its entry: answer now (the dispatcher posts
 * c), or later (the handler took ownership of the reply, e.g. a wait that
 * the waiter thread finishes).
 */
enum op_status { OP_DONE, OP_LATER };

struct op_call {
	const struct vgpu_sqe *sqe;
	const void *payload;		/* private copy */
	uint32_t len;
	struct vgpu_cqe *cqe;		/* result, val[] and tag are filled in */
	uint8_t *reply;			/* reply slot, or NULL for async calls */
};

typedef enum op_status (*op_handler)(struct worker *w, struct op_call *call);

struct op_desc {
	uint16_t opcode;
	uint16_t flags;			/* OPF_* */
	op_handler fn;
	const char *name;
};

/* A w->ctxs entry's aux: its device, and above it what kind it is. */
#define CTX_AUX_PRIMARY	(1ull << 32)
#define CTX_AUX_GREEN	(2ull << 32)	/* a green context's (exec_green.c) */
#define CTX_AUX_KIND(aux)	((aux) & ~0xffffffffull)

#define OPF_NEEDS_CTX	(1u << 0)	/* runs in sqe.ctx */
#define OPF_SYNC_ONLY	(1u << 1)	/* must carry a tag: it has an answer */
#define OPF_NO_FOLD	(1u << 2)	/* its answer is about itself alone */
/* A polled query, not one of the points at which CUDA flushes device printf
 * (launches, synchronizations, blocking copies, module loads and unloads,
 * context destruction, before host callbacks): its answer drains the print
 * pipe only while work queued since the last other answer may still print
 * (see must_drain in worker.c). */
#define OPF_NO_PRINT	(1u << 3)
#define OPF_LOGGED	(1u << 4)	/* recorded for a restore (ckpt_calls.h) */

#define OP(code, f, fn) { VGPU_OP_##code, (f), fn, #code }

extern const struct op_desc exec_ctx_ops[];
extern const struct op_desc exec_memory_ops[];
extern const struct op_desc exec_stream_ops[];
extern const struct op_desc exec_module_ops[];
extern const struct op_desc exec_bulk_ops[];
extern const struct op_desc exec_graph_ops[];
extern const struct op_desc exec_tables_ops[];
extern const struct op_desc exec_tensor_map_ops[];
extern const struct op_desc exec_green_ops[];
extern const struct op_desc exec_link_ops[];
extern const struct op_desc exec_graph_node_ops[];
/* exec_graph_node.c: the node ids of a graph being destroyed are dropped. */
void graph_nodes_forget(uint32_t graph);
/* exec_graph_node.c, for exec_graph_query.c: a node's id (issued now if it
 * has none; 0: no more ids); node ids of graph @graph as the driver's
 * nodes; edge data checked; a node of a live graph and its graph's id; a
 * node id dropped. */
uint32_t graph_node_id(CUgraphNode n, uint32_t graph);
CUresult graph_node_list(const uint32_t *ids, uint64_t n, uint32_t graph, CUgraphNode *out);
CUresult graph_edge_list(const uint8_t *src, uint64_t n, CUgraphEdgeData *out);
CUresult graph_live_node(struct worker *w, uint64_t id, CUgraphNode *out, uint32_t *graph);
void graph_node_drop(uint32_t id);
/* exec_graph_node.c, for the ops that add one node: whether the payload is
 * @head bytes of description, then sqe arg1 dependency ids and (arg2 1)
 * their edge data; the node @p added to graph arg0 after those. */
bool graph_add_len_ok(const struct op_call *call, size_t head);
CUresult graph_add_after(struct worker *w, const struct op_call *call, size_t head,
			 CUgraphNodeParams *p, CUgraphNode *node);
extern const struct op_desc exec_graph_cond_ops[];	/* exec_graph_cond.c */
/* exec_graph_mem.c: graph memory nodes; the ranges their allocation nodes
 * hold (the session's device memory), forgotten with the node (0: every
 * node of @graph). */
extern const struct op_desc exec_graph_mem_ops[];
bool graph_mem_contains(uint64_t p, uint64_t len);
void graph_mem_forget(uint32_t graph, uint32_t node);
/* exec_graph_mem.c: cuMemFree (@async: cuMemFreeAsync on @st) of what an
 * allocation node gave, outside its graph; false: @p is no such address. */
bool graph_mem_free(struct worker *w, CUdeviceptr p, CUstream st, bool async, CUresult *rc);
extern const struct op_desc exec_graph_query_ops[];
extern const struct op_desc exec_graph_dot_ops[];	/* graph_dot.c */
/* exec_graph_query.c: graphs the session knows that a child graph node
 * owns go with that node (0: any node) or with graph @parent. */
void graph_embedded_forget(struct worker *w, uint32_t parent, uint32_t node);
/* exec_graph_query.c, for graph_ckpt.c: a restored child graph node's graph
 * known again under @id (0, or -1: taken, out of range, out of memory). */
int graph_embedded_bind(struct worker *w, uint32_t id, CUgraph child, uint32_t parent,
			uint32_t node, uint64_t ctx);
/* graph_ckpt.c: the session's graphs and instances into checkpoint records
 * and bodies (0, or -errno and why), and made again from them. */
struct vgpu_ckpt_graph;
struct vgpu_ckpt_graph_exec;
int graph_ckpt_save(struct worker *w, struct vgpu_ckpt_graph **g, size_t *ng, uint8_t **gblob,
		    size_t *glen, struct vgpu_ckpt_graph_exec **x, size_t *nx, uint8_t **xblob,
		    size_t *xlen, char *why, size_t why_len);
int graph_ckpt_load(struct worker *w, const struct vgpu_ckpt_graph *g, size_t ng,
		    const uint8_t *gblob, size_t glen, const struct vgpu_ckpt_graph_exec *x,
		    size_t nx, const uint8_t *xblob, size_t xlen, char *why, size_t why_len);
/* exec_graph_node.c, for graph_snap.c and graph_ckpt.c: a restored node
 * under its id (0, or -1: the id is taken or out of range); a kernel node's
 * parameters as the wire carries them (struct vgpu_kernel_node and the
 * block), and back; a struct vgpu_node_params checked into the driver's. */
int graph_node_bind(uint32_t id, CUgraphNode n, uint32_t graph);
uint32_t graph_node_next(void);			/* the next id issued */
void graph_node_next_at_least(uint32_t id);
CUresult graph_kernel_read(struct worker *w, CUgraphNode node, uint8_t *out, uint32_t *len);
CUresult graph_kernel_params(struct worker *w, const void *buf, uint32_t len, void **ptrs,
			     CUDA_KERNEL_NODE_PARAMS *p, uint32_t *used);
CUresult graph_node_params(struct worker *w, const struct vgpu_node_params *v, uint32_t graph,
			   CUgraphNodeParams *p);
/* graph_host.c: a host node's parameters for the client's callback @cookie
 * (a trampoline that runs it in the client); the cookie of host node @n (0:
 * not one of ours). */
CUresult graph_host_params(struct worker *w, uint64_t cookie, CUDA_HOST_NODE_PARAMS_v2 *p);
uint64_t graph_host_cookie(struct worker *w, CUgraphNode n);
/* The same for the program's callback of a staged copy (it is not a host
 * node of the program's); whether host node @n is one. */
CUresult graph_host_staged_params(struct worker *w, uint64_t cookie, CUDA_HOST_NODE_PARAMS_v2 *p);
bool graph_host_staged(struct worker *w, CUgraphNode n);
/* graph_hostcopy.c: copy nodes with a host end. A staged copy is a child
 * graph node [callback -> copy] or [copy -> callback] that the client sees
 * as one copy node: its type as the client sees it; its copy node (NULL:
 * @n is no staged copy); the driver's parameters for a MEMCPY description
 * (ends in the pinned pool as host memory; a staged one as the child
 * graph, which stays valid until the next call). */
CUresult graph_node_type(struct worker *w, CUgraphNode n, CUgraphNodeType *t);
CUgraphNode graph_staged_copy(struct worker *w, CUgraphNode n);
CUresult graph_copy_params(struct worker *w, const struct vgpu_node_params *v, CUcontext ctx,
			   CUgraphNodeParams *p);
/* New parameters for staged copy @n of a graph (not an instance's): @p as
 * graph_copy_params made them for a staged description the same way. */
CUresult graph_staged_set(struct worker *w, CUgraphNode n, const CUgraphNodeParams *p);
extern const struct op_desc exec_graph_hostcopy_ops[];
/* graph_snap.c: what each instance was made from, kept for checkpoints:
 * taken when it is made (@e its entry, flags as instantiated), followed
 * through its setters and updates, and through its graph's nodes and the
 * graph going away; dropped with it. */
void graph_snap_take(struct worker *w, struct obj_entry *e, uint32_t graph, uint64_t flags);
void graph_snap_set(struct worker *w, struct obj_entry *exec, uint32_t node,
		    const CUgraphNodeParams *p);
void graph_snap_update(struct worker *w, struct obj_entry *exec, CUgraph from);
void graph_snap_node_gone(struct worker *w, uint32_t graph, uint32_t node, CUgraphNode n);
void graph_snap_graph_gone(struct worker *w, uint32_t graph);
void graph_snap_drop(struct worker *w, struct obj_entry *exec);
extern const struct op_desc exec_streamops_ops[];
extern const struct op_desc exec_pool_ops[];
/* exec_gen.c: the generated calls (include/vgpu/calls.def). */
extern const struct op_desc exec_gen_ops[];

/* exec_bulk.c: receive @total bytes of a client's bulk transfer into @dst
 * (worker memory). Returns 0, or -EPIPE when the client went away. */
int bulk_recv_buffer(struct worker *w, void *dst, uint64_t total);
/* The other way: @total bytes from @src to the client, which drains them. */
int bulk_send_buffer(struct worker *w, const void *src, uint64_t total);

/* worker.c */
int worker_prepare(struct worker *w, const char *backend, const struct worker_config *cfg);
/*
 * Before a session is taken up: its device 0 on GPU @gpu, the GPUs after
 * it in order as its devices 1, 2, ... (-1: as they are). 0, or -ENODEV.
 */
int worker_place(struct worker *w, int gpu);
int worker_serve(struct worker *w, int client_sock, int ctl, uint64_t session_id);
/* Serves the session's ring until the client goes or the session moves. */
int worker_loop(struct worker *w);
/* The session's device window and host pool; fills wl's fields for them. */
int worker_build_memory(struct worker *w, struct vgpu_welcome *wl);
/* Device printf output goes to fd (the client's stdout) from now on. */
void worker_print_to(struct worker *w, int fd);
/* The same once what the driver wrote out so far went to the old one. */
void worker_print_switch(struct worker *w, int fd);
/* A welcome that refuses the client, and says why. */
void worker_refuse(int sock, int err, const char *why);
/* The same without a log line (admission.c counts its refusals itself). */
void worker_send_refusal(int sock, int err, const char *why);
/* Posts a CQE; with the CQ full, waits for the client to reap (or die).
 * An answer goes after what the driver printed before it (see print_dirty). */
void worker_post(struct worker *w, const struct vgpu_cqe *cqe);
/* What the ring thread just ran may have made the driver print. */
static inline void worker_may_print(struct worker *w)
{
	__atomic_store_n(&w->print_dirty, 1, __ATOMIC_RELAXED);
}
/* Sleeps on the doorbell; false when the client is gone. */
bool worker_wait_doorbell(struct worker *w, int timeout_ms);
/*
 * For every wait on the client inside an entry (CQ space, a staging chunk,
 * a callback's acknowledgement): sleeps up to @us microseconds on the
 * client's socket (and on the doorbell with @bell), so that its death ends
 * the wait at once; false when the client is gone (w->dead is then set).
 * @what says what the session waits for, should an order be refused.
 */
bool worker_wait_client(struct worker *w, bool bell, unsigned int us, const char *what);
/* The same check without sleeping: true (and w->dead) when it is gone. */
bool worker_client_gone(struct worker *w);
/* The /dev/vgpu session @id of this worker's client, attached by the
 * supervisor: its worker fd, or -errno and why. */
int worker_attach_kmod(struct worker *w, uint64_t id, const char **why);
/*
 * Called by waits on the client: on the ring's thread, an order (or a
 * checkpoint or move waiting for its pause) that the wait has kept from
 * being taken for cfg.order_wait_ms is refused, its answer saying the
 * session is stalled on its program (@what); the session serves on.
 */
void worker_order_stalled(struct worker *w, const char *what);
/*
 * With the cuda backend a host function runs on the driver's thread and
 * holds its stream until the program answers it; a checkpoint or move
 * waiting on that stream would wait for ever. True when host functions
 * are still unanswered after cfg.order_wait_ms (or the client is gone).
 */
bool worker_callbacks_stuck(struct worker *w);

/* dispatch.c */
void dispatch_init(void);
/* The handler of @opcode, or NULL. */
const struct op_desc *dispatch_find(uint16_t opcode);
void dispatch_entry(struct worker *w, const struct vgpu_sqe *sqe);
/* The same for an entry whose payload was taken out of the ring before (len
 * bytes at payload, or len < 0: it was malformed); its tag is in range. */
void dispatch_taken(struct worker *w, const struct vgpu_sqe *sqe, const void *payload, int len);
CUresult worker_use_ctx(struct worker *w, uint32_t ctx_id);
CUstream worker_stream(struct worker *w, const struct vgpu_sqe *sqe, CUresult *err);
struct global_range {
	uint64_t addr, size;
	uint32_t module;
	char *name;		/* as the client looked it up */
};
/* exec_module.c: a global the client knows (a restore re-makes the list). */
void worker_remember_global(struct worker *w, uint64_t addr, uint64_t size, uint32_t module,
			    const char *name);

/* exec_module.c: [p, p + len) inside a module global the client knows. */
int worker_global_contains(struct worker *w, uint64_t p, uint64_t len);
/* exec_module.c: the launch shape a launch or occupancy entry carries (grid
 * in arg[1], block in arg[2], shared bytes in arg[3]); the rest zero. */
CUlaunchConfig worker_launch_config(const struct vgpu_sqe *s);
/* True when [p, p + len) is the client's own device or pool memory. */
int worker_addr_ok(struct worker *w, uint64_t p, uint64_t len);
/* Puts the pending error of earlier asynchronous calls into a reply. */
void worker_fold_deferred(struct worker *w, struct vgpu_cqe *c);
/* st is capturing: pageable copies are refused (exec_graph.c). */
bool worker_capturing(struct worker *w, CUstream st);

/* exec_streamops.c: a stream wait queued on the GPU keeps the session's work
 * from completing within cfg.order_wait_ms (or the client is gone). */
bool streamops_gpu_stalled(struct worker *w);
#define STREAMOPS_STALLED "on its GPU work (a stream wait on a value not written)"

/* waiter.c: finish a reply once GPU work is done, off the main thread. */
int waiter_start(struct worker *w);
/* A wait is queued or being answered. */
bool waiter_busy(void);
void waiter_after_event(struct worker *w, CUevent ev, uint32_t ctx_id,
			const struct vgpu_cqe *cqe);
void waiter_after_ctx_sync(struct worker *w, uint32_t ctx_id, const struct vgpu_cqe *cqe);
/* Replies once @stream's work so far is done (an event does the waiting). */
enum op_status reply_after_stream(struct worker *w, struct op_call *call, CUstream s);
/* cuStreamQuery(@s) until it is not CUDA_ERROR_NOT_READY, for a few tens of
 * microseconds at most: its last answer. */
CUresult waiter_poll(struct worker *w, CUstream s);

/* exec_vmm.c: the client's virtual memory API. */
extern const struct op_desc exec_vmm_ops[];
/* True when the client holds reservations, allocations or mappings. */
bool worker_vmm_in_use(const struct worker *w);
/* exec_vmm.c: unmaps, releases and unreserves all the program left. */
void worker_vmm_destroy(struct worker *w);
struct ckpt_sink;
struct vgpu_ckpt_reader;
/* exec_vmm_ckpt.c: checkpoint sections 20-24 (none when the client holds no VMM state);
 * the same state back from a file. 0, or -errno with @why said. */
int worker_vmm_checkpoint(struct worker *w, struct ckpt_sink *sink, char *why, size_t len);
int worker_vmm_restore(struct worker *w, struct vgpu_ckpt_reader *r, char *why, size_t len);
/* exec_vmm_share.c: reads what the program sent on its socket: descriptors
 * for imports are kept for their entries, anything else dropped. Never blocks. */
void worker_fd_drain(struct worker *w);
/* The descriptor the program sent for @token (waiting a little), or -1;
 * @fd sent to the program for @token, and closed here. */
int worker_fd_take(struct worker *w, uint64_t token);
CUresult worker_fd_send(struct worker *w, uint64_t token, int fd);

/* pool_ipc.c: memory pools shared between processes. */
extern const struct op_desc exec_pool_ipc_ops[];
/* Why a checkpoint of the session cannot be taken, or NULL. */
const char *pool_ipc_ckpt_refusal(struct worker *w);

#endif
