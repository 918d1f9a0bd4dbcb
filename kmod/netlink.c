// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "vgpu": session dumps, module statistics, killing
 * a session, and session open/close notifications.
 */
#include <linux/cred.h>
#include <linux/pid_namespace.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "vgpu.h"

static struct genl_family vgpu_genl_family;

/* Ids and names as one observer sees them. */
struct nl_view {
	struct pid_namespace *pidns;
	struct user_namespace *userns;
};

static int session_attrs(struct sk_buff *skb, struct vgpu_session *s,
			 const struct nl_view *v)
{
	u32 state = READ_ONCE(s->dead) ? VGPU_STATE_DEAD : VGPU_STATE_READY;
	u64 pinned = (u64)atomic64_read(&s->pinned_pages) << PAGE_SHIFT;

	if (nla_put_u64_64bit(skb, VGPU_A_SESSION_ID, s->id, VGPU_A_PAD) ||
	    nla_put_u32(skb, VGPU_A_STATE, state) ||
	    nla_put_u32(skb, VGPU_A_PID, pid_nr_ns(s->tgid, v->pidns)) ||
	    nla_put_u32(skb, VGPU_A_UID, from_kuid_munged(v->userns, s->uid)) ||
	    nla_put_string(skb, VGPU_A_COMM, s->comm) ||
	    nla_put_u64_64bit(skb, VGPU_A_CGROUP_ID, s->cgroup_id,
			      VGPU_A_PAD) ||
	    nla_put_u32(skb, VGPU_A_SQ_ENTRIES, s->geo.sq_entries) ||
	    nla_put_u32(skb, VGPU_A_CQ_ENTRIES, s->geo.cq_entries) ||
	    nla_put_u64_64bit(skb, VGPU_A_ARENA_BYTES, s->geo.arena_bytes,
			      VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_PINNED_BYTES, pinned, VGPU_A_PAD) ||
	    nla_put_u32(skb, VGPU_A_REGIONS, atomic_read(&s->nregions)) ||
	    nla_put_u64_64bit(skb, VGPU_A_SUBMITTED,
			      atomic64_read(&s->submitted), VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_COMPLETED,
			      atomic64_read(&s->completed), VGPU_A_PAD))
		return -EMSGSIZE;
	return 0;
}

static int session_msg(struct sk_buff *skb, struct vgpu_session *s,
		       const struct nl_view *v, u32 portid, u32 seq, int flags,
		       u8 cmd)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &vgpu_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (session_attrs(skb, s, v)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static void caller_view(struct nl_view *v)
{
	v->pidns = task_active_pid_ns(current);
	v->userns = current_user_ns();
}

/* CAP_NET_ADMIN sees every session; others their own euid's. */
static bool visible(const struct sk_buff *skb, struct vgpu_session *s)
{
	return netlink_capable(skb, CAP_NET_ADMIN) ||
	       uid_eq(s->uid, current_euid());
}

static int get_session_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct vgpu_session *s;
	struct nl_view v;
	unsigned long id;

	caller_view(&v);
	mutex_lock(&vgpu_lock);
	xa_for_each_start(&vgpu_sessions, id, s, cb->args[0]) {
		if (visible(cb->skb, s) &&
		    session_msg(skb, s, &v, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, NLM_F_MULTI,
				VGPU_CMD_GET_SESSION))
			break;
		cb->args[0] = id + 1;
	}
	mutex_unlock(&vgpu_lock);
	return skb->len;
}

static int get_session_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct vgpu_session *s;
	struct sk_buff *msg;
	struct nl_view v;
	int ret;

	if (!info->attrs[VGPU_A_SESSION_ID])
		return -EINVAL;
	s = vgpu_session_find(nla_get_u64(info->attrs[VGPU_A_SESSION_ID]));
	if (!s)
		return -ENOENT;
	ret = -ENOENT;
	if (!visible(skb, s))
		goto put_session;
	ret = -ENOMEM;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto put_session;
	caller_view(&v);
	ret = session_msg(msg, s, &v, info->snd_portid, info->snd_seq, 0,
			  VGPU_CMD_GET_SESSION);
	if (ret)
		goto free_msg;
	vgpu_session_put(s);
	return genlmsg_reply(msg, info);

free_msg:
	nlmsg_free(msg);
put_session:
	vgpu_session_put(s);
	return ret;
}

static int stats_attrs(struct sk_buff *skb)
{
	struct vgpu_stats *st = &vgpu_stats;
	u32 server;

	mutex_lock(&vgpu_lock);
	server = !!vgpu_server;
	mutex_unlock(&vgpu_lock);
	if (nla_put_u64_64bit(skb, VGPU_A_STAT_SESSIONS,
			      atomic64_read(&st->sessions), VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_STAT_SESSIONS_TOTAL,
			      atomic64_read(&st->sessions_total), VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_STAT_PINNED_PAGES,
			      atomic64_read(&st->pinned_pages), VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_STAT_REGIONS,
			      atomic64_read(&st->regions), VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_STAT_REGISTRATIONS,
			      atomic64_read(&st->registrations), VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_STAT_DOORBELLS,
			      atomic64_read(&st->doorbells), VGPU_A_PAD) ||
	    nla_put_u32(skb, VGPU_A_STAT_SERVER, server) ||
	    nla_put_u64_64bit(skb, VGPU_A_STAT_WORKERS,
			      atomic64_read(&st->workers), VGPU_A_PAD) ||
	    nla_put_u64_64bit(skb, VGPU_A_STAT_MAX_PINNED_PAGES,
			      vgpu_max_pinned_pages(), VGPU_A_PAD))
		return -EMSGSIZE;
	return 0;
}

static int get_stats_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &vgpu_genl_family, 0,
				VGPU_CMD_GET_STATS);
	if (!hdr || stats_attrs(msg)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int kill_session_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct vgpu_session *s;

	if (!info->attrs[VGPU_A_SESSION_ID])
		return -EINVAL;
	s = vgpu_session_find(nla_get_u64(info->attrs[VGPU_A_SESSION_ID]));
	if (!s)
		return -ENOENT;
	vgpu_session_kill(s, VGPU_RING_KILLED);
	vgpu_session_put(s);
	return 0;
}

static const struct nla_policy vgpu_policy[VGPU_A_MAX + 1] = {
	[VGPU_A_SESSION_ID] = { .type = NLA_U64 },
};

static const struct genl_small_ops vgpu_genl_ops[] = {
	{
		.cmd = VGPU_CMD_GET_SESSION,
		.doit = get_session_doit,
		.dumpit = get_session_dumpit,
	},
	{
		.cmd = VGPU_CMD_GET_STATS,
		.doit = get_stats_doit,
	},
	{
		.cmd = VGPU_CMD_KILL_SESSION,
		.doit = kill_session_doit,
		.flags = GENL_ADMIN_PERM,
	},
};

static const struct genl_multicast_group vgpu_mcgrps[] = {
	{ .name = VGPU_GENL_MCGRP_EVENTS, .flags = GENL_MCAST_CAP_NET_ADMIN },
};

/*
 * resv_start_op stays 0: every command is new, so the core validates all
 * of them strictly (reserved header bits, unknown attributes).
 */
static struct genl_family vgpu_genl_family __ro_after_init = {
	.name = VGPU_GENL_NAME,
	.version = VGPU_GENL_VERSION,
	.maxattr = VGPU_A_MAX,
	.policy = vgpu_policy,
	.module = THIS_MODULE,
	.small_ops = vgpu_genl_ops,
	.n_small_ops = ARRAY_SIZE(vgpu_genl_ops),
	.mcgrps = vgpu_mcgrps,
	.n_mcgrps = ARRAY_SIZE(vgpu_mcgrps),
};

/* Listeners live in init_net and see init-namespace ids. */
void vgpu_netlink_notify(struct vgpu_session *s, u8 cmd)
{
	struct nl_view v = { &init_pid_ns, &init_user_ns };
	struct sk_buff *msg;

	if (!genl_has_listeners(&vgpu_genl_family, &init_net, 0))
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return;
	if (session_msg(msg, s, &v, 0, 0, 0, cmd)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_multicast(&vgpu_genl_family, msg, 0, 0, GFP_KERNEL);
}

int vgpu_netlink_init(void)
{
	return genl_register_family(&vgpu_genl_family);
}

void vgpu_netlink_exit(void)
{
	genl_unregister_family(&vgpu_genl_family);
}
