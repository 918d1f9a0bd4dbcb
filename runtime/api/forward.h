/* SPDX-License-Identifier: MIT */
/*
 * What the generated entry points (calls_gen.c, tools/gen-calls) share: a
 * handle of each kind checked and turned into the id the ring carries, the
 * call's context picked from its first handle that has one, and one request
 * whose inputs ride in the entry's arg[] when they fit (else as its payload)
 * and whose outputs come back in cqe.val[] when they fit (else in the reply
 * slot). Hand-written entry points use them too.
 */
#ifndef VGPU_RUNTIME_FORWARD_H
#define VGPU_RUNTIME_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "handles.h"
#include "init.h"
#include "vgpu/calls_gen.h"

struct vgpu_fwd {
	uint16_t op;
	bool sync;		/* wait for the answer */
	bool ptds;		/* a _ptsz/_ptds variant: NULL is the thread's stream */
	bool noctx;		/* device-level: no context */
	struct vgpu_ctx *ctx;	/* the first handle's context, else the current one */
	uint32_t stream;	/* the stream id, when a stream handle was given */
};

/* A handle of a generated kind (calls.def `kind`): no hand-written code
 * knows the object; its id is all the worker needs. */
struct vgpu_gen_obj {
	uint32_t magic;		/* VGPU_GEN_MAGIC while live */
	uint32_t kind;		/* enum vgpu_gen_kind */
	uint32_t id;
	struct vgpu_ctx *ctx;	/* the context it was made in */
};
#define VGPU_GEN_MAGIC 0x7667656eu	/* "vgen" */

VGPU_HIDDEN CUresult vgpu_fwd_ctx(struct vgpu_fwd *f, CUcontext h, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_fwd_stream(struct vgpu_fwd *f, CUstream h, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_fwd_event(struct vgpu_fwd *f, CUevent h, uint32_t *id);
/* CUfunction or CUkernel (the same objects in vgpu). */
VGPU_HIDDEN CUresult vgpu_fwd_func(struct vgpu_fwd *f, const void *h, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_fwd_module(struct vgpu_fwd *f, CUmodule h, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_fwd_graph(struct vgpu_fwd *f, CUgraph h, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_fwd_exec(struct vgpu_fwd *f, CUgraphExec h, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_fwd_node(struct vgpu_fwd *f, CUgraphNode h, uint32_t *id);
VGPU_HIDDEN CUresult vgpu_fwd_gen(struct vgpu_fwd *f, const void *h, enum vgpu_gen_kind kind,
				  uint32_t *id);
/* A handle of @kind about to be made: its object and id; then, with the
 * call's result, the program's handle (or the object freed); and freed
 * once its destroy call succeeded. */
VGPU_HIDDEN CUresult vgpu_fwd_gen_new(struct vgpu_fwd *f, enum vgpu_gen_kind kind,
				      struct vgpu_gen_obj **obj, uint32_t *id);
VGPU_HIDDEN void vgpu_fwd_gen_made(struct vgpu_gen_obj *obj, CUresult rc, void **out);
VGPU_HIDDEN void vgpu_fwd_gen_free(const void *h);
/* A name the worker takes: NUL-terminated, VGPU_MAX_NAME bytes at most
 * (*len: with its NUL). */
VGPU_HIDDEN CUresult vgpu_fwd_str(const char *s, size_t *len);
/* A device ordinal the session has (CUDA_ERROR_INVALID_DEVICE otherwise). */
VGPU_HIDDEN CUresult vgpu_fwd_dev(CUdevice d, int32_t *out);
/* No handle named a context: the calling thread's current one. */
VGPU_HIDDEN CUresult vgpu_fwd_ctx_default(struct vgpu_fwd *f);
/*
 * A synchronous request whose answer is one value of exactly @len bytes
 * (256 at most), copied to @out only when whole: a failed call leaves the
 * program's output as it was.
 */
VGPU_HIDDEN CUresult vgpu_call_exact(struct vgpu_req *r, void *out, size_t len);
/*
 * A synchronous request answering up to @max records of @size bytes, their
 * count in cqe.val[0]: returns the buffer it allocated for them (free() it
 * whatever *@rc says; NULL only when out of memory), the count, checked
 * against the bytes, in *@n.
 */
VGPU_HIDDEN void *vgpu_call_records(struct vgpu_req *r, size_t size, size_t max, size_t *n,
				    CUresult *rc);
/*
 * The request: @args (a vgpu_args_NAME) and @extra (an input array) in;
 * @res (a vgpu_res_NAME) and @res_extra (an output array) out. Asynchronous
 * calls have no outputs. Returns the call's CUresult.
 */
VGPU_HIDDEN CUresult vgpu_fwd_call(const struct vgpu_fwd *f, const void *args, size_t args_len,
				   const void *extra, size_t extra_len, void *res, size_t res_len,
				   void *res_extra, size_t res_extra_len);

#endif
