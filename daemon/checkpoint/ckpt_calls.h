/* SPDX-License-Identifier: MIT */
/*
 * The generated calls a checkpoint carries by running them again: each
 * successful call marked so in calls.def (CKPT `set`, or one that makes a
 * handle of a generated kind) is kept as the ring entry the worker took, in
 * order; a checkpoint writes them (VGPU_CKPT_SEC_CALLS) and a restore runs
 * them again through the same handlers once everything they name is back.
 * The same call made again with the same arguments replaces the older
 * record; destroying an object drops its records. Past VGPU_CALLS_LOG_MAX
 * records or bytes, or once the session made a call marked `refuse` (its
 * effect lives where a restore cannot rebuild it), checkpoints of the
 * session are refused, saying why.
 */
#ifndef VGPU_CKPT_CALLS_H
#define VGPU_CKPT_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/ckpt.h"

#define VGPU_CALLS_LOG_MAX	65536u		/* records */
#define VGPU_CALLS_LOG_BYTES	(16u << 20)	/* payload bytes */

struct worker;
struct op_call;
struct call_rec;

/* Kept in struct worker, so that a refusal needs no allocation. */
struct calls_log {
	struct call_rec *rec;
	size_t n, cap, bytes;
	bool lost;		/* a record could not be kept: refuse */
	char refused[160];	/* the first `refuse` call, as the refusal says it */
};

/* A call just made that a restore must make again; @object: the id of the
 * generated-kind object it makes or changes. */
void calls_log_record(struct worker *w, const struct op_call *call, uint32_t object);
/* A call marked `refuse` succeeded: checkpoints are refused from now on. */
void calls_log_refuse(struct worker *w, const char *call);
/* Every record goes, and the refusals with them (a session that ended). */
void calls_log_clear(struct worker *w);
/* @object was destroyed: its records go. */
void calls_log_forget(struct worker *w, uint32_t object);
/* Why a checkpoint cannot carry the calls, or NULL. */
const char *calls_log_refusal(const struct worker *w);
/* The records (NULL: their number), their payloads packed in @blob
 * (calls_log_bytes of them). */
size_t calls_log_records(const struct worker *w, struct vgpu_ckpt_call *c, uint8_t *blob);
size_t calls_log_bytes(const struct worker *w);
/* A restore: the recorded calls run again, in order. 0, or -errno with why. */
int calls_log_replay(struct worker *w, const struct vgpu_ckpt_call *c, size_t n,
		     const uint8_t *blob, size_t blob_len, char *why, size_t why_len);

#endif
