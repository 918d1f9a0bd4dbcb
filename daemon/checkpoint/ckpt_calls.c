// SPDX-License-Identifier: MIT
/* The generated calls a checkpoint carries by running them again (ckpt_calls.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_calls.h"
#include "log.h"
#include "worker.h"

struct call_rec {
	struct vgpu_ckpt_call c;	/* off: unused until written */
	uint8_t *payload;
};

static bool same(const struct call_rec *a, const struct vgpu_ckpt_call *c, const void *p)
{
	return a->c.opcode == c->opcode && a->c.ctx == c->ctx && a->c.stream == c->stream &&
	       a->c.flags == c->flags && a->c.len == c->len && a->c.object == c->object &&
	       !memcmp(a->c.arg, c->arg, sizeof(c->arg)) && (!c->len || !memcmp(a->payload, p, c->len));
}

static void drop(struct calls_log *l, size_t i)
{
	l->bytes -= l->rec[i].c.len;
	free(l->rec[i].payload);
	memmove(&l->rec[i], &l->rec[i + 1], (l->n - i - 1) * sizeof(l->rec[0]));
	l->n--;
}

void calls_log_record(struct worker *w, const struct op_call *call, uint32_t object)
{
	struct calls_log *l = &w->calls_log;
	struct vgpu_ckpt_call c = {
		.opcode = call->sqe->opcode, .ctx = call->sqe->ctx, .stream = call->sqe->stream,
		.flags = call->sqe->flags, .len = call->len, .object = object,
	};
	struct call_rec *r;

	memcpy(c.arg, call->sqe->arg, sizeof(c.arg));
	if (l->lost)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (same(&l->rec[i], &c, call->payload)) {
			drop(l, i);
			break;
		}
	if (l->n == VGPU_CALLS_LOG_MAX || l->bytes + c.len > VGPU_CALLS_LOG_BYTES) {
		l->lost = true;
		return;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct call_rec *n = realloc(l->rec, cap * sizeof(*n));

		if (!n) {
			l->lost = true;
			return;
		}
		l->rec = n;
		l->cap = cap;
	}
	r = &l->rec[l->n];
	r->c = c;
	r->payload = NULL;
	if (c.len && !(r->payload = malloc(c.len))) {
		l->lost = true;
		return;
	}
	if (c.len)
		memcpy(r->payload, call->payload, c.len);
	l->bytes += c.len;
	l->n++;
}

void calls_log_refuse(struct worker *w, const char *call)
{
	struct calls_log *l = &w->calls_log;

	if (!l->refused[0])
		snprintf(l->refused, sizeof(l->refused), "the program called %s, whose effect a "
			 "checkpoint cannot carry", call);
}

void calls_log_clear(struct worker *w)
{
	struct calls_log *l = &w->calls_log;

	for (size_t i = 0; i < l->n; i++)
		free(l->rec[i].payload);
	free(l->rec);
	memset(l, 0, sizeof(*l));
}

void calls_log_forget(struct worker *w, uint32_t object)
{
	struct calls_log *l = &w->calls_log;

	for (size_t i = 0; i < l->n;)
		if (l->rec[i].c.object == object)
			drop(l, i);
		else
			i++;
}

size_t calls_log_records(const struct worker *w, struct vgpu_ckpt_call *c, uint8_t *blob)
{
	const struct calls_log *l = &w->calls_log;
	size_t off = 0;

	for (size_t i = 0; i < l->n; i++) {
		if (c) {
			c[i] = l->rec[i].c;
			c[i].off = off;
			memcpy(blob + off, l->rec[i].payload, c[i].len);
		}
		off += l->rec[i].c.len;
	}
	return l->n;
}

size_t calls_log_bytes(const struct worker *w)
{
	return w->calls_log.bytes;
}

const char *calls_log_refusal(const struct worker *w)
{
	const struct calls_log *l = &w->calls_log;

	if (l->refused[0])
		return l->refused;
	if (l->lost)
		return "the session made more settings calls than a checkpoint keeps "
		       "(65536 records or 16 MiB)";
	return NULL;
}

int calls_log_replay(struct worker *w, const struct vgpu_ckpt_call *c, size_t n,
		     const uint8_t *blob, size_t blob_len, char *why, size_t why_len)
{
	uint8_t *reply = malloc(w->ring.reply_slot_size);
	int ret = 0;

	if (!reply) {
		snprintf(why, why_len, "out of memory running the generated calls again");
		return -ENOMEM;
	}
	for (size_t i = 0; !ret && i < n; i++) {
		const struct op_desc *d = c[i].opcode <= UINT16_MAX ? dispatch_find(c[i].opcode) : NULL;
		struct vgpu_sqe sqe = { .opcode = (uint16_t)c[i].opcode, .tag = 1, .ctx = c[i].ctx,
					.stream = c[i].stream, .flags = (uint16_t)c[i].flags,
					.payload_len = c[i].len };
		struct vgpu_cqe cqe = { .tag = 1 };
		struct op_call call = { .sqe = &sqe, .len = c[i].len, .cqe = &cqe, .reply = reply };
		CUresult rc = CUDA_SUCCESS;

		/* The file is as untrusted as a ring: only what was recorded runs. */
		if (!d || !(d->flags & OPF_LOGGED) || c[i].flags > UINT16_MAX ||
		    c[i].off > blob_len || c[i].len > blob_len - c[i].off) {
			snprintf(why, why_len, "recorded call %zu (opcode %u) is not one a restore "
				 "runs again", i, c[i].opcode);
			ret = -EBADMSG;
			break;
		}
		memcpy(sqe.arg, c[i].arg, sizeof(sqe.arg));
		call.payload = blob + c[i].off;
		if (d->flags & OPF_NEEDS_CTX)
			rc = worker_use_ctx(w, c[i].ctx);
		if (!rc && d->fn(w, &call) != OP_DONE)
			rc = CUDA_ERROR_UNKNOWN;
		if (!rc)
			rc = (CUresult)cqe.result;
		if (rc) {
			snprintf(why, why_len, "%s cannot be made again (CUDA error %d)", d->name, rc);
			ret = -EIO;
		}
	}
	free(reply);
	return ret;
}
