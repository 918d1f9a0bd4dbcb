// SPDX-License-Identifier: MIT
#include "kmod.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uapi/vgpu.h"

static void *map_part(int fd, uint64_t off, uint64_t size, int prot)
{
	void *p = mmap(NULL, size, prot, MAP_SHARED, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

static bool word_ok(uint32_t off, size_t size)
{
	return off % 4 == 0 && off + 4 <= size;
}

static bool ring_ok(const struct vgpu_ring_offsets *o, uint32_t entry_size, size_t size)
{
	return o->entry_size == entry_size && word_ok(o->head, size) &&
	       word_ok(o->tail, size) && word_ok(o->flags, size) &&
	       o->entries <= size &&
	       (uint64_t)o->ring_entries * o->entry_size <= size - o->entries;
}

static uint32_t *word(void *base, uint32_t off)
{
	return (uint32_t *)((uint8_t *)base + off);
}

/* Maps the three parts of the session @g describes. */
static int map_session(struct vgpu_kmod *k, const struct vgpu_setup *g,
		       uint32_t sqe_size, uint32_t cqe_size)
{
	if (!g->status_size || !g->rings_size || !g->arena_size ||
	    !word_ok(g->status_flags, g->status_size) ||
	    !ring_ok(&g->sq, sqe_size, g->rings_size) ||
	    !ring_ok(&g->cq, cqe_size, g->rings_size))
		return -EPROTO;
	k->session_id = g->session_id;
	k->features = g->features;
	k->sq_entries = g->sq.ring_entries;
	k->cq_entries = g->cq.ring_entries;
	k->status_size = g->status_size;
	k->rings_size = g->rings_size;
	k->arena_size = g->arena_size;
	k->status = map_part(k->fd, g->status_off, g->status_size, PROT_READ);
	k->rings = map_part(k->fd, g->rings_off, g->rings_size, PROT_READ | PROT_WRITE);
	k->arena = map_part(k->fd, g->arena_off, g->arena_size, PROT_READ | PROT_WRITE);
	if (!k->status || !k->rings || !k->arena)
		return -errno;
	k->status_flags = word(k->status, g->status_flags);
	k->sq_head = word(k->rings, g->sq.head);
	k->sq_tail = word(k->rings, g->sq.tail);
	k->sq_flags = word(k->rings, g->sq.flags);
	k->sqes = word(k->rings, g->sq.entries);
	k->cq_head = word(k->rings, g->cq.head);
	k->cq_tail = word(k->rings, g->cq.tail);
	k->cq_flags = word(k->rings, g->cq.flags);
	k->cqes = word(k->rings, g->cq.entries);
	return 0;
}

static void init(struct vgpu_kmod *k, int fd)
{
	memset(k, 0, sizeof(*k));
	k->fd = fd;
}

int vgpu_kmod_client(struct vgpu_kmod *k, uint32_t sq_entries, uint32_t cq_entries,
		     uint32_t sqe_size, uint32_t cqe_size, uint64_t arena_bytes)
{
	struct vgpu_setup g = {
		.sq_entries = sq_entries, .cq_entries = cq_entries,
		.sqe_size = sqe_size, .cqe_size = cqe_size, .arena_bytes = arena_bytes,
	};
	int ret;

	init(k, open(VGPU_KMOD_DEVICE, O_RDWR | O_CLOEXEC));
	if (k->fd < 0)
		return -errno;
	ret = ioctl(k->fd, VGPU_IOC_SETUP, &g) ? -errno : 0;
	if (!ret)
		ret = map_session(k, &g, sqe_size, cqe_size);
	if (ret)
		vgpu_kmod_close(k);
	return ret;
}

int vgpu_kmod_worker(struct vgpu_kmod *k, int fd, uint32_t sqe_size, uint32_t cqe_size)
{
	struct vgpu_setup g;
	int ret;

	init(k, fd);
	ret = ioctl(fd, VGPU_IOC_SESSION_INFO, &g) ? -errno : 0;
	if (!ret)
		ret = map_session(k, &g, sqe_size, cqe_size);
	if (ret)
		vgpu_kmod_close(k);
	return ret;
}

void vgpu_kmod_close(struct vgpu_kmod *k)
{
	if (k->status)
		munmap(k->status, k->status_size);
	if (k->rings)
		munmap(k->rings, k->rings_size);
	if (k->arena)
		munmap(k->arena, k->arena_size);
	if (k->fd >= 0)
		close(k->fd);
	init(k, -1);
}

bool vgpu_kmod_dead(const struct vgpu_kmod *k)
{
	return __atomic_load_n(k->status_flags, __ATOMIC_ACQUIRE) & VGPU_RING_DEAD;
}

int vgpu_kmod_doorbell(const struct vgpu_kmod *k)
{
	return ioctl(k->fd, VGPU_IOC_DOORBELL, 0) ? -errno : 0;
}

int vgpu_kmod_wait(const struct vgpu_kmod *k, int timeout_ms)
{
	struct vgpu_wait w = {
		.timeout_ns = timeout_ms < 0 ? VGPU_WAIT_FOREVER : timeout_ms * 1000000ull,
	};

	return ioctl(k->fd, VGPU_IOC_WAIT, &w) ? -errno : 0;
}

int vgpu_kmod_poll(const struct vgpu_kmod *k, int sock, int ctl, int timeout_ms)
{
	struct pollfd p[3] = {
		{ .fd = k->fd, .events = POLLIN },
		{ .fd = sock, .events = POLLIN | POLLRDHUP },
		{ .fd = ctl, .events = POLLIN },
	};
	int n = poll(p, 3, timeout_ms);	/* negative fds are skipped */

	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	if (p[0].revents & (POLLHUP | POLLERR) ||
	    (sock >= 0 && (p[1].revents & (POLLHUP | POLLERR | POLLRDHUP))) ||
	    (ctl >= 0 && (p[2].revents & (POLLHUP | POLLERR))))
		return -EPIPE;
	return !!(p[0].revents & POLLIN) || (ctl >= 0 && (p[2].revents & POLLIN));
}

/* ---- pinned regions ------------------------------------------------------ */

bool vgpu_kmod_pin_notify(const struct vgpu_kmod *k)
{
	return k->fd >= 0 && (k->features & VGPU_FEAT_PIN_NOTIFY) && (k->features & VGPU_FEAT_PIN);
}

static void region_out(const struct vgpu_region *r, struct vgpu_kmod_region *out)
{
	*out = (struct vgpu_kmod_region){
		.handle = r->handle, .addr = r->addr, .len = r->len, .map_len = r->map_len,
		.page_offset = r->page_offset, .readonly = r->flags & VGPU_REGION_READONLY,
		.stale = r->flags & VGPU_REGION_STALE,
	};
}

int vgpu_kmod_register(const struct vgpu_kmod *k, uint64_t addr, uint64_t len, bool readonly,
		       struct vgpu_kmod_region *out)
{
	struct vgpu_region r = {
		.addr = addr, .len = len, .flags = readonly ? VGPU_REGION_READONLY : 0,
	};

	if (ioctl(k->fd, VGPU_IOC_REGISTER, &r))
		return -errno;
	region_out(&r, out);
	return 0;
}

int vgpu_kmod_unregister(const struct vgpu_kmod *k, uint64_t handle)
{
	return ioctl(k->fd, VGPU_IOC_UNREGISTER, &handle) ? -errno : 0;
}

int vgpu_kmod_region_check(const struct vgpu_kmod *k, uint64_t handle)
{
	return ioctl(k->fd, VGPU_IOC_REGION_CHECK, &handle) ? -errno : 0;
}

int vgpu_kmod_region_info(const struct vgpu_kmod *k, uint64_t handle,
			  struct vgpu_kmod_region *out)
{
	struct vgpu_region r = { .handle = handle };

	if (ioctl(k->fd, VGPU_IOC_REGION_INFO, &r))
		return -errno;
	/* The module's answer, checked anyway: the worker computes with it. */
	if (r.handle != handle || !r.map_len || r.map_len % (uint64_t)getpagesize() ||
	    r.page_offset >= (uint32_t)getpagesize() || r.len > r.map_len - r.page_offset)
		return -EPROTO;
	region_out(&r, out);
	return 0;
}

void *vgpu_kmod_region_map(const struct vgpu_kmod *k, const struct vgpu_kmod_region *r)
{
	int prot = PROT_READ | (r->readonly ? 0 : PROT_WRITE);

	return map_part(k->fd, r->handle, r->map_len, prot);
}

/* ---- server ------------------------------------------------------------- */

int vgpu_kmod_server(void)
{
	struct vgpu_server_setup ss = { 0 };
	int fd = open(VGPU_KMOD_DEVICE, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	int ret;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, VGPU_IOC_SERVER, &ss)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int vgpu_kmod_read_event(int server_fd, struct vgpu_kmod_event *ev)
{
	struct vgpu_event e;
	ssize_t n = read(server_fd, &e, sizeof(e));

	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n != sizeof(e) || e.size != sizeof(e))
		return -EPROTO;
	*ev = (struct vgpu_kmod_event){
		.type = e.type, .pid = e.pid, .uid = e.uid, .session_id = e.session_id,
	};
	return 1;
}

int vgpu_kmod_attach(int server_fd, uint64_t session_id)
{
	struct vgpu_attach a = { .session_id = session_id };
	int fd = ioctl(server_fd, VGPU_IOC_ATTACH, &a);

	return fd < 0 ? -errno : fd;
}

int vgpu_kmod_kill(int server_fd, uint64_t session_id)
{
	struct vgpu_kill kl = { .session_id = session_id };

	return ioctl(server_fd, VGPU_IOC_KILL, &kl) ? -errno : 0;
}

_Static_assert(VGPU_KMOD_OPENED == VGPU_EVENT_OPENED && VGPU_KMOD_CLOSED == VGPU_EVENT_CLOSED &&
	       VGPU_KMOD_DOORBELL == VGPU_EVENT_DOORBELL, "event types");
