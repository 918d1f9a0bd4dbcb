// SPDX-License-Identifier: MIT
/* The worker's side of the round-trip test, and the test's driver. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ckpt_calls.h"
#include "exec_forward.h"
#include "fwd_test.h"
#include "log.h"

static struct worker w;
static struct obj_table *tables[FWD_KINDS];
static struct obj_table nodes;
static char objs[FWD_KINDS][VGPU_GEN_KINDS][9];	/* the "real" objects: their addresses */
static const char *current;
static int failed;
int fwd_test_reached;

void *fwd_test_obj(enum fwd_kind kind, int gen, int seed)
{
	return &objs[kind][gen][seed];
}

void *fwd_test_worker_gen(unsigned int id, int gen)
{
	struct obj_entry *e = obj_get(&w.gen_objs, id);

	return e && e->aux == (uint64_t)gen ? e->obj : NULL;
}

void fwd_test_worker_gen_put(unsigned int id, int gen, void *obj)
{
	if (obj_insert(&w.gen_objs, id, obj, (uint64_t)gen, NULL))
		abort();
}

int worker_addr_ok(struct worker *wk, uint64_t p, uint64_t len)
{
	(void)wk;
	(void)len;
	return p != 0xdeadull;	/* the one address the test calls foreign */
}

const struct op_desc *dispatch_find(uint16_t opcode)
{
	for (const struct op_desc *d = exec_gen_ops; d->fn; d++)
		if (d->opcode == opcode)
			return d;
	return NULL;
}

CUresult worker_use_ctx(struct worker *wk, uint32_t id)
{
	(void)wk;
	return id == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUgraphNode graph_node_obj(struct worker *wk, uint32_t id)
{
	struct obj_entry *e = obj_get(&nodes, id);

	(void)wk;
	return e ? e->obj : NULL;
}

void fwd_test_worker_init(void)
{
	tables[FWD_CTX] = &w.ctxs;
	tables[FWD_STREAM] = &w.streams;
	tables[FWD_EVENT] = &w.events;
	tables[FWD_FUNC] = &w.funcs;
	tables[FWD_MODULE] = &w.modules;
	tables[FWD_GRAPH] = &w.graphs;
	tables[FWD_EXEC] = &w.graph_execs;
	tables[FWD_NODE] = &nodes;
	for (int k = 0; k < FWD_GEN; k++) {
		obj_table_init(tables[k], "test");
		for (int s = 1; s < 9; s++)
			if (obj_insert(tables[k], (uint32_t)s, fwd_test_obj(k, 0, s), 0, NULL))
				abort();
	}
	obj_table_init(&w.gen_objs, "test");
	w.device_count = 2;
	w.devices[0] = 0;
	w.devices[1] = fwd_test_device;
	w.ring.reply_slot_size = 64u << 10;
}

struct vgpu_backend *fwd_test_backend(void)
{
	return &w.B;
}

void fwd_test_worker_run(const struct vgpu_sqe *sqe, const void *payload, unsigned int len,
			 struct vgpu_cqe *cqe, void *reply, unsigned int reply_cap)
{
	const struct op_desc *d;
	struct op_call call = { .sqe = sqe, .payload = payload, .len = len, .cqe = cqe,
				.reply = reply };

	(void)reply_cap;
	for (d = exec_gen_ops; d->fn && d->opcode != sqe->opcode; d++)
		;
	if (!d->fn) {
		fwd_test_fail("the opcode has a handler", __LINE__);
		return;
	}
	if ((d->flags & OPF_SYNC_ONLY) && !sqe->tag) {
		fwd_test_fail("a call with an answer is sent synchronously", __LINE__);
		return;
	}
	cqe->tag = sqe->tag;
	if (d->fn(&w, &call) != OP_DONE)
		fwd_test_fail("the handler answers at once", __LINE__);
}

bool fwd_test_ckpt_refused(void)
{
	return calls_log_refusal(&w) != NULL;
}

void fwd_test_fill(void *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)(seed * 37 + i * 11 + 1);
}

bool fwd_test_same(const void *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != (unsigned char)(seed * 37 + i * 11 + 1))
			return false;
	return true;
}

void fwd_test_fail(const char *what, int line)
{
	failed++;
	printf("FAIL %s: line %d: %s\n", current ? current : "?", line, what);
}

/*
 * What a checkpoint carries of the generated calls: the recorded ones (every
 * `set` and `new` call the cases made that was not undone by a `del`) run
 * again in a fresh worker through the same handlers, whose backend slots the
 * cases left set, and make the same objects again. A record a restore must
 * not run (another opcode, a payload outside the file) is refused.
 */
static void replay(void)
{
	size_t n = calls_log_records(&w, NULL, NULL), bytes = calls_log_bytes(&w);
	struct vgpu_ckpt_call *c = calloc(n + 1, sizeof(*c));
	uint8_t *blob = malloc(bytes + 1);
	uint32_t live = 0, again = 0, i;
	struct obj_entry *e;
	char why[160];

	current = "record and replay";
	if (!c || !blob)
		abort();
	if (!n)
		fwd_test_fail("calls were recorded", __LINE__);
	calls_log_records(&w, c, blob);
	/* The objects `new` calls made (ids from 1000: fwd_test_rt.c) go; those
	 * the test put in place itself stand for what other sections restore. */
	obj_for_each(&w.gen_objs, i, e)
		if (i >= 1000) {
			obj_remove(&w.gen_objs, i);
			live++;
		}
	calls_log_clear(&w);	/* a fresh worker's */
	fwd_test_reached = 0;
	if (calls_log_replay(&w, c, n, blob, bytes, why, sizeof(why))) {
		printf("  replay: %s\n", why);
		fwd_test_fail("the recorded calls run again", __LINE__);
	}
	obj_for_each(&w.gen_objs, i, e)
		again += i >= 1000;
	if (fwd_test_reached != (int)n || calls_log_records(&w, NULL, NULL) != n)
		fwd_test_fail("each record ran once and is recorded again", __LINE__);
	if (again == 0 || again > live)
		fwd_test_fail("the objects are made again", __LINE__);
	c[0].opcode = VGPU_OP_NOP;
	if (calls_log_replay(&w, c, 1, blob, bytes, why, sizeof(why)) != -EBADMSG)
		fwd_test_fail("a record of another opcode is refused", __LINE__);
	calls_log_records(&w, c, blob);
	c[0].off = bytes + 1;
	c[0].len = 1;
	if (calls_log_replay(&w, c, 1, blob, bytes, why, sizeof(why)) != -EBADMSG)
		fwd_test_fail("a payload outside the file is refused", __LINE__);
	free(c);
	free(blob);
}

int fwd_test_run(const struct fwd_test_case *cases, size_t n)
{
	struct fwd_test_env env = { fwd_test_backend() };
	int bad = 0;

	fwd_test_worker_init();
	for (size_t i = 0; i < n; i++) {
		int before = failed;

		current = cases[i].name;
		cases[i].run(&env);
		if (failed != before)
			bad++;
	}
	{
		int before = failed;

		replay();
		if (failed != before)
			bad++;
	}
	printf("%zu generated calls and their replay, %d failed\n", n, bad);
	return bad ? 1 : 0;
}
