// SPDX-License-Identifier: MIT
/*
 * Streams. The runtime issues stream handles itself: STREAM_CREATE and
 * STREAM_DESTROY are posted without waiting, and a failure of either shows
 * at the next synchronous call, the way CUDA reports asynchronous errors.
 * Flags and priority are kept here, so the getters never leave the process.
 *
 * Default streams: NULL and CU_STREAM_LEGACY are the legacy stream (ring
 * id 0). CU_STREAM_PER_THREAD, and NULL in the _ptsz entry points, is the
 * calling thread's own stream in the current context: an ordinary blocking
 * stream (flags 0, so it still synchronises with the legacy stream, as
 * CUDA's per-thread stream does), created on first use and destroyed when
 * the thread exits.
 *
 * Stream capture is not supported (cuStreamBeginCapture keeps the
 * NOT_SUPPORTED default), so every stream answers "not capturing".
 */
#include <pthread.h>
#include <stdlib.h>

#include "calls_hand_gen.h"
#include "driver.h"
#include "entry.h"
#include "handles.h"
#include "init.h"
#include "log.h"

/* A stream handle points at this; the vgpu_stream comes first. */
struct stream {
	struct vgpu_stream s;
	unsigned long long uid;	/* cuStreamGetId: never reused, unlike s.id */
};

static unsigned long long next_uid = 1;

/* ---- creating and destroying --------------------------------------------- */

/* A stream of @ctx; of green context @green (in its context) if not NULL. */
static CUresult stream_new(struct vgpu_ctx *ctx, struct vgpu_green *green, unsigned int flags,
			   int priority, struct stream **out)
{
	struct stream *st = vgpu_obj_new(sizeof(*st), offsetof(struct stream, s.id),
					 VGPU_K_STREAM);
	CUresult rc;

	if (!st)
		return CUDA_ERROR_OUT_OF_MEMORY;
	st->s.magic = VGPU_STREAM_MAGIC;
	st->s.ctx = ctx;
	st->s.flags = flags;
	st->s.priority = priority;
	st->uid = __atomic_fetch_add(&next_uid, 1, __ATOMIC_RELAXED);
	if (green)
		rc = vgpu_post5(VGPU_OP_GREEN_STREAM_CREATE, ctx->id, 0, green->id, st->s.id,
				flags, (uint64_t)(int64_t)priority, 0);
	else
		rc = vgpu_post5(VGPU_OP_STREAM_CREATE, ctx->id, 0, st->s.id, flags,
				(uint64_t)(int64_t)priority, 0, 0);
	if (rc) {
		vgpu_id_free(VGPU_K_STREAM, st->s.id);
		free(st);
		return rc;
	}
	*out = st;
	return CUDA_SUCCESS;
}

/* Queued work still runs: the worker's cuStreamDestroy lets it finish. */
static CUresult stream_free(struct stream *st)
{
	CUresult rc = vgpu_post5(VGPU_OP_STREAM_DESTROY, st->s.ctx->id, 0, st->s.id, 0, 0, 0, 0);

	/* The id is free again only once the worker has been told: a later
	 * STREAM_CREATE with it comes after the destroy in ring order. */
	if (!rc)
		vgpu_id_free(VGPU_K_STREAM, st->s.id);
	st->s.magic = 0;
	free(st);
	return rc;
}

/* ---- per-thread default streams ------------------------------------------ */

#define PTDS_SLOTS 8	/* contexts one thread uses; the oldest is evicted */

struct ptds_slot {
	struct vgpu_ctx *ctx;
	uint64_t ctx_uid;	/* the context instance: objects and ids are recycled */
	struct stream *st;
};

static __thread struct ptds_slot ptds[PTDS_SLOTS];
static __thread unsigned int ptds_evict;
static pthread_key_t ptds_key;
static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;

/* Whether the context a slot was made in is still the live, active one
 * (context objects are never freed, so the pointer is safe to read). */
static bool slot_ctx_live(const struct ptds_slot *sl)
{
	struct vgpu_ctx *c = sl->ctx;

	return __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) == VGPU_CTX_MAGIC &&
	       (!c->primary || __atomic_load_n(&c->active, __ATOMIC_ACQUIRE)) &&
	       vgpu_ctx_uid(c) == sl->ctx_uid;
}

/*
 * Destroys a per-thread stream whose context still lives. One whose
 * context was destroyed or reset went with it on the GPU; its id stays
 * taken, since the worker may still map it.
 */
static void ptds_drop(struct ptds_slot *sl)
{
	if (!sl->st)
		return;
	if (slot_ctx_live(sl))
		stream_free(sl->st);
	else
		free(sl->st);
	sl->st = NULL;
}

static void ptds_thread_exit(void *arg)
{
	struct ptds_slot *slots = arg;

	for (int i = 0; i < PTDS_SLOTS; i++)
		ptds_drop(&slots[i]);
}

static void ptds_key_init(void)
{
	if (pthread_key_create(&ptds_key, ptds_thread_exit))
		vlog_warn("no thread-exit hook: per-thread streams outlive their threads");
}

static CUresult per_thread(struct stream **out)
{
	struct ptds_slot *sl = NULL;
	struct vgpu_ctx *ctx;
	uint64_t uid;
	CUresult rc = vgpu_ctx_current(&ctx);

	if (rc)
		return rc;
	uid = vgpu_ctx_uid(ctx);
	for (int i = 0; i < PTDS_SLOTS; i++) {
		if (ptds[i].st && ptds[i].ctx == ctx && ptds[i].ctx_uid == uid) {
			*out = ptds[i].st;
			return CUDA_SUCCESS;
		}
		/* A slot of a dead context instance is free again. */
		if (ptds[i].st && !slot_ctx_live(&ptds[i]))
			ptds_drop(&ptds[i]);
		if (!sl && !ptds[i].st)
			sl = &ptds[i];
	}
	if (!sl) {
		sl = &ptds[ptds_evict++ % PTDS_SLOTS];
		ptds_drop(sl);
	}
	rc = stream_new(ctx, NULL, CU_STREAM_DEFAULT, 0, &sl->st);
	if (rc)
		return rc;
	sl->ctx = ctx;
	sl->ctx_uid = uid;
	pthread_once(&ptds_once, ptds_key_init);
	pthread_setspecific(ptds_key, ptds);
	*out = sl->st;
	return CUDA_SUCCESS;
}

/* ---- resolving handles --------------------------------------------------- */

/* The stream object behind @h (NULL for the legacy stream) and its context. */
static CUresult lookup(CUstream h, bool ptds_default, struct stream **st, struct vgpu_ctx **ctx)
{
	struct stream *s = (struct stream *)h;
	CUresult rc;

	*st = NULL;
	if (h == CU_STREAM_PER_THREAD || (!h && ptds_default)) {
		rc = per_thread(st);
		if (!rc)
			*ctx = (*st)->s.ctx;
		return rc;
	}
	if (!h || h == CU_STREAM_LEGACY)
		return vgpu_ctx_current(ctx);
	if (s->s.magic != VGPU_STREAM_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	*st = s;
	*ctx = s->s.ctx;
	return CUDA_SUCCESS;
}

CUresult vgpu_stream_resolve(CUstream h, bool ptds_default, struct vgpu_ctx **ctx,
			     uint32_t *stream_id)
{
	struct stream *st;
	struct vgpu_ctx *c;
	CUresult rc = lookup(h, ptds_default, &st, &c);

	if (rc)
		return rc;
	if (ctx)
		*ctx = c;
	if (stream_id)
		*stream_id = st ? st->s.id : 0;
	return CUDA_SUCCESS;
}

CUresult vgpu_stream_lookup(CUstream h, bool ptds_default, struct vgpu_stream **out,
			    struct vgpu_ctx **ctx)
{
	struct stream *st;
	CUresult rc = lookup(h, ptds_default, &st, ctx);

	if (!rc)
		*out = st ? &st->s : NULL;
	return rc;
}

/* ---- entry points -------------------------------------------------------- */

/* Out-of-range priorities are clamped, as CUDA does. */
static int clamp_priority(int priority)
{
	int least, greatest;

	/* H100's range, should the context code not answer. */
	if (cuCtxGetStreamPriorityRange(&least, &greatest)) {
		least = 0;
		greatest = -5;
	}
	if (priority > least)
		priority = least;
	if (priority < greatest)
		priority = greatest;
	return priority;
}

static CUresult create(CUstream *ph, unsigned int flags, int priority)
{
	struct vgpu_ctx *ctx;
	struct stream *st;
	CUresult rc = vgpu_enter_nonnull(ph);

	if (!rc && (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = vgpu_ctx_current(&ctx);
	if (rc)
		return rc;
	rc = stream_new(ctx, NULL, flags, priority, &st);
	if (!rc)
		*ph = (CUstream)st;
	return rc;
}

/* Checked by green.c; priorities clamped as cuStreamCreateWithPriority's. */
CUresult vgpu_stream_create_green(struct vgpu_green *g, unsigned int flags, int priority,
				  CUstream *out)
{
	struct stream *st;
	CUresult rc = stream_new(g->ctx, g, flags, clamp_priority(priority), &st);

	if (!rc)
		*out = (CUstream)st;
	return rc;
}

VGPU_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return create(phStream, Flags, 0);
}

VGPU_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
						int priority)
{
	CUresult rc = vgpu_initialized();

	return rc ? rc : create(phStream, flags, clamp_priority(priority));
}

CUresult vgpu_hand_cuStreamDestroy(CUstream h)
{
	struct stream *st = (struct stream *)h;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD ||
	    st->s.magic != VGPU_STREAM_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	return stream_free(st);
}

/* Entry check, lookup, then the getter's output (not NULL). */
static CUresult get(CUstream h, bool ptds_default, const void *out, struct stream **st,
		    struct vgpu_ctx **ctx)
{
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = lookup(h, ptds_default, st, ctx);
	if (!rc && !out)
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

/* What an integer getter answers: get_item's varying part. */
enum stream_item { ITEM_PRIORITY, ITEM_FLAGS, ITEM_ID, ITEM_DEVICE };

/* @st NULL: a special stream of context @ctx. */
static uint64_t stream_item(const struct stream *st, const struct vgpu_ctx *ctx,
			    enum stream_item what)
{
	switch (what) {
	case ITEM_PRIORITY:
		return (uint64_t)(st ? st->s.priority : ctx->null_priority);
	case ITEM_FLAGS:
		return st ? st->s.flags : 0;
	case ITEM_ID:
		return st ? st->uid : 0;	/* 0: the legacy stream */
	case ITEM_DEVICE:
		return (uint64_t)ctx->dev;
	}
	return 0;
}

/* Item @what of stream @h into *@out, an integer of @size bytes. */
static CUresult get_item(CUstream h, bool ptds_default, void *out, size_t size,
			 enum stream_item what)
{
	struct stream *st;
	struct vgpu_ctx *ctx;
	CUresult rc = get(h, ptds_default, out, &st, &ctx);

	if (!rc)
		vgpu_put_uint(out, size, stream_item(st, ctx, what));
	return rc;
}

CUresult vgpu_hand_cuStreamGetPriority(bool ptds_default, CUstream h, int *priority)
{
	return get_item(h, ptds_default, priority, sizeof(*priority), ITEM_PRIORITY);
}

CUresult vgpu_hand_cuStreamGetFlags(bool ptds_default, CUstream h, unsigned int *flags)
{
	return get_item(h, ptds_default, flags, sizeof(*flags), ITEM_FLAGS);
}

CUresult vgpu_hand_cuStreamGetId(bool ptds_default, CUstream h, unsigned long long *id)
{
	return get_item(h, ptds_default, id, sizeof(*id), ITEM_ID);
}

CUresult vgpu_hand_cuStreamGetDevice(bool ptds_default, CUstream h, CUdevice *dev)
{
	return get_item(h, ptds_default, dev, sizeof(*dev), ITEM_DEVICE);
}

CUresult vgpu_hand_cuStreamGetCtx(bool ptds_default, CUstream h, CUcontext *pctx,
				  CUgreenCtx *pgreen)
{
	struct stream *st;
	struct vgpu_ctx *ctx;
	CUresult rc = get(h, ptds_default, pctx, &st, &ctx);

	if (rc)
		return rc;
	if (!pgreen) {	/* cuStreamGetCtx: a green context's own context */
		*pctx = (CUcontext)ctx;
		return CUDA_SUCCESS;
	}
	/* cuStreamGetCtx_v2 (cuda.h): of a green context, the device's
	 * primary context and the green context; the per-thread stream of
	 * one is not a stream it has. */
	if (ctx->green && (h == CU_STREAM_PER_THREAD || (!h && ptds_default)))
		return CUDA_ERROR_INVALID_HANDLE;
	*pctx = ctx->green ? vgpu_primary_handle(ctx->dev) : (CUcontext)ctx;
	*pgreen = (CUgreenCtx)ctx->green;
	return CUDA_SUCCESS;
}

/* The green context whose context was current when the stream was made
 * (or is current, for the special streams); NULL if none. */
VGPU_EXPORT CUresult cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx *phCtx)
{
	struct stream *st;
	struct vgpu_ctx *ctx;
	CUresult rc = get(hStream, false, phCtx, &st, &ctx);

	if (!rc)
		*phCtx = (CUgreenCtx)ctx->green;
	return rc;
}

VGPU_EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	return vgpu_hand_cuStreamGetCtx(false, hStream, pctx, NULL);
}

VGPU_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
	return vgpu_hand_cuStreamGetCtx(true, hStream, pctx, NULL);
}

/* STREAM_SYNCHRONIZE and STREAM_QUERY: synchronous, on sqe.stream. */
static CUresult stream_call(uint16_t op, CUstream h, bool ptds_default)
{
	struct vgpu_ctx *ctx;
	uint32_t id;
	CUresult rc = vgpu_enter_stream(h, ptds_default, &ctx, &id);

	return rc ? rc : vgpu_call5(op, ctx->id, id, 0, 0, 0, 0, 0, NULL);
}

CUresult vgpu_hand_cuStreamSynchronize(bool ptds, CUstream hStream)
{
	return stream_call(VGPU_OP_STREAM_SYNCHRONIZE, hStream, ptds);
}

CUresult vgpu_hand_cuStreamQuery(bool ptds, CUstream hStream)
{
	return stream_call(VGPU_OP_STREAM_QUERY, hStream, ptds);
}

CUresult vgpu_hand_cuStreamWaitEvent(bool ptds_default, CUstream h, CUevent hEvent,
				     unsigned int flags)
{
	struct vgpu_event *ev;
	struct vgpu_ctx *ctx;
	uint32_t id;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_event_resolve(hEvent, &ev);
	if (rc)
		return rc;
	rc = vgpu_stream_resolve(h, ptds_default, &ctx, &id);
	return rc ? rc : vgpu_post5(VGPU_OP_STREAM_WAIT_EVENT, ctx->id, id, ev->id, flags, 0, 0, 0);
}
