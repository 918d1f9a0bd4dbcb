// SPDX-License-Identifier: MIT
/*
 * vgpuctl: inspect and manage vgpu.ko sessions and set up containers.
 * main() finds the command in the table and hands it the rest of argv.
 */
#include "vgpuctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nl.h"

static const struct vgpuctl_cmd cmds[] = {
	{ "sessions", vgpuctl_sessions,
	  "[--json] [--module] [--control PATH | --socket PATH] [SESSION]",
	  "list vgpud's sessions (--module: those of /dev/vgpu)" },
	{ "checkpoint", vgpuctl_checkpoint,
	  "SESSION -o FILE [--compress] [--direct] [--incremental] [--stop] [--json] [--control PATH | --socket PATH]",
	  "write a session's GPU state to FILE (the program pauses while it is copied)" },
	{ "migrate", vgpuctl_migrate, "SESSION [--gpu N] [--json] [--control PATH | --socket PATH]",
	  "move a live session to another worker, on GPU N (the program waits meanwhile)" },
	{ "restore", vgpuctl_restore, "FILE [--gpu N] [--control PATH | --socket PATH]",
	  "give back a suspended session from FILE when its program reconnects" },
	{ "stats", vgpuctl_stats, "[--json]",
	  "show the module's counters" },
	{ "events", vgpuctl_events, "[--json] [--count N]",
	  "print session open/close events until interrupted (CAP_NET_ADMIN)" },
	{ "kill", vgpuctl_kill, "SESSION",
	  "end a session (CAP_NET_ADMIN)" },
	{ "version", vgpuctl_version, "",
	  "show the tool's version, the module's ABI and the daemon's socket" },
	{ "cdi", vgpuctl_cdi, "[--runtime-dir DIR] [--socket PATH]",
	  "print a CDI spec for containers (kind vgpu.dev/gpu)" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: vgpuctl COMMAND [ARGS]\n\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'vgpuctl COMMAND --help' shows a command's arguments.\n");
}

int vgpuctl_usage(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name))
			fprintf(stderr, "usage: vgpuctl %s %s\n  %s\n", name,
				cmds[i].args, cmds[i].help);
	return VGPUCTL_USAGE;
}

int vgpuctl_json_flag(int argc, char **argv, int *json)
{
	*json = 0;
	if (argc == 1)
		return 0;
	if (argc == 2 && !strcmp(argv[1], "--json")) {
		*json = 1;
		return 0;
	}
	return -1;
}

int vgpuctl_nl_open(struct vgpu_nl *nl)
{
	struct stat st;
	int ret = vgpu_nl_open(nl);

	if (!ret)
		return 0;
	if (ret != -ENOENT)
		vgpuctl_nl_error("cannot open the vgpu netlink family", ret);
	else if (stat("/sys/module/vgpu", &st))
		fprintf(stderr, "vgpuctl: vgpu kernel module not loaded (modprobe vgpu)\n");
	else
		fprintf(stderr, "vgpuctl: the vgpu module is loaded, but its "
			"netlink family lives in the host's initial network "
			"namespace: run vgpuctl there\n");
	return VGPUCTL_FAIL;
}

void vgpuctl_nl_error(const char *what, int err)
{
	const char *hint = "";

	if (err == -EPERM)
		hint = " (needs CAP_NET_ADMIN: run as root)";
	fprintf(stderr, "vgpuctl: %s: %s%s\n", what, strerror(-err), hint);
}

void vgpuctl_json_str(FILE *f, const char *s)
{
	const unsigned char *p;

	fputc('"', f);
	for (p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

const char *vgpuctl_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64, bytes);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f%c", v, units[u]);
	else
		snprintf(buf, len, "%.1f%c", v, units[u]);
	return buf;
}

int vgpuctl_parse_id(const char *s, uint64_t *id)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*id = v;
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return VGPUCTL_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return VGPUCTL_OK;
	}
	if (!strcmp(argv[1], "--version"))
		argv[1] = "version";
	for (i = 0; i < NCMDS; i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		if (argc == 3 && (!strcmp(argv[2], "-h") ||
				  !strcmp(argv[2], "--help"))) {
			printf("usage: vgpuctl %s %s\n  %s\n", cmds[i].name,
			       cmds[i].args, cmds[i].help);
			return VGPUCTL_OK;
		}
		return cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "vgpuctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return VGPUCTL_USAGE;
}
