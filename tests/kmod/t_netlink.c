// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The "vgpu" generic netlink family: session dump (one and many parts),
 * GET_SESSION, GET_STATS, KILL_SESSION and the events multicast group.
 */
#define _GNU_SOURCE
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt.h"

#define MANY 100

struct find {
	uint64_t id;
	int n, found;
};

static void find_cb(const struct kt_nlmsg *m, void *arg)
{
	struct find *f = arg;

	CHECK(m->cmd == VGPU_CMD_GET_SESSION);
	f->n++;
	if (kt_nl_u64(m, VGPU_A_SESSION_ID) == f->id)
		f->found++;
}

/* Attributes every session message carries. */
static void check_session(const struct kt_nlmsg *m, uint64_t id,
			  uint32_t state)
{
	CHECK(kt_nl_u64(m, VGPU_A_SESSION_ID) == id);
	CHECK(kt_nl_u32(m, VGPU_A_STATE) == state);
	CHECK(kt_nl_u32(m, VGPU_A_PID) == (uint32_t)getpid());
	CHECK(kt_nl_u32(m, VGPU_A_UID) == 0);
	CHECK(m->attr[VGPU_A_COMM] && !strcmp(m->attr[VGPU_A_COMM], "netlink"));
	CHECK(kt_nl_u32(m, VGPU_A_SQ_ENTRIES) == 64);
	CHECK(kt_nl_u32(m, VGPU_A_CQ_ENTRIES) == 128);
	CHECK(kt_nl_u64(m, VGPU_A_ARENA_BYTES) == 1 << 20);
	CHECK(m->attr[VGPU_A_CGROUP_ID]);
}

static struct {
	uint64_t id;
	uint64_t submitted, completed, pinned;
	uint32_t regions, state;
	int n, found;
} want;

static void counters_cb(const struct kt_nlmsg *m, void *arg)
{
	(void)arg;
	want.n++;
	if (kt_nl_u64(m, VGPU_A_SESSION_ID) != want.id)
		return;
	want.found++;
	check_session(m, want.id, want.state);
	CHECK(kt_nl_u64(m, VGPU_A_SUBMITTED) == want.submitted);
	CHECK(kt_nl_u64(m, VGPU_A_COMPLETED) == want.completed);
	CHECK(kt_nl_u64(m, VGPU_A_PINNED_BYTES) == want.pinned);
	CHECK(kt_nl_u32(m, VGPU_A_REGIONS) == want.regions);
}

static int request(uint8_t cmd, uint64_t id, int flags,
		   void (*fn)(const struct kt_nlmsg *, void *), void *arg)
{
	struct kt_nl nl;
	int ret;

	CHECK_OK(kt_nl_open(&nl));
	CHECK_OK(kt_nl_send(&nl, cmd, id, flags));
	ret = kt_nl_recv(&nl, fn, arg);
	kt_nl_close(&nl);
	return ret;
}

/* Next multicast @cmd for @id. */
static void expect_event(struct kt_nl *ev, uint8_t cmd, uint64_t id)
{
	struct kt_nlmsg m;

	for (;;) {
		CHECK(!kt_nl_recv_event(ev, &m, 2000));
		if (m.cmd == cmd && kt_nl_u64(&m, VGPU_A_SESSION_ID) == id)
			break;
	}
	check_session(&m, id, cmd == VGPU_CMD_SESSION_OPENED ?
		      VGPU_STATE_READY : VGPU_STATE_DEAD);
}

int main(void)
{
	static uint8_t buf[3 * 4096] __attribute__((aligned(4096)));
	struct kt_stats base, st;
	int srv, cfd, cfd2, wfd, many[MANY], i;
	struct vgpu_setup g, g2;
	struct vgpu_region r;
	struct kt_nl ev;
	struct kt_map m2;
	struct find f;

	CHECK_OK(kt_nl_open(&ev));
	CHECK_OK(kt_nl_join(&ev));
	CHECK_OK(kt_stats(&base));
	srv = kt_server();
	cfd = kt_client(64, 128, 64, 32, 1 << 20, &g);
	expect_event(&ev, VGPU_CMD_SESSION_OPENED, g.session_id);

	for (i = 0; i < 3; i++)
		CHECK_OK(kt_doorbell(cfd));
	wfd = kt_attach(srv, g.session_id);
	CHECK(wfd >= 0);
	for (i = 0; i < 2; i++)
		CHECK_OK(kt_doorbell(wfd));
	CHECK_OK(kt_register(cfd, buf, sizeof(buf), 0, &r));

	want.id = g.session_id;
	want.submitted = 3;
	want.completed = 2;
	want.pinned = sizeof(buf);
	want.regions = 1;
	want.state = VGPU_STATE_READY;
	CHECK(request(VGPU_CMD_GET_SESSION, 0, NLM_F_DUMP, counters_cb, NULL)
	      == 0);
	CHECK(want.found == 1 && want.n == 1);
	want.found = want.n = 0;
	CHECK(request(VGPU_CMD_GET_SESSION, g.session_id, 0, counters_cb,
		      NULL) == 0);
	CHECK(want.found == 1 && want.n == 1);
	CHECK(request(VGPU_CMD_GET_SESSION, 999999, 0, NULL, NULL) == -ENOENT);
	CHECK(request(VGPU_CMD_GET_SESSION, 0, 0, NULL, NULL) == -EINVAL);
	CHECK(request(VGPU_CMD_KILL_SESSION, 0, 0, NULL, NULL) == -EINVAL);
	CHECK(request(VGPU_CMD_KILL_SESSION, 999999, 0, NULL, NULL) ==
	      -ENOENT);
	CHECK(request(VGPU_CMD_MAX + 1, 0, 0, NULL, NULL) == -EOPNOTSUPP);

	CHECK_OK(kt_stats(&st));
	CHECK(st.sessions == base.sessions + 1);
	CHECK(st.sessions_total == base.sessions_total + 1);
	CHECK(st.registrations == base.registrations + 1);
	CHECK(st.doorbells == base.doorbells + 5);
	CHECK(st.pinned_pages == 3 && st.regions == 1);
	CHECK(st.workers == 1 && st.server == 1 && st.max_pinned_pages > 0);

	/* KILL over netlink. */
	cfd2 = kt_client(64, 128, 64, 32, 1 << 20, &g2);
	kt_map(cfd2, &m2);
	expect_event(&ev, VGPU_CMD_SESSION_OPENED, g2.session_id);
	CHECK(request(VGPU_CMD_KILL_SESSION, g2.session_id, 0, NULL, NULL) ==
	      0);
	CHECK_ERR(kt_doorbell(cfd2), ESHUTDOWN);
	CHECK(*m2.status == (VGPU_RING_DEAD | VGPU_RING_KILLED));
	want = (typeof(want)){ .id = g2.session_id, .state = VGPU_STATE_DEAD };
	CHECK(request(VGPU_CMD_GET_SESSION, g2.session_id, 0, counters_cb,
		      NULL) == 0);
	CHECK(want.found == 1);
	kt_unmap(&m2);
	close(cfd2);
	expect_event(&ev, VGPU_CMD_SESSION_CLOSED, g2.session_id);

	/* A dump that needs several parts. */
	for (i = 0; i < MANY; i++)
		many[i] = kt_client(16, 16, 16, 16, 0, NULL);
	memset(&f, 0, sizeof(f));
	f.id = g.session_id;
	CHECK(request(VGPU_CMD_GET_SESSION, 0, NLM_F_DUMP, find_cb, &f) == 0);
	CHECK(f.n == MANY + 1 && f.found == 1);
	for (i = 0; i < MANY; i++)
		close(many[i]);

	close(wfd);
	close(cfd);
	expect_event(&ev, VGPU_CMD_SESSION_CLOSED, g.session_id);
	close(srv);
	CHECK_OK(kt_stats(&st));
	CHECK(st.sessions == base.sessions && st.pinned_pages == 0);
	kt_nl_close(&ev);
	return 0;
}
