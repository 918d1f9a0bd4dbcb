/* SPDX-License-Identifier: MIT */
/*
 * What the IPC files of a worker share (ipc_server.c keeps it): the
 * server other workers ask, the table of what this session exported, and
 * the memory it opened.
 */
#ifndef VGPU_IPC_STATE_H
#define VGPU_IPC_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ipc_wire.h"
#include "worker.h"

struct ipc_export {
	uint32_t kind;			/* IPC_KIND_* */
	uint64_t id, secret;
	uint64_t what;			/* memory: the allocation's base; event: its CUevent */
	uint64_t size, off, bytes;	/* memory */
	int fd;				/* memory: its physical allocation; else -1 */
	uint8_t data[64];		/* event: the backend's own handle */
	bool opened;			/* another session was given it */
};

struct ipc_import {
	uint64_t key, id;
	CUdeviceptr p;
	uint64_t bytes;
	uint32_t refs;
};

/* Program memory mapped here for the device (hostreg_map.c). */
struct ipc_hostreg {
	uint64_t addr, len;
};

struct ipc_state {
	int srv;			/* listening; -1 until the first export */
	uint64_t key;
	uint32_t client_uid;
	pthread_t th;
	bool stop;
	pthread_mutex_t lock;		/* the exports: main thread and server */
	struct ipc_export *e;
	size_t n, cap;
	uint64_t next_id;
	struct ipc_import *im;		/* memory opened; main thread only */
	size_t nim, imcap;
	struct ipc_hostreg *hr;		/* main thread only */
	size_t nhr, hrcap;
};

/* Events opened from another process carry this above their flags (aux). */
#define IPC_EVENT_IMPORTED	(1ull << 40)

/* The session's state, made on first use; NULL: no memory. */
struct ipc_state *ipc_state_get(struct worker *w);
/* The export of @kind for @what, copied into *out: true when there is one. */
bool ipc_export_find(struct ipc_state *x, uint32_t kind, uint64_t what, struct ipc_export *out);
/*
 * Enters @e (its kind, what and payload set; its fd is the table's from
 * now on, even on failure) under a fresh id and secret, the server started
 * first; *e gets them.
 */
CUresult ipc_export_add(struct ipc_state *x, struct ipc_export *e);
/* Ends every export of @kind for @what. */
void ipc_exports_end(struct ipc_state *x, uint32_t kind, uint64_t what);
/* The handle naming export @e. */
void ipc_handle_of(const struct ipc_state *x, const struct ipc_export *e, struct ipc_handle *h);
/* An op's success: the handle naming export @e in its reply slot. */
enum op_status ipc_reply_handle(const struct ipc_state *x, const struct ipc_export *e,
				struct op_call *call);
/*
 * Asks the worker that made @h for it: the answer and, for memory, the
 * descriptor (-1 otherwise). CUDA_ERROR_INVALID_HANDLE when it names
 * nothing this session may have.
 */
CUresult ipc_ask(struct worker *w, const struct ipc_handle *h, struct ipc_answer *a, int *fd);
/* Whether @h was made by this session. */
bool ipc_own_handle(const struct ipc_state *x, const struct ipc_handle *h);
/*
 * The handle bytes a program gave to open one of @kind, copied into *h:
 * CUDA_ERROR_INVALID_HANDLE when they are no such handle, OUT_OF_MEMORY
 * when @x is NULL, INVALID_CONTEXT when this session made it (the driver's
 * rule: a process does not open its own handles).
 */
CUresult ipc_handle_in(const struct ipc_state *x, const void *bytes, uint16_t kind,
		       struct ipc_handle *h);

#endif
