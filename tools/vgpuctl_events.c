// SPDX-License-Identifier: MIT
/*
 * vgpuctl events [--json] [--count N]: joins the "events" multicast group
 * and prints one line per session opened or closed (JSON: one object per
 * line) until SIGINT/SIGTERM, or until N events. Ids are as the initial
 * namespaces see them.
 */
#include "vgpuctl.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "nl.h"
#include "uapi/vgpu.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct follow {
	int json;
	long left;	/* events still to print; -1: no limit */
};

static int print_event(uint8_t cmd, const struct vgpu_nl_session *s, void *arg)
{
	const char *what = cmd == VGPU_CMD_SESSION_OPENED ? "opened" : "closed";
	struct follow *f = arg;
	char arena[16];

	if (f->json) {
		printf("{\"event\": \"%s\", \"id\": %" PRIu64
		       ", \"pid\": %u, \"uid\": %u, \"comm\": ",
		       what, s->id, s->pid, s->uid);
		vgpuctl_json_str(stdout, s->comm);
		printf(", \"cgroup_id\": %" PRIu64 ", \"sq_entries\": %u"
		       ", \"cq_entries\": %u, \"arena_bytes\": %" PRIu64 "}\n",
		       s->cgroup_id, s->sq_entries, s->cq_entries,
		       s->arena_bytes);
	} else {
		printf("%s session %" PRIu64 " pid %u uid %u comm %s"
		       " sq %u cq %u arena %s\n",
		       what, s->id, s->pid, s->uid, s->comm, s->sq_entries,
		       s->cq_entries,
		       vgpuctl_size(s->arena_bytes, arena, sizeof(arena)));
	}
	fflush(stdout);
	return f->left > 0 && --f->left == 0;
}

static int parse_args(int argc, char **argv, struct follow *f)
{
	char *end;
	int i;

	f->json = 0;
	f->left = -1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			f->json = 1;
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			errno = 0;
			f->left = strtol(argv[++i], &end, 10);
			if (errno || *end || f->left <= 0)
				return -1;
		} else {
			return -1;
		}
	}
	return 0;
}

static int follow(struct vgpu_nl *nl, struct follow *f)
{
	int ret;

	while (!stop) {
		ret = vgpu_nl_read_events(nl, print_event, f);
		if (ret == 1)
			break;
		if (ret == -EINTR)
			continue;
		if (ret == -ENOBUFS) {
			fprintf(stderr, "vgpuctl: events were lost (the reader "
				"fell behind)\n");
			continue;
		}
		if (ret < 0) {
			vgpuctl_nl_error("reading events", ret);
			return VGPUCTL_FAIL;
		}
	}
	return VGPUCTL_OK;
}

int vgpuctl_events(int argc, char **argv)
{
	struct sigaction sa;
	struct vgpu_nl nl;
	struct follow f;
	int ret;

	if (parse_args(argc, argv, &f))
		return vgpuctl_usage(argv[0]);
	if (vgpuctl_nl_open(&nl))
		return VGPUCTL_FAIL;
	ret = vgpu_nl_join_events(&nl);
	if (ret == -EPERM || ret == -EACCES) {
		fprintf(stderr, "vgpuctl: joining the vgpu events group needs "
			"CAP_NET_ADMIN: run as root\n");
		vgpu_nl_close(&nl);
		return VGPUCTL_FAIL;
	}
	if (ret) {
		vgpuctl_nl_error("joining the vgpu events group", ret);
		vgpu_nl_close(&nl);
		return VGPUCTL_FAIL;
	}
	/* No SA_RESTART: poll() returns EINTR and the loop sees stop. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ret = follow(&nl, &f);
	vgpu_nl_close(&nl);
	return ret;
}
