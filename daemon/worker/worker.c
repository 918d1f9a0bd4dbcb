// SPDX-License-Identifier: MIT
/*
 * A worker's life: start the backend and its contexts ahead of any client
 * (worker_prepare), then take one session (worker_serve): build the shared
 * region, welcome the client, and execute its ring until it goes away.
 * The process then exits, and the driver returns every GPU resource.
 */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "barrier.h"
#include "checkpoint.h"
#include "ckpt_process.h"
#include "migrate.h"
#include "clock.h"
#include "fdpass.h"
#include "jit_cache.h"
#include "launch_graphs.h"
#include "log.h"

/* Where the per-session windows go: far from where Linux puts mappings. */
#define DEV_WINDOW_HINT		0x200000000000ull
#define HOST_POOL_HINT		0x300000000000ull
#define DEV_WINDOW_DEFAULT	(8ull << 40)	/* 8 TiB, half the room before the pool */
#define SPIN_NS			50000	/* busy-poll this long before sleeping */
#define RELEASE_BATCH		32	/* SQ entries consumed before handing slots back */
#define ORDER_POLL_MS		50	/* an idle worker looks for orders this often */
#define ORDER_WAIT_MS		5000	/* default: an order's wait on a stalled client */
#define CQ_WAIT_MIN_US		50	/* a full CQ is looked at again after this, */
#define CQ_WAIT_MAX_US		10000	/* then less and less often, down to this */

/* Set on the thread that serves the ring: only it takes orders. */
static __thread bool ring_thread;
/* When a wait on the client first kept an order waiting (0: none did). */
static uint64_t order_seen_ns;

static CUresult snapshot_device(struct worker *w, int i, struct vgpu_device_info *d)
{
	const struct vgpu_backend *B = &w->B;
	CUdevice dev = w->devices[i];
	CUuuid uuid;
	size_t total;
	CUresult rc;

	memset(d, 0, sizeof(*d));
	rc = B->cuDeviceGetName(d->name, sizeof(d->name), dev);
	if (!rc)
		rc = B->cuDeviceGetUuid_v2(&uuid, dev);
	if (!rc)
		rc = B->cuDeviceTotalMem_v2(&total, dev);
	if (rc)
		return rc;
	memcpy(d->uuid, uuid.bytes, sizeof(d->uuid));
	d->total_mem = total;
	for (int a = 1; a < VGPU_DEV_ATTRS; a++) {
		int v = 0;

		/* Attributes this driver does not know stay 0, as CUDA's own
		 * cudaGetDeviceProperties treats them. */
		if (B->cuDeviceGetAttribute(&v, (CUdevice_attribute)a, dev) == CUDA_SUCCESS)
			d->attr[a] = v;
	}
	/* Managed memory is vgpu's own (runtime/managed/): host and device copies
	 * meet at synchronizing calls, so the host may not touch it while GPU
	 * work runs, and kernels cannot reach pageable host memory. */
	d->attr[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] = 1;
	d->attr[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS] = 0;
	d->attr[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS] = 0;
	d->attr[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES] = 0;
	d->attr[CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST] = 0;
	if (B->cuDeviceGetLuid((char *)d->luid, &d->luid_mask, dev) != CUDA_SUCCESS)
		d->luid_mask = 0;
	return CUDA_SUCCESS;
}

/*
 * Device printf: the driver writes it to this process's stdout, and may
 * keep its own handle to it from initialisation on. So stdout is a pipe
 * from before the driver starts, drained to the client's stdout (to ours
 * until there is a client). Draining reads and writes under print_lock, so
 * a drain that finds the pipe empty knows every earlier byte is written:
 * flush_prints drains before each answer, and a thread drains whatever the
 * driver prints between answers.
 */
static void drain_prints(struct worker *w)
{
	char buf[65536];
	ssize_t n;

	pthread_mutex_lock(&w->print_lock);
	while ((n = read(w->print_pipe, buf, sizeof(buf))) > 0) {
		vlog_debug("relaying %zd bytes the driver printed", n);
		for (ssize_t off = 0, k; off < n; off += k) {
			k = write(read_once(&w->print_out), buf + off, n - off);
			if (k <= 0)
				break;	/* the client's stdout is gone: drop it */
		}
	}
	pthread_mutex_unlock(&w->print_lock);
}

static void *print_relay(void *arg)
{
	struct worker *w = arg;
	struct pollfd pfd = { .fd = w->print_pipe, .events = POLLIN };

	while (poll(&pfd, 1, -1) >= 0 || errno == EINTR) {
		if (pfd.revents & (POLLERR | POLLNVAL))
			break;
		drain_prints(w);
		if ((pfd.revents & POLLHUP) && !(pfd.revents & POLLIN))
			break;
	}
	return NULL;
}

static int capture_stdout(struct worker *w)
{
	int p[2];
	pthread_t t;

	fflush(stdout);
	w->print_out = dup(STDOUT_FILENO);
	if (w->print_out < 0 || pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);	/* the device FIFO's default size */
	fcntl(p[0], F_SETFL, O_NONBLOCK);	/* drains stop at an empty pipe */
	dup2(p[1], STDOUT_FILENO);
	close(p[1]);
	w->print_pipe = p[0];
	pthread_mutex_init(&w->print_lock, NULL);
	if (pthread_create(&t, NULL, print_relay, w))
		return -EAGAIN;
	pthread_detach(t);
	return 0;
}

/* Before an answer: what the driver printed so far reaches the client. */
static void flush_prints(struct worker *w)
{
	if (w->print_pipe < 0)
		return;
	fflush(NULL);	/* stdio buffers, the driver's included */
	drain_prints(w);
}

/*
 * Whether an answer must drain the print pipe first. The driver prints at
 * CUDA's flush points, in the thread making that call. On the ring thread
 * every entry but a polled query (OPF_NO_PRINT) sets print_dirty
 * (dispatch_taken), and the next answer drains. A query's answer drains
 * while print_dirty is set and leaves it set: the work queued before it may
 * still be running, and the call that sees it finish may print (the driver
 * flushes when a query finds the work done: reply_after_stream synchronizes
 * with cuStreamQuery, and the GPU suite's printf test sees its output in
 * order). Only the answer of another entry (a synchronization, say) clears
 * it. So a program polling an idle stream costs no read(2) on the pipe per
 * answer, and one polling until its kernel is done still sees that kernel's
 * printf first. Not covered: a kernel still running on another stream when
 * a synchronization's answer cleared the flag, whose output a later query
 * flushes; the relay thread forwards it microseconds after that answer
 * rather than before it.
 *
 * Other threads: the waiter's answers (synchronizations) always drain; the
 * driver's callback thread, which flushes before a host callback, asks for
 * the callback with a tag 0 entry and marks the ring thread's next answer
 * to drain.
 */
static bool must_drain(struct worker *w, const struct vgpu_cqe *cqe)
{
	if (!ring_thread) {
		if (!cqe->tag)
			worker_may_print(w);
		return cqe->tag;
	}
	if (!cqe->tag || !__atomic_exchange_n(&w->print_dirty, 0, __ATOMIC_RELAXED))
		return false;
	if (w->answering_query)
		worker_may_print(w);
	return true;
}

int worker_prepare(struct worker *w, const char *backend, const struct worker_config *cfg)
{
	CUresult rc;
	int n, ret;

	memset(w, 0, sizeof(*w));
	w->cfg = *cfg;
	if (!w->cfg.order_wait_ms)
		w->cfg.order_wait_ms = ORDER_WAIT_MS;
	w->sock = w->ctl = w->region_fd = w->bell_fd = w->print_pipe = -1;
	w->kmod.fd = -1;
	ret = capture_stdout(w);
	if (ret)
		return ret;
	ret = jit_cache_arm(cfg->jit_cache);	/* the driver reads it at cuInit */
	if (ret)
		vlog_warn("worker: no JIT cache in %s: %s", cfg->jit_cache, strerror(-ret));
	ret = strcmp(backend, "host") ? vgpu_backend_cuda_open(&w->B)
				      : vgpu_backend_host_open(&w->B);
	if (ret)
		return ret;
	rc = w->B.cuInit(0);
	if (!rc)
		rc = w->B.cuDeviceGetCount(&n);
	if (rc || n < 1) {
		vlog_err("worker: %s backend has no usable device (CUresult %d)", w->B.name, rc);
		return -ENODEV;
	}
	if (n > (int)VGPU_MAX_DEVICES)
		n = VGPU_MAX_DEVICES;
	w->device_count = n;
	for (int i = 0; i < n; i++) {
		rc = w->B.cuDeviceGet(&w->devices[i], i);
		if (!rc)
			rc = w->B.cuDevicePrimaryCtxRetain(&w->primary[i], w->devices[i]);
		if (rc) {
			vlog_err("worker: device %d: cannot retain its context (CUresult %d)", i, rc);
			return -EIO;
		}
	}
	rc = w->B.cuCtxSetCurrent(w->primary[0]);
	if (rc)
		return -EIO;
	/*
	 * The checkpoint digest kernel is loaded at the first checkpoint, not
	 * here: with it loaded, a cuStreamQuery round trip took 2.1 us, not
	 * 1.0, on an H200.
	 */
	obj_table_init(&w->ctxs, "context");
	obj_table_init(&w->streams, "stream");
	obj_table_init(&w->events, "event");
	obj_table_init(&w->modules, "module");
	obj_table_init(&w->funcs, "function");
	obj_table_init(&w->graphs, "graph");
	obj_table_init(&w->graph_execs, "graph instance");
	obj_table_init(&w->gen_objs, "generated-kind object");
	obj_table_init(&w->greens, "green context");
	pthread_mutex_init(&w->cq_lock, NULL);
	dispatch_init();
	return 0;
}

int worker_place(struct worker *w, int gpu)
{
	CUdevice dev[VGPU_MAX_DEVICES];
	CUcontext ctx[VGPU_MAX_DEVICES];
	int n = w->device_count;

	if (gpu < 0)
		return 0;
	if (gpu >= n)
		return -ENODEV;
	for (int k = 0; k < n; k++) {
		dev[k] = w->devices[(k + gpu) % n];
		ctx[k] = w->primary[(k + gpu) % n];
	}
	memcpy(w->devices, dev, n * sizeof(dev[0]));
	memcpy(w->primary, ctx, n * sizeof(ctx[0]));
	if (w->stats)
		w->stats->gpu = (uint16_t)gpu;
	return w->B.cuCtxSetCurrent(w->primary[0]) ? -EIO : 0;
}

void worker_send_refusal(int sock, int err, const char *why)
{
	struct vgpu_welcome wl = {
		.magic = VGPU_PROTO_MAGIC, .version = VGPU_PROTO_VERSION, .status = -err,
	};

	snprintf(wl.message, sizeof(wl.message), "%s", why);
	vgpu_send_fds(sock, &wl, sizeof(wl), NULL, 0);
}

void worker_refuse(int sock, int err, const char *why)
{
	worker_send_refusal(sock, err, why);
	vlog_warn("session refused: %s", why);
}

static int check_hello(const struct vgpu_hello *h, const char **why)
{
	*why = "bad hello";
	if (h->magic != VGPU_PROTO_MAGIC)
		return -EPROTO;
	*why = "protocol version mismatch: update the runtime or the daemon";
	if (h->version != VGPU_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	*why = "unknown flags or reserved fields set in hello";
	if ((h->flags & ~VGPU_HELLO_RESUME) || h->reserved)
		return -EINVAL;
	*why = "a resume names no session";
	if (!(h->flags & VGPU_HELLO_RESUME) != !h->resume_session)
		return -EINVAL;
	*why = "unknown carrier in hello";
	if (h->carrier != VGPU_CARRIER_MEMFD && h->carrier != VGPU_CARRIER_KMOD)
		return -EINVAL;
	*why = "a resume over /dev/vgpu names no /dev/vgpu session";
	if ((h->flags & VGPU_HELLO_RESUME) && h->carrier == VGPU_CARRIER_KMOD && !h->kmod_session)
		return -EINVAL;
	*why = "a memfd hello names a /dev/vgpu session";
	if (h->carrier == VGPU_CARRIER_MEMFD && h->kmod_session)
		return -EINVAL;
	*why = "ring sizes must be powers of two within the daemon's limits";
	if ((h->sq_entries && (h->sq_entries & (h->sq_entries - 1))) ||
	    h->sq_entries > VGPU_PROTO_MAX_SQ)
		return -EINVAL;
	return 0;
}

static void *memfd_region(struct worker *w, size_t size)
{
	void *p;

	w->region_fd = memfd_create("vgpu-session", MFD_CLOEXEC);
	if (w->region_fd < 0 || ftruncate(w->region_fd, size) < 0)
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, w->region_fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int memfd_carrier(struct worker *w, const struct vgpu_hello *h, struct vgpu_welcome *wl)
{
	uint32_t sq = h->sq_entries ? h->sq_entries : w->cfg.sq_entries;
	int ret;

	ret = vgpu_layout(wl, sq, 2 * sq, w->cfg.payload_size, w->cfg.staging_chunk,
			  w->cfg.staging_chunks, w->device_count);
	if (ret)
		return ret;
	w->region = memfd_region(w, wl->region_size);
	if (!w->region)
		return -errno;
	return vgpu_ring_attach(&w->ring, w->region, wl->region_size, wl);
}

/* The supervisor checks that the session is our client's and attaches it. */
int worker_attach_kmod(struct worker *w, uint64_t id, const char **why)
{
	struct worker_msg m = { .type = WMSG_ATTACH, .kmod_session = id };
	struct attach_reply rep;
	int fd = -1, nfds = 1, n;

	*why = "the daemon's supervisor did not answer";
	if (write(w->ctl, &m, sizeof(m)) != sizeof(m))
		return -EPIPE;
	n = vgpu_recv_fds(w->ctl, &rep, sizeof(rep), &fd, &nfds);
	if (n != sizeof(rep) || (!rep.status && nfds != 1)) {
		if (nfds == 1)
			close(fd);
		return -EPIPE;
	}
	switch (rep.status) {
	case 0:
		return fd;
	case -ENODEV:
		*why = "this vgpud is not the /dev/vgpu server (use VGPU_TRANSPORT=memfd)";
		break;
	case -EPERM:
		*why = "the /dev/vgpu session was not opened by this process";
		break;
	case -ENOENT:
		*why = "no such /dev/vgpu session";
		break;
	case -EBUSY:
		*why = "the /dev/vgpu session is already served";
		break;
	default:
		*why = "the /dev/vgpu session could not be attached";
	}
	return rep.status;
}

static int kmod_carrier(struct worker *w, const struct vgpu_hello *h, struct vgpu_welcome *wl,
			const char **why)
{
	int fd, ret;

	fd = worker_attach_kmod(w, h->kmod_session, why);
	if (fd < 0)
		return fd;
	*why = "the /dev/vgpu session cannot be mapped";
	ret = vgpu_kmod_worker(&w->kmod, fd, sizeof(struct vgpu_sqe), sizeof(struct vgpu_cqe));
	if (ret)
		return ret;
	/* The geometry comes from the module, not from the hello; the CQ has
	 * room for every tag twice over, as on memfd. */
	*why = "the /dev/vgpu session's rings do not suit this daemon";
	if (w->kmod.cq_entries < 2 * w->kmod.sq_entries)
		return -EINVAL;
	ret = vgpu_layout(wl, w->kmod.sq_entries, w->kmod.cq_entries, w->cfg.payload_size,
			  w->cfg.staging_chunk, w->cfg.staging_chunks, w->device_count);
	if (ret)
		return ret;
	*why = "the /dev/vgpu arena is too small for this daemon's layout";
	if (wl->region_size > w->kmod.arena_size)
		return -ENOSPC;
	*why = "the worker could not set up the session";
	w->region = memfd_region(w, sizeof(struct vgpu_shared));
	if (!w->region)
		return -errno;
	return vgpu_ring_attach_kmod(&w->ring, w->region, &w->kmod, wl);
}

static int build_region(struct worker *w, const struct vgpu_hello *h, struct vgpu_welcome *wl,
			const char **why)
{
	int ret;

	*why = "the worker could not set up the session";
	if (h->carrier == VGPU_CARRIER_KMOD)
		ret = kmod_carrier(w, h, wl, why);
	else
		ret = memfd_carrier(w, h, wl);
	if (ret)
		return ret;
	*why = "the worker could not set up the session";
	w->bell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->bell_fd < 0)
		return -errno;
	w->ring.bell = w->bell_fd;
	w->pbuf = malloc(w->ring.payload_size / 2);
	if (!w->pbuf)
		return -ENOMEM;
	for (int i = 0; i < w->device_count; i++)
		if (snapshot_device(w, i, &w->ring.devinfo[i]))
			return -EIO;
	/* Staging chunks are DMA'd from and to: pin them once. */
	if (w->B.cuMemHostRegister_v2(w->ring.staging,
				      (size_t)w->ring.staging_chunk * w->ring.staging_chunks,
				      CU_MEMHOSTREGISTER_PORTABLE))
		vlog_warn("worker: staging not pinned; pageable copies will be slower");
	return 0;
}

int worker_build_memory(struct worker *w, struct vgpu_welcome *wl)
{
	size_t win = w->cfg.dev_window_size;
	CUresult rc;
	int ret;

	/* Address space is cheap and programs reserve generously: PyTorch's
	 * expandable segments take 1.125x the device's memory for each stream
	 * and pool (a graph capture adds a pool), XLA and NCCL reserve ahead
	 * too. Physical memory is what the driver (and vmem's charge) bounds. */
	if (!win)
		win = DEV_WINDOW_DEFAULT;
	rc = vmem_init(&w->vmem, &w->B, win, DEV_WINDOW_HINT);
	if (rc) {
		vlog_err("worker: cannot reserve %zu bytes of device address space (CUresult %d)",
			 win, rc);
		return -ENOMEM;
	}
	ret = hostpool_init(&w->pool, &w->B, w->cfg.host_pool_size, HOST_POOL_HINT);
	if (ret) {
		vlog_err("worker: cannot map the host pool: %s", strerror(-ret));
		return ret;
	}
	ret = pools_init(w);
	if (ret) {
		vlog_err("worker: cannot set the memory pools up");
		return ret;
	}
	wl->dev_window_base = w->vmem.base;
	wl->dev_window_size = w->vmem.size;
	wl->host_pool_base = (uint64_t)(uintptr_t)w->pool.base;
	wl->host_pool_size = w->pool.size;
	return 0;
}

static int welcome(struct worker *w, const struct vgpu_hello *h)
{
	struct vgpu_welcome wl = { 0 };
	const char *why;
	int fds[3], ret;

	wl.magic = VGPU_PROTO_MAGIC;
	wl.carrier = h->carrier;
	wl.version = VGPU_PROTO_VERSION;
	wl.features = h->features & VGPU_FEAT_ALL;
	wl.session_id = w->session_id;
	wl.backend = w->B.kind;
	if (w->B.cuDriverGetVersion((int *)&wl.driver_version))
		wl.driver_version = 13000;
	ret = build_region(w, h, &wl, &why);
	if (!ret) {
		why = "the worker could not set up the session";
		ret = worker_build_memory(w, &wl);
	}
	if (ret) {
		worker_refuse(w->sock, -ret, why);
		return ret;
	}
	fds[0] = w->region_fd;
	fds[1] = w->bell_fd;
	fds[2] = w->pool.fd;
	w->wl = wl;	/* a migration hands it to the next worker */
	ret = vgpu_send_fds(w->sock, &wl, sizeof(wl), fds, 3);
	return ret < 0 ? ret : 0;
}

/* The client's end hung up, or the carrier says the session is over. */
static bool hung_up(struct worker *w, short revents)
{
	if (!(revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) && !vgpu_ring_dead(&w->ring))
		return false;
	write_once(&w->dead, true);
	return true;
}

bool worker_client_gone(struct worker *w)
{
	struct pollfd p = { .fd = w->sock, .events = POLLRDHUP };

	if (read_once(&w->dead))
		return true;
	if (poll(&p, 1, 0) < 0)
		p.revents = 0;
	return hung_up(w, p.revents);
}

/*
 * Only hang-ups are asked for on the socket: a client that writes to it
 * must not turn the sleep into a spin (POLLHUP and POLLERR always come).
 */
bool worker_wait_client(struct worker *w, bool bell, unsigned int us, const char *what)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	struct pollfd p[2] = {
		{ .fd = w->sock, .events = POLLRDHUP },
		{ .fd = bell ? w->bell_fd : -1, .events = POLLIN },
	};
	uint64_t v;

	if (read_once(&w->dead))
		return false;
	if (ppoll(p, 2, &ts, NULL) < 0)
		p[0].revents = p[1].revents = 0;
	if (hung_up(w, p[0].revents))
		return false;
	if ((p[1].revents & POLLIN) && read(w->bell_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		vlog_debug("doorbell: %s", strerror(errno));
	worker_order_stalled(w, what);
	return true;
}

void worker_post(struct worker *w, const struct vgpu_cqe *cqe)
{
	unsigned int us = CQ_WAIT_MIN_US;

	if (must_drain(w, cqe))
		flush_prints(w);
	pthread_mutex_lock(&w->cq_lock);
	/* The CQ has room for every tag twice over; a full CQ means the
	 * client stopped reaping, so wait for it (or for its death). It
	 * rings no bell when it reaps: look again, less and less often. */
	while (!worker_cq_push(&w->ring, cqe)) {
		worker_cq_notify(&w->ring);
		pthread_mutex_unlock(&w->cq_lock);
		if (!worker_wait_client(w, false, us, "its completions are not reaped"))
			return;
		us = us < CQ_WAIT_MAX_US / 2 ? 2 * us : CQ_WAIT_MAX_US;
		pthread_mutex_lock(&w->cq_lock);
	}
	worker_cq_notify(&w->ring);
	pthread_mutex_unlock(&w->cq_lock);
}

bool worker_wait_doorbell(struct worker *w, int timeout_ms)
{
	return worker_wait_client(w, true, (unsigned int)timeout_ms * 1000, "mid copy");
}

/*
 * Only descriptors for imports come on the client's socket once its
 * session is served, but a message left unread there would end every sleep
 * below at once (it is polled for hang-ups, and so reads readable): a
 * client could make its worker spin. Whatever arrives is read at once: a
 * bounded few descriptors for imports are kept, the rest dropped.
 */
static void drop_chatter(struct worker *w)
{
	worker_fd_drain(w);	/* descriptors sent for imports are kept (exec_vmm_share.c) */
}

/* Sleep until the client rings or goes away; false when it is gone. */
/* Wake-ups in a row that found no entry. On /dev/vgpu the module wakes the
 * worker while the client's tail is past its head: a client that moves its
 * tail without writing the entry would keep its worker spinning. */
#define SPURIOUS_WAKES	8
#define SPURIOUS_NAP_US	1000

static bool idle(struct worker *w)
{
	static unsigned int spurious;
	uint32_t *flags = w->ring.sq_flags;
	bool alive;
	int ret;

	__atomic_or_fetch(flags, VGPU_SQ_NEED_WAKEUP, __ATOMIC_SEQ_CST);
	smp_mb();	/* flag before re-check: pairs with client_sq_push */
	if (!worker_sq_empty(&w->ring)) {	/* the entry at head, not the tail */
		__atomic_and_fetch(flags, ~VGPU_SQ_NEED_WAKEUP, __ATOMIC_SEQ_CST);
		spurious = 0;
		return true;
	}
	/* Woken again and again with nothing to take: the client wrote a tail
	 * and no entry. It only stalls itself; it does not get a CPU for it. */
	if (spurious >= SPURIOUS_WAKES)
		usleep(SPURIOUS_NAP_US);
	/* An order from the supervisor arrives on ctl and wakes us; a
	 * checkpoint or move being prepared on a thread is looked at often. */
	ret = worker_sq_sleep(&w->ring, w->sock, w->ctl,
			      w->ckpt_job || w->move_job ? 1 : ORDER_POLL_MS);
	alive = ret != -EPIPE;
	if (!alive)
		write_once(&w->dead, true);
	else if (!ret)
		drop_chatter(w);	/* timed out, or the socket reads readable */
	if (ret > 0 && worker_sq_empty(&w->ring) && !w->ckpt_job && !w->move_job)
		spurious += spurious < SPURIOUS_WAKES;
	else
		spurious = 0;
	__atomic_and_fetch(flags, ~VGPU_SQ_NEED_WAKEUP, __ATOMIC_SEQ_CST);
	return alive;
}

static bool order_valid(const struct ckpt_order *o, ssize_t n)
{
	return n == (ssize_t)sizeof(*o) && memchr(o->path, 0, sizeof(o->path)) &&
	       (o->type == WORDER_CHECKPOINT || o->type == WORDER_MIGRATE ||
		o->type == WORDER_SUSPEND || o->type == WORDER_LOCK || o->type == WORDER_UNLOCK);
}

/* What a stalled session answers to order type @type, in @buf. */
/* @what: what the program is doing ("in a host callback", "mid copy"), or
 * STREAMOPS_STALLED: the GPU's work, not the program, is what never ends. */
static void stalled_message(struct worker *w, uint32_t type, const char *what, char *buf,
			    size_t len)
{
	bool program = strcmp(what, STREAMOPS_STALLED);

	snprintf(buf, len, "session %llu is stalled %s%s%s; not %s",
		 (unsigned long long)w->session_id, program ? "waiting for its program (" : "",
		 what, program ? ")" : "",
		 type == WORDER_MIGRATE ? "moved" :
		 type == WORDER_SUSPEND ? "suspended" : "checkpointed");
}

static void refuse_stalled(struct worker *w, const struct ckpt_order *o, const char *what)
{
	struct ckpt_answer a = {
		.type = o->type == WORDER_MIGRATE ? WMSG_MIGRATING : WMSG_CHECKPOINTED,
		.status = -ETIMEDOUT,
	};

	stalled_message(w, o->type, what, a.message, sizeof(a.message));
	vlog_warn("%s", a.message);
	if (send(w->ctl, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
		vlog_warn("cannot answer the supervisor: %s", strerror(errno));
}

/*
 * The supervisor's order waiting on the control socket. @stalled: the
 * session cannot pause now (it waits on its program, for the reason
 * given), so the order is answered with an error instead.
 */
bool worker_callbacks_stuck(struct worker *w)
{
	uint64_t end = vgpu_now_ns() + (uint64_t)w->cfg.order_wait_ms * 1000000;

	while (w->cb_posted != __atomic_load_n(&w->cb_finished, __ATOMIC_ACQUIRE)) {
		if (vgpu_now_ns() >= end || worker_client_gone(w))
			return true;
		usleep(1000);
	}
	return false;
}

static void take_order(struct worker *w, const char *stalled)
{
	struct ckpt_order *o = malloc(sizeof(*o));
	ssize_t n;

	__atomic_store_n(&w->stats->order_pending, 0, __ATOMIC_RELAXED);
	order_seen_ns = 0;
	if (!o)
		return;
	n = recv(w->ctl, o, sizeof(*o), MSG_DONTWAIT);
	/* A lock or unlock brings no descriptor, and only a lock waits on
	 * what the program and the GPU are doing. */
	if (order_valid(o, n) && (o->type == WORDER_LOCK || o->type == WORDER_UNLOCK)) {
		if (o->type == WORDER_LOCK && !stalled && worker_callbacks_stuck(w))
			stalled = "in a host callback";
		if (o->type == WORDER_LOCK && !stalled && streamops_gpu_stalled(w))
			stalled = STREAMOPS_STALLED;
		worker_process_order(w, o->type, stalled);
		free(o);
		return;
	}
	if (order_valid(o, n) && !stalled && worker_callbacks_stuck(w))
		stalled = "in a host callback";
	/* Before anything that may wait on the GPU (pinning a buffer, loading
	 * the digest kernel): behind a wait nothing satisfies, it never returns. */
	if (order_valid(o, n) && !stalled && streamops_gpu_stalled(w))
		stalled = STREAMOPS_STALLED;
	if (order_valid(o, n) && stalled) {
		ckpt_order_drop_fds(w->ctl);	/* every order brings its descriptors */
		refuse_stalled(w, o, stalled);
	} else if (order_valid(o, n) && o->type == WORDER_CHECKPOINT) {
		worker_checkpoint_start(w, o);
	} else if (order_valid(o, n) && o->type == WORDER_MIGRATE) {
		worker_migrate_start(w, o);
	} else if (order_valid(o, n) && o->type == WORDER_SUSPEND) {
		worker_suspend(w, o);
	} else if (n > 0) {
		struct ckpt_answer a = { .type = WMSG_CHECKPOINTED, .status = -EINVAL };

		snprintf(a.message, sizeof(a.message), "the worker got a malformed order");
		if (send(w->ctl, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
			vlog_warn("cannot answer the supervisor: %s", strerror(errno));
	}
	free(o);
}

void worker_order_stalled(struct worker *w, const char *what)
{
	bool pending = w->stats && __atomic_load_n(&w->stats->order_pending, __ATOMIC_ACQUIRE);
	char msg[sizeof(((struct ckpt_answer *)0)->message)];
	uint64_t now;

	if (!ring_thread)
		return;
	if (!pending && !w->ckpt_job && !w->move_job) {
		order_seen_ns = 0;
		return;
	}
	now = vgpu_now_ns();
	if (!order_seen_ns)
		order_seen_ns = now;
	if (now - order_seen_ns < (uint64_t)w->cfg.order_wait_ms * 1000000)
		return;
	/* A checkpoint or move already under way waits for its pause: it
	 * will not come either. */
	if (w->ckpt_job) {
		stalled_message(w, WORDER_CHECKPOINT, what, msg, sizeof(msg));
		worker_checkpoint_refuse(w, -ETIMEDOUT, msg);
	} else if (w->move_job) {
		stalled_message(w, WORDER_MIGRATE, what, msg, sizeof(msg));
		worker_migrate_refuse(w, -ETIMEDOUT, msg);
	} else {
		take_order(w, what);
	}
	order_seen_ns = 0;
}

static void orders(struct worker *w)
{
	order_seen_ns = 0;	/* between entries an order is taken at once */
	if (w->ckpt_job) {
		worker_may_print(w);	/* it synchronizes and launches */
		worker_checkpoint_poll(w);
	} else if (w->move_job) {
		worker_may_print(w);
		worker_migrate_poll(w);
	} else if (w->stats && __atomic_load_n(&w->stats->order_pending, __ATOMIC_ACQUIRE)) {
		worker_may_print(w);
		take_order(w, NULL);
	}
}

void worker_print_to(struct worker *w, int fd)
{
	int old = w->print_out;

	/* Device printf goes to the client's stdout from now on. */
	pthread_mutex_lock(&w->print_lock);
	write_once(&w->print_out, fd);
	pthread_mutex_unlock(&w->print_lock);
	close(old);
}

void worker_print_switch(struct worker *w, int fd)
{
	/* What earlier calls flushed went to the program's fd 1 of then; what
	 * is still in stdio's buffers (the host backend's kernels print there)
	 * is flushed by a call to come, natively to the fd 1 of then: the new
	 * one. */
	if (w->print_pipe >= 0)
		drain_prints(w);
	worker_print_to(w, fd);
}

int worker_serve(struct worker *w, int client_sock, int ctl, uint64_t session_id)
{
	struct vgpu_hello h;
	const char *why;
	int n, ret, fds[4], nfds = 4;

	w->sock = client_sock;
	w->ctl = ctl;
	w->session_id = session_id;
	n = vgpu_recv_fds(client_sock, &h, sizeof(h), fds, &nfds);
	if (n == sizeof(h) && (h.flags & VGPU_HELLO_RESUME) && !check_hello(&h, &why))
		return worker_resume_client(w, &h, fds, nfds);
	for (int i = 1; i < nfds; i++)
		close(fds[i]);	/* a plain hello brings the client's stdout only */
	if (nfds >= 1)
		worker_print_to(w, fds[0]);
	if (n >= 8 && h.magic == VGPU_PROTO_MAGIC && h.version != VGPU_PROTO_VERSION) {
		worker_refuse(client_sock, EPROTONOSUPPORT,
		       "protocol version mismatch: update the runtime or the daemon");
		return -EPROTONOSUPPORT;
	}
	if (n != sizeof(h)) {
		worker_refuse(client_sock, EPROTO, "short hello");
		return -EPROTO;
	}
	ret = check_hello(&h, &why);
	if (ret) {
		worker_refuse(client_sock, -ret, why);
		return ret;
	}
	h.comm[sizeof(h.comm) - 1] = 0;
	ret = waiter_start(w);
	if (!ret)
		ret = welcome(w, &h);
	if (ret)
		return ret;
	if (h.carrier == VGPU_CARRIER_KMOD)
		vlog_info("session %llu: serving pid %u (%s) on the %s backend over /dev/vgpu session %llu",
			  (unsigned long long)session_id, h.pid, h.comm, w->B.name,
			  (unsigned long long)w->kmod.session_id);
	else
		vlog_info("session %llu: serving pid %u (%s) on the %s backend over memfd",
			  (unsigned long long)session_id, h.pid, h.comm, w->B.name);
	if (w->stats) {
		memcpy(w->stats->comm, h.comm, sizeof(w->stats->comm) - 1);
		strcpy(w->stats->carrier, h.carrier == VGPU_CARRIER_KMOD ? "kmod" : "memfd");
	}
	memcpy(w->comm, h.comm, sizeof(w->comm) - 1);
	return worker_loop(w);
}

int worker_loop(struct worker *w)
{
	struct vgpu_sqe sqe;
	uint64_t spin_start = 0;
	unsigned int batch = 0;

	ring_thread = true;
	worker_may_print(w);	/* a session taken up drains before its first answer */
	while (!read_once(&w->dead) && !w->moved) {
		if (w->locked) {	/* a process lock: orders only */
			orders(w);
			if (w->locked && !w->moved && !worker_hold(w, ORDER_POLL_MS))
				break;
			continue;
		}
		if (worker_sq_pop(&w->ring, &sqe)) {
			dispatch_entry(w, &sqe);
			spin_start = 0;
			if (++batch == RELEASE_BATCH) {
				launch_graphs_flush(w);
				worker_sq_release(&w->ring);
				batch = 0;
				orders(w);
			}
			continue;
		}
		launch_graphs_flush(w);
		worker_sq_release(&w->ring);
		batch = 0;
		orders(w);
		if (!spin_start && w->stats) {	/* once per burst of entries */
			write_once(&w->stats->device_bytes, w->vmem.in_use);
			write_once(&w->stats->pool_bytes, w->pool.in_use);
		}
		if (!spin_start)
			spin_start = vgpu_now_ns();
		if (vgpu_now_ns() - spin_start < SPIN_NS) {
			cpu_relax();
			continue;
		}
		if (!idle(w))
			break;
		spin_start = 0;
	}
	launch_graphs_free(w);
	if (w->moved)
		return 0;	/* another worker serves the session now */
	write_once(&w->ring.sh->state, VGPU_WORKER_DEAD);
	vlog_info("session %llu: client gone", (unsigned long long)w->session_id);
	worker_checkpoint_finish(w);
	worker_migrate_finish(w);
	return 0;
}
