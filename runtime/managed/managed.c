// SPDX-License-Identifier: MIT
/*
 * Managed memory: one address, seen by the program's host code and by its
 * kernels, with CUDA's rules (host writes are seen by later GPU work, GPU
 * results by the host after a synchronizing call).
 *
 * Design. A managed allocation is ordinary device memory of the session
 * (MEM_ALLOC, page aligned and whole pages, inside the device window), so
 * kernels use it at device speed and checkpoints carry it with the rest of
 * the device memory. The client has the same range of its address space
 * reserved (the device window), and maps there a view of a memfd: that is
 * the host's copy. Every page of it is in one of three states:
 *   STALE  PROT_NONE   the device may have newer data than the host
 *   CLEAN  PROT_READ   host and device agree
 *   DIRTY  read-write  the host wrote it since the device last saw it
 * A host access the protection refuses faults (SIGSEGV, handled here and
 * chained to the program's own handler for any other fault): a STALE page
 * is fetched from the device (DTOH into a second, always writable mapping
 * of the memfd, the alias, then made CLEAN), a CLEAN page that is written
 * becomes DIRTY. Before any entry goes to the worker, DIRTY pages go to the
 * device (HTOD from the alias, made CLEAN first, so that a write racing
 * with the copy faults and is sent again); after any synchronous call has
 * its answer, CLEAN pages become STALE, since a kernel or copy that ran
 * before the answer may have written them. Every synchronizing call is a
 * synchronous call, so the host reads GPU results after each of them.
 * New allocations start DIRTY, zeroed on both sides: pages the host never
 * writes are holes in the memfd and are not sent.
 *
 * Checkpoints need nothing of their own: the device copy is ordinary device
 * memory, saved and put back at the same address with the rest, and the
 * host copy and the page states stay here, in the program, which a restore
 * or a move keeps: DIRTY pages go to the new worker at the next entry, STALE
 * ones come from it when touched. The same holds on every carrier (the
 * memfd and /dev/vgpu): only ring calls move pages.
 *
 * The device answers CONCURRENT_MANAGED_ACCESS 0 (the worker's device
 * snapshot says so): the host may not touch managed memory while GPU work
 * that uses it is in flight, and a synchronizing call is where results come
 * back, as CUDA asks of programs on such devices.
 *
 * Copies run in a non-blocking stream of the allocation's context, made for
 * managed traffic: they wait for no other stream, as CUDA lets the host
 * touch memory attached to one stream while others run.
 *
 * The fault handler. It takes the managed lock and makes synchronous ring
 * calls, which take the ring's own locks. That is safe because no code
 * holding either touches a managed page through its view: copies in the
 * runtime classify a managed address as device memory (it is in the
 * window) and so never read it here, flushes and fetches use the alias, and
 * a fault inside managed code itself is refused (the program then gets the
 * fault). What stays outside: a program that touches stale managed memory
 * inside its own signal handlers, or passes it to a system call while it is
 * not readable (or writable) here: the kernel answers EFAULT instead of
 * faulting. The memfd is this process's alone; the worker never maps it.
 */
#include "managed.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "entry.h"
#include "handles.h"
#include "init.h"
#include "log.h"
#include "memory.h"

#define SMALL_COPY	(64u << 10)	/* host writes sent in the entry's payload */
#define FETCH_MAX	(256u << 10)	/* bytes one fault brings back at most */
#define BULK_PIECE	(1ull << 30)

enum { STALE, CLEAN, DIRTY };

struct mg_range {
	uint64_t base, size;		/* whole pages */
	uint64_t bytes;			/* what the program asked for */
	uint64_t off;			/* in the memfd */
	uint8_t *alias;			/* always read-write */
	uint8_t *state;			/* per page */
	struct mg_advice *adv;		/* per page */
	uint64_t nclean, ndirty;
	uint32_t ctx;			/* the context its copies run in */
	/* __managed__ variables (adopted): the bytes of the pages that are
	 * variables, the only ones copied; NULL: every byte. */
	struct extent { uint64_t addr, bytes; } *ext;
	size_t next;
	bool mapped;			/* the view is in place */
};

static struct {
	pthread_mutex_t lock;		/* everything below */
	struct mg_range *r;		/* sorted by base */
	size_t n, cap;
	int fd;				/* one sparse memfd for every allocation */
	uint64_t fd_end;
	uint64_t dirty, clean;		/* pages in all (atomic: the hooks read them) */
	pthread_t owner;		/* the thread holding the lock */
	int owned;
	bool handler;
	struct sigaction prev;
	size_t page;
	/* Each context's stream for managed traffic: non-blocking, so that a
	 * copy waits for no other stream (a stream held by a host callback
	 * that touches managed memory, a capture in progress). */
	struct { uint32_t ctx, stream; } streams[16];
	unsigned int nstreams;
} mg = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/* ---- the lock and its owner --------------------------------------------- */

/* True on the thread that holds the lock: its own ring traffic is the
 * managed memory's and must not be hooked again. */
static bool mine(void)
{
	return __atomic_load_n(&mg.owned, __ATOMIC_ACQUIRE) &&
	       pthread_equal(__atomic_load_n(&mg.owner, __ATOMIC_RELAXED), pthread_self());
}

bool vgpu_managed_busy(void)
{
	return mine();
}

static void lock(void)
{
	pthread_mutex_lock(&mg.lock);
	__atomic_store_n(&mg.owner, pthread_self(), __ATOMIC_RELAXED);
	__atomic_store_n(&mg.owned, 1, __ATOMIC_RELEASE);
}

static void unlock(void)
{
	__atomic_store_n(&mg.owned, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mg.lock);
}

static void count(uint64_t *c, int64_t d)
{
	__atomic_add_fetch(c, (uint64_t)d, __ATOMIC_RELEASE);
}

/* Index of the range holding p; -1: none. Under the lock. */
static long find(uint64_t p)
{
	long lo = 0, hi = (long)mg.n - 1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		const struct mg_range *r = &mg.r[mid];

		if (p < r->base)
			hi = mid - 1;
		else if (p - r->base >= r->size)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* Pages [first, first + n) of r to @st, protected to match. */
static int set_state(struct mg_range *r, uint64_t first, uint64_t n, int st)
{
	static const int prot[] = { PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE };
	uint64_t was_clean = 0, was_dirty = 0;

	if (mprotect((void *)(uintptr_t)(r->base + first * mg.page), n * mg.page, prot[st]))
		return -errno;
	for (uint64_t i = first; i < first + n; i++) {
		was_clean += r->state[i] == CLEAN;
		was_dirty += r->state[i] == DIRTY;
		r->state[i] = (uint8_t)st;
	}
	r->nclean += (st == CLEAN ? n : 0) - was_clean;
	r->ndirty += (st == DIRTY ? n : 0) - was_dirty;
	count(&mg.clean, (int64_t)(st == CLEAN ? n : 0) - (int64_t)was_clean);
	count(&mg.dirty, (int64_t)(st == DIRTY ? n : 0) - (int64_t)was_dirty);
	return 0;
}

/* ---- moving pages --------------------------------------------------------- */

/* The stream managed traffic of @ctx runs in; 0 (the legacy stream) if it
 * has none. Under the lock. */
static uint32_t stream_of(uint32_t ctx)
{
	for (unsigned int i = 0; i < mg.nstreams; i++)
		if (mg.streams[i].ctx == ctx)
			return mg.streams[i].stream;
	return 0;
}

/* Creates @ctx's stream if it has none (not in a signal handler: ids may
 * allocate). Under the lock. Without one, the legacy stream serves. */
static void ensure_stream(uint32_t ctx)
{
	uint32_t id;

	if (stream_of(ctx) || mg.nstreams == sizeof(mg.streams) / sizeof(mg.streams[0]))
		return;
	id = vgpu_id_alloc(VGPU_K_STREAM);
	if (!id)
		return;
	if (vgpu_post5(VGPU_OP_STREAM_CREATE, ctx, 0, id, CU_STREAM_NON_BLOCKING, 0, 0, 0)) {
		vgpu_id_free(VGPU_K_STREAM, id);
		return;
	}
	mg.streams[mg.nstreams].ctx = ctx;
	mg.streams[mg.nstreams++].stream = id;
}

/* Host bytes [off, off + len) of r to the device, asynchronously where
 * they fit an entry (the data is in the payload ring once posted). */
static CUresult send_piece(struct mg_range *r, uint64_t off, uint64_t len, bool *posted)
{
	uint32_t small = vgpu_payload_max() < SMALL_COPY ? vgpu_payload_max() : SMALL_COPY;
	CUresult rc = CUDA_SUCCESS;

	for (uint64_t done = 0; done < len && !rc;) {
		uint64_t piece = len - done < BULK_PIECE ? len - done : BULK_PIECE;
		struct vgpu_req q = { .sqe = { .ctx = r->ctx, .stream = stream_of(r->ctx),
					       .arg = { r->base + off + done, piece } } };

		if (piece <= small) {
			q.sqe.opcode = VGPU_OP_MEMCPY_HTOD;
			q.payload = r->alias + off + done;
			q.payload_len = (uint32_t)piece;
			rc = vgpu_post(&q);
			*posted = true;
		} else {
			q.sqe.opcode = VGPU_OP_MEMCPY_HTOD_STAGED;
			rc = vgpu_call_send(&q, r->alias + off + done, piece);
		}
		done += piece;
	}
	return rc;
}

/* Calls fn over the parts of [off, off + len) of r that may be copied. */
static CUresult clipped(struct mg_range *r, uint64_t off, uint64_t len,
			CUresult (*fn)(struct mg_range *r, uint64_t off, uint64_t len, void *arg),
			void *arg)
{
	CUresult rc = CUDA_SUCCESS;

	if (!r->ext)
		return fn(r, off, len, arg);
	for (size_t i = 0; i < r->next && !rc; i++) {
		uint64_t a = r->ext[i].addr - r->base, b = a + r->ext[i].bytes;
		uint64_t lo = a > off ? a : off, hi = b < off + len ? b : off + len;

		if (lo < hi)
			rc = fn(r, lo, hi - lo, arg);
	}
	return rc;
}

static CUresult send_bytes(struct mg_range *r, uint64_t off, uint64_t len, void *posted)
{
	return send_piece(r, off, len, posted);
}

/* A run of pages to the device: what the memfd holds of it. Holes were
 * never written on the host and are zero on the device since allocation. */
static CUresult send_run(struct mg_range *r, uint64_t first, uint64_t n, bool *posted)
{
	uint64_t pos = r->off + first * mg.page, end = pos + n * mg.page;
	CUresult rc = CUDA_SUCCESS;

	while (pos < end && !rc) {
		off_t data = lseek(mg.fd, (off_t)pos, SEEK_DATA), hole;

		if (data < 0 || (uint64_t)data >= end)
			break;		/* ENXIO: holes to the end of the file */
		hole = lseek(mg.fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > end)
			hole = (off_t)end;
		rc = clipped(r, (uint64_t)data - r->off, (uint64_t)(hole - data), send_bytes, posted);
		pos = (uint64_t)hole;
	}
	return rc;
}

/* The next run of pages in state @st at or after *i, below @np: pages
 * [*i, *end). False when there is none. */
static bool next_run(const struct mg_range *r, uint64_t np, uint8_t st, uint64_t *i,
		     uint64_t *end)
{
	while (*i < np && r->state[*i] != st)
		(*i)++;
	if (*i >= np)
		return false;
	for (*end = *i; *end < np && r->state[*end] == st; (*end)++)
		;
	return true;
}

/* Every DIRTY page to the device. Under the lock. Pages are made CLEAN
 * before they are read, so a write racing with the copy faults and makes
 * its page DIRTY again. Once the answer is in, the copies are complete
 * (the worker answers a synchronization of the managed stream after them),
 * so the entry that follows sees them whatever its stream. */
static CUresult flush_all(void)
{
	uint32_t ctxs[8];	/* contexts whose legacy stream has copies posted */
	unsigned int nctx = 0;
	CUresult rc = CUDA_SUCCESS;

	for (size_t k = 0; k < mg.n && !rc; k++) {
		struct mg_range *r = &mg.r[k];
		uint64_t np = r->size / mg.page;
		bool posted = false;

		for (uint64_t i = 0, j; r->ndirty && !rc && next_run(r, np, DIRTY, &i, &j); i = j) {
			if (set_state(r, i, j - i, CLEAN)) {
				rc = CUDA_ERROR_UNKNOWN;
				break;
			}
			rc = send_run(r, i, j - i, &posted);
			if (rc)
				set_state(r, i, j - i, DIRTY);	/* sent again next time */
		}
		if (!posted)
			continue;
		for (unsigned int c = 0; c < nctx && posted; c++)
			posted = ctxs[c] != r->ctx;
		if (posted && nctx < sizeof(ctxs) / sizeof(ctxs[0]))
			ctxs[nctx++] = r->ctx;
		else if (posted && !rc)
			rc = vgpu_call5(VGPU_OP_STREAM_SYNCHRONIZE, r->ctx, stream_of(r->ctx), 0, 0,
					0, 0, 0, NULL);
	}
	for (unsigned int c = 0; c < nctx && !rc; c++)
		rc = vgpu_call5(VGPU_OP_STREAM_SYNCHRONIZE, ctxs[c], stream_of(ctxs[c]), 0, 0, 0,
				0, 0, NULL);
	if (rc)
		vlog_err("managed memory: host writes did not reach the device (%d)", (int)rc);
	return rc;
}

/* Device bytes [off, off + len) of r into the alias. */
static CUresult fetch_bytes(struct mg_range *r, uint64_t off, uint64_t len, void *arg)
{
	struct vgpu_session *s = vgpu_session_peek();
	struct vgpu_req q = { .sqe = { .ctx = r->ctx, .stream = stream_of(r->ctx),
				       .arg = { r->base + off, len } } };
	CUresult rc;

	(void)arg;
	if (!s)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (len <= s->ring.reply_slot_size) {
		q.sqe.opcode = VGPU_OP_MEMCPY_DTOH;
		q.reply = r->alias + off;
		q.reply_cap = (uint32_t)len;
		rc = vgpu_call(&q);
		return !rc && q.cqe.val[2] != len ? CUDA_ERROR_UNKNOWN : rc;
	}
	q.sqe.opcode = VGPU_OP_MEMCPY_DTOH_STAGED;
	return vgpu_call_recv(&q, r->alias + off, len);
}

static CUresult fetch(struct mg_range *r, uint64_t first, uint64_t n)
{
	return clipped(r, first * mg.page, n * mg.page, fetch_bytes, NULL);
}

/* STALE pages of [first, first + n) back from the device, as CLEAN. */
static CUresult fetch_stale(struct mg_range *r, uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n;) {
		uint64_t j = i;
		CUresult rc;

		if (r->state[i] != STALE) {
			i++;
			continue;
		}
		while (j < first + n && r->state[j] == STALE && (j - i) * mg.page < FETCH_MAX)
			j++;
		rc = fetch(r, i, j - i);
		if (rc)
			return rc;
		if (set_state(r, i, j - i, CLEAN))
			return CUDA_ERROR_UNKNOWN;
		i = j;
	}
	return CUDA_SUCCESS;
}

/* Every CLEAN page to STALE. Under the lock. */
static void invalidate_all(void)
{
	for (size_t k = 0; k < mg.n; k++) {
		struct mg_range *r = &mg.r[k];
		uint64_t np = r->size / mg.page;

		for (uint64_t i = 0, j; r->nclean && next_run(r, np, CLEAN, &i, &j); i = j)
			if (set_state(r, i, j - i, STALE))
				vlog_err("managed memory: cannot protect %#llx: %s",
					 (unsigned long long)(r->base + i * mg.page), strerror(errno));
	}
}

void vgpu_managed_before_entry(void)
{
	if (!__atomic_load_n(&mg.dirty, __ATOMIC_ACQUIRE) || mine())
		return;
	lock();
	(void)flush_all();
	unlock();
}

void vgpu_managed_after_sync(void)
{
	if (!__atomic_load_n(&mg.clean, __ATOMIC_ACQUIRE) || mine())
		return;
	lock();
	invalidate_all();
	unlock();
}

/* ---- faults --------------------------------------------------------------- */

/* A fault at @addr: true when it was managed memory's and is resolved (the
 * access runs again), false when it is not ours to resolve. */
static bool resolve(uint64_t addr)
{
	struct mg_range *r;
	uint64_t pg, np;
	bool ok = true;
	long k;

	if (mine())
		return false;	/* managed code itself faulted: a bug, not an access */
	lock();
	k = find(addr);
	if (k < 0) {
		unlock();
		return false;
	}
	r = &mg.r[k];
	pg = (addr - r->base) / mg.page;
	np = r->size / mg.page;
	switch (r->state[pg]) {
	case STALE:
		/* Read or write, it comes back first; a write faults again. */
		ok = !fetch_stale(r, pg, np - pg < FETCH_MAX / mg.page ? np - pg
								       : FETCH_MAX / mg.page);
		break;
	case CLEAN:
		ok = !set_state(r, pg, 1, DIRTY);
		break;
	default:
		break;		/* another thread got there first */
	}
	unlock();
	if (!ok)
		vlog_err("managed memory at %#llx could not be brought to the host",
			 (unsigned long long)addr);
	return ok;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct sigaction *p = &mg.prev;

	if (si->si_code == SEGV_ACCERR && resolve((uintptr_t)si->si_addr)) {
		errno = saved;
		return;
	}
	errno = saved;
	if (p->sa_flags & SA_SIGINFO) {
		p->sa_sigaction(sig, si, uc);
	} else if (p->sa_handler == SIG_DFL || p->sa_handler == SIG_IGN) {
		/* The access runs again and takes the default action. */
		signal(sig, SIG_DFL);
	} else {
		p->sa_handler(sig);
	}
}

static int install_handler(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_ONSTACK };

	if (mg.handler)
		return 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &mg.prev))
		return -errno;
	mg.handler = true;
	return 0;
}

/* ---- allocations ---------------------------------------------------------- */

static int table_insert(const struct mg_range *nr)
{
	size_t i = 0;

	if (mg.n == mg.cap) {
		size_t cap = mg.cap ? 2 * mg.cap : 64;
		struct mg_range *v = realloc(mg.r, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		mg.r = v;
		mg.cap = cap;
	}
	while (i < mg.n && mg.r[i].base < nr->base)
		i++;
	memmove(&mg.r[i + 1], &mg.r[i], (mg.n - i) * sizeof(*mg.r));
	mg.r[i] = *nr;
	mg.n++;
	return 0;
}

/* Inside the device window, which this process keeps reserved. */
static bool in_window(const struct mg_range *r)
{
	struct vgpu_session *s = vgpu_session_peek();

	return s && vgpu_is_device(s, r->base) && vgpu_is_device(s, r->base + r->size - 1);
}

/* The host view of [base, base + size): the memfd's pages at @off, every
 * page in state @st. Under the lock. */
static CUresult map_view(struct mg_range *r, int st)
{
	static const int prot[] = { PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE };
	uint64_t np = r->size / mg.page;
	void *v;

	if (mg.fd < 0) {
		mg.fd = memfd_create("vgpu-managed", MFD_CLOEXEC);
		if (mg.fd < 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r->off = mg.fd_end;
	if (ftruncate(mg.fd, (off_t)(r->off + r->size)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	mg.fd_end += r->size;
	r->alias = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, mg.fd,
			(off_t)r->off);
	if (r->alias == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Over the device window's reservation, which is ours; elsewhere (a
	 * module's variables, where the driver put them) only if free. */
	v = mmap((void *)(uintptr_t)r->base, r->size, prot[st],
		 MAP_SHARED | MAP_NORESERVE | (in_window(r) ? MAP_FIXED : MAP_FIXED_NOREPLACE),
		 mg.fd, (off_t)r->off);
	if (v != MAP_FAILED && (uintptr_t)v != r->base) {
		munmap(v, r->size);	/* kernels without FIXED_NOREPLACE */
		v = MAP_FAILED;
	}
	if (v == MAP_FAILED) {
		vlog_err("managed memory: %#llx+%#llx cannot be mapped here: %s",
			 (unsigned long long)r->base, (unsigned long long)r->size, strerror(errno));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r->mapped = true;
	r->state = malloc(np);
	r->adv = malloc(np * sizeof(*r->adv));
	if (!r->state || !r->adv)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(r->state, st, np);
	for (uint64_t i = 0; i < np; i++)
		r->adv[i] = (struct mg_advice){ .preferred = CU_DEVICE_INVALID,
						.last_prefetch = CU_DEVICE_INVALID };
	r->ndirty = st == DIRTY ? np : 0;
	r->nclean = st == CLEAN ? np : 0;
	return CUDA_SUCCESS;
}

/* Gives back what map_view took; the window keeps the address reserved. */
static void unmap_view(struct mg_range *r)
{
	if (r->mapped && in_window(r))
		mmap((void *)(uintptr_t)r->base, r->size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	else if (r->mapped)
		munmap((void *)(uintptr_t)r->base, r->size);
	if (r->alias && r->alias != MAP_FAILED)
		munmap(r->alias, r->size);
	if (mg.fd >= 0 && r->size)
		fallocate(mg.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)r->off,
			  (off_t)r->size);
	free(r->state);
	free(r->adv);
	free(r->ext);
}

/* Maps r's view, every page in state @st, and enters r in the table.
 * Under the lock. On failure r holds nothing. */
static CUresult add_range(struct mg_range *r, int st)
{
	CUresult rc;

	ensure_stream(r->ctx);
	rc = map_view(r, st);

	if (!rc && install_handler())
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	if (!rc && table_insert(r))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (rc) {
		unmap_view(r);
		return rc;
	}
	count(&mg.dirty, (int64_t)r->ndirty);
	count(&mg.clean, (int64_t)r->nclean);
	return CUDA_SUCCESS;
}

static CUresult alloc_managed(struct vgpu_session *s, struct vgpu_ctx *ctx, uint64_t bytes,
			      uint64_t *out)
{
	struct mg_range r = { .bytes = bytes, .ctx = ctx->id };
	struct vgpu_cqe c = { 0 };
	CUresult rc;

	r.size = (bytes + mg.page - 1) & ~(uint64_t)(mg.page - 1);
	if (r.size < bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = vgpu_call5(VGPU_OP_MEM_ALLOC, ctx->id, 0, r.size, 0, 0, 0, 0, &c);
	if (rc) {
		if (c.val[0] && vgpu_is_device(s, c.val[0]))
			vgpu_post5(VGPU_OP_MEM_FREE, ctx->id, 0, c.val[0], 0, 0, 0, 0);
		return rc;
	}
	r.base = c.val[0];
	/* Whole pages of the window, or the view would cover something else. */
	if (r.base % mg.page || !vgpu_is_device(s, r.base) ||
	    !vgpu_is_device(s, r.base + r.size - 1)) {
		vlog_err("managed memory: worker allocated %#llx", (unsigned long long)r.base);
		return CUDA_ERROR_UNKNOWN;
	}
	/* Zero on the device: pages the host never writes are not sent. */
	rc = vgpu_call5(VGPU_OP_MEMSET, ctx->id, 0, r.base, 0, 4, r.size / 4, 0, NULL);
	if (!rc) {
		lock();
		rc = add_range(&r, DIRTY);
		unlock();
	}
	if (rc) {
		vgpu_post5(VGPU_OP_MEM_FREE, ctx->id, 0, r.base, 0, 0, 0, 0);
		return rc;
	}
	*out = r.base;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct vgpu_session *s;
	struct vgpu_ctx *ctx;
	uint64_t p = 0;
	CUresult rc;

	ENTER();
	if (!dptr || !bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_session(&s);
	if (!rc)
		rc = vgpu_ctx_current(&ctx);
	if (rc)
		return rc;
	if (!mg.page)
		mg.page = (size_t)sysconf(_SC_PAGESIZE);
	rc = alloc_managed(s, ctx, bytesize, &p);
	if (rc)
		return rc;
	vgpu_mem_note_managed(p, bytesize, ctx);
	*dptr = p;
	return CUDA_SUCCESS;
}

static CUresult add_extent(struct mg_range *r, uint64_t addr, uint64_t bytes)
{
	struct extent *e;

	for (size_t i = 0; i < r->next; i++)
		if (r->ext[i].addr == addr && r->ext[i].bytes == bytes)
			return CUDA_SUCCESS;
	e = realloc(r->ext, (r->next + 1) * sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r->ext = e;
	r->ext[r->next++] = (struct extent){ addr, bytes };
	return CUDA_SUCCESS;
}

/*
 * A module's __managed__ variable at [addr, addr + bytes), where the driver
 * put it: its pages get a view here, starting STALE (the device holds the
 * initial value). Variables share pages: a page already viewed only learns
 * the new variable's bytes, which are the only ones copied either way.
 */
CUresult vgpu_managed_adopt(uint64_t addr, uint64_t bytes, uint32_t ctx)
{
	CUresult rc = CUDA_SUCCESS;
	uint64_t pa, pe;

	if (!mg.page)
		mg.page = (size_t)sysconf(_SC_PAGESIZE);
	pa = addr & ~(uint64_t)(mg.page - 1);
	pe = (addr + bytes + mg.page - 1) & ~(uint64_t)(mg.page - 1);
	if (!bytes || pe <= pa)
		return CUDA_ERROR_INVALID_VALUE;
	lock();
	for (uint64_t p = pa; p < pe && !rc;) {
		long k = find(p);
		uint64_t q = p;

		if (k >= 0) {
			rc = add_extent(&mg.r[k], addr, bytes);
			p = mg.r[k].base + mg.r[k].size;
			continue;
		}
		while (q < pe && find(q) < 0)
			q += mg.page;
		struct mg_range r = { .base = p, .size = q - p, .bytes = q - p, .ctx = ctx };

		rc = add_extent(&r, addr, bytes);
		if (!rc)
			rc = add_range(&r, STALE);
		else
			free(r.ext);
		p = q;
	}
	unlock();
	return rc;
}

void vgpu_managed_release(uint64_t base)
{
	struct mg_range r;
	long k;

	lock();
	k = find(base);
	/* Only allocations: a module's variables live as long as it does. */
	if (k < 0 || mg.r[k].base != base || mg.r[k].ext) {
		unlock();
		return;
	}
	r = mg.r[k];
	memmove(&mg.r[k], &mg.r[k + 1], (mg.n - k - 1) * sizeof(*mg.r));
	mg.n--;
	count(&mg.clean, -(int64_t)r.nclean);
	count(&mg.dirty, -(int64_t)r.ndirty);
	unmap_view(&r);
	unlock();
}

bool vgpu_managed_find(uint64_t p, uint64_t len, uint64_t *base, uint64_t *bytes)
{
	struct extent e = { 0 };
	bool ok = false;
	long k;

	if (!__atomic_load_n(&mg.n, __ATOMIC_RELAXED))
		return false;
	lock();
	k = find(p);
	if (k >= 0 && !mg.r[k].ext) {
		e = (struct extent){ mg.r[k].base, mg.r[k].bytes };
		ok = len <= e.bytes && p - e.addr <= e.bytes - len;
	}
	for (size_t i = 0; k >= 0 && !ok && i < mg.r[k].next; i++) {
		e = mg.r[k].ext[i];
		ok = p >= e.addr && len <= e.bytes && p - e.addr <= e.bytes - len;
	}
	unlock();
	if (ok && base)
		*base = e.addr;
	if (ok && bytes)
		*bytes = e.bytes;
	return ok;
}

/* ---- for managed_advise.c -------------------------------------------------- */

/* The range holding all of [p, p + n), its first page and page count. */
static struct mg_range *range_pages(uint64_t p, uint64_t n, uint64_t *first, uint64_t *pages)
{
	long k = n ? find(p) : -1;
	struct mg_range *r;

	if (k < 0)
		return NULL;
	r = &mg.r[k];
	if (n > r->size || p - r->base > r->size - n)
		return NULL;
	*first = (p - r->base) / mg.page;
	*pages = (p - r->base + n + mg.page - 1) / mg.page - *first;
	return r;
}

CUresult vgpu_managed_advice(uint64_t p, uint64_t n,
			     void (*fn)(struct mg_advice *a, uint64_t pages, void *arg), void *arg)
{
	uint64_t first, pages;
	struct mg_range *r;

	lock();
	r = range_pages(p, n, &first, &pages);
	if (r)
		fn(r->adv + first, pages, arg);
	unlock();
	return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult vgpu_managed_sync_range(uint64_t p, uint64_t n, bool want_fetch)
{
	uint64_t first, pages;
	struct mg_range *r;
	CUresult rc;

	if (mine())
		return CUDA_ERROR_INVALID_VALUE;
	lock();
	r = range_pages(p, n, &first, &pages);
	rc = r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (r && r->ndirty)
		rc = flush_all();
	if (!rc && r && want_fetch)
		rc = fetch_stale(r, first, pages);
	unlock();
	return rc;
}
