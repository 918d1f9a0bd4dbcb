// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Helpers for the vgpu.ko tests; see kt.h. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kt.h"

int kt_open(void)
{
	int fd = open("/dev/vgpu", O_RDWR | O_CLOEXEC);

	CHECK(fd >= 0);
	return fd;
}

int kt_server(void)
{
	struct vgpu_server_setup p = { 0 };
	int fd = kt_open();

	CHECK_OK(ioctl(fd, VGPU_IOC_SERVER, &p));
	return fd;
}

int kt_client(uint32_t sq, uint32_t cq, uint32_t sqe, uint32_t cqe,
	      uint64_t arena, struct vgpu_setup *geo)
{
	struct vgpu_setup p = {
		.sq_entries = sq, .cq_entries = cq,
		.sqe_size = sqe, .cqe_size = cqe, .arena_bytes = arena,
	};
	int fd = kt_open();

	CHECK_OK(ioctl(fd, VGPU_IOC_SETUP, &p));
	if (geo)
		*geo = p;
	return fd;
}

int kt_client_default(struct vgpu_setup *geo)
{
	return kt_client(64, 128, 64, 32, 1 << 20, geo);
}

static void ring_init(struct kt_ring *r, uint8_t *rings,
		      const struct vgpu_ring_offsets *o)
{
	r->head = (uint32_t *)(rings + o->head);
	r->tail = (uint32_t *)(rings + o->tail);
	r->flags = (uint32_t *)(rings + o->flags);
	r->entries = rings + o->entries;
	r->mask = o->ring_mask;
	r->entry_size = o->entry_size;
}

void kt_map(int fd, struct kt_map *m)
{
	void *p;

	CHECK_OK(ioctl(fd, VGPU_IOC_SESSION_INFO, &m->geo));
	p = mmap(NULL, m->geo.status_size, PROT_READ, MAP_SHARED, fd,
		 m->geo.status_off);
	CHECK(p != MAP_FAILED);
	m->status = (volatile uint32_t *)((uint8_t *)p + m->geo.status_flags);
	p = mmap(NULL, m->geo.rings_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, m->geo.rings_off);
	CHECK(p != MAP_FAILED);
	m->rings = p;
	m->arena = NULL;
	if (m->geo.arena_size) {
		p = mmap(NULL, m->geo.arena_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, m->geo.arena_off);
		CHECK(p != MAP_FAILED);
		m->arena = p;
	}
	ring_init(&m->sq, m->rings, &m->geo.sq);
	ring_init(&m->cq, m->rings, &m->geo.cq);
}

void kt_unmap(struct kt_map *m)
{
	munmap((void *)((uintptr_t)m->status & ~4095UL), m->geo.status_size);
	munmap(m->rings, m->geo.rings_size);
	if (m->arena)
		munmap(m->arena, m->geo.arena_size);
}

int kt_event(int srv, struct vgpu_event *ev, int ms)
{
	struct pollfd pfd = { .fd = srv, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	n = read(srv, ev, sizeof(*ev));
	CHECK(n == sizeof(*ev));
	CHECK(ev->size == sizeof(*ev));
	return 0;
}

int kt_event_wait(int srv, uint32_t type, uint64_t id, int ms)
{
	struct vgpu_event ev;

	while (!kt_event(srv, &ev, ms))
		if (ev.type == type && ev.session_id == id)
			return 0;
	return -1;
}

int kt_attach(int srv, uint64_t id)
{
	struct vgpu_attach a = { .session_id = id };

	return ioctl(srv, VGPU_IOC_ATTACH, &a);
}

int kt_register(int fd, void *addr, uint64_t len, uint32_t flags,
		struct vgpu_region *r)
{
	memset(r, 0, sizeof(*r));
	r->addr = (uintptr_t)addr;
	r->len = len;
	r->flags = flags;
	return ioctl(fd, VGPU_IOC_REGISTER, r);
}

int kt_wait(int fd, uint64_t timeout_ns)
{
	struct vgpu_wait w = { .timeout_ns = timeout_ns };

	return ioctl(fd, VGPU_IOC_WAIT, &w);
}

int kt_doorbell(int fd)
{
	return ioctl(fd, VGPU_IOC_DOORBELL, 0);
}

static sigjmp_buf kt_jmp;

static void kt_sig(int sig)
{
	siglongjmp(kt_jmp, sig);
}

int kt_faults(volatile uint8_t *p, size_t len, int write)
{
	struct sigaction sa = { .sa_handler = kt_sig }, obus, osegv;
	volatile int faulted = 0;
	size_t i;

	sigaction(SIGBUS, &sa, &obus);
	sigaction(SIGSEGV, &sa, &osegv);
	if (sigsetjmp(kt_jmp, 1)) {
		faulted = 1;
	} else {
		for (i = 0; i < len; i += 4096) {
			if (write)
				p[i] = p[i];
			else
				(void)p[i];
		}
	}
	sigaction(SIGBUS, &obus, NULL);
	sigaction(SIGSEGV, &osegv, NULL);
	return faulted;
}

uint64_t kt_rand(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

long kt_param_set(const char *name, const char *value)
{
	char path[128];
	long ret;
	int fd;

	snprintf(path, sizeof(path), "/sys/module/vgpu/parameters/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ret = write(fd, value, strlen(value));
	close(fd);
	return ret;
}

/* --- generic netlink ---------------------------------------------------- */

#define NLBUF 16384

struct nlreq {
	struct nlmsghdr n;
	struct genlmsghdr g;
	char buf[256];
};

static void put_attr(struct nlreq *r, uint16_t type, const void *data,
		     uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->n.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	r->n.nlmsg_len = NLMSG_ALIGN(r->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static int nl_send(struct kt_nl *nl, uint16_t family, uint8_t cmd,
		   uint8_t version, int flags, struct nlreq *r)
{
	r->n.nlmsg_type = family;
	r->n.nlmsg_flags = NLM_F_REQUEST | flags;
	r->n.nlmsg_seq = ++nl->seq;
	r->g.cmd = cmd;
	r->g.version = version;
	return send(nl->fd, r, r->n.nlmsg_len, 0) < 0 ? -1 : 0;
}

static void parse_attrs(const struct nlmsghdr *h, struct kt_nlmsg *m)
{
	const struct genlmsghdr *g = NLMSG_DATA(h);
	const struct nlattr *a = (const void *)((const char *)g + GENL_HDRLEN);
	int rem = h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;

	memset(m, 0, sizeof(*m));
	m->cmd = g->cmd;
	while (rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= rem) {
		int t = a->nla_type & NLA_TYPE_MASK;

		if (t < KT_NL_MAXATTR) {
			m->attr[t] = (const char *)a + NLA_HDRLEN;
			m->len[t] = a->nla_len - NLA_HDRLEN;
		}
		rem -= NLA_ALIGN(a->nla_len);
		a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len));
	}
}

int kt_nl_recv(struct kt_nl *nl, void (*fn)(const struct kt_nlmsg *, void *),
	       void *arg)
{
	static char buf[NLBUF];
	struct kt_nlmsg m;

	for (;;) {
		ssize_t n = recv(nl->fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (n < 0)
			return -errno;
		for (; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return *(int *)NLMSG_DATA(h);
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error;
			}
			if (h->nlmsg_seq != nl->seq)
				continue;	/* a multicast */
			parse_attrs(h, &m);
			if (fn)
				fn(&m, arg);
		}
	}
}

struct family_ctx {
	uint16_t id;
	uint32_t grp;
};

static void family_parse(const struct nlmsghdr *h, struct family_ctx *c)
{
	const struct genlmsghdr *g = NLMSG_DATA(h);
	const struct nlattr *a = (const void *)((const char *)g + GENL_HDRLEN);
	int rem = h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;

	for (; rem >= NLA_HDRLEN; rem -= NLA_ALIGN(a->nla_len),
	     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len))) {
		const struct nlattr *grp, *ga;
		int grem, garem;
		uint32_t id = 0;
		const char *name = NULL;

		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			c->id = *(uint16_t *)((char *)a + NLA_HDRLEN);
		if ((a->nla_type & NLA_TYPE_MASK) != CTRL_ATTR_MCAST_GROUPS)
			continue;
		grp = (const void *)((const char *)a + NLA_HDRLEN);
		for (grem = a->nla_len - NLA_HDRLEN; grem >= NLA_HDRLEN;
		     grem -= NLA_ALIGN(grp->nla_len),
		     grp = (const void *)((const char *)grp + NLA_ALIGN(grp->nla_len))) {
			ga = (const void *)((const char *)grp + NLA_HDRLEN);
			for (garem = grp->nla_len - NLA_HDRLEN; garem >= NLA_HDRLEN;
			     garem -= NLA_ALIGN(ga->nla_len),
			     ga = (const void *)((const char *)ga + NLA_ALIGN(ga->nla_len))) {
				if (ga->nla_type == CTRL_ATTR_MCAST_GRP_ID)
					id = *(uint32_t *)((char *)ga + NLA_HDRLEN);
				if (ga->nla_type == CTRL_ATTR_MCAST_GRP_NAME)
					name = (const char *)ga + NLA_HDRLEN;
			}
			if (name && !strcmp(name, VGPU_GENL_MCGRP_EVENTS))
				c->grp = id;
		}
	}
}

int kt_nl_open(struct kt_nl *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct family_ctx c = { 0 };
	struct nlreq r = { 0 };
	static char buf[NLBUF];
	struct nlmsghdr *h;
	ssize_t n;

	memset(nl, 0, sizeof(*nl));
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0 || bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	put_attr(&r, CTRL_ATTR_FAMILY_NAME, VGPU_GENL_NAME,
		 sizeof(VGPU_GENL_NAME));
	if (nl_send(nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, 0, &r))
		return -1;
	n = recv(nl->fd, buf, sizeof(buf), 0);
	h = (struct nlmsghdr *)buf;
	if (n < 0 || !NLMSG_OK(h, n) || h->nlmsg_type != GENL_ID_CTRL)
		return -1;
	family_parse(h, &c);
	nl->family = c.id;
	nl->mcgrp = c.grp;
	return c.id ? 0 : -1;
}

void kt_nl_close(struct kt_nl *nl)
{
	close(nl->fd);
}

int kt_nl_send(struct kt_nl *nl, uint8_t cmd, uint64_t session_id, int flags)
{
	struct nlreq r = { 0 };

	r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	if (session_id)
		put_attr(&r, VGPU_A_SESSION_ID, &session_id, sizeof(session_id));
	/* A dump ends with NLMSG_DONE, anything else with an ACK. */
	if (!(flags & NLM_F_DUMP))
		flags |= NLM_F_ACK;
	return nl_send(nl, nl->family, cmd, VGPU_GENL_VERSION, flags, &r);
}

int kt_nl_join(struct kt_nl *nl)
{
	int grp = nl->mcgrp;

	return setsockopt(nl->fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
			  sizeof(grp));
}

int kt_nl_recv_event(struct kt_nl *nl, struct kt_nlmsg *m, int ms)
{
	struct pollfd pfd = { .fd = nl->fd, .events = POLLIN };
	static char buf[NLBUF];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	ssize_t n;

	for (;;) {
		if (poll(&pfd, 1, ms) != 1)
			return -1;
		n = recv(nl->fd, buf, sizeof(buf), 0);
		if (n < 0 || !NLMSG_OK(h, n))
			return -1;
		if (h->nlmsg_type == nl->family && h->nlmsg_seq == 0) {
			parse_attrs(h, m);
			return 0;
		}
	}
}

uint64_t kt_nl_u64(const struct kt_nlmsg *m, int attr)
{
	uint64_t v;

	CHECK(m->attr[attr] && m->len[attr] == 8);
	memcpy(&v, m->attr[attr], 8);
	return v;
}

uint32_t kt_nl_u32(const struct kt_nlmsg *m, int attr)
{
	uint32_t v;

	CHECK(m->attr[attr] && m->len[attr] == 4);
	memcpy(&v, m->attr[attr], 4);
	return v;
}

static void stats_cb(const struct kt_nlmsg *m, void *arg)
{
	struct kt_stats *st = arg;

	st->sessions = kt_nl_u64(m, VGPU_A_STAT_SESSIONS);
	st->sessions_total = kt_nl_u64(m, VGPU_A_STAT_SESSIONS_TOTAL);
	st->pinned_pages = kt_nl_u64(m, VGPU_A_STAT_PINNED_PAGES);
	st->regions = kt_nl_u64(m, VGPU_A_STAT_REGIONS);
	st->registrations = kt_nl_u64(m, VGPU_A_STAT_REGISTRATIONS);
	st->doorbells = kt_nl_u64(m, VGPU_A_STAT_DOORBELLS);
	st->workers = kt_nl_u64(m, VGPU_A_STAT_WORKERS);
	st->max_pinned_pages = kt_nl_u64(m, VGPU_A_STAT_MAX_PINNED_PAGES);
	st->server = kt_nl_u32(m, VGPU_A_STAT_SERVER);
}

int kt_stats(struct kt_stats *st)
{
	struct kt_nl nl;
	int ret;

	memset(st, 0, sizeof(*st));
	if (kt_nl_open(&nl))
		return -1;
	ret = kt_nl_send(&nl, VGPU_CMD_GET_STATS, 0, 0);
	if (!ret)
		ret = kt_nl_recv(&nl, stats_cb, st);
	kt_nl_close(&nl);
	return ret;
}
