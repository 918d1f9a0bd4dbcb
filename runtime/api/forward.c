// SPDX-License-Identifier: MIT
/* Handles to ids and one request, for the generated entry points (forward.h). */
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "graph.h"
#include "module.h"

static void take_ctx(struct vgpu_fwd *f, struct vgpu_ctx *c)
{
	if (!f->ctx)
		f->ctx = c;
}

/* A resolved handle: its context the call's unless an earlier handle gave
 * one, its id @oid the ring's. */
static CUresult taken(struct vgpu_fwd *f, struct vgpu_ctx *c, uint32_t oid, uint32_t *id)
{
	take_ctx(f, c);
	*id = oid;
	return CUDA_SUCCESS;
}

CUresult vgpu_fwd_ctx(struct vgpu_fwd *f, CUcontext h, uint32_t *id)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_ctx_resolve(h, &c);

	return rc ? rc : taken(f, c, c->id, id);
}

CUresult vgpu_fwd_stream(struct vgpu_fwd *f, CUstream h, uint32_t *id)
{
	struct vgpu_ctx *c;
	CUresult rc = vgpu_stream_resolve(h, f->ptds, &c, id);

	if (rc)
		return rc;
	take_ctx(f, c);
	f->stream = *id;
	return CUDA_SUCCESS;
}

CUresult vgpu_fwd_event(struct vgpu_fwd *f, CUevent h, uint32_t *id)
{
	struct vgpu_event *e;
	CUresult rc = vgpu_event_resolve(h, &e);

	return rc ? rc : taken(f, e->ctx, e->id, id);
}

CUresult vgpu_fwd_func(struct vgpu_fwd *f, const void *h, uint32_t *id)
{
	struct vgpu_func *fn;
	CUresult rc = vgpu_func_resolve((CUfunction)h, &fn);

	return rc ? rc : taken(f, fn->mod->ctx, fn->id, id);
}

CUresult vgpu_fwd_module(struct vgpu_fwd *f, CUmodule h, uint32_t *id)
{
	struct module *m;
	CUresult rc = vgpu_module_resolve(h, &m);

	return rc ? rc : taken(f, m->m.ctx, m->m.id, id);
}

CUresult vgpu_fwd_gen(struct vgpu_fwd *f, const void *h, enum vgpu_gen_kind kind, uint32_t *id)
{
	const struct vgpu_gen_obj *o = h;

	if (!o || o->magic != VGPU_GEN_MAGIC || o->kind != (uint32_t)kind)
		return CUDA_ERROR_INVALID_HANDLE;
	take_ctx(f, o->ctx);
	*id = o->id;
	return CUDA_SUCCESS;
}

CUresult vgpu_fwd_gen_new(struct vgpu_fwd *f, enum vgpu_gen_kind kind, struct vgpu_gen_obj **obj,
			  uint32_t *id)
{
	struct vgpu_gen_obj *o = vgpu_obj_new(sizeof(*o), offsetof(struct vgpu_gen_obj, id),
					      VGPU_K_GEN);

	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o->magic = VGPU_GEN_MAGIC;
	o->kind = kind;
	o->ctx = f->ctx;
	*obj = o;
	*id = o->id;
	return CUDA_SUCCESS;
}

void vgpu_fwd_gen_made(struct vgpu_gen_obj *obj, CUresult rc, void **out)
{
	if (!rc) {
		*out = obj;
		return;
	}
	vgpu_fwd_gen_free(obj);
}

void vgpu_fwd_gen_free(const void *h)
{
	struct vgpu_gen_obj *o = (struct vgpu_gen_obj *)h;

	o->magic = 0;
	vgpu_id_free(VGPU_K_GEN, o->id);
	free(o);
}

CUresult vgpu_fwd_str(const char *s, size_t *len)
{
	size_t n = s ? strnlen(s, VGPU_MAX_NAME) : VGPU_MAX_NAME;

	if (n >= VGPU_MAX_NAME)
		return CUDA_ERROR_INVALID_VALUE;	/* NULL, or longer than a name may be */
	*len = n + 1;
	return CUDA_SUCCESS;
}

/* A lookup's result: on success the handle's context, *@c, is the call's
 * unless an earlier handle gave one. */
static CUresult took(struct vgpu_fwd *f, CUresult rc, struct vgpu_ctx *const *c)
{
	if (!rc)
		take_ctx(f, *c);
	return rc;
}

CUresult vgpu_fwd_graph(struct vgpu_fwd *f, CUgraph h, uint32_t *id)
{
	struct vgpu_ctx *c;

	return took(f, vgpu_graph_lookup(h, &c, id), &c);
}

CUresult vgpu_fwd_exec(struct vgpu_fwd *f, CUgraphExec h, uint32_t *id)
{
	struct vgpu_ctx *c;

	return took(f, vgpu_graph_exec_lookup(h, &c, id), &c);
}

CUresult vgpu_fwd_node(struct vgpu_fwd *f, CUgraphNode h, uint32_t *id)
{
	struct vgpu_ctx *c;
	CUgraphNodeType type;
	CUgraph g;

	return took(f, vgpu_graph_node_lookup(h, &g, id, &type, &c), &c);
}

CUresult vgpu_fwd_dev(CUdevice d, int32_t *out)
{
	if (d < 0 || d >= vgpu_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*out = d;
	return CUDA_SUCCESS;
}

CUresult vgpu_fwd_ctx_default(struct vgpu_fwd *f)
{
	return f->ctx ? CUDA_SUCCESS : vgpu_ctx_current(&f->ctx);
}

CUresult vgpu_call_exact(struct vgpu_req *r, void *out, size_t len)
{
	uint8_t got[256];
	CUresult rc;

	if (len > sizeof(got))
		return CUDA_ERROR_INVALID_VALUE;
	r->reply = got;
	r->reply_cap = (uint32_t)len;
	rc = vgpu_call(r);
	if (!rc && r->cqe.val[2] != len)
		rc = CUDA_ERROR_UNKNOWN;	/* a worker that answered no value */
	if (!rc)
		memcpy(out, got, len);
	return rc;
}

void *vgpu_call_records(struct vgpu_req *r, size_t size, size_t max, size_t *n, CUresult *rc)
{
	void *got = malloc(max * size);

	*n = 0;
	*rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!got)
		return NULL;
	r->reply = got;
	r->reply_cap = (uint32_t)(max * size);
	*rc = vgpu_call(r);
	*n = r->cqe.val[0];
	if (!*rc && (*n > max || r->cqe.val[2] != *n * size))
		*rc = CUDA_ERROR_UNKNOWN;
	return got;
}

CUresult vgpu_fwd_call(const struct vgpu_fwd *f, const void *args, size_t args_len,
		       const void *extra, size_t extra_len, void *res, size_t res_len,
		       void *res_extra, size_t res_extra_len)
{
	struct vgpu_req r = { .sqe = { .opcode = f->op, .ctx = f->ctx ? f->ctx->id : 0,
				       .stream = f->stream } };
	uint8_t small[512], *in = NULL, *out = NULL, *heap = NULL;
	size_t in_len = args_len + extra_len, out_len = res_len + res_extra_len;
	CUresult rc;

	if (f->ptds)
		r.sqe.flags |= VGPU_SQE_PTDS;
	if (!extra_len && args_len <= sizeof(r.sqe.arg)) {
		memcpy(r.sqe.arg, args, args_len);
	} else {
		if (in_len > vgpu_payload_max())
			return CUDA_ERROR_INVALID_VALUE;	/* more than one entry carries */
		in = in_len <= sizeof(small) ? small : (heap = malloc(in_len));
		if (!in)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(in, args, args_len);
		if (extra_len)
			memcpy(in + args_len, extra, extra_len);
		r.payload = in;
		r.payload_len = (uint32_t)in_len;
	}
	if (!f->sync) {
		rc = vgpu_post(&r);
		free(heap);
		return rc;
	}
	if (out_len > VGPU_GEN_RES_INLINE || res_extra_len) {
		if (in == small || out_len > sizeof(small)) {
			out = malloc(out_len);
			if (!out) {
				free(heap);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
		} else {
			out = small;
		}
		r.reply = out;
		r.reply_cap = (uint32_t)out_len;
	}
	rc = vgpu_call(&r);
	if (!rc && res_len) {
		if (!out)
			memcpy(res, r.cqe.val, res_len);
		else if (r.cqe.val[2] < res_len)
			rc = CUDA_ERROR_UNKNOWN;	/* a worker that answered less */
		else
			memcpy(res, out, res_len);
		if (!rc && res_extra_len)
			memcpy(res_extra, out + res_len, r.cqe.val[2] - res_len);
	}
	if (out != small)
		free(out);
	free(heap);
	return rc;
}
