/* SPDX-License-Identifier: MIT */
/*
 * The client's virtual memory (exec_vmm.c): what the worker keeps of it,
 * and what the files of that concern share.
 *   exec_vmm.c        reservations, allocations, mappings, access; the op table
 *   exec_vmm_share.c  allocations shared by descriptor (export, import)
 *   exec_vmm_ckpt.c   all of it to a checkpoint and back
 */
#ifndef VGPU_EXEC_VMM_H
#define VGPU_EXEC_VMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker.h"

struct vmm_alloc {
	uint64_t id;
	CUmemGenericAllocationHandle h;	/* the backend's */
	uint64_t size;
	CUmemAllocationProp prop;	/* as the client asked (client ordinal) */
	uint32_t refs;			/* handle references; 0: handle released */
	uint32_t maps;			/* live cuMemMap calls on it */
	bool imported;			/* another process's (size 0: the driver knows) */
	bool exported;			/* a descriptor of it went to the program */
};

/* Descriptors the program sent for imports, waiting for their entries. */
#define FD_STASH 8
struct fd_stash {
	uint64_t token;
	int fd;				/* -1: empty */
};

/* A piece of a mapping: cuMemSetAccess may split a cuMemMap range. */
struct vmm_map {
	uint64_t start, end;
	uint64_t map_start, map_end;	/* the cuMemMap call's range */
	uint64_t off;			/* offset of start in the allocation */
	struct vmm_alloc *a;
	uint8_t acc[VGPU_MAX_DEVICES];	/* CU_MEM_ACCESS_FLAGS_* per device */
};

struct vmm_resv {
	uint64_t start, end;
};

struct vmm_state {
	struct vmm_resv *v;		/* sorted by start */
	size_t nv, capv;
	struct vmm_map *m;		/* sorted by start, disjoint */
	size_t nm, capm;
	struct vmm_alloc **a;
	size_t na, capa;
	uint64_t next_id;
	struct fd_stash stash[FD_STASH];
	unsigned stash_next;		/* the slot the next one takes */
};

struct vmm_state *vmm_state_of(struct worker *w);
int vmm_grow(void **v, size_t *cap, size_t n, size_t elem);
struct vmm_alloc *vmm_alloc_live(struct vmm_state *s, uint64_t id);
bool vmm_map_overlaps(const struct vmm_state *s, uint64_t p, uint64_t e);
bool vmm_map_covers(const struct vmm_state *s, uint64_t p, uint64_t e);
int vmm_map_insert(struct vmm_state *s, const struct vmm_map *m);
struct vmm_resv *vmm_resv_holding(struct vmm_state *s, uint64_t p, uint64_t e);
bool vmm_whole_granules(struct worker *w, uint64_t p, uint64_t size, uint64_t *end);
/* The compression the driver gave allocation @a (its prop records it). */
void vmm_granted(struct worker *w, struct vmm_alloc *a);

/* exec_vmm_share.c: the table's ops for sharing */
enum op_status vmm_op_range_handle(struct worker *w, struct op_call *call);
enum op_status vmm_op_export(struct worker *w, struct op_call *call);
enum op_status vmm_op_import(struct worker *w, struct op_call *call);

#endif
