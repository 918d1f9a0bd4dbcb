// SPDX-License-Identifier: MIT
/*
 * The JIT linker (cuLink*: cuFFT, cuDNN's runtime kernels, programs that
 * link PTX). The link state lives here: inputs are collected (a file is
 * read here, with the program's own rights) and cuLinkComplete sends them
 * all in one LINK request; the worker checks and links them and the cubin
 * comes back to stay with the state until cuLinkDestroy, as the driver's
 * does. Options whose values point into the program (the info and error
 * logs, their sizes, the wall time) are kept here and filled from the
 * worker's answer; scalar options travel (common/jit_options.h); the
 * symbol-table options are not supported.
 *
 * One difference: inputs are compiled at cuLinkComplete, so an input the
 * linker refuses fails cuLinkComplete, not the cuLinkAddData that gave it.
 */
#include <stdlib.h>
#include <string.h>

#include "calls_hand_gen.h"
#include "driver.h"
#include "client.h"
#include "entry.h"
#include "handles.h"
#include "module.h"
#include "init.h"
#include "jit_options.h"
#include "unsupported.h"

#define LINK_MAGIC 0x766c6e6bu	/* "vlnk" */

/* A log the program gave: its buffer, capacity and size option slot. */
struct jit_log {
	char *buf;
	size_t cap;
	void **size;
};

/* The options whose values point into the program, filled from the answer. */
struct link_slots {
	struct jit_log info, err;
	void **wall, **threads;
};

struct link {
	uint32_t magic;
	struct vgpu_jit_option opt[VGPU_LINK_MAX_OPTIONS];
	uint32_t nopt;
	struct link_slots slots;
	uint8_t *inputs;		/* serialized, as LINK carries them */
	size_t len, cap;
	uint32_t ninputs;
	void *cubin;			/* the last result, until destroyed */
	size_t cubin_size;
};

static struct link *link_get(CUlinkState s)
{
	struct link *l = (struct link *)s;

	return l && l->magic == LINK_MAGIC ? l : NULL;
}

static struct jit_log *log_of(struct link_slots *k, CUjit_option o)
{
	return o == CU_JIT_INFO_LOG_BUFFER || o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ? &k->info
										       : &k->err;
}

/*
 * Sorts one option list: scalars go into @out (room @room), the program's
 * buffers and slots into @l when @l is given (cuLinkCreate's list); an
 * input's own log options are ignored (its messages go to the link's logs).
 */
static CUresult sort_options(struct link *l, unsigned n, CUjit_option *o, void **v,
			     struct vgpu_jit_option *out, uint32_t *nout)
{
	struct link_slots ignored, *k = l ? &l->slots : &ignored;

	if (n && (!o || !v))
		return CUDA_ERROR_INVALID_VALUE;
	*nout = 0;
	for (unsigned i = 0; i < n; i++) {
		switch (o[i]) {
		case CU_JIT_INFO_LOG_BUFFER:
		case CU_JIT_ERROR_LOG_BUFFER:
			log_of(k, o[i])->buf = v[i];
			continue;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			log_of(k, o[i])->cap = (uintptr_t)v[i];
			log_of(k, o[i])->size = &v[i];
			continue;
		case CU_JIT_WALL_TIME:
			k->wall = &v[i];
			continue;
		case CU_JIT_THREADS_PER_BLOCK:
			k->threads = &v[i];
			break;
		default:
			break;
		}
		if ((unsigned)o[i] >= CU_JIT_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
		if (!vgpu_jit_option_scalar(o[i]))
			return vgpu_unsupported("cuLink* option CU_JIT_GLOBAL_SYMBOL_* or "
						"CU_JIT_REFERENCED_* (tables in the program)");
		if (*nout == VGPU_LINK_MAX_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
		out[(*nout)++] = (struct vgpu_jit_option){ .option = o[i],
							   .value = (uintptr_t)v[i] };
	}
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuLinkCreate(unsigned int n, CUjit_option *o, void **v, CUlinkState *out)
{
	struct link *l;
	CUresult rc = vgpu_enter_nonnull(out);

	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sort_options(l, n, o, v, l->opt, &l->nopt);
	if (rc) {
		free(l);
		return rc;
	}
	l->magic = LINK_MAGIC;
	*out = (CUlinkState)l;
	return CUDA_SUCCESS;
}

/* Appends n bytes (and a NUL with @nul), padded to 8, to the inputs. */
static int put(struct link *l, const void *p, size_t n, bool nul)
{
	size_t want = n + nul, padded = (want + 7) & ~(size_t)7;

	if (want < n || padded < want || padded > VGPU_LINK_MAX_BYTES - l->len)
		return -1;
	if (l->len + padded > l->cap) {
		size_t cap = l->cap ? l->cap : 4096;
		uint8_t *grown;

		while (cap < l->len + padded)
			cap *= 2;
		grown = realloc(l->inputs, cap);
		if (!grown)
			return -1;
		l->inputs = grown;
		l->cap = cap;
	}
	memcpy(l->inputs + l->len, p, n);
	memset(l->inputs + l->len + n, 0, padded - n);
	l->len += padded;
	return 0;
}

static CUresult add(CUlinkState s, CUjitInputType type, const void *data, size_t size,
		    const char *name, unsigned int n, CUjit_option *o, void **v)
{
	struct vgpu_jit_option opt[VGPU_LINK_MAX_OPTIONS];
	struct vgpu_link_input in = { .type = (uint32_t)type };
	struct link *l = link_get(s);
	bool ptx = type == CU_JIT_INPUT_PTX;
	size_t name_len, undo;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!data || !size || (unsigned)type >= CU_JIT_NUM_INPUT_TYPES)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_JIT_INPUT_CUBIN && !ptx && type != CU_JIT_INPUT_FATBINARY)
		return vgpu_unsupported("cuLinkAddData/cuLinkAddFile of an object, library or "
					"NVVM input (cubin, PTX and fatbin inputs link)");
	if (l->ninputs == VGPU_LINK_MAX_INPUTS)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sort_options(NULL, n, o, v, opt, &in.options);
	if (rc)
		return rc;
	if (ptx)	/* the text up to its NUL; a NUL is added */
		size = strnlen(data, size);
	name = name ? name : "";
	name_len = strnlen(name, VGPU_MAX_NAME - 1);	/* a longer name is cut */
	in.name_len = (uint32_t)name_len + 1;
	in.bytes = size + ptx;
	undo = l->len;
	if (put(l, &in, sizeof(in), false) || put(l, opt, in.options * sizeof(opt[0]), false) ||
	    put(l, name, name_len, true) || put(l, data, size, ptx)) {
		l->len = undo;
		return l->len + size > VGPU_LINK_MAX_BYTES ? CUDA_ERROR_INVALID_VALUE
							  : CUDA_ERROR_OUT_OF_MEMORY;
	}
	l->ninputs++;
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
				 const char *name, unsigned int numOptions, CUjit_option *options,
				 void **optionValues)
{
	return add(state, type, data, size, name, numOptions, options, optionValues);
}

/* The file is read here: the program's rights, never the daemon's. */
CUresult vgpu_hand_cuLinkAddFile(CUlinkState s, CUjitInputType type, const char *path,
				 unsigned int n, CUjit_option *o, void **v)
{
	uint8_t *buf;
	size_t len;
	CUresult rc;

	if (!link_get(s))
		return CUDA_ERROR_INVALID_HANDLE;
	rc = vgpu_module_read_file(path, VGPU_LINK_MAX_BYTES, CUDA_ERROR_INVALID_VALUE, &buf, &len);
	if (!rc) {
		rc = add(s, type, buf, len, path, n, o, v);
		free(buf);
	}
	return rc;
}

/* A log from the worker into the program's buffer, cut to its size. */
static void give_log(const struct jit_log *g, const char *log, uint32_t len)
{
	size_t n = 0;

	if (g->buf && g->cap) {
		n = len < g->cap - 1 ? len : g->cap - 1;
		memcpy(g->buf, log, n);
		g->buf[n] = 0;
	}
	if (g->size)
		*g->size = (void *)(uintptr_t)(n ? n + 1 : 0);
}

static void give_outputs(struct link *l, const struct vgpu_link_reply *rep, const char *logs)
{
	const struct link_slots *k = &l->slots;

	give_log(&k->info, logs, rep->info_len);
	give_log(&k->err, logs + rep->info_len, rep->error_len);
	if (k->wall) {
		*k->wall = NULL;
		memcpy(k->wall, &rep->wall_ms, sizeof(float));
	}
	if (k->threads)
		*k->threads = (void *)(uintptr_t)rep->threads_per_block;
}

/* Sends the link; fills in the logs; returns the cubin's size. */
static CUresult run_link(struct link *l, uint32_t ctx, uint64_t *cubin_bytes)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_LINK, .ctx = ctx } };
	struct vgpu_link_head head = { .inputs = l->ninputs, .options = l->nopt };
	size_t opts = l->nopt * sizeof(l->opt[0]);
	size_t total = sizeof(head) + opts + l->len;
	uint8_t *req = malloc(total);
	struct vgpu_link_reply rep;
	CUresult rc;

	r.reply_cap = sizeof(rep) + 2 * VGPU_LINK_LOG;
	r.reply = malloc(r.reply_cap);
	if (!req || !r.reply) {
		free(req);
		free(r.reply);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(req, &head, sizeof(head));
	memcpy(req + sizeof(head), l->opt, opts);
	memcpy(req + sizeof(head) + opts, l->inputs, l->len);
	r.sqe.arg[0] = total;
	rc = vgpu_call_send(&r, req, total);
	free(req);
	memcpy(&rep, r.reply, sizeof(rep));
	if (r.cqe.val[2] >= sizeof(rep) && rep.info_len <= VGPU_LINK_LOG &&
	    rep.error_len <= VGPU_LINK_LOG &&
	    r.cqe.val[2] == sizeof(rep) + rep.info_len + rep.error_len)
		give_outputs(l, &rep, (const char *)r.reply + sizeof(rep));
	else if (!rc)
		rc = CUDA_ERROR_UNKNOWN;
	free(r.reply);
	if (!rc && (!rep.cubin_bytes || rep.cubin_bytes > VGPU_LINK_MAX_BYTES))
		rc = CUDA_ERROR_UNKNOWN;
	*cubin_bytes = rc ? 0 : rep.cubin_bytes;
	return rc;
}

VGPU_EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_LINK_RESULT } };
	struct link *l = link_get(state);
	struct vgpu_ctx *ctx;
	uint64_t bytes = 0;
	void *cubin;
	CUresult rc = vgpu_enter_ctx(&ctx);

	if (rc)
		return rc;
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!cubinOut)	/* no size pointer: the driver (580) links all the same */
		return CUDA_ERROR_INVALID_VALUE;
	rc = run_link(l, ctx->id, &bytes);
	if (rc)
		return rc;
	cubin = malloc(bytes);
	if (!cubin)
		return CUDA_ERROR_OUT_OF_MEMORY;	/* the worker drops it at the next link */
	r.sqe.arg[0] = bytes;
	rc = vgpu_call_recv(&r, cubin, bytes);
	if (rc) {
		free(cubin);
		return rc;
	}
	free(l->cubin);	/* the driver's output lives until the state goes */
	l->cubin = cubin;
	l->cubin_size = bytes;
	*cubinOut = cubin;
	if (sizeOut)
		*sizeOut = bytes;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuLinkDestroy(CUlinkState state)
{
	struct link *l = link_get(state);
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	l->magic = 0;
	free(l->inputs);
	free(l->cubin);
	free(l);
	return CUDA_SUCCESS;
}
