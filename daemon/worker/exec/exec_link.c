// SPDX-License-Identifier: MIT
/*
 * The JIT linker (cuLink*, cuFFT's kernels). The client collects the inputs
 * and sends them in one LINK request once the program completes the link;
 * here each input is checked as a module image is (vgpu_image_check), the
 * backend links them with the scalar options given plus log buffers of our
 * own, and the logs come back in the reply, the cubin with LINK_RESULT.
 * One link result is kept at a time (the client fetches it at once).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_image.h"
#include "jit_options.h"
#include "log.h"
#include "worker.h"

struct link_req {
	const uint8_t *p;
	uint64_t len, off;
};

static void *cubin;		/* the last link's output, until fetched */
static uint64_t cubin_bytes;

/* n bytes at the cursor, padded to 8; NULL when they are not there. */
static const void *take(struct link_req *r, uint64_t n)
{
	uint64_t padded = (n + 7) & ~7ull;
	const void *at = r->p + r->off;

	if (n > r->len || padded > r->len - r->off)
		return NULL;
	r->off += padded;
	return at;
}

static CUresult take_options(struct link_req *r, uint32_t n, CUjit_option *opt, void **val)
{
	const struct vgpu_jit_option *o;

	if (n > VGPU_LINK_MAX_OPTIONS || !(o = take(r, (uint64_t)n * sizeof(*o))))
		return CUDA_ERROR_INVALID_VALUE;
	for (uint32_t i = 0; i < n; i++) {
		struct vgpu_jit_option one;

		memcpy(&one, &o[i], sizeof(one));
		if (!vgpu_jit_option_scalar(one.option) || one.reserved)
			return CUDA_ERROR_INVALID_VALUE;
		opt[i] = (CUjit_option)one.option;
		val[i] = (void *)(uintptr_t)one.value;
	}
	return CUDA_SUCCESS;
}

/* One input, checked and added. */
static CUresult add_input(struct worker *w, CUlinkState st, struct link_req *r)
{
	CUjit_option opt[VGPU_LINK_MAX_OPTIONS];
	void *val[VGPU_LINK_MAX_OPTIONS];
	struct vgpu_link_input in;
	const void *hdr;
	const char *name;
	const uint8_t *data;
	size_t extent;
	CUresult rc;

	if (!(hdr = take(r, sizeof(in))))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&in, hdr, sizeof(in));
	if (in.reserved || !in.name_len || in.name_len > VGPU_MAX_NAME || !in.bytes)
		return CUDA_ERROR_INVALID_VALUE;
	rc = take_options(r, in.options, opt, val);
	if (rc)
		return rc;
	if (!(name = take(r, in.name_len)) || name[in.name_len - 1] || !(data = take(r, in.bytes)))
		return CUDA_ERROR_INVALID_VALUE;
	if (in.type != CU_JIT_INPUT_CUBIN && in.type != CU_JIT_INPUT_PTX &&
	    in.type != CU_JIT_INPUT_FATBINARY) {
		vlog_warn("session %llu: link input of type %u refused: only cubin, PTX and fatbin "
			  "inputs are checked and linked", (unsigned long long)w->session_id, in.type);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (vgpu_image_check(data, in.bytes, &extent)) {
		vlog_warn("session %llu: link input %s refused: its headers reach past its %llu "
			  "bytes, or PTX text has no NUL", (unsigned long long)w->session_id, name,
			  (unsigned long long)in.bytes);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	return w->B.cuLinkAddData_v2(st, (CUjitInputType)in.type, (void *)data, in.bytes, name,
				     in.options, opt, val);
}

/* Runs the link; fills the reply's counts and the logs. */
static CUresult link_inputs(struct worker *w, struct link_req *r, struct vgpu_link_reply *rep,
			    char *info, char *err)
{
	CUjit_option opt[VGPU_LINK_MAX_OPTIONS + 5];
	void *val[VGPU_LINK_MAX_OPTIONS + 5];
	struct vgpu_link_head head;
	CUlinkState st = NULL;
	const void *hdr = take(r, sizeof(head));
	void *out = NULL;
	size_t out_bytes = 0;
	uint32_t n, tpb = VGPU_LINK_MAX_OPTIONS + 5;
	CUresult rc;

	if (!hdr)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&head, hdr, sizeof(head));
	if (head.reserved || !head.inputs || head.inputs > VGPU_LINK_MAX_INPUTS)
		return CUDA_ERROR_INVALID_VALUE;
	rc = take_options(r, head.options, opt, val);
	if (rc)
		return rc;
	n = head.options;
	for (uint32_t i = 0; i < n; i++)
		if (opt[i] == CU_JIT_THREADS_PER_BLOCK)
			tpb = i;
	/* The logs and the wall time land here, never in the client. */
	opt[n] = CU_JIT_INFO_LOG_BUFFER, val[n++] = info;
	opt[n] = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, val[n++] = (void *)(uintptr_t)VGPU_LINK_LOG;
	opt[n] = CU_JIT_ERROR_LOG_BUFFER, val[n++] = err;
	opt[n] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, val[n++] = (void *)(uintptr_t)VGPU_LINK_LOG;
	opt[n] = CU_JIT_WALL_TIME, val[n++] = NULL;
	rc = w->B.cuLinkCreate_v2(n, opt, val, &st);
	for (uint32_t i = 0; !rc && i < head.inputs; i++)
		rc = add_input(w, st, r);
	if (!rc && r->off != r->len)
		rc = CUDA_ERROR_INVALID_VALUE;	/* bytes after the last input */
	if (!rc)
		rc = w->B.cuLinkComplete(st, &out, &out_bytes);
	if (!rc && (!out_bytes || out_bytes > VGPU_LINK_MAX_BYTES))
		rc = CUDA_ERROR_INVALID_IMAGE;
	if (!rc && !(cubin = malloc(out_bytes)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc) {
		memcpy(cubin, out, out_bytes);
		cubin_bytes = out_bytes;
	}
	if (st)
		w->B.cuLinkDestroy(st);
	info[VGPU_LINK_LOG - 1] = err[VGPU_LINK_LOG - 1] = 0;
	rep->cubin_bytes = rc ? 0 : cubin_bytes;
	rep->info_len = (uint32_t)strlen(info);
	rep->error_len = (uint32_t)strlen(err);
	if (tpb < VGPU_LINK_MAX_OPTIONS)
		rep->threads_per_block = (uint32_t)(uintptr_t)val[tpb];
	memcpy(&rep->wall_ms, &val[head.options + 4], sizeof(float));
	return rc;
}

static enum op_status op_link(struct worker *w, struct op_call *call)
{
	static char info[VGPU_LINK_LOG], err[VGPU_LINK_LOG];
	struct vgpu_link_reply rep = { 0 };
	uint64_t size = call->sqe->arg[0];
	struct link_req r = { .len = size };
	uint8_t *buf;
	CUresult rc;

	_Static_assert(sizeof(rep) + 2 * VGPU_LINK_LOG <= (64u << 10), "link reply fits a slot");
	free(cubin);	/* a result never fetched */
	cubin = NULL;
	cubin_bytes = 0;
	buf = size && size <= VGPU_LINK_MAX_BYTES ? malloc(size) : NULL;
	if (!buf) {
		call->cqe->result = size && size <= VGPU_LINK_MAX_BYTES ? CUDA_ERROR_OUT_OF_MEMORY
									 : CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;	/* the client sees the answer and stops sending */
	}
	if (bulk_recv_buffer(w, buf, size)) {
		free(buf);
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	r.p = buf;
	info[0] = err[0] = 0;
	rc = link_inputs(w, &r, &rep, info, err);
	free(buf);
	memcpy(call->reply, &rep, sizeof(rep));
	memcpy(call->reply + sizeof(rep), info, rep.info_len);
	memcpy(call->reply + sizeof(rep) + rep.info_len, err, rep.error_len);
	call->cqe->val[2] = sizeof(rep) + rep.info_len + rep.error_len;
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_link_result(struct worker *w, struct op_call *call)
{
	if (!cubin || call->sqe->arg[0] != cubin_bytes) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	call->cqe->result = bulk_send_buffer(w, cubin, cubin_bytes) ? CUDA_ERROR_INVALID_VALUE
								     : CUDA_SUCCESS;
	free(cubin);
	cubin = NULL;
	cubin_bytes = 0;
	return OP_DONE;
}

const struct op_desc exec_link_ops[] = {
	OP(LINK, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_link),
	OP(LINK_RESULT, OPF_SYNC_ONLY, op_link_result),
	{ 0 },
};
