/* SPDX-License-Identifier: MIT */
/*
 * The supervisor: one io_uring event loop that accepts clients on the
 * daemon's socket, checks who they are, and hands each to a worker from a
 * pool started ahead of time (each with its CUDA context ready). It reaps
 * workers that end and keeps the pool full. It never touches CUDA itself,
 * so forking workers from it is safe.
 */
#ifndef VGPU_SUPERVISOR_H
#define VGPU_SUPERVISOR_H

#include <sys/types.h>

#include "admission.h"
#include "worker.h"

struct supervisor_config {
	const char *socket_path;
	const char *backend;		/* "cuda" or "host" */
	unsigned int pool_size;		/* idle workers kept ready */
	unsigned int max_sessions;
	unsigned int socket_mode;	/* permissions of the socket file */
	const char *control_path;	/* vgpuctl's socket (include/vgpu/ctl.h) */
	unsigned int control_mode;	/* its permissions: who may connect (0666) */
	gid_t admin_gid;		/* --admin-group: acts on every session; -1: none */
	const char *checkpoint_on_exit;	/* folder: suspend every session there on SIGTERM */
	const char *restore;		/* folder: sessions suspended there come back */
	unsigned int drain_timeout;	/* seconds a drain may take */
	struct admission_limits limits;	/* per user: sessions, waiting, hello time */
	uid_t worker_uid;		/* what workers serving root's programs become */
	gid_t worker_gid;
	struct worker_config worker;
};

/* Runs until SIGTERM/SIGINT; returns the exit status. */
int supervisor_run(const struct supervisor_config *cfg);

#endif
