/* SPDX-License-Identifier: MIT */
/*
 * The round-trip test of the generated calls (test_calls_gen.c) runs the
 * program's entry points against the worker's handlers in one process:
 * fwd_test_rt.c stands in for the runtime's session (handles of each kind,
 * a ring call that hands the entry to the worker), fwd_test_worker.c for the
 * worker (its object tables, a backend whose slots the test sets).
 */
#ifndef VGPU_FWD_TEST_H
#define VGPU_FWD_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "vgpu/calls_gen.h"

struct vgpu_backend;

/* FWD_GEN: a handle of a generated kind (the second argument below says
 * which); FWD_NEW: the objects the backend makes for a call's `new`. */
enum fwd_kind {
	FWD_CTX, FWD_STREAM, FWD_EVENT, FWD_FUNC, FWD_MODULE, FWD_GRAPH, FWD_EXEC, FWD_NODE,
	FWD_GEN, FWD_NEW, FWD_KINDS
};

#define FWD_TEST_COUNT 3	/* elements of the arrays the test passes */
#define FWD_TEST_NAME "vgpu_test_name"

struct fwd_test_env {
	struct vgpu_backend *backend;
};

struct fwd_test_case {
	const char *name;
	void (*run)(struct fwd_test_env *env);
};

/* The program's handle of @kind (@gen: which generated kind) number @seed
 * (1..8), and the object the worker holds for it; a handle of no kind. */
void *fwd_test_handle(enum fwd_kind kind, int gen, int seed);
void *fwd_test_obj(enum fwd_kind kind, int gen, int seed);
void *fwd_test_wrong_handle(void);
/* A `new` handle the program got is live, of generated kind @gen, and the
 * worker keeps FWD_NEW's object @seed under its id; a `del` handle's object
 * is no longer kept. */
bool fwd_test_made(const void *h, int gen, int seed);
bool fwd_test_gone(int gen, int seed);
/* A name longer than a name may be. */
const char *fwd_test_long_name(void);
/* Device 1 of the session's two. */
extern const int fwd_test_device;
/* Backend slots reached since the test last zeroed it. */
extern int fwd_test_reached;

/* Bytes of a pattern per seed: fill, and compare. */
void fwd_test_fill(void *p, size_t n, int seed);
bool fwd_test_same(const void *p, size_t n, int seed);

void fwd_test_fail(const char *what, int line);
#define FWD_EXPECT(cond) do { if (!(cond)) fwd_test_fail(#cond, __LINE__); } while (0)

/* The worker refuses checkpoints since a call whose effect they cannot carry. */
bool fwd_test_ckpt_refused(void);

int fwd_test_run(const struct fwd_test_case *cases, size_t n);

/* fwd_test_worker.c, for fwd_test_rt.c: the entry handed to the worker's
 * handler (tag 0: posted), its answer and reply bytes. */
struct vgpu_sqe;
struct vgpu_cqe;
void fwd_test_worker_init(void);
/* The object the worker keeps under a generated kind's id (NULL: none);
 * an object put there. */
void *fwd_test_worker_gen(unsigned int id, int gen);
void fwd_test_worker_gen_put(unsigned int id, int gen, void *obj);
/* The id the test gives handle @seed of generated kind @gen. */
#define FWD_GEN_ID(gen, seed) ((unsigned int)(gen) * 10u + (unsigned int)(seed))
void fwd_test_worker_run(const struct vgpu_sqe *sqe, const void *payload, unsigned int len,
			 struct vgpu_cqe *cqe, void *reply, unsigned int reply_cap);
struct vgpu_backend *fwd_test_backend(void);

#endif
