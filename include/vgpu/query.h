/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The GPU query: what vgpu's NVML (runtime/nvml/, libnvidia-ml.so.1) asks
 * the daemon, costing no worker and no CUDA context.
 *
 *   1. The client connects to the daemon's client socket, as for a session,
 *      and sends a struct vgpu_hello with flags VGPU_HELLO_QUERY alone, no
 *      carrier, no rings, no descriptors (any that come are closed).
 *   2. The supervisor answers itself with one message: a struct
 *      vgpu_query_reply and process_count struct vgpu_query_process after
 *      it, then closes the connection. status < 0 (-errno) is a refusal:
 *      -EINVAL a malformed query, -EAGAIN no worker has described the GPUs
 *      yet (ask again shortly). A connection refused at accept reads a
 *      struct vgpu_welcome instead (VGPU_PROTO_MAGIC, status < 0).
 *
 * The answer is the caller's view, by SO_PEERCRED: memory used and the
 * processes are those of the caller's own sessions; an admin (root, the
 * admin group) sees every session and VGPU_QUERY_ALL says so.
 */
#ifndef VGPU_QUERY_H
#define VGPU_QUERY_H

#include <stdint.h>

#include "proto.h"

#define VGPU_QUERY_MAGIC	0x51504756u	/* "VGPQ" */
#define VGPU_QUERY_VERSION	1u
#define VGPU_QUERY_MAX_PROCS	1024u		/* one per session at most */

#define VGPU_QUERY_ALL		(1u << 0)	/* the caller sees every tenant */

struct vgpu_query_device {
	char name[96];			/* NUL-terminated */
	uint8_t uuid[16];
	uint64_t total_mem;		/* what the caller may use: the device's
					 * memory (the tenant's limit, once
					 * limits exist) */
	uint64_t used_mem;		/* held by the caller's sessions */
	uint32_t pci_domain, pci_bus, pci_device;
	uint32_t pci_id;		/* device << 16 | vendor; 0: unknown */
	uint32_t pci_subsystem;		/* subsystem device << 16 | vendor */
	int32_t cc_major, cc_minor;
	uint32_t multiprocessors;
	uint32_t reserved;		/* 0 */
};

struct vgpu_query_process {
	uint32_t pid;			/* as the daemon sees it (its pid namespace) */
	uint32_t gpu;			/* the device its session's memory is on */
	uint64_t used_mem;
	uint64_t session;
};

struct vgpu_query_reply {
	uint32_t magic;			/* VGPU_QUERY_MAGIC */
	uint32_t version;		/* VGPU_QUERY_VERSION */
	int32_t status;			/* 0, or -errno */
	uint32_t flags;			/* VGPU_QUERY_* */
	uint32_t device_count;		/* <= VGPU_MAX_DEVICES */
	uint32_t process_count;		/* <= VGPU_QUERY_MAX_PROCS */
	uint32_t cuda_driver_version;	/* what cuDriverGetVersion answers */
	uint32_t backend;		/* VGPU_BACKEND_* */
	char driver_version[80];	/* the kernel driver's, "" when none */
	struct vgpu_query_device dev[VGPU_MAX_DEVICES];
	struct vgpu_query_process proc[];	/* process_count entries */
};

_Static_assert(sizeof(struct vgpu_query_device) == 168, "query device layout");
_Static_assert(sizeof(struct vgpu_query_process) == 24, "query process layout");
_Static_assert(sizeof(struct vgpu_query_reply) == 112 + 16 * 168, "query reply layout");

#endif
