// SPDX-License-Identifier: MIT
/*
 * Stream attributes, stream memory operations (write and wait on a word,
 * batches of them), context-wide event record and wait, and prefetch.
 * Every address the client names must be its own memory (device window,
 * host pool, module globals: worker_addr_ok), since the driver would
 * otherwise write, or make the GPU watch, anything the worker maps.
 *
 * Waits on the host backend: its streams run everything at once, so a wait
 * whose word is written by later work on another stream must run that work
 * first. The host backend calls wait_hook() while the word does not hold;
 * the hook takes the next ring entries and runs each one that CUDA does not
 * order after the wait (another stream's work, object creation); the others
 * are held, each with its payload, and run in order once the wait holds.
 * While nothing can run, the hook sleeps, checking the client's life (its
 * death ends the wait) and refusing a checkpoint or move that would wait
 * for the stream (worker_order_stalled), as host callbacks do.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "barrier.h"
#include "clock.h"
#include "log.h"
#include "retained.h"
#include "worker.h"

#define BATCH_MAX	256	/* operations in one batch, as the driver allows */

_Static_assert(sizeof(CUstreamAttrValue) == 64, "attribute value crosses as 64 bytes");
_Static_assert(sizeof(CUstreamBatchMemOpParams) == 48, "batch operation layout");

static void answer_now(struct worker *w, struct op_call *call)
{
	if (call->sqe->tag) {
		worker_fold_deferred(w, call->cqe);
		worker_post(w, call->cqe);
	} else if (call->cqe->result && !w->deferred) {
		w->deferred = call->cqe->result;
	}
}

/* ---- stream attributes --------------------------------------------------- */

static CUstream stream_by_id(struct worker *w, uint64_t id, CUresult *rc)
{
	struct vgpu_sqe s = { .stream = (uint32_t)id };

	if (id > UINT32_MAX) {
		*rc = CUDA_ERROR_INVALID_HANDLE;
		return NULL;
	}
	return worker_stream(w, &s, rc);
}

/* The window's pointer is a device address the GPU will favour in its L2:
 * it must be the client's. An empty window names nothing. */
static CUresult attr_check(struct worker *w, uint64_t id, const CUstreamAttrValue *v)
{
	const CUaccessPolicyWindow *apw = &v->accessPolicyWindow;

	if (id > INT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (id == CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW && apw->num_bytes &&
	    !worker_addr_ok(w, (uint64_t)(uintptr_t)apw->base_ptr, apw->num_bytes))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* A stream's priority is also what a checkpoint re-creates it with. */
static void remember_priority(struct worker *w, uint32_t id, CUstream st)
{
	struct obj_entry *e = id ? obj_get(&w->streams, id) : NULL;
	struct retained_stream *info = e ? e->data : NULL;
	CUstreamAttrValue v;

	if (info && !w->B.cuStreamGetAttribute(st, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v))
		info->priority = v.priority;
}

static enum op_status op_set_attr(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUstreamAttrValue v;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (!rc && call->len != sizeof(v))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc) {
		memcpy(&v, call->payload, sizeof(v));
		rc = attr_check(w, s->arg[0], &v);
	}
	if (!rc)
		rc = w->B.cuStreamSetAttribute(st, (CUstreamAttrID)s->arg[0], &v);
	if (!rc && s->arg[0] == CU_LAUNCH_ATTRIBUTE_PRIORITY)
		remember_priority(w, s->stream, st);
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_get_attr(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUstreamAttrValue v;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (!rc && (s->arg[0] > INT32_MAX || w->ring.reply_slot_size < sizeof(v)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = w->B.cuStreamGetAttribute(st, (CUstreamAttrID)s->arg[0], &v);
	if (!rc)
		memcpy(call->reply, &v, sizeof(v));
	call->cqe->result = rc;
	call->cqe->val[2] = rc ? 0 : sizeof(v);	/* reply bytes */
	return OP_DONE;
}

static enum op_status op_copy_attrs(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUresult rc, rc2;
	CUstream dst = worker_stream(w, s, &rc);
	CUstream src = stream_by_id(w, s->arg[0], &rc2);

	if (!rc)
		rc = rc2;
	if (!rc)
		rc = w->B.cuStreamCopyAttributes(dst, src);
	if (!rc)
		remember_priority(w, s->stream, dst);
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- context-wide events ------------------------------------------------- */

static enum op_status op_ctx_event(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *c = obj_get(&w->ctxs, s->ctx);
	struct obj_entry *e = obj_get(&w->events, s->arg[0]);
	CUresult rc = CUDA_ERROR_INVALID_HANDLE;

	if (!c)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (e && s->opcode == VGPU_OP_CTX_RECORD_EVENT)
		rc = w->B.cuCtxRecordEvent(c->obj, e->obj);
	else if (e)
		rc = w->B.cuCtxWaitEvent(c->obj, e->obj);
	call->cqe->result = rc;
	return OP_DONE;
}

/* ---- waits on the host backend ------------------------------------------- */

static bool gpu_waits;	/* a wait went to the cuda backend (streamops_gpu_stalled) */

/*
 * Entries taken out of the ring while a wait did not hold, in ring order,
 * each with its own copy of its payload; those that ran meanwhile are
 * marked done. The outermost wait runs the rest, in order, once it holds;
 * a wait among them scans the rest first, then the ring.
 */
struct taken {
	struct vgpu_sqe sqe;
	void *payload;
	int len;
	bool done;
};

#define TAKEN_MAX	4096		/* entries held at once */
#define TAKEN_BYTES	(16u << 20)	/* and their payloads */
#define BLOCK_MAX	64		/* streams and events a wait tracks */

static struct {
	struct taken *v;
	size_t n, cap;
	uint64_t bytes;
	bool draining;
} held;

/* What one wait holds back: its stream, the streams of entries it held
 * (later work there comes after them), the events those record. */
struct stream_wait {
	struct worker *w;
	size_t scan;		/* next held entry to consider */
	uint32_t streams[BLOCK_MAX], nstreams;
	uint32_t events[BLOCK_MAX], nevents;
	bool legacy;		/* a legacy-stream entry is held: blocking streams wait */
	bool destroys;		/* a held entry destroys a stream or event */
	bool overflow;		/* too much to track: nothing more passes */
	unsigned int us;	/* next sleep */
};

static bool listed(const uint32_t *v, uint32_t n, uint32_t x)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static void add(struct stream_wait *sw, uint32_t *v, uint32_t *n, uint32_t x)
{
	if (listed(v, *n, x))
		return;
	if (*n == BLOCK_MAX)
		sw->overflow = true;
	else
		v[(*n)++] = x;
}

static bool held_event(const struct stream_wait *sw, uint64_t id)
{
	return sw->overflow || id > UINT32_MAX || listed(sw->events, sw->nevents, (uint32_t)id);
}

/*
 * Calls on no stream that CUDA orders after nothing: allocations, queries,
 * creating a stream or event (unless a held entry destroys one, whose id
 * the creation may take again), and a look at an event that no held entry
 * records.
 */
static bool unordered(const struct stream_wait *sw, const struct vgpu_sqe *s)
{
	switch (s->opcode) {
	case VGPU_OP_MEM_ALLOC:
	case VGPU_OP_MEM_ALLOC_PITCH:
	case VGPU_OP_HOST_ALLOC:
	case VGPU_OP_MEM_GET_RANGE:
	case VGPU_OP_MEM_GET_INFO:
		return true;
	case VGPU_OP_STREAM_CREATE:
	case VGPU_OP_EVENT_CREATE:
		return !sw->destroys;
	case VGPU_OP_EVENT_QUERY:
	case VGPU_OP_EVENT_SYNCHRONIZE:
		return !held_event(sw, s->arg[0]);
	case VGPU_OP_EVENT_ELAPSED:
		return !held_event(sw, s->arg[0]) && !held_event(sw, s->arg[1]);
	default:
		return false;
	}
}

static bool blocking_stream(struct worker *w, uint32_t id)
{
	struct obj_entry *e = obj_get(&w->streams, id);
	const struct retained_stream *info = e ? e->data : NULL;

	return !info || !(info->flags & CU_STREAM_NON_BLOCKING);
}

/*
 * Whether an entry may run before the wait holds, CUDA's ordering kept:
 * not on a stream held back, not after a held legacy-stream entry on a
 * blocking stream, not a wait on an event a held entry records, and no
 * nested wait. An entry that may not is held, and what it orders noted.
 */
static bool may_pass(struct stream_wait *sw, const struct vgpu_sqe *s)
{
	struct worker *w = sw->w;
	bool pass;

	if (!s->stream)
		pass = unordered(sw, s);
	else if (sw->overflow || listed(sw->streams, sw->nstreams, s->stream))
		pass = false;
	else if (sw->legacy && blocking_stream(w, s->stream))
		pass = false;
	else if (s->opcode == VGPU_OP_STREAM_WAIT_VALUE || s->opcode == VGPU_OP_STREAM_BATCH_MEMOP)
		pass = false;
	else if (s->opcode == VGPU_OP_STREAM_WAIT_EVENT)
		pass = !held_event(sw, s->arg[0]);
	else
		pass = true;
	if (pass)
		return true;
	if (!s->stream)
		sw->legacy = true;
	else
		add(sw, sw->streams, &sw->nstreams, s->stream);
	if (s->opcode == VGPU_OP_EVENT_RECORD || s->opcode == VGPU_OP_CTX_RECORD_EVENT)
		add(sw, sw->events, &sw->nevents, (uint32_t)s->arg[0]);
	if (s->opcode == VGPU_OP_GREEN_RECORD_EVENT)
		add(sw, sw->events, &sw->nevents, (uint32_t)s->arg[1]);
	if (s->opcode == VGPU_OP_STREAM_DESTROY || s->opcode == VGPU_OP_EVENT_DESTROY)
		sw->destroys = true;
	return false;
}

static bool hold(struct worker *w, const struct vgpu_sqe *s)
{
	struct taken *t;

	if (held.n == held.cap) {
		size_t cap = held.cap ? 2 * held.cap : 64;
		struct taken *v = realloc(held.v, cap * sizeof(*v));

		if (!v)
			return false;
		held.v = v;
		held.cap = cap;
	}
	t = &held.v[held.n];
	*t = (struct taken){ .sqe = *s };
	/* Without memory the entry still holds its place, and fails. */
	if (s->payload_len && !(t->payload = malloc(s->payload_len))) {
		worker_payload_skip(&w->ring, s);
		t->len = -1;
	} else {
		t->len = worker_payload_take(&w->ring, s, t->payload, s->payload_len);
	}
	held.bytes += s->payload_len;
	held.n++;
	return true;
}

static bool room(void)
{
	return held.n < TAKEN_MAX && held.bytes < TAKEN_BYTES;
}

/* Runs the next entry that may pass; false when none could be found. */
static bool pass_one(struct stream_wait *sw)
{
	struct worker *w = sw->w;
	struct vgpu_sqe sqe;

	for (; sw->scan < held.n; sw->scan++) {
		struct taken *t = &held.v[sw->scan];

		if (!t->done && may_pass(sw, &t->sqe)) {
			struct taken run = *t;

			t->done = true;
			dispatch_taken(w, &run.sqe, run.payload, run.len);
			return true;
		}
	}
	if (!room() || !worker_sq_pop(&w->ring, &sqe))
		return false;
	if (sqe.tag > w->ring.sq_entries || may_pass(sw, &sqe)) {
		dispatch_entry(w, &sqe);	/* in ring order: nothing before it is left */
		return true;
	}
	if (!hold(w, &sqe)) {
		vlog_warn("out of memory holding entries behind a stream wait");
		worker_payload_skip(&w->ring, &sqe);
		dispatch_taken(w, &sqe, NULL, -1);
		return true;
	}
	sw->scan = held.n;
	return true;
}

static bool wait_hook(void *arg)
{
	struct stream_wait *sw = arg;
	struct worker *w = sw->w;

	if (pass_one(sw)) {
		sw->us = 20;
		return !read_once(&w->dead);
	}
	/* The client may be waiting for ring space behind what we took. */
	worker_sq_release(&w->ring);
	if (!worker_wait_client(w, room(), sw->us, "in a stream wait"))
		return false;
	sw->us = sw->us < 5000 ? 2 * sw->us : 10000;
	return true;
}

/* The held entries, in order, skipping those that ran meanwhile. */
static void drain(struct worker *w)
{
	held.draining = true;
	for (size_t i = 0; i < held.n; i++) {
		struct taken *t = &held.v[i];

		if (!t->done && !read_once(&w->dead)) {
			/* A copy: a wait among them may hold more, moving v. */
			struct taken run = *t;

			t->done = true;
			dispatch_taken(w, &run.sqe, run.payload, run.len);
		}
	}
	for (size_t i = 0; i < held.n; i++)
		free(held.v[i].payload);
	held.n = 0;
	held.bytes = 0;
	held.draining = false;
}

/*
 * Runs a backend call that may wait (host backend) with the hook set, then
 * (outermost) the entries held back meanwhile. Answers the call itself,
 * since the held entries come after it.
 */
static enum op_status run_waiting(struct worker *w, struct op_call *call,
				  CUresult (*fn)(struct worker *w, struct op_call *call, void *arg),
				  void *arg)
{
	struct stream_wait sw = { .w = w, .us = 20 };
	bool outermost = !held.draining;

	if (w->B.kind != VGPU_BACKEND_HOST) {
		call->cqe->result = fn(w, call, arg);
		gpu_waits |= !call->cqe->result;
		return OP_DONE;
	}
	/* A wait run from the held entries looks at the rest of them first. */
	for (size_t i = 0; i < held.n; i++)
		if (!held.v[i].done)
			break;
		else
			sw.scan = i + 1;
	if (call->sqe->stream)
		sw.streams[sw.nstreams++] = call->sqe->stream;
	else
		sw.legacy = true;
	vgpu_host_set_wait_hook(wait_hook, &sw);
	call->cqe->result = fn(w, call, arg);
	vgpu_host_set_wait_hook(NULL, NULL);
	answer_now(w, call);
	if (outermost)
		drain(w);
	return OP_LATER;
}

/*
 * A stream wait on the GPU that nothing satisfies holds its stream for
 * ever, and a checkpoint's drain (cuCtxSynchronize) with it. Once the
 * session has queued a wait, a drain first records an event on each context
 * and gives it cfg.order_wait_ms to complete (or the client to die).
 */

bool streamops_gpu_stalled(struct worker *w)
{
	uint64_t end = vgpu_now_ns() + (uint64_t)w->cfg.order_wait_ms * 1000000;
	struct obj_entry *e;
	bool stalled = false;
	uint32_t i;

	if (!gpu_waits)
		return false;
	obj_for_each(&w->ctxs, i, e) {
		CUevent ev;

		/* The event must be the context's own. */
		if (w->B.cuCtxSetCurrent(e->obj) || w->B.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING))
			continue;	/* the drain reports the context */
		if (!w->B.cuCtxRecordEvent(e->obj, ev))
			while (w->B.cuEventQuery(ev) == CUDA_ERROR_NOT_READY && !stalled) {
				if (vgpu_now_ns() >= end || worker_client_gone(w))
					stalled = true;
				else
					usleep(1000);
			}
		w->B.cuEventDestroy_v2(ev);
		if (stalled)
			break;
	}
	w->cur_ctx = 0;		/* the next entry sets its own context again */
	return stalled;
}

/* ---- write and wait on a word -------------------------------------------- */

static CUresult word_args(struct worker *w, const struct vgpu_sqe *s)
{
	uint64_t size = s->arg[3];

	if ((size != 4 && size != 8) || s->arg[2] > UINT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (size == 4 && s->arg[1] > UINT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	return worker_addr_ok(w, s->arg[0], size) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static enum op_status op_write_value(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (!rc)
		rc = word_args(w, s);
	if (!rc && s->arg[3] == 4)
		rc = w->B.cuStreamWriteValue32_v2(st, s->arg[0], (cuuint32_t)s->arg[1],
						  (unsigned int)s->arg[2]);
	else if (!rc)
		rc = w->B.cuStreamWriteValue64_v2(st, s->arg[0], s->arg[1], (unsigned int)s->arg[2]);
	call->cqe->result = rc;
	return OP_DONE;
}

static CUresult wait_value(struct worker *w, struct op_call *call, void *arg)
{
	const struct vgpu_sqe *s = call->sqe;
	CUstream st = arg;

	if (s->arg[3] == 4)
		return w->B.cuStreamWaitValue32_v2(st, s->arg[0], (cuuint32_t)s->arg[1],
						   (unsigned int)s->arg[2]);
	return w->B.cuStreamWaitValue64_v2(st, s->arg[0], s->arg[1], (unsigned int)s->arg[2]);
}

static enum op_status op_wait_value(struct worker *w, struct op_call *call)
{
	CUresult rc;
	CUstream st = worker_stream(w, call->sqe, &rc);

	if (!rc)
		rc = word_args(w, call->sqe);
	if (rc) {
		call->cqe->result = rc;
		return OP_DONE;
	}
	return run_waiting(w, call, wait_value, st);
}

struct batch {
	CUstream st;
	unsigned int count;
	CUstreamBatchMemOpParams *ops;	/* the worker's copy */
};

static CUresult run_batch(struct worker *w, struct op_call *call, void *arg)
{
	struct batch *b = arg;

	return w->B.cuStreamBatchMemOp_v2(b->st, b->count, b->ops, (unsigned int)call->sqe->arg[1]);
}

/* Words written or watched must be the client's; what is not a word
 * operation has no address (the driver checks the rest). */
static CUresult batch_addresses(struct worker *w, CUstreamBatchMemOpParams *ops, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		CUstreamBatchMemOpParams *p = &ops[i];
		uint64_t size = 0, addr = 0;

		switch (p->operation) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
			size = 4;
			break;
		case CU_STREAM_MEM_OP_WAIT_VALUE_64:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64:
			size = 8;
			break;
		case CU_STREAM_MEM_OP_BARRIER:
		case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
			continue;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
		/* waitValue and writeValue share their layout. */
		addr = p->waitValue.address;
		p->waitValue.alias = 0;	/* the driver's own field */
		if (!worker_addr_ok(w, addr, size))
			return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static enum op_status op_batch_memop(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct batch b = { .count = (unsigned int)s->arg[0] };
	enum op_status ret;
	CUresult rc;

	b.st = worker_stream(w, s, &rc);
	if (!rc && (!s->arg[0] || s->arg[0] > BATCH_MAX || s->arg[1] > UINT32_MAX ||
		    call->len != s->arg[0] * sizeof(*b.ops)))
		rc = CUDA_ERROR_INVALID_VALUE;
	/* A copy: entries run during a wait reuse the payload buffer. */
	if (!rc && !(b.ops = malloc(call->len)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!rc) {
		memcpy(b.ops, call->payload, call->len);
		rc = batch_addresses(w, b.ops, b.count);
	}
	if (rc) {
		free(b.ops);
		call->cqe->result = rc;
		return OP_DONE;
	}
	ret = run_waiting(w, call, run_batch, &b);
	free(b.ops);
	return ret;
}

/* ---- prefetch ------------------------------------------------------------ */

/* A location names a client device ordinal; the driver gets the worker's. */
static CUresult location(struct worker *w, uint64_t type, uint64_t id, CUmemLocation *loc)
{
	if (type > INT32_MAX || id > INT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	loc->type = (CUmemLocationType)type;
	loc->id = (int)id;
	if (type == CU_MEM_LOCATION_TYPE_DEVICE) {
		if (id >= (uint64_t)w->device_count)
			return CUDA_ERROR_INVALID_DEVICE;
		loc->id = w->devices[id];
	}
	return CUDA_SUCCESS;
}

static enum op_status op_prefetch(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUmemLocation loc;
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (!rc && (!worker_addr_ok(w, s->arg[0], s->arg[1] ? s->arg[1] : 1) ||
		    s->arg[4] > UINT32_MAX))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = location(w, s->arg[2], s->arg[3], &loc);
	if (!rc)
		rc = w->B.cuMemPrefetchAsync_v2(s->arg[0], s->arg[1], loc, (unsigned int)s->arg[4],
						st);
	call->cqe->result = rc;
	return OP_DONE;
}

const struct op_desc exec_streamops_ops[] = {
	OP(STREAM_SET_ATTR, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_set_attr),
	OP(STREAM_GET_ATTR, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_get_attr),
	OP(STREAM_COPY_ATTRS, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_copy_attrs),
	OP(CTX_RECORD_EVENT, OPF_NEEDS_CTX, op_ctx_event),
	OP(CTX_WAIT_EVENT, OPF_NEEDS_CTX, op_ctx_event),
	OP(STREAM_WRITE_VALUE, OPF_NEEDS_CTX, op_write_value),
	OP(STREAM_WAIT_VALUE, OPF_NEEDS_CTX, op_wait_value),
	OP(STREAM_BATCH_MEMOP, OPF_NEEDS_CTX, op_batch_memop),
	OP(MEM_PREFETCH, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_prefetch),
	{ 0 },
};
