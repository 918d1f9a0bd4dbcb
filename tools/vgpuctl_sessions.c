// SPDX-License-Identifier: MIT
/*
 * vgpuctl sessions [--json] [--module] [--control PATH] [--socket PATH]
 * [SESSION]: the daemon's sessions, asked over its control socket
 * (vgpuctl_daemon.c); with --module, or when no vgpud answers but the
 * module is loaded, the sessions of /dev/vgpu from the module's GET_SESSION
 * dump (or one GET_SESSION). Without CAP_NET_ADMIN the kernel shows only
 * the caller's own sessions.
 */
#include "vgpuctl.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "nl.h"
#include "uapi/vgpu.h"

struct list {
	int json;
	int n;
};

static const char *state_name(uint32_t state)
{
	switch (state) {
	case VGPU_STATE_READY: return "ready";
	case VGPU_STATE_DEAD: return "dead";
	default: return "unknown";
	}
}

static void header(void)
{
	printf("%-8s %-8s %-6s %-16s %-5s %6s %6s %7s %7s %10s %10s\n",
	       "ID", "PID", "UID", "COMM", "STATE", "SQ", "CQ", "ARENA",
	       "PINNED", "SUBMITTED", "COMPLETED");
}

static void row(const struct vgpu_nl_session *s)
{
	char arena[16], pinned[16];

	printf("%-8" PRIu64 " %-8u %-6u %-16s %-5s %6u %6u %7s %7s %10" PRIu64
	       " %10" PRIu64 "\n",
	       s->id, s->pid, s->uid, s->comm, state_name(s->state),
	       s->sq_entries, s->cq_entries,
	       vgpuctl_size(s->arena_bytes, arena, sizeof(arena)),
	       vgpuctl_size(s->pinned_bytes, pinned, sizeof(pinned)),
	       s->submitted, s->completed);
}

static void object(const struct vgpu_nl_session *s)
{
	printf("{\"id\": %" PRIu64 ", \"pid\": %u, \"uid\": %u, \"comm\": ",
	       s->id, s->pid, s->uid);
	vgpuctl_json_str(stdout, s->comm);
	printf(", \"state\": \"%s\", \"cgroup_id\": %" PRIu64
	       ", \"sq_entries\": %u, \"cq_entries\": %u"
	       ", \"arena_bytes\": %" PRIu64 ", \"pinned_bytes\": %" PRIu64
	       ", \"regions\": %u, \"submitted\": %" PRIu64
	       ", \"completed\": %" PRIu64 "}",
	       state_name(s->state), s->cgroup_id, s->sq_entries,
	       s->cq_entries, s->arena_bytes, s->pinned_bytes, s->regions,
	       s->submitted, s->completed);
}

static int print_one(const struct vgpu_nl_session *s, void *arg)
{
	struct list *l = arg;

	if (l->json) {
		printf("%s\n  ", l->n ? "," : "");
		object(s);
	} else {
		if (!l->n)
			header();
		row(s);
	}
	l->n++;
	return 0;
}

static int show_one(struct vgpu_nl *nl, const char *arg, int json)
{
	struct vgpu_nl_session s;
	uint64_t id;
	int ret;

	if (vgpuctl_parse_id(arg, &id)) {
		fprintf(stderr, "vgpuctl: '%s' is not a session id\n", arg);
		return VGPUCTL_USAGE;
	}
	ret = vgpu_nl_session(nl, id, &s);
	if (ret == -ENOENT) {
		fprintf(stderr, "vgpuctl: no session %" PRIu64 "\n", id);
		return VGPUCTL_FAIL;
	}
	if (ret) {
		vgpuctl_nl_error("GET_SESSION", ret);
		return VGPUCTL_FAIL;
	}
	if (json) {
		object(&s);
		printf("\n");
	} else {
		header();
		row(&s);
	}
	return VGPUCTL_OK;
}

static int module_sessions(const char *id, int json)
{
	struct list l = { json, 0 };
	struct vgpu_nl nl;
	int ret;

	if (vgpuctl_nl_open(&nl))
		return VGPUCTL_FAIL;
	if (id) {
		ret = show_one(&nl, id, l.json);
		vgpu_nl_close(&nl);
		return ret;
	}
	if (l.json)
		printf("[");
	ret = vgpu_nl_sessions(&nl, print_one, &l);
	vgpu_nl_close(&nl);
	if (l.json)
		printf("%s]\n", l.n ? "\n" : "");
	else if (!ret && !l.n)
		printf("no sessions\n");
	if (ret) {
		vgpuctl_nl_error("GET_SESSION dump", ret);
		return VGPUCTL_FAIL;
	}
	return VGPUCTL_OK;
}

int vgpuctl_sessions(int argc, char **argv)
{
	struct vgpuctl_ctl_args a = { 0 };
	const char *id, *control, *path;
	int json, module = 0, ret;
	uint64_t sid = 0;
	struct stat st;
	char buf[108];

	for (int i = 1; i < argc; i++) {
		if (vgpuctl_ctl_arg(argc, argv, &i, &a))
			continue;
		if (!strcmp(argv[i], "--module"))
			module = 1;
		else
			return vgpuctl_usage(argv[0]);
	}
	id = a.id;
	json = a.json;
	control = a.control;
	if (module)
		return module_sessions(id, json);
	if (id && vgpuctl_parse_id(id, &sid)) {
		fprintf(stderr, "vgpuctl: '%s' is not a session id\n", id);
		return VGPUCTL_USAGE;
	}
	path = vgpuctl_control_path(control, a.socket, buf, sizeof(buf));
	if (!path) {
		fprintf(stderr, "vgpuctl: socket path too long\n");
		return VGPUCTL_USAGE;
	}
	ret = vgpuctl_daemon_sessions(path, sid, json);
	if (ret >= 0)
		return ret ? VGPUCTL_FAIL : VGPUCTL_OK;
	if ((ret == -ENOENT || ret == -ECONNREFUSED) && !control && !stat("/sys/module/vgpu", &st)) {
		fprintf(stderr, "vgpuctl: no vgpud answers at %s: the module's sessions\n", path);
		return module_sessions(id, json);
	}
	vgpuctl_control_error(path, ret);
	return VGPUCTL_FAIL;
}
