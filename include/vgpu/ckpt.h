/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * vgpu checkpoint file: one session's GPU context, as the daemon writes it
 * (vgpuctl checkpoint) and reads it back (vgpuctl restore). Everything is
 * little-endian; every size and offset below is pinned by _Static_assert.
 *
 * Layout
 *   offset 0     struct vgpu_ckpt_header (512 bytes), then zeros up to
 *                VGPU_CKPT_DATA_OFFSET (4 KiB).
 *   4 KiB ...    the sections' stored bytes, in the order they were written,
 *                each starting on a 4 KiB boundary (so they can be read with
 *                O_DIRECT or mapped); the gaps between them are zeros.
 *   table_offset the section table: section_count struct vgpu_ckpt_section,
 *                4 KiB aligned, the last thing in the file.
 *   file_size    the end: the file is exactly this long.
 *
 * Checksums: CRC32C (Castagnoli), the iSCSI/ext4 one, of
 *   - the header's first 508 bytes (header_crc, its last field),
 *   - the section table (table_crc, in the header),
 *   - each section's stored bytes (vgpu_ckpt_section.crc),
 * and the padding must be zero, so any flipped byte anywhere is detected
 * (a CRC catches every burst of up to 32 bits). They guard against damage,
 * not against someone who rewrites a file on purpose: a reader still
 * bounds-checks every field as hostile input.
 *
 * Writing (common/ckpt/ckpt.h): the file is written under PATH.tmp.<pid>,
 * sections first (streamed, several buffers in flight), then the table,
 * then the header; fsync, rename to PATH, fsync the directory. A file
 * without a valid header is never at PATH, and a failed checkpoint leaves
 * the previous one in place.
 *
 * Sections
 *   type says what the payload is (VGPU_CKPT_SEC_*); id is the type's key
 *   (an allocation's address, a module image's content hash prefix, ...);
 *   (type, id) is unique among a file's sections. Tables of records
 *   (ALLOCS, MODULES, ...) hold `aux` fixed-size records, then a blob that
 *   the records' *_off fields index (names, global values); raw_len bounds
 *   both. A type this build does not know is refused unless the section
 *   carries VGPU_CKPT_SF_OPTIONAL, so new optional types need no new version.
 *
 * Compression (--compress): a section's stored bytes may be one zstd frame
 *   (compression = VGPU_CKPT_COMP_ZSTD; libzstd.so.1 at run time); its CRC
 *   is of the compressed bytes, raw_len the size after decompression.
 *
 * Incremental checkpoints (--incremental): the header names the parent
 *   file (parent_id = its file_id, parent_header_crc = its header_crc,
 *   which covers its table and so every section's CRC). A section with
 *   VGPU_CKPT_SF_PARENT stores nothing (offset = stored_len = 0): its
 *   contents are those of the section with the same (type, id) in the
 *   parent, which may itself refer to its own parent. Its raw_len, crc and
 *   aux are copies of the parent section's, so a reader can check that the
 *   parent it is given is the one the file was made against. The PARENT
 *   section holds the parent's path when it was written (no NUL); a reader
 *   looks there, then for the same name beside the child.
 *   Every checkpoint carries a DIGESTS section: each allocation's content
 *   digest when it was copied (VGPU_CKPT_DIGEST below), computed on the GPU
 *   for device memory. An incremental checkpoint stores an allocation's
 *   bytes only when its digest now differs from the parent's record of the
 *   same address and size; otherwise its ALLOC_DATA refers to the parent.
 *
 * Compatibility: a reader refuses another magic, another version, unknown
 *   header or section flags, unknown compression, non-zero reserved fields;
 *   and, when asked, a file made on another GPU or a newer driver.
 */
#ifndef VGPU_CKPT_H
#define VGPU_CKPT_H

#include <stdint.h>

#define VGPU_CKPT_MAGIC		"VGPUCKPT"	/* 8 bytes, no NUL */
#define VGPU_CKPT_VERSION	1u
#define VGPU_CKPT_DATA_OFFSET	4096u	/* first section; also the alignment */
#define VGPU_CKPT_ALIGN		4096u
#define VGPU_CKPT_MAX_SECTIONS	(1u << 20)	/* a reader refuses more */

/* Header flags. */
#define VGPU_CKPT_F_COMPRESSED	(1ull << 0)	/* some section is compressed */
#define VGPU_CKPT_F_INCREMENTAL	(1ull << 1)	/* parent_id names the parent */
#define VGPU_CKPT_F_ALL		(VGPU_CKPT_F_COMPRESSED | VGPU_CKPT_F_INCREMENTAL)

/* The GPU a checkpoint was made on, as the CUDA driver reports it. */
struct vgpu_ckpt_gpu {
	char name[96];		/* cuDeviceGetName; NUL-terminated, NUL-padded */
	uint8_t uuid[16];	/* cuDeviceGetUuid */
	uint32_t cc_major;	/* compute capability */
	uint32_t cc_minor;
	uint64_t total_mem;	/* bytes, cuDeviceTotalMem */
};

struct vgpu_ckpt_header {
	uint8_t magic[8];	/* VGPU_CKPT_MAGIC */
	uint32_t version;	/* VGPU_CKPT_VERSION */
	uint32_t header_size;	/* sizeof(struct vgpu_ckpt_header) */
	uint64_t flags;		/* VGPU_CKPT_F_* */
	uint32_t driver_version; /* cuDriverGetVersion: 13000 = 13.0 */
	uint32_t section_count;
	uint64_t table_offset;	/* 4 KiB aligned, after every section */
	uint64_t table_size;	/* section_count * sizeof(struct vgpu_ckpt_section) */
	uint64_t file_size;	/* table_offset + table_size */
	uint64_t session_id;	/* the daemon's session the state came from */
	uint64_t created_ns;	/* CLOCK_REALTIME when written */
	uint8_t file_id[16];	/* random; names this file for its children */
	uint8_t parent_id[16];	/* INCREMENTAL: the parent's file_id; else 0 */
	uint32_t parent_header_crc; /* INCREMENTAL: the parent's header_crc */
	uint32_t table_crc;	/* CRC32C of the section table */
	struct vgpu_ckpt_gpu gpu;
	uint8_t reserved[268];	/* zero */
	uint32_t header_crc;	/* CRC32C of the 508 bytes before it */
};

/* Section types. 1..0xffff: vgpu's; the rest reserved. */
enum {
	VGPU_CKPT_SEC_ALLOCS = 1,	/* struct vgpu_ckpt_alloc records */
	VGPU_CKPT_SEC_ALLOC_DATA,	/* one allocation's bytes; id = its addr */
	VGPU_CKPT_SEC_MODULES,		/* struct vgpu_ckpt_module records */
	VGPU_CKPT_SEC_MODULE_IMAGE,	/* an image as loaded; id = image_id */
	VGPU_CKPT_SEC_GLOBALS,		/* struct vgpu_ckpt_global records */
	VGPU_CKPT_SEC_FUNCTIONS,	/* struct vgpu_ckpt_function records */
	VGPU_CKPT_SEC_STREAMS,		/* struct vgpu_ckpt_stream records */
	VGPU_CKPT_SEC_EVENTS,		/* struct vgpu_ckpt_event records */
	VGPU_CKPT_SEC_CONTEXT,		/* struct vgpu_ckpt_setting records */
	VGPU_CKPT_SEC_HANDLES,		/* struct vgpu_ckpt_handle records */
	VGPU_CKPT_SEC_VA,		/* struct vgpu_ckpt_va records: windows */
	VGPU_CKPT_SEC_CLIENT,		/* one struct vgpu_ckpt_client */
	VGPU_CKPT_SEC_DIGESTS,		/* struct vgpu_ckpt_digest records */
	VGPU_CKPT_SEC_PARENT,		/* INCREMENTAL: the parent's path, as text */

	/* Later types come in blocks: 20..24 the client's virtual memory, 25..29
	 * memory pools, 30..31 streams' attributes, 32..33 generated calls, 40..44
	 * CUDA arrays and texture objects, 50..54 graphs. A type in a gap is
	 * unknown. */
	VGPU_CKPT_SEC_VMM_RESV = 20,	/* struct vgpu_ckpt_va records: reservations */
	VGPU_CKPT_SEC_VMM_ALLOCS,	/* struct vgpu_ckpt_vmm_alloc records */
	VGPU_CKPT_SEC_VMM_MAPS,		/* struct vgpu_ckpt_vmm_map records */
	VGPU_CKPT_SEC_VMM_DATA,		/* one allocation's bytes; id = its handle id */
	VGPU_CKPT_SEC_VMM_STATE,	/* one struct vgpu_ckpt_vmm_state */

	VGPU_CKPT_SEC_POOLS = 25,	/* struct vgpu_ckpt_pool records */
	VGPU_CKPT_SEC_POOL_BLOCKS,	/* struct vgpu_ckpt_pool_block records */
	VGPU_CKPT_SEC_STREAM_ATTRS = 30, /* struct vgpu_ckpt_stream_attr records */
	VGPU_CKPT_SEC_CALLS = 32,	/* struct vgpu_ckpt_call records, then their bytes */
	VGPU_CKPT_SEC_ARRAYS = 40,	/* struct vgpu_ckpt_array records (ckpt_array.h) */
	VGPU_CKPT_SEC_ARRAY_DATA,	/* an array's bytes; id = array id << 32 | level */
	VGPU_CKPT_SEC_TEXOBJS,		/* struct vgpu_ckpt_texobj records (ckpt_array.h) */
	VGPU_CKPT_SEC_GRAPHS = 50,	/* struct vgpu_ckpt_graph records, then their bodies */
	VGPU_CKPT_SEC_GRAPH_EXECS,	/* struct vgpu_ckpt_graph_exec records, then bodies */
	VGPU_CKPT_SEC_NR		/* first type not known to this version */
};

/* Section flags. */
#define VGPU_CKPT_SF_PARENT	(1u << 0)	/* contents are in the parent file */
#define VGPU_CKPT_SF_OPTIONAL	(1u << 1)	/* a reader may skip an unknown type */
#define VGPU_CKPT_SF_ALL	(VGPU_CKPT_SF_PARENT | VGPU_CKPT_SF_OPTIONAL)

/* Section compression. */
#define VGPU_CKPT_COMP_NONE	0u
#define VGPU_CKPT_COMP_ZSTD	1u	/* one zstd frame */

struct vgpu_ckpt_section {
	uint32_t type;		/* VGPU_CKPT_SEC_* */
	uint32_t flags;		/* VGPU_CKPT_SF_* */
	uint64_t id;		/* the type's key */
	uint64_t offset;	/* of the stored bytes; 4 KiB aligned; 0 with SF_PARENT */
	uint64_t stored_len;	/* bytes in this file */
	uint64_t raw_len;	/* bytes after decompression (= stored_len if none) */
	uint32_t crc;		/* CRC32C of the stored bytes */
	uint32_t compression;	/* VGPU_CKPT_COMP_* */
	uint64_t aux;		/* record tables: the number of records; else 0 */
	uint64_t reserved;	/* zero */
};

/* ---- records of the table sections ---------------------------------- */

/* Memory kinds. */
#define VGPU_CKPT_MEM_DEVICE	1u	/* cuMemAlloc & co., in the session's VA window */
#define VGPU_CKPT_MEM_HOST	2u	/* pinned host memory from the shared pool */
#define VGPU_CKPT_MEM_MAPPED	3u	/* pinned host memory mapped into the device */

struct vgpu_ckpt_alloc {
	uint64_t addr;		/* device address, or the host pool address */
	uint64_t size;
	uint32_t kind;		/* VGPU_CKPT_MEM_* */
	uint32_t flags;		/* as the program asked (cuMemHostAlloc flags, ...) */
	uint64_t handle;	/* the client's handle for it, if any */
	uint64_t data_id;	/* its ALLOC_DATA section's id (normally addr) */
	uint32_t device;	/* ordinal within the session */
	uint32_t reserved0;
	uint64_t reserved[2];
};

struct vgpu_ckpt_module {
	uint64_t handle;	/* CUmodule / CUlibrary as the client knows it */
	uint64_t image_id;	/* its MODULE_IMAGE section's id */
	uint8_t hash[32];	/* content hash of the image (the daemon's cache key) */
	uint32_t kind;		/* 1 module, 2 library */
	uint32_t reserved0;
	uint64_t reserved;
};

struct vgpu_ckpt_global {
	uint64_t module;	/* module handle */
	uint64_t addr;		/* device address of the global */
	uint64_t size;
	uint64_t value_off;	/* its value: size bytes at blob + value_off */
	uint32_t name_off;	/* name: name_len bytes at blob + name_off */
	uint32_t name_len;
};

struct vgpu_ckpt_function {
	uint64_t handle;	/* CUfunction / CUkernel */
	uint64_t module;	/* module or library handle */
	uint32_t name_off;
	uint32_t name_len;
	uint32_t kind;		/* 1 function, 2 kernel */
	uint32_t reserved;
};

/* A generated call (include/vgpu/calls.def, CKPT `set` or a `new` handle)
 * whose effect a restore makes again by running it again, in file order:
 * the ring entry as the worker took it. Its payload is len bytes at blob +
 * off. A restore runs only generated opcodes that are recorded so. */
/*
 * GRAPHS: one record a graph the session made (a graph a child graph node
 * owns travels in its node). GRAPH_EXECS: one an instance, its body the
 * graph it was made from as the instance holds it now (parameters set and
 * updated since, nodes disabled). A body: struct vgpu_ckpt_graph_body, then
 * each node (struct vgpu_ckpt_graph_node and its len bytes, padded to 8),
 * then the edges (struct vgpu_ckpt_graph_edge). A node's bytes: a kernel's,
 * struct vgpu_kernel_node and its parameter block (include/vgpu/proto.h),
 * then, if any is set, its launch attributes (u32 count, u32 0, then each:
 * u32 CUlaunchAttributeID, u32 0, the 64-byte CUlaunchAttributeValue);
 * any other's, struct vgpu_node_params, and for a child graph node the body
 * of its graph after it (its id in the struct's id: the client's id of that
 * graph, 0: none).
 */
struct vgpu_ckpt_graph {
	uint32_t id;		/* the client's */
	uint32_t ctx;		/* its context's id */
	uint64_t off, len;	/* its body in the blob */
	uint32_t next_node;	/* the next node id the worker issues */
	uint32_t reserved;	/* 0 */
};

struct vgpu_ckpt_graph_exec {
	uint32_t id;		/* the client's */
	uint32_t ctx;
	uint64_t flags;		/* as instantiated */
	uint32_t graph;		/* the graph it was made from, unchanged in shape
				 * since (its node ids name the body's nodes); 0:
				 * destroyed since */
	uint32_t reserved;	/* 0 */
	uint64_t off, len;	/* its body in the blob */
};

struct vgpu_ckpt_graph_body {
	uint32_t nodes, edges;
};

#define VGPU_CKPT_GNODE_OFF	(1u << 0)	/* disabled in the instance */
#define VGPU_CKPT_GNODE_KNOWN	(1u << 1)	/* ... for good: its graph's node is gone */

struct vgpu_ckpt_graph_node {
	uint32_t id;		/* the client's node id (an instance's: its graph's node) */
	uint32_t type;		/* CUgraphNodeType */
	uint32_t len;		/* the bytes that follow (before padding) */
	uint32_t flags;		/* VGPU_CKPT_GNODE_* */
};

struct vgpu_ckpt_graph_edge {
	uint32_t from, to;	/* node indexes in the body */
	uint8_t data[8];	/* CUgraphEdgeData */
};

struct vgpu_ckpt_call {
	uint32_t opcode;
	uint32_t ctx;		/* sqe.ctx */
	uint32_t stream;	/* sqe.stream */
	uint32_t flags;		/* sqe.flags */
	uint64_t arg[5];	/* sqe.arg */
	uint64_t off;		/* payload */
	uint32_t len;
	uint32_t object;	/* the generated-kind object it makes or sets (id) */
};

struct vgpu_ckpt_stream {
	uint64_t handle;
	uint32_t flags;		/* CU_STREAM_* */
	int32_t priority;
	uint32_t device;
	uint32_t reserved[3];
};

/* One attribute of one stream (CUstreamAttrID, the value as the driver
 * gave it: a CUstreamAttrValue). Written for every stream and for each
 * context's NULL stream; a restore sets a NULL stream's only where it
 * differs from the driver's default. A file without the section restores
 * streams with the driver's defaults. */
struct vgpu_ckpt_stream_attr {
	uint64_t handle;	/* the stream; 0: the NULL stream of ctx */
	uint32_t attr;		/* CUstreamAttrID */
	uint32_t ctx;		/* handle 0: the context's id */
	uint8_t value[64];
};

struct vgpu_ckpt_event {
	uint64_t handle;
	uint32_t flags;		/* CU_EVENT_* */
	uint32_t recorded;	/* 1: had completed when quiesced */
	uint64_t reserved;
};

/* Context limits and settings: key = VGPU_CKPT_CTX_* << 16 | the CUDA enum. */
#define VGPU_CKPT_CTX_LIMIT	1u	/* CUlimit -> value */
#define VGPU_CKPT_CTX_CACHE	2u	/* cache config */
#define VGPU_CKPT_CTX_SHMEM	3u	/* shared memory config */
#define VGPU_CKPT_CTX_FLAGS	4u	/* context flags */

struct vgpu_ckpt_setting {
	uint32_t key;
	uint32_t reserved;
	uint64_t value;
};

/* Handle kinds (the runtime's VGPU_K_* order). */
#define VGPU_CKPT_HANDLE_CTX	0u
#define VGPU_CKPT_HANDLE_STREAM	1u
#define VGPU_CKPT_HANDLE_EVENT	2u
#define VGPU_CKPT_HANDLE_MODULE	3u
#define VGPU_CKPT_HANDLE_FUNC	4u

struct vgpu_ckpt_handle {
	uint64_t client;	/* the handle the program holds */
	uint32_t kind;		/* VGPU_CKPT_HANDLE_* */
	uint32_t reserved;
	uint64_t object;	/* the object's key in its own section */
};

struct vgpu_ckpt_va {
	uint64_t base;		/* cuMemAddressReserve result; restore asks for it */
	uint64_t size;
	uint32_t device;
	uint32_t reserved;
	uint64_t granularity;
};

/*
 * Content digest of an allocation (VGPU_CKPT_DIGEST 1): its bytes as
 * little-endian 64-bit words w[i] (the last one zero-padded), and
 *   a = sum over i of fmix_a(w[i] ^ (i * 0x9e3779b97f4a7c15 + 0x632be59bd9b4e019))
 *   b = sum over i of fmix_b(rotl(w[i], 29) ^ (i * 0xd6e8feb86659fd93 + 0xa0761d6478bd642f))
 * modulo 2^64, fmix_a the splitmix64 finalizer, fmix_b murmur3's fmix64
 * (common/content_digest.h). Sums of position-keyed bijections: any change
 * of the bytes changes (a, b) but with a chance of about 2^-128, and the
 * sums split among GPU threads in any order.
 */
#define VGPU_CKPT_DIGEST	1u

struct vgpu_ckpt_digest {
	uint64_t data_id;	/* the allocation's ALLOC_DATA id (its address) */
	uint64_t size;
	uint64_t a, b;
	uint32_t kind;		/* VGPU_CKPT_DIGEST; records of other kinds are ignored */
	uint32_t reserved;
};

/* A memory pool (cuMemPoolCreate, or a device's default pool). */
#define VGPU_CKPT_POOL_DESTROYED	(1u << 0)	/* destroyed; blocks still live */
#define VGPU_CKPT_POOL_FOLLOW		(1u << 1)	/* CU_MEMPOOL_ATTR_REUSE_* */
#define VGPU_CKPT_POOL_OPPORTUNISTIC	(1u << 2)
#define VGPU_CKPT_POOL_INTERNAL		(1u << 3)
#define VGPU_CKPT_POOL_FLAGS		0xfu

struct vgpu_ckpt_pool {
	uint32_t id;		/* the worker's id (the runtime's handle names it) */
	uint32_t device;	/* ordinal within the session */
	uint32_t handle_types;	/* CUmemAllocationHandleType bits it was made with */
	uint32_t flags;		/* VGPU_CKPT_POOL_* */
	uint64_t threshold;	/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	uint64_t max_size;	/* as created (0: none) */
	uint64_t reserved_high, used_high;
	uint64_t reserved[2];
};

/* A block a pool holds; its bytes are an ALLOCS record of the same address. */
#define VGPU_CKPT_BLOCK_LIVE	1u	/* handed to the program */
#define VGPU_CKPT_BLOCK_CACHED	2u	/* freed, kept for reuse */

struct vgpu_ckpt_pool_block {
	uint64_t addr;
	uint64_t size;
	uint32_t pool;		/* vgpu_ckpt_pool.id */
	uint32_t state;		/* VGPU_CKPT_BLOCK_* */
	uint64_t reserved;
};

/* Who the session was: only that process may take it up again. */
struct vgpu_ckpt_client {
	uint32_t pid;		/* as SO_PEERCRED saw it */
	uint32_t uid;
	char comm[16];
	uint64_t reserved[2];
};

/*
 * The client's virtual memory API (cuMemAddressReserve, cuMemCreate,
 * cuMemMap): sections 20-24, written only when the session holds such
 * state, and never optional (a reader that skipped them would give the
 * program back its addresses unmapped). Device ordinals are the session's.
 */

struct vgpu_ckpt_vmm_alloc {
	uint64_t handle;	/* the id the client knows it by */
	uint64_t size;
	uint32_t device;
	uint32_t refs;		/* handle references (0: released, still mapped) */
	uint32_t handle_types;	/* requestedHandleTypes */
	uint8_t compression, rdma;	/* allocFlags */
	uint16_t usage;
	uint64_t reserved[2];	/* [0]: 1 imported (now private), 2 exported; [1] zero */
};

/* A piece of a mapping with one access (cuMemSetAccess may split one). */
struct vgpu_ckpt_vmm_map {
	uint64_t start, size;
	uint64_t map_start, map_size;	/* the cuMemMap call's range */
	uint64_t handle;	/* the allocation mapped */
	uint64_t offset;	/* of start in the allocation */
	uint8_t access[16];	/* CU_MEM_ACCESS_FLAGS_* per device ordinal */
	uint64_t reserved;
};

struct vgpu_ckpt_vmm_state {
	uint64_t next_handle;	/* the id the next cuMemCreate gets */
	uint64_t reserved[3];
};

_Static_assert(sizeof(struct vgpu_ckpt_gpu) == 128, "gpu identity layout");
_Static_assert(sizeof(struct vgpu_ckpt_client) == 40, "client record layout");
_Static_assert(sizeof(struct vgpu_ckpt_header) == 512, "header layout");
_Static_assert(__builtin_offsetof(struct vgpu_ckpt_header, gpu) == 112, "header layout");
_Static_assert(__builtin_offsetof(struct vgpu_ckpt_header, header_crc) == 508, "header layout");
_Static_assert(sizeof(struct vgpu_ckpt_section) == 64, "section entry layout");
_Static_assert(sizeof(struct vgpu_ckpt_alloc) == 64, "alloc record layout");
_Static_assert(sizeof(struct vgpu_ckpt_module) == 64, "module record layout");
_Static_assert(sizeof(struct vgpu_ckpt_global) == 40, "global record layout");
_Static_assert(sizeof(struct vgpu_ckpt_function) == 32, "function record layout");
_Static_assert(sizeof(struct vgpu_ckpt_stream) == 32, "stream record layout");
_Static_assert(sizeof(struct vgpu_ckpt_event) == 24, "event record layout");
_Static_assert(sizeof(struct vgpu_ckpt_stream_attr) == 80, "stream attribute record layout");
_Static_assert(sizeof(struct vgpu_ckpt_setting) == 16, "setting record layout");
_Static_assert(sizeof(struct vgpu_ckpt_graph) == 32, "graph record layout");
_Static_assert(sizeof(struct vgpu_ckpt_graph_exec) == 40, "graph instance record layout");
_Static_assert(sizeof(struct vgpu_ckpt_graph_node) == 16, "graph node record layout");
_Static_assert(sizeof(struct vgpu_ckpt_graph_edge) == 16, "graph edge record layout");
_Static_assert(sizeof(struct vgpu_ckpt_handle) == 24, "handle record layout");
_Static_assert(sizeof(struct vgpu_ckpt_va) == 32, "va record layout");
_Static_assert(sizeof(struct vgpu_ckpt_digest) == 40, "digest record layout");
_Static_assert(sizeof(struct vgpu_ckpt_pool) == 64, "pool record layout");
_Static_assert(sizeof(struct vgpu_ckpt_pool_block) == 32, "pool block record layout");

_Static_assert(sizeof(struct vgpu_ckpt_vmm_alloc) == 48, "vmm alloc record layout");
_Static_assert(sizeof(struct vgpu_ckpt_vmm_map) == 72, "vmm map record layout");
_Static_assert(sizeof(struct vgpu_ckpt_vmm_state) == 32, "vmm state record layout");

#endif
