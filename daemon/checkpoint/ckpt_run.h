/* SPDX-License-Identifier: MIT */
/*
 * One checkpoint's writing, shared by the files that fill it: the run
 * (where it goes, its answer, the allocation records gathered) and the
 * sections each file writes, in file order (ckpt_run_collect).
 *   ckpt_collect.c   the run, allocations and their digests, the order of it all
 *   ckpt_objects.c   modules, functions, globals, streams, events, contexts, pools,
 *                    the generated calls to run again, graphs and their instances
 */
#ifndef VGPU_CKPT_RUN_H
#define VGPU_CKPT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "ckpt_parent.h"
#include "ckpt_sink.h"
#include "gpu_digest.h"
#include "worker.h"

struct ckpt_run {
	struct worker *w;
	struct ckpt_sink *sink;
	struct ckpt_answer *a;
	struct vgpu_ckpt_alloc *alloc;	/* records, grown as they come */
	size_t nalloc, cap;
	struct content_digest *dg;	/* each allocation's; NULL: none */
	bool digests;			/* wanted (not for a move) */
	const struct ckpt_parent *parent;	/* incremental: the one to refer to */
};

/* The first failure, with why, into the answer: its status. */
__attribute__((format(printf, 3, 4)))
int ckpt_run_fail(struct ckpt_run *r, int err, const char *fmt, ...);
int ckpt_run_sink_failed(struct ckpt_run *r, int ret);
int ckpt_run_table(struct ckpt_run *r, uint32_t type, uint64_t id, const void *rec, size_t n,
		   size_t size, const void *blob, size_t blob_len);
int ckpt_run_drain(struct ckpt_run *r);
int ckpt_run_collect(struct ckpt_run *r);

/* ckpt_collect.c */
int ckpt_write_allocations(struct ckpt_run *r);
int ckpt_write_vmm(struct ckpt_run *r);

/* ckpt_objects.c */
int ckpt_write_modules(struct ckpt_run *r);
int ckpt_write_functions(struct ckpt_run *r);
int ckpt_write_globals(struct ckpt_run *r);
int ckpt_write_stream_attrs(struct ckpt_run *r);
int ckpt_write_streams_events(struct ckpt_run *r);
int ckpt_write_contexts(struct ckpt_run *r);
int ckpt_write_pools(struct ckpt_run *r);
int ckpt_write_calls(struct ckpt_run *r);
int ckpt_write_graphs(struct ckpt_run *r);

#endif
