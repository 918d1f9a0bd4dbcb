// SPDX-License-Identifier: MIT
/*
 * Unit test for runtime/session/ids.c: handle ids are never 0, unique among live
 * ids of a kind, reused after free (lowest first), context ids never
 * collide with the primary contexts' 1..VGPU_MAX_DEVICES, and all of it
 * holds under 8 threads allocating and freeing at once. Exit 0 = pass.
 *
 * Build (from the repo root):
 *   gcc -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE -I include \
 *     -I common -I runtime -I /usr/local/cuda/include \
 *     tests/unit/test_ids.c runtime/session/ids.c common/log.c -lpthread -o test_ids
 */
#include "handles.h"
#include "log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                              \
		}                                                                \
	} while (0)

#define N_SERIAL 5000

static uint32_t first_id(enum vgpu_kind k)
{
	return k == VGPU_K_CTX ? VGPU_MAX_DEVICES + 1 : 1;
}

/* Serial: a fresh kind hands out first_id, first_id+1, ... densely. */
static void test_serial(enum vgpu_kind k)
{
	static uint32_t ids[N_SERIAL];
	static unsigned char seen[N_SERIAL + 64];
	uint32_t id;

	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < N_SERIAL; i++) {
		ids[i] = vgpu_id_alloc(k);
		CHECK(ids[i] != 0);
		CHECK(ids[i] >= first_id(k));
		CHECK(ids[i] < N_SERIAL + 64);
		if (ids[i] && ids[i] < N_SERIAL + 64) {
			CHECK(!seen[ids[i]]);
			seen[ids[i]] = 1;
		}
	}
	/* Dense: exactly first_id .. first_id + N - 1. */
	CHECK(ids[0] == first_id(k));
	CHECK(ids[N_SERIAL - 1] == first_id(k) + N_SERIAL - 1);

	/* Reuse: freed ids come back, lowest first. */
	vgpu_id_free(k, ids[700]);
	vgpu_id_free(k, ids[100]);
	vgpu_id_free(k, ids[4000]);
	id = vgpu_id_alloc(k);
	CHECK(id == ids[100]);
	id = vgpu_id_alloc(k);
	CHECK(id == ids[700]);
	id = vgpu_id_alloc(k);
	CHECK(id == ids[4000]);
	id = vgpu_id_alloc(k);
	CHECK(id == first_id(k) + N_SERIAL);	/* all reused: next new one */
	vgpu_id_free(k, id);

	/* Bad frees change nothing: 0, reserved, never issued, double free. */
	vgpu_id_free(k, 0);
	if (k == VGPU_K_CTX)
		for (uint32_t p = 1; p <= VGPU_MAX_DEVICES; p++)
			vgpu_id_free(k, p);
	vgpu_id_free(k, 1u << 20);
	vgpu_id_free(k, ids[5]);
	vgpu_id_free(k, ids[5]);
	id = vgpu_id_alloc(k);
	CHECK(id == ids[5]);
	id = vgpu_id_alloc(k);
	CHECK(id == first_id(k) + N_SERIAL);	/* the double free did not leave two */

	for (int i = 0; i < N_SERIAL; i++)
		vgpu_id_free(k, ids[i]);
	vgpu_id_free(k, id);
	/* Everything free again: back to the first id. */
	id = vgpu_id_alloc(k);
	CHECK(id == first_id(k));
	vgpu_id_free(k, id);
}

/* Kinds are independent spaces. */
static void test_kinds(void)
{
	uint32_t s = vgpu_id_alloc(VGPU_K_STREAM);
	uint32_t e = vgpu_id_alloc(VGPU_K_EVENT);

	CHECK(s == 1);
	CHECK(e == 1);
	vgpu_id_free(VGPU_K_STREAM, s);
	vgpu_id_free(VGPU_K_EVENT, e);
	CHECK(vgpu_id_alloc(VGPU_K_COUNT) == 0);
	vgpu_id_free(VGPU_K_COUNT, 1);
}

/* ---- 8 threads ---------------------------------------------------------- */

#define THREADS 8
#define ROUNDS 200000
#define HOLD 32			/* ids each thread keeps live at most */
#define MAX_ID (1u << 16)

static atomic_uint owner[VGPU_K_COUNT][MAX_ID];
static atomic_int dupes, zeros, too_big;

struct targ {
	int t;
	enum vgpu_kind k;
};

static void *worker(void *p)
{
	const struct targ *a = p;
	uint32_t held[HOLD];
	int n = 0;
	unsigned seed = 12345u + (unsigned)a->t;

	for (int r = 0; r < ROUNDS; r++) {
		if (n < HOLD && (n == 0 || rand_r(&seed) % 3)) {
			uint32_t id = vgpu_id_alloc(a->k);
			unsigned zero = 0;

			if (!id) {
				atomic_fetch_add(&zeros, 1);
				continue;
			}
			if (id >= MAX_ID || id < first_id(a->k)) {
				atomic_fetch_add(&too_big, 1);
				continue;
			}
			if (!atomic_compare_exchange_strong(&owner[a->k][id], &zero,
							    (unsigned)a->t + 1))
				atomic_fetch_add(&dupes, 1);
			held[n++] = id;
		} else {
			int i = (int)(rand_r(&seed) % (unsigned)n);
			uint32_t id = held[i];

			held[i] = held[--n];
			atomic_store(&owner[a->k][id], 0);
			vgpu_id_free(a->k, id);
		}
	}
	while (n) {
		uint32_t id = held[--n];

		atomic_store(&owner[a->k][id], 0);
		vgpu_id_free(a->k, id);
	}
	return NULL;
}

static void test_threads(enum vgpu_kind k)
{
	pthread_t th[THREADS];
	struct targ args[THREADS];
	uint32_t id;

	for (int t = 0; t < THREADS; t++) {
		args[t] = (struct targ){ .t = t, .k = k };
		CHECK(pthread_create(&th[t], NULL, worker, &args[t]) == 0);
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	CHECK(atomic_load(&dupes) == 0);
	CHECK(atomic_load(&zeros) == 0);
	CHECK(atomic_load(&too_big) == 0);
	/* Everything was freed: the space is empty again. */
	id = vgpu_id_alloc(k);
	CHECK(id == first_id(k));
	vgpu_id_free(k, id);
	/* Reuse kept ids small: at most THREADS * HOLD were live at once. */
	for (uint32_t i = first_id(k) + THREADS * HOLD; i < MAX_ID; i++)
		if (atomic_load(&owner[k][i])) {
			CHECK(!"id beyond the live maximum still owned");
			break;
		}
}

/* The highest id ever handed out under contention stays bounded by the
 * live count (reuse works across threads). */
static atomic_uint max_seen;

static void *bounded_worker(void *p)
{
	enum vgpu_kind k = *(enum vgpu_kind *)p;

	for (int r = 0; r < ROUNDS; r++) {
		uint32_t a = vgpu_id_alloc(k), b = vgpu_id_alloc(k);
		unsigned m = atomic_load(&max_seen);

		while ((a > m || b > m) &&
		       !atomic_compare_exchange_weak(&max_seen, &m, a > b ? a : b))
			;
		vgpu_id_free(k, b);
		vgpu_id_free(k, a);
	}
	return NULL;
}

static void test_bounded(enum vgpu_kind k)
{
	pthread_t th[THREADS];

	atomic_store(&max_seen, 0);
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, bounded_worker, &k) == 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	/* 8 threads x 2 live ids each. */
	CHECK(atomic_load(&max_seen) < first_id(k) + 2 * THREADS);
}

int main(void)
{
	vgpu_log_init("test_ids", VGPU_LOG_ERROR);
	test_serial(VGPU_K_CTX);
	test_serial(VGPU_K_MODULE);
	test_kinds();
	test_threads(VGPU_K_CTX);
	test_threads(VGPU_K_FUNC);
	test_bounded(VGPU_K_STREAM);
	test_bounded(VGPU_K_CTX);
	if (failures) {
		fprintf(stderr, "test_ids: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_ids: ok\n");
	return 0;
}
