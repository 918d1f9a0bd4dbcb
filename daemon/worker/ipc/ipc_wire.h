/* SPDX-License-Identifier: MIT */
/*
 * CUDA IPC between vgpu sessions (ipc_mem.c): what the 64 bytes of a
 * CUipcMemHandle / CUipcEventHandle hold, and what two workers say to each
 * other. Nothing in them is trusted by the side that reads it.
 */
#ifndef VGPU_IPC_WIRE_H
#define VGPU_IPC_WIRE_H

#include <stdint.h>

#include <cuda.h>

#define IPC_H_MAGIC	0x6d697076u	/* "vpim" */
#define IPC_H_VERSION	1u
#define IPC_KIND_MEM	1u
#define IPC_KIND_EVENT	2u

/* The handle as the program sees it: whoever holds these bytes may ask the
 * exporter's worker (its server named by @key) for export @id, proving it
 * with @secret; the exporter also wants the asker's session to be its
 * session's user. */
struct ipc_handle {
	uint32_t magic;
	uint16_t version, kind;
	uint64_t key;			/* the exporter's server: its socket's name */
	uint64_t id, secret;
	uint64_t bytes;			/* memory: the allocation's size */
	uint8_t zero[24];
};
_Static_assert(sizeof(struct ipc_handle) == sizeof(CUipcMemHandle), "64 bytes");
_Static_assert(sizeof(struct ipc_handle) == sizeof(CUipcEventHandle), "64 bytes");

/* Importer -> exporter, on a fresh connection to its abstract socket. */
struct ipc_ask {
	uint32_t magic, kind;
	uint32_t client_uid;		/* the asking session's user, as its supervisor saw it */
	uint32_t zero;
	uint64_t id, secret;
};

/* Exporter -> importer; a memory answer brings the descriptor of the
 * physical memory under the allocation, an event answer none. */
struct ipc_answer {
	uint32_t magic;
	int32_t status;			/* CUresult; 0: the descriptor comes with it */
	uint64_t size;			/* memory: the physical allocation's bytes */
	uint64_t off, bytes;		/* memory: the allocation in it */
	uint8_t data[64];		/* event: the backend's handle of the event */
};

/* The abstract socket name of server @key ("\0vgpu-ipc-<16 hex>"). */
#define IPC_NAME_FMT	"vgpu-ipc-%016llx"

#endif
