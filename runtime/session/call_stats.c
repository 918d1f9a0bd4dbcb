// SPDX-License-Identifier: MIT
/*
 * Per-opcode counts of the entries a program sent (see call_stats.h).
 * Off unless VGPU_CALL_STATS is set: then one relaxed load per call.
 */
#include "call_stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "vgpu/proto.h"

struct op_count {
	uint64_t waited, posted, ns;
};

static struct op_count counts[VGPU_OP_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool on;

static int by_time(const void *a, const void *b)
{
	const struct op_count *x = &counts[*(const uint16_t *)a];
	const struct op_count *y = &counts[*(const uint16_t *)b];

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return (x->waited + x->posted) < (y->waited + y->posted) ? 1 : -1;
}

static void report(void)
{
	uint16_t order[VGPU_OP_MAX], n = 0;

	for (uint16_t op = 0; op < VGPU_OP_MAX; op++)
		if (counts[op].waited || counts[op].posted)
			order[n++] = op;
	qsort(order, n, sizeof(order[0]), by_time);
	fprintf(stderr, "vgpu call stats (opcodes: include/vgpu/proto.h)\n"
		"%8s %12s %12s %14s %10s\n", "opcode", "waited", "posted", "waited_ms", "us/wait");
	for (uint16_t i = 0; i < n; i++) {
		const struct op_count *c = &counts[order[i]];

		fprintf(stderr, "  0x%04x %12llu %12llu %14.3f %10.2f\n", order[i],
			(unsigned long long)c->waited, (unsigned long long)c->posted, c->ns / 1e6,
			c->waited ? c->ns / 1e3 / c->waited : 0.0);
	}
}

static void start(void)
{
	const char *v = getenv("VGPU_CALL_STATS");

	on = v && *v && *v != '0';
	if (on)
		atexit(report);
}

bool vgpu_call_stats_on(void)
{
	pthread_once(&once, start);
	return on;
}

void vgpu_call_stats_add(uint16_t opcode, bool waited, uint64_t ns)
{
	struct op_count *c;

	if (opcode >= VGPU_OP_MAX)
		return;
	c = &counts[opcode];
	if (waited) {
		__atomic_add_fetch(&c->waited, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&c->ns, ns, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&c->posted, 1, __ATOMIC_RELAXED);
	}
}
