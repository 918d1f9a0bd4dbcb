// SPDX-License-Identifier: MIT
/*
 * Handle ids: the small numbers the ring carries for every object the
 * program creates (contexts, streams, events, modules, functions). The
 * worker maps them to its real objects, so they must be unique among live
 * objects of one kind; they are reused after free (the lowest free id is
 * handed out first, keeping the worker's tables dense) and never 0, which
 * the protocol reserves for "none" (legacy stream, no context).
 *
 * Context ids 1..VGPU_MAX_DEVICES belong to the primary contexts
 * (id = device + 1, primary_ctx.c); vgpu_id_alloc(VGPU_K_CTX) never returns
 * them and vgpu_id_free ignores them.
 *
 * One bitmap per kind, grown on demand, one mutex per kind. Allocation
 * scans from the lowest word that may have a free bit (a hint kept at the
 * lowest freed id), so it is O(1) amortised for the usual LIFO patterns.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "handles.h"
#include "log.h"

/* The first id a kind may hand out: contexts skip the primaries' range. */
#define CTX_FIRST_ID	(VGPU_MAX_DEVICES + 1u)
/* Upper bound on live ids per kind: 16M (a 2 MiB bitmap). */
#define ID_LIMIT	(1u << 24)

struct id_space {
	pthread_mutex_t lock;
	uint64_t *bits;		/* bit i set: id i in use (or reserved) */
	uint32_t words;		/* bitmap length in 64-bit words */
	uint32_t hint;		/* no free id below word `hint` */
	uint32_t live;
};

static struct id_space spaces[VGPU_K_COUNT] = {
	[0 ... VGPU_K_COUNT - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

static const char *const kind_name[VGPU_K_COUNT] = {
	[VGPU_K_CTX] = "context",
	[VGPU_K_STREAM] = "stream",
	[VGPU_K_EVENT] = "event",
	[VGPU_K_MODULE] = "module",
	[VGPU_K_FUNC] = "function",
	[VGPU_K_GRAPH] = "graph",
	[VGPU_K_GRAPH_EXEC] = "graph instance",
	[VGPU_K_POOL] = "memory pool",
	[VGPU_K_GEN] = "generated-kind object",
	[VGPU_K_GREEN] = "green context",
};

static uint32_t first_id(enum vgpu_kind k)
{
	/* Pools skip the default pools' ids too. */
	return k == VGPU_K_CTX || k == VGPU_K_POOL ? CTX_FIRST_ID : 1u;
}

/* Marks ids 0 .. first_id(k)-1 in words [from, s->words) as taken. */
static void reserve_low(struct id_space *s, enum vgpu_kind k, uint32_t from)
{
	uint32_t first = first_id(k);

	for (uint32_t id = from * 64u; id < first && id < s->words * 64u; id++)
		s->bits[id / 64] |= 1ull << (id % 64);
}

static int grow(struct id_space *s, enum vgpu_kind k)
{
	uint32_t nw = s->words ? s->words * 2 : 4, old;
	uint64_t *nb;

	if (nw > ID_LIMIT / 64)
		nw = ID_LIMIT / 64;
	if (nw <= s->words)
		return -1;
	nb = realloc(s->bits, (size_t)nw * sizeof(*nb));
	if (!nb)
		return -1;
	memset(nb + s->words, 0, (size_t)(nw - s->words) * sizeof(*nb));
	s->bits = nb;
	old = s->words;
	s->words = nw;
	reserve_low(s, k, old);
	return 0;
}

uint32_t vgpu_id_alloc(enum vgpu_kind k)
{
	struct id_space *s;
	uint32_t w, id = 0;

	if ((unsigned)k >= VGPU_K_COUNT)
		return 0;
	s = &spaces[k];
	pthread_mutex_lock(&s->lock);
	for (;;) {
		for (w = s->hint; w < s->words && s->bits[w] == ~0ull; w++)
			;
		if (w < s->words)
			break;
		s->hint = s->words;
		if (grow(s, k)) {
			pthread_mutex_unlock(&s->lock);
			vlog_err("ids: no free %s id (%u live)", kind_name[k], s->live);
			return 0;
		}
	}
	id = w * 64u + (uint32_t)__builtin_ctzll(~s->bits[w]);
	s->bits[w] |= 1ull << (id % 64);
	s->hint = w;
	s->live++;
	pthread_mutex_unlock(&s->lock);
	return id;
}

void vgpu_id_free(enum vgpu_kind k, uint32_t id)
{
	struct id_space *s;
	uint64_t bit;

	if ((unsigned)k >= VGPU_K_COUNT || id < first_id(k))
		return;
	s = &spaces[k];
	pthread_mutex_lock(&s->lock);
	bit = 1ull << (id % 64);
	if (id / 64 >= s->words || !(s->bits[id / 64] & bit)) {
		pthread_mutex_unlock(&s->lock);
		vlog_warn("ids: %s id %u freed but not in use", kind_name[k], id);
		return;
	}
	s->bits[id / 64] &= ~bit;
	if (id / 64 < s->hint)
		s->hint = id / 64;
	s->live--;
	pthread_mutex_unlock(&s->lock);
}
