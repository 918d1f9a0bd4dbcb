// SPDX-License-Identifier: MIT
/*
 * libnl-genl-3 helpers for the "vgpu" family. Requests go through libnl's
 * callbacks; the error callback keeps the kernel's errno (libnl's own codes
 * fold several errnos into one). Events are read with recv() directly, so
 * that a signal (libnl retries EINTR) and a dropped-events ENOBUFS (libnl
 * calls it NLE_NOMEM) reach the caller as they are.
 */
#include "nl.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>

#include "uapi/vgpu.h"

/* libnl error codes to errno, for failures that never reached the kernel. */
static int nle_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case 0: return 0;
	case NLE_NOMEM: return -ENOMEM;
	case NLE_INTR: return -EINTR;
	case NLE_AGAIN: return -EAGAIN;
	case NLE_PERM: return -EPERM;
	case NLE_NOACCESS: return -EACCES;
	case NLE_OBJ_NOTFOUND: return -ENOENT;
	case NLE_OPNOTSUPP: return -EOPNOTSUPP;
	case NLE_INVAL: return -EINVAL;
	case NLE_RANGE: return -ERANGE;
	case NLE_BUSY: return -EBUSY;
	case NLE_AF_NOSUPPORT: return -EAFNOSUPPORT;
	case NLE_PROTO_MISMATCH: return -EPROTONOSUPPORT;
	default: return -EIO;
	}
}

static const struct nla_policy policy[VGPU_A_MAX + 1] = {
	[VGPU_A_SESSION_ID] = { .type = NLA_U64 },
	[VGPU_A_STATE] = { .type = NLA_U32 },
	[VGPU_A_PID] = { .type = NLA_U32 },
	[VGPU_A_UID] = { .type = NLA_U32 },
	[VGPU_A_COMM] = { .type = NLA_STRING },
	[VGPU_A_CGROUP_ID] = { .type = NLA_U64 },
	[VGPU_A_SQ_ENTRIES] = { .type = NLA_U32 },
	[VGPU_A_CQ_ENTRIES] = { .type = NLA_U32 },
	[VGPU_A_ARENA_BYTES] = { .type = NLA_U64 },
	[VGPU_A_PINNED_BYTES] = { .type = NLA_U64 },
	[VGPU_A_REGIONS] = { .type = NLA_U32 },
	[VGPU_A_SUBMITTED] = { .type = NLA_U64 },
	[VGPU_A_COMPLETED] = { .type = NLA_U64 },
	[VGPU_A_STAT_SESSIONS] = { .type = NLA_U64 },
	[VGPU_A_STAT_SESSIONS_TOTAL] = { .type = NLA_U64 },
	[VGPU_A_STAT_PINNED_PAGES] = { .type = NLA_U64 },
	[VGPU_A_STAT_REGIONS] = { .type = NLA_U64 },
	[VGPU_A_STAT_REGISTRATIONS] = { .type = NLA_U64 },
	[VGPU_A_STAT_DOORBELLS] = { .type = NLA_U64 },
	[VGPU_A_STAT_SERVER] = { .type = NLA_U32 },
	[VGPU_A_STAT_WORKERS] = { .type = NLA_U64 },
	[VGPU_A_STAT_MAX_PINNED_PAGES] = { .type = NLA_U64 },
};

static uint64_t u64_of(struct nlattr **tb, int a)
{
	return tb[a] ? nla_get_u64(tb[a]) : 0;
}

static uint32_t u32_of(struct nlattr **tb, int a)
{
	return tb[a] ? nla_get_u32(tb[a]) : 0;
}

static int parse(struct nlmsghdr *nlh, struct nlattr **tb)
{
	int ret = genlmsg_parse(nlh, 0, tb, VGPU_A_MAX, policy);

	return ret < 0 ? -EBADMSG : 0;
}

static void session_of(struct nlattr **tb, struct vgpu_nl_session *s)
{
	memset(s, 0, sizeof(*s));
	s->id = u64_of(tb, VGPU_A_SESSION_ID);
	s->state = u32_of(tb, VGPU_A_STATE);
	s->pid = u32_of(tb, VGPU_A_PID);
	s->uid = u32_of(tb, VGPU_A_UID);
	if (tb[VGPU_A_COMM])
		nla_strlcpy(s->comm, tb[VGPU_A_COMM], sizeof(s->comm));
	s->cgroup_id = u64_of(tb, VGPU_A_CGROUP_ID);
	s->sq_entries = u32_of(tb, VGPU_A_SQ_ENTRIES);
	s->cq_entries = u32_of(tb, VGPU_A_CQ_ENTRIES);
	s->arena_bytes = u64_of(tb, VGPU_A_ARENA_BYTES);
	s->pinned_bytes = u64_of(tb, VGPU_A_PINNED_BYTES);
	s->regions = u32_of(tb, VGPU_A_REGIONS);
	s->submitted = u64_of(tb, VGPU_A_SUBMITTED);
	s->completed = u64_of(tb, VGPU_A_COMPLETED);
}

int vgpu_nl_open(struct vgpu_nl *nl)
{
	int ret;

	nl->sk = nl_socket_alloc();
	if (!nl->sk)
		return -ENOMEM;
	ret = genl_connect(nl->sk);
	if (ret < 0)
		goto free_sock;
	ret = genl_ctrl_resolve(nl->sk, VGPU_GENL_NAME);
	if (ret < 0)
		goto free_sock;
	nl->family = ret;
	return 0;

free_sock:
	nl_socket_free(nl->sk);
	nl->sk = NULL;
	return nle_errno(ret);
}

void vgpu_nl_close(struct vgpu_nl *nl)
{
	if (nl->sk)
		nl_socket_free(nl->sk);
	nl->sk = NULL;
}

/* One request and its replies: @reply runs for each reply message. */
struct request {
	int (*reply)(struct nlattr **tb, void *arg);
	void *arg;
	int err;
	int done;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[VGPU_A_MAX + 1];
	struct request *rq = arg;
	int ret;

	if (!rq->reply || rq->err)
		return NL_OK;
	ret = parse(nlmsg_hdr(msg), tb);
	if (!ret)
		ret = rq->reply(tb, rq->arg);
	if (ret)
		rq->err = ret;	/* keep reading to the end of the dump */
	return NL_OK;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	struct request *rq = arg;

	(void)msg;
	rq->done = 1;
	return NL_STOP;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct request *rq = arg;

	(void)nla;
	if (!rq->err)
		rq->err = e->error;	/* already negative */
	rq->done = 1;
	return NL_STOP;
}

static int request(struct vgpu_nl *nl, uint8_t cmd, int flags, const uint64_t *id,
		   struct request *rq)
{
	struct nl_msg *msg;
	struct nl_cb *cb;
	int ret = -ENOMEM;

	msg = nlmsg_alloc();
	if (!msg)
		return -ENOMEM;
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		goto free_msg;
	ret = -EMSGSIZE;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0, flags,
			 cmd, VGPU_GENL_VERSION))
		goto free_cb;
	if (id && nla_put_u64(msg, VGPU_A_SESSION_ID, *id) < 0)
		goto free_cb;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, rq);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, rq);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_finish, rq);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, rq);
	ret = nl_send_auto(nl->sk, msg);
	if (ret < 0)
		goto map_err;
	while (!rq->done) {
		ret = nl_recvmsgs(nl->sk, cb);
		if (ret < 0)
			goto map_err;
	}
	ret = rq->err;
	goto free_cb;

map_err:
	ret = nle_errno(ret);
free_cb:
	nl_cb_put(cb);
free_msg:
	nlmsg_free(msg);
	return ret;
}

struct walk {
	vgpu_nl_session_fn fn;
	void *arg;
	int stopped;
};

static int walk_reply(struct nlattr **tb, void *arg)
{
	struct vgpu_nl_session s;
	struct walk *w = arg;

	if (w->stopped)
		return 0;
	session_of(tb, &s);
	w->stopped = w->fn(&s, w->arg);
	return 0;
}

int vgpu_nl_sessions(struct vgpu_nl *nl, vgpu_nl_session_fn fn, void *arg)
{
	struct walk w = { fn, arg, 0 };
	struct request rq = { walk_reply, &w, 0, 0 };

	return request(nl, VGPU_CMD_GET_SESSION, NLM_F_DUMP, NULL, &rq);
}

static int one_reply(struct nlattr **tb, void *arg)
{
	session_of(tb, arg);
	return 0;
}

int vgpu_nl_session(struct vgpu_nl *nl, uint64_t id, struct vgpu_nl_session *s)
{
	struct request rq = { one_reply, s, 0, 0 };

	memset(s, 0, sizeof(*s));
	return request(nl, VGPU_CMD_GET_SESSION, 0, &id, &rq);
}

static int stats_reply(struct nlattr **tb, void *arg)
{
	struct vgpu_nl_stats *st = arg;

	st->sessions = u64_of(tb, VGPU_A_STAT_SESSIONS);
	st->sessions_total = u64_of(tb, VGPU_A_STAT_SESSIONS_TOTAL);
	st->pinned_pages = u64_of(tb, VGPU_A_STAT_PINNED_PAGES);
	st->max_pinned_pages = u64_of(tb, VGPU_A_STAT_MAX_PINNED_PAGES);
	st->regions = u64_of(tb, VGPU_A_STAT_REGIONS);
	st->registrations = u64_of(tb, VGPU_A_STAT_REGISTRATIONS);
	st->doorbells = u64_of(tb, VGPU_A_STAT_DOORBELLS);
	st->workers = u64_of(tb, VGPU_A_STAT_WORKERS);
	st->server = u32_of(tb, VGPU_A_STAT_SERVER);
	return 0;
}

int vgpu_nl_stats(struct vgpu_nl *nl, struct vgpu_nl_stats *st)
{
	struct request rq = { stats_reply, st, 0, 0 };

	memset(st, 0, sizeof(*st));
	return request(nl, VGPU_CMD_GET_STATS, 0, NULL, &rq);
}

int vgpu_nl_kill(struct vgpu_nl *nl, uint64_t id)
{
	struct request rq = { NULL, NULL, 0, 0 };

	return request(nl, VGPU_CMD_KILL_SESSION, 0, &id, &rq);
}

int vgpu_nl_join_events(struct vgpu_nl *nl)
{
	int grp, fd = nl_socket_get_fd(nl->sk);

	grp = genl_ctrl_resolve_grp(nl->sk, VGPU_GENL_NAME,
				    VGPU_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return nle_errno(grp);
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
		       sizeof(grp)))
		return -errno;
	return 0;
}

int vgpu_nl_read_events(struct vgpu_nl *nl, vgpu_nl_event_fn fn, void *arg)
{
	static char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct pollfd pfd = { .fd = nl_socket_get_fd(nl->sk), .events = POLLIN };
	struct nlattr *tb[VGPU_A_MAX + 1];
	struct vgpu_nl_session s;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	ssize_t n;
	int len;

	if (poll(&pfd, 1, -1) < 0)
		return -errno;
	n = recv(pfd.fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	len = (int)n;
	for (nlh = (struct nlmsghdr *)buf; nlmsg_ok(nlh, len);
	     nlh = nlmsg_next(nlh, &len)) {
		if (nlh->nlmsg_type != nl->family ||
		    !genlmsg_valid_hdr(nlh, 0))
			continue;
		g = nlmsg_data(nlh);
		if (g->cmd != VGPU_CMD_SESSION_OPENED &&
		    g->cmd != VGPU_CMD_SESSION_CLOSED)
			continue;
		if (parse(nlh, tb))
			continue;
		session_of(tb, &s);
		if (fn(g->cmd, &s, arg))
			return 1;
	}
	return 0;
}
