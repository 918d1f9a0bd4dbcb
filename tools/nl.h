/* SPDX-License-Identifier: MIT */
/*
 * The "vgpu" generic netlink family (include/uapi/vgpu.h) seen through
 * libnl-genl-3: open a socket bound to the family, dump or get sessions,
 * read the module's counters, kill a session, follow the events group.
 * Every function returns 0 or -errno, the errno being the kernel's own
 * where the kernel answered (-EPERM, -ENOENT, ...). vgpu_nl_open() returns
 * -ENOENT when the family is not registered: the module is not loaded.
 */
#ifndef VGPU_TOOLS_NL_H
#define VGPU_TOOLS_NL_H

#include <stdint.h>

struct nl_sock;

struct vgpu_nl {
	struct nl_sock *sk;
	int family;
};

/* One session as the kernel reports it; absent attributes read 0. */
struct vgpu_nl_session {
	uint64_t id;
	uint32_t state;			/* VGPU_STATE_* */
	uint32_t pid;
	uint32_t uid;
	char comm[17];
	uint64_t cgroup_id;
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint64_t arena_bytes;
	uint64_t pinned_bytes;
	uint32_t regions;
	uint64_t submitted;
	uint64_t completed;
};

struct vgpu_nl_stats {
	uint64_t sessions;
	uint64_t sessions_total;
	uint64_t pinned_pages;
	uint64_t max_pinned_pages;
	uint64_t regions;
	uint64_t registrations;
	uint64_t doorbells;
	uint64_t workers;
	uint32_t server;
};

/* Called once per session; a non-zero return stops the walk. */
typedef int (*vgpu_nl_session_fn)(const struct vgpu_nl_session *s, void *arg);
/* Called once per event: VGPU_CMD_SESSION_OPENED or _CLOSED. */
typedef int (*vgpu_nl_event_fn)(uint8_t cmd, const struct vgpu_nl_session *s,
				void *arg);

int vgpu_nl_open(struct vgpu_nl *nl);
void vgpu_nl_close(struct vgpu_nl *nl);

int vgpu_nl_sessions(struct vgpu_nl *nl, vgpu_nl_session_fn fn, void *arg);
int vgpu_nl_session(struct vgpu_nl *nl, uint64_t id, struct vgpu_nl_session *s);
int vgpu_nl_stats(struct vgpu_nl *nl, struct vgpu_nl_stats *st);
int vgpu_nl_kill(struct vgpu_nl *nl, uint64_t id);

/* Joins the events group (-EPERM without CAP_NET_ADMIN where enforced). */
int vgpu_nl_join_events(struct vgpu_nl *nl);
/*
 * Waits for and delivers the events that one read brings: 0, or 1 when
 * @fn returned non-zero; -EINTR when a signal arrived, -ENOBUFS when the
 * kernel dropped events (the socket stays usable).
 */
int vgpu_nl_read_events(struct vgpu_nl *nl, vgpu_nl_event_fn fn, void *arg);

#endif
