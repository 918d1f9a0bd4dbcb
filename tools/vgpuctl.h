/* SPDX-License-Identifier: MIT */
/*
 * vgpuctl: the administrator's command. vgpuctl.c holds main() and the
 * command table; each subcommand lives in its own vgpuctl_<name>.c.
 * A command returns the process's exit status: 0 success, 1 failure,
 * 2 usage.
 */
#ifndef VGPUCTL_H
#define VGPUCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifndef VGPU_VERSION
#define VGPU_VERSION "0.1"
#endif

#define VGPUCTL_OK	0
#define VGPUCTL_FAIL	1
#define VGPUCTL_USAGE	2

struct vgpu_nl;

struct vgpuctl_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);	/* argv[0] is the command name */
	const char *args;			/* for usage lines */
	const char *help;
};

int vgpuctl_sessions(int argc, char **argv);
int vgpuctl_stats(int argc, char **argv);
int vgpuctl_events(int argc, char **argv);
int vgpuctl_kill(int argc, char **argv);
int vgpuctl_version(int argc, char **argv);
int vgpuctl_cdi(int argc, char **argv);
int vgpuctl_checkpoint(int argc, char **argv);
int vgpuctl_migrate(int argc, char **argv);
int vgpuctl_restore(int argc, char **argv);

/* "usage: vgpuctl NAME ARGS" for one command, to stderr; returns 2. */
int vgpuctl_usage(const char *name);
/* Parses the only option most commands take; -1 on anything else. */
int vgpuctl_json_flag(int argc, char **argv, int *json);

/*
 * Opens the "vgpu" netlink family, printing why it could not (module not
 * loaded, another network namespace, ...). 0 or VGPUCTL_FAIL.
 */
int vgpuctl_nl_open(struct vgpu_nl *nl);
/* Prints "vgpuctl: WHAT: reason" for a -errno from the netlink helpers. */
void vgpuctl_nl_error(const char *what, int err);

/* The daemon's socket: $VGPU_SOCKET, else the daemon's default. */
const char *vgpuctl_socket_path(void);

/* A JSON string literal, quotes included. */
void vgpuctl_json_str(FILE *f, const char *s);
/* 1.5M, 64K, 512: a byte count for a table column. */
const char *vgpuctl_size(uint64_t bytes, char *buf, size_t len);

/* vgpuctl_progress.c: a line on a terminal (stderr) showing the bytes of a
 * session's state the daemon has copied, until stop; NULL when not shown
 * (VGPU_PROGRESS_MS: how often it asks, default 200). */
/* vgpuctl_daemon.c: a connection to vgpud's control socket, or -errno. */
int vgpuctl_ctl_connect(const char *path);

struct vgpuctl_progress;
struct vgpuctl_progress *vgpuctl_progress_start(const char *ctl_path, uint64_t session,
						const char *what);
void vgpuctl_progress_stop(struct vgpuctl_progress *p, uint64_t bytes, bool ok);
/* A decimal session id; 0 on success, -1 if @s is not one. */
int vgpuctl_parse_id(const char *s, uint64_t *id);

/* vgpuctl_daemon.c: vgpud's control socket. */
/* The options every daemon command takes, and the session id. */
struct vgpuctl_ctl_args {
	int json;
	const char *control, *socket, *id;
};
/* Takes argv[*i] (with its value) if it is one of those: 1; else 0. */
int vgpuctl_ctl_arg(int argc, char **argv, int *i, struct vgpuctl_ctl_args *a);
/* --control, else beside --socket, VGPU_SOCKET or the default socket. */
const char *vgpuctl_control_path(const char *control, const char *socket, char *buf, size_t len);
/* 0 listed, 1 failed (said why), -errno: nobody to ask at path. */
int vgpuctl_daemon_sessions(const char *path, uint64_t id, int json);
/* Says why path could not be asked. */
void vgpuctl_control_error(const char *path, int err);

#endif
