// SPDX-License-Identifier: MIT
/*
 * The host backend: a CUDA driver for machines without a GPU. One device,
 * "vgpu host device", compute capability 9.0, H100-like attributes; its
 * memory is host memory (host_memory.c), its modules are parsed images
 * whose kernels run as C (host_module.c, host_image.c, host_kernels.c), its
 * streams run everything at once in submission order (host_exec.c).
 *
 * This file: handle sets, cuInit, the device, contexts, error names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_array.h"
#include "host_backend.h"
#include "log.h"
#include "vgpu/proto.h"

struct host_state host = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.map = PTHREAD_RWLOCK_INITIALIZER,
	.primary = { .primary = 1 },
};

/* The thread's current context; may be stale, so checked against host.ctxs. */
static __thread struct host_ctx *current;

/* --- handle sets -------------------------------------------------------- */

#define TOMB ((void *)1)

static size_t slot_of(const struct host_set *s, const void *p)
{
	uint64_t h = (uintptr_t)p;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (size_t)h & (s->cap - 1);
}

static int set_grow(struct host_set *s)
{
	struct host_set n = { 0 };

	n.cap = s->cap ? s->cap * 2 : 64;
	if (s->live * 4 < s->cap)	/* mostly tombstones: rehash in place */
		n.cap = s->cap;
	n.slot = calloc(n.cap, sizeof(void *));
	if (!n.slot)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		void *p = s->slot[i];

		if (p && p != TOMB) {
			size_t j = slot_of(&n, p);

			while (n.slot[j])
				j = (j + 1) & (n.cap - 1);
			n.slot[j] = p;
			n.used++;
			n.live++;
		}
	}
	free(s->slot);
	*s = n;
	return 0;
}

int host_set_add(struct host_set *s, void *p)
{
	size_t i;

	if ((s->used + 1) * 2 > s->cap && set_grow(s))
		return -ENOMEM;
	i = slot_of(s, p);
	while (s->slot[i] && s->slot[i] != TOMB)
		i = (i + 1) & (s->cap - 1);
	if (!s->slot[i])
		s->used++;
	s->slot[i] = p;
	s->live++;
	return 0;
}

static size_t set_find(const struct host_set *s, const void *p)
{
	size_t i;

	if (!s->cap || !p || p == TOMB)
		return SIZE_MAX;
	for (i = slot_of(s, p); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == p)
			return i;
	return SIZE_MAX;
}

int host_set_has(const struct host_set *s, const void *p)
{
	return set_find(s, p) != SIZE_MAX;
}

void host_set_del(struct host_set *s, void *p)
{
	size_t i = set_find(s, p);

	if (i != SIZE_MAX) {
		s->slot[i] = TOMB;
		s->live--;
	}
}

void host_set_each(struct host_set *s, void (*fn)(void *p, void *arg), void *arg)
{
	for (size_t i = 0; i < s->cap; i++)
		if (s->slot[i] && s->slot[i] != TOMB)
			fn(s->slot[i], arg);
}

void host_set_free(struct host_set *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

/* --- init and driver ---------------------------------------------------- */

CUresult host_check_init(void)
{
	return __atomic_load_n(&host.initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
								    : CUDA_ERROR_NOT_INITIALIZED;
}

static uint64_t parse_mem(const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return HOST_DEFAULT_MEM;
	errno = 0;
	v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (errno || *end || !v) {
		vlog_warn("host backend: VGPU_HOST_DEVICE_MEM=%s is not a size; using %llu", s,
			  (unsigned long long)HOST_DEFAULT_MEM);
		return HOST_DEFAULT_MEM;
	}
	return v;
}

CUresult host_cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host.initialized) {
		host.mem_total = parse_mem(getenv("VGPU_HOST_DEVICE_MEM"));
		if (host_set_add(&host.ctxs, &host.primary)) {
			pthread_mutex_unlock(&host.lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		__atomic_store_n(&host.initialized, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&host.lock);
	return CUDA_SUCCESS;
}

CUresult host_cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = HOST_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

#define NAME(e) [e] = #e
static const char *const error_names[] = {
	NAME(CUDA_SUCCESS),
	NAME(CUDA_ERROR_INVALID_VALUE),
	NAME(CUDA_ERROR_OUT_OF_MEMORY),
	NAME(CUDA_ERROR_NOT_INITIALIZED),
	NAME(CUDA_ERROR_DEINITIALIZED),
	NAME(CUDA_ERROR_PROFILER_DISABLED),
	NAME(CUDA_ERROR_PROFILER_NOT_INITIALIZED),
	NAME(CUDA_ERROR_PROFILER_ALREADY_STARTED),
	NAME(CUDA_ERROR_PROFILER_ALREADY_STOPPED),
	NAME(CUDA_ERROR_STUB_LIBRARY),
	NAME(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER),
	NAME(CUDA_ERROR_DEVICE_UNAVAILABLE),
	NAME(CUDA_ERROR_NO_DEVICE),
	NAME(CUDA_ERROR_INVALID_DEVICE),
	NAME(CUDA_ERROR_DEVICE_NOT_LICENSED),
	NAME(CUDA_ERROR_INVALID_IMAGE),
	NAME(CUDA_ERROR_INVALID_CONTEXT),
	NAME(CUDA_ERROR_CONTEXT_ALREADY_CURRENT),
	NAME(CUDA_ERROR_MAP_FAILED),
	NAME(CUDA_ERROR_UNMAP_FAILED),
	NAME(CUDA_ERROR_ARRAY_IS_MAPPED),
	NAME(CUDA_ERROR_ALREADY_MAPPED),
	NAME(CUDA_ERROR_NO_BINARY_FOR_GPU),
	NAME(CUDA_ERROR_ALREADY_ACQUIRED),
	NAME(CUDA_ERROR_NOT_MAPPED),
	NAME(CUDA_ERROR_NOT_MAPPED_AS_ARRAY),
	NAME(CUDA_ERROR_NOT_MAPPED_AS_POINTER),
	NAME(CUDA_ERROR_ECC_UNCORRECTABLE),
	NAME(CUDA_ERROR_UNSUPPORTED_LIMIT),
	NAME(CUDA_ERROR_CONTEXT_ALREADY_IN_USE),
	NAME(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED),
	NAME(CUDA_ERROR_INVALID_PTX),
	NAME(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT),
	NAME(CUDA_ERROR_NVLINK_UNCORRECTABLE),
	NAME(CUDA_ERROR_JIT_COMPILER_NOT_FOUND),
	NAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION),
	NAME(CUDA_ERROR_JIT_COMPILATION_DISABLED),
	NAME(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY),
	NAME(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC),
	NAME(CUDA_ERROR_CONTAINED),
	NAME(CUDA_ERROR_INVALID_SOURCE),
	NAME(CUDA_ERROR_FILE_NOT_FOUND),
	NAME(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND),
	NAME(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED),
	NAME(CUDA_ERROR_OPERATING_SYSTEM),
	NAME(CUDA_ERROR_INVALID_HANDLE),
	NAME(CUDA_ERROR_ILLEGAL_STATE),
	NAME(CUDA_ERROR_LOSSY_QUERY),
	NAME(CUDA_ERROR_NOT_FOUND),
	NAME(CUDA_ERROR_NOT_READY),
	NAME(CUDA_ERROR_ILLEGAL_ADDRESS),
	NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
	NAME(CUDA_ERROR_LAUNCH_TIMEOUT),
	NAME(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING),
	NAME(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED),
	NAME(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED),
	NAME(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE),
	NAME(CUDA_ERROR_CONTEXT_IS_DESTROYED),
	NAME(CUDA_ERROR_ASSERT),
	NAME(CUDA_ERROR_TOO_MANY_PEERS),
	NAME(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED),
	NAME(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED),
	NAME(CUDA_ERROR_HARDWARE_STACK_ERROR),
	NAME(CUDA_ERROR_ILLEGAL_INSTRUCTION),
	NAME(CUDA_ERROR_MISALIGNED_ADDRESS),
	NAME(CUDA_ERROR_INVALID_ADDRESS_SPACE),
	NAME(CUDA_ERROR_INVALID_PC),
	NAME(CUDA_ERROR_LAUNCH_FAILED),
	NAME(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE),
	NAME(CUDA_ERROR_TENSOR_MEMORY_LEAK),
	NAME(CUDA_ERROR_NOT_PERMITTED),
	NAME(CUDA_ERROR_NOT_SUPPORTED),
	NAME(CUDA_ERROR_SYSTEM_NOT_READY),
	NAME(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
	NAME(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE),
	NAME(CUDA_ERROR_MPS_CONNECTION_FAILED),
	NAME(CUDA_ERROR_MPS_RPC_FAILURE),
	NAME(CUDA_ERROR_MPS_SERVER_NOT_READY),
	NAME(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED),
	NAME(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED),
	NAME(CUDA_ERROR_MPS_CLIENT_TERMINATED),
	NAME(CUDA_ERROR_CDP_NOT_SUPPORTED),
	NAME(CUDA_ERROR_CDP_VERSION_MISMATCH),
	NAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
	NAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
	NAME(CUDA_ERROR_STREAM_CAPTURE_MERGE),
	NAME(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED),
	NAME(CUDA_ERROR_STREAM_CAPTURE_UNJOINED),
	NAME(CUDA_ERROR_STREAM_CAPTURE_ISOLATION),
	NAME(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT),
	NAME(CUDA_ERROR_CAPTURED_EVENT),
	NAME(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD),
	NAME(CUDA_ERROR_TIMEOUT),
	NAME(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE),
	NAME(CUDA_ERROR_EXTERNAL_DEVICE),
	NAME(CUDA_ERROR_INVALID_CLUSTER_SIZE),
	NAME(CUDA_ERROR_FUNCTION_NOT_LOADED),
	NAME(CUDA_ERROR_INVALID_RESOURCE_TYPE),
	NAME(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION),
	NAME(CUDA_ERROR_KEY_ROTATION),
	NAME(CUDA_ERROR_UNKNOWN),
};
#undef NAME

CUresult host_cuGetErrorName(CUresult error, const char **str)
{
	if (!str)
		return CUDA_ERROR_INVALID_VALUE;
	if ((size_t)error >= sizeof(error_names) / sizeof(error_names[0]) || !error_names[error]) {
		*str = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*str = error_names[error];
	return CUDA_SUCCESS;
}

/* --- the device --------------------------------------------------------- */

static CUresult check_dev(CUdevice dev)
{
	CUresult r = host_check_init();

	if (r)
		return r;
	return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult host_cuDeviceGetCount(int *count)
{
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 1;
	return CUDA_SUCCESS;
}

CUresult host_cuDeviceGet(CUdevice *dev, int ordinal)
{
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = 0;
	return CUDA_SUCCESS;
}

CUresult host_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	static const char device_name[] = "vgpu host device";
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	strncpy(name, device_name, (size_t)len - 1);
	name[len - 1] = '\0';
	return CUDA_SUCCESS;
}

/* 16 bytes of FNV-1a over "vgpu-host-0" (two seeds), shaped as a v5-style UUID. */
static void device_uuid(unsigned char out[16])
{
	static const char seed[] = "vgpu-host-0";
	uint64_t h[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };

	for (int k = 0; k < 2; k++) {
		for (const char *c = seed; *c; c++) {
			h[k] ^= (unsigned char)*c;
			h[k] *= 0x100000001b3ull;
		}
		memcpy(out + 8 * k, &h[k], 8);
	}
	out[6] = (out[6] & 0x0f) | 0x50;
	out[8] = (out[8] & 0x3f) | 0x80;
}

CUresult host_cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	device_uuid((unsigned char *)uuid->bytes);
	return CUDA_SUCCESS;
}

/* A LUID is a Windows (WDDM) notion; Linux drivers have none. */
CUresult host_cuDeviceGetLuid(char *luid, unsigned int *mask, CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!luid || !mask)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult host_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = host.mem_total;
	return CUDA_SUCCESS;
}

/* H100 SXM5-like values; 0 where the emulation lacks the feature. */
static const int attrs[] = {
	[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = HOST_MAX_THREADS,
	[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] = 1024,
	[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] = 1024,
	[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z] = 64,
	[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] = 2147483647,
	[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] = 65535,
	[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z] = 65535,
	[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK] = HOST_SMEM_STATIC,
	[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY] = 65536,
	[CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32,
	[CU_DEVICE_ATTRIBUTE_MAX_PITCH] = 2147483647,
	[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK] = 65536,
	[CU_DEVICE_ATTRIBUTE_CLOCK_RATE] = 1980000,
	[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT] = 512,
	[CU_DEVICE_ATTRIBUTE_GPU_OVERLAP] = 1,
	[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = HOST_SM_COUNT,
	[CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT] = 0,
	[CU_DEVICE_ATTRIBUTE_INTEGRATED] = 0,
	[CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY] = 1,
	[CU_DEVICE_ATTRIBUTE_COMPUTE_MODE] = CU_COMPUTEMODE_DEFAULT,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH] = 131072,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH] = 131072,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT] = 65536,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH] = 16384,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT] = 16384,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH] = 16384,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS] = 2048,
	[CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT] = 512,
	[CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS] = 1,
	[CU_DEVICE_ATTRIBUTE_ECC_ENABLED] = 1,
	[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] = 0x1b,
	[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] = 0,
	[CU_DEVICE_ATTRIBUTE_TCC_DRIVER] = 0,
	[CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE] = 2619000,
	[CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH] = 5120,
	[CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE] = 52428800,
	[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] = 2048,
	[CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT] = 2,
	[CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING] = 1,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS] = 2048,
	[CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER] = 1,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE] = 8192,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE] = 8192,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE] = 32768,
	[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] = 0,
	[CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT] = 32,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS] = 2046,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH] = 131072,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT] = 65536,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH] = 16384,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT] = 16384,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH] = 16384,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS] = 2048,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS] = 2048,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS] = 2046,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH] = 268435456,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH] = 131072,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT] = 65000,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH] = 2097120,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT] = 32768,
	[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = HOST_CC_MAJOR,
	[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] = HOST_CC_MINOR,
	[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH] = 32768,
	[CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] = HOST_SMEM_PER_SM,
	[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR] = 65536,
	[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] = 0,
	[CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD] = 0,
	[CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO] = 2,
	[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS] = 0,
	[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS] = 0,
	[CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM] = 1,
	[CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1] = 0,
	[CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1] = 0,
	[CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1] = 0,
	[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH] = 1,
	[CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH] = 0,
	[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = HOST_SMEM_OPTIN,
	[CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES] = 0,
	[CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST] = 0,
	[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR] = 32,
	[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE] = HOST_PERSISTING_L2_MAX,
	[CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE] = 134213632,
	[CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK] = HOST_SMEM_RESERVED,
	[CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS] = 0,
	[CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING] = 0,
	[CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES] = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	[CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH] = 1,
	[CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS] = 1,	/* host_streamops.c */
	[CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR] = 1,
	[CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED] = 1,	/* host_ipc.c */
	[CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT] = 4,
	[CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED] = 1,
	[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS] = 1,
	[CU_DEVICE_ATTRIBUTE_NUMA_CONFIG] = CU_DEVICE_NUMA_CONFIG_NONE,
	[CU_DEVICE_ATTRIBUTE_NUMA_ID] = -1,
	[CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_MPS_ENABLED] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID] = -1,
	[CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK] = 0,
	[CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH] = 0,
	[CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID] = 0x233010de,	/* H100 SXM5 80GB */
	[CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID] = 0x16c110de,
	[CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED] = 0,
	[CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED] = 0,
};

_Static_assert(sizeof(attrs) / sizeof(attrs[0]) == CU_DEVICE_ATTRIBUTE_MAX,
	       "a device attribute of this cuda.h has no value");

CUresult host_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!pi || (unsigned)attrib == 0 || (unsigned)attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = attrs[attrib];
	return CUDA_SUCCESS;
}

/* --- contexts ----------------------------------------------------------- */

static const size_t limit_default[10] = {
	[CU_LIMIT_STACK_SIZE] = 1024,
	[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
	[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
	[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
	[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
	[CU_LIMIT_SHMEM_SIZE] = HOST_SMEM_PER_SM,
};

static void ctx_fresh(struct host_ctx *c)
{
	c->sticky = CUDA_SUCCESS;
	memcpy(c->limit, limit_default, sizeof(c->limit));
	c->cache = CU_FUNC_CACHE_PREFER_NONE;
}

static int ctx_live(const struct host_ctx *c)
{
	return host_set_has(&host.ctxs, c) && (!c->primary || c->active);
}

CUresult host_ctx_get(struct host_ctx **out)
{
	CUresult r = host_check_init();
	struct host_ctx *c = current;

	if (r)
		return r;
	if (!c || !ctx_live(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c->sticky)
		return c->sticky;
	*out = c;
	return CUDA_SUCCESS;
}

CUresult host_stream_ctx(CUstream s, struct host_ctx **out)
{
	struct host_stream *st = (struct host_stream *)s;
	CUresult r;

	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return host_ctx_get(out);
	if ((r = host_check_init()))
		return r;
	if (!host_set_has(&host.streams, st))
		return CUDA_ERROR_INVALID_HANDLE;
	if (st->ctx->sticky)
		return st->ctx->sticky;
	*out = st->ctx;
	return CUDA_SUCCESS;
}

void host_ctx_poison(struct host_ctx *ctx, CUresult err)
{
	pthread_mutex_lock(&host.lock);
	if (ctx_live(ctx) && !ctx->sticky)
		ctx->sticky = err;
	pthread_mutex_unlock(&host.lock);
}

static void drop_stream(void *p, void *ctx)
{
	struct host_stream *s = p;

	if (s->ctx == ctx)
		host_stream_destroy(s);
}

static void drop_event(void *p, void *ctx)
{
	struct host_event *e = p;

	if (e->ctx == ctx)
		host_event_destroy(e);
}

static void drop_module(void *p, void *ctx)
{
	struct host_module *m = p;

	if (m->ctx == ctx)
		host_module_destroy(m);
}

void host_ctx_release_objects(struct host_ctx *ctx)
{
	host_set_each(&host.streams, drop_stream, ctx);
	host_set_each(&host.events, drop_event, ctx);
	host_set_each(&host.modules, drop_module, ctx);
	host_texobj_release_ctx(ctx);
	host_array_release_ctx(ctx);
}

static CUresult check_ctx_flags(unsigned flags)
{
	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	switch (flags & CU_CTX_SCHED_MASK) {
	case CU_CTX_SCHED_AUTO:
	case CU_CTX_SCHED_SPIN:
	case CU_CTX_SCHED_YIELD:
	case CU_CTX_SCHED_BLOCKING_SYNC:
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult host_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host.primary.active) {
		ctx_fresh(&host.primary);
		host.primary.active = 1;
	}
	host.primary.retain++;
	pthread_mutex_unlock(&host.lock);
	*pctx = (CUcontext)&host.primary;
	return CUDA_SUCCESS;
}

static void primary_reset(void)
{
	host_ctx_release_objects(&host.primary);
	host.primary.active = 0;
	host.primary.retain = 0;
	host.primary.sticky = CUDA_SUCCESS;
}

CUresult host_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (!host.primary.retain)
		r = CUDA_ERROR_INVALID_CONTEXT;
	else if (--host.primary.retain == 0)
		primary_reset();
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	primary_reset();
	pthread_mutex_unlock(&host.lock);
	return CUDA_SUCCESS;
}

CUresult host_cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	CUresult r = check_dev(dev);

	if (r)
		return r;
	if ((r = check_ctx_flags(flags)))
		return r;
	pthread_mutex_lock(&host.lock);
	host.primary.flags = flags;
	pthread_mutex_unlock(&host.lock);
	return CUDA_SUCCESS;
}

CUresult host_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
				 CUdevice dev)
{
	CUresult r = check_dev(dev);
	struct host_ctx *c;

	if (r)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = check_ctx_flags(flags)))
		return r;
	if (params && (params->execAffinityParams || params->numExecAffinityParams ||
		       params->cigParams))
		return CUDA_ERROR_NOT_SUPPORTED;
	c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_fresh(c);
	c->flags = flags;
	pthread_mutex_lock(&host.lock);
	if (host_set_add(&host.ctxs, c)) {
		pthread_mutex_unlock(&host.lock);
		free(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&host.lock);
	current = c;
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

CUresult host_cuCtxDestroy_v2(CUcontext ctx)
{
	struct host_ctx *c = (struct host_ctx *)ctx;
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	/* A green context's goes with cuGreenCtxDestroy. */
	if (!host_set_has(&host.ctxs, c) || c->primary || c->green) {
		pthread_mutex_unlock(&host.lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	host_ctx_release_objects(c);
	host_set_del(&host.ctxs, c);
	pthread_mutex_unlock(&host.lock);
	free(c);
	if (current == c)
		current = NULL;
	return CUDA_SUCCESS;
}

CUresult host_cuCtxSetCurrent(CUcontext ctx)
{
	struct host_ctx *c = (struct host_ctx *)ctx;
	CUresult r = host_check_init();

	if (r)
		return r;
	pthread_mutex_lock(&host.lock);
	if (c && !ctx_live(c))
		r = CUDA_ERROR_INVALID_CONTEXT;
	else
		current = c;
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuCtxGetCurrent(CUcontext *ctx)
{
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	*ctx = (CUcontext)current;
	return CUDA_SUCCESS;
}

CUresult host_cuCtxSynchronize(void)
{
	struct host_ctx *c;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&c);
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct host_ctx *c;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&c);
	if (!r) {
		switch (limit) {
		case CU_LIMIT_STACK_SIZE:
		case CU_LIMIT_PRINTF_FIFO_SIZE:
		case CU_LIMIT_MALLOC_HEAP_SIZE:
		case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
		case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
			c->limit[limit] = value;
			break;
		case CU_LIMIT_PERSISTING_L2_CACHE_SIZE:
			/* The L2 set-aside for persisting lines: the driver
			 * keeps at most the device's maximum (cuCtxGetLimit
			 * tells what it kept). The emulation has no cache
			 * to set aside: the size is all there is of it. */
			c->limit[limit] = value < HOST_PERSISTING_L2_MAX ? value : HOST_PERSISTING_L2_MAX;
			break;
		default:
			r = CUDA_ERROR_UNSUPPORTED_LIMIT;
		}
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* Demotes the persisting lines of the L2 to normal ones: with no cache in
 * the emulation there are none, so only the driver's check is left. */
CUresult host_cuCtxResetPersistingL2Cache(void)
{
	struct host_ctx *c;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&c);
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct host_ctx *c;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&c);
	if (!r && !pvalue)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		switch (limit) {
		case CU_LIMIT_STACK_SIZE:
		case CU_LIMIT_PRINTF_FIFO_SIZE:
		case CU_LIMIT_MALLOC_HEAP_SIZE:
		case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
		case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
		case CU_LIMIT_SHMEM_SIZE:
		case CU_LIMIT_CIG_ENABLED:
		case CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED:
		case CU_LIMIT_PERSISTING_L2_CACHE_SIZE:
			*pvalue = c->limit[limit];
			break;
		default:
			r = CUDA_ERROR_UNSUPPORTED_LIMIT;
		}
	}
	pthread_mutex_unlock(&host.lock);
	return r;
}

CUresult host_cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct host_ctx *c;
	CUresult r;

	pthread_mutex_lock(&host.lock);
	r = host_ctx_get(&c);
	if (!r && (unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		c->cache = config;
	pthread_mutex_unlock(&host.lock);
	return r;
}

/* --- the table ---------------------------------------------------------- */

int vgpu_backend_host_open(struct vgpu_backend *b)
{
	b->name = "host";
	b->kind = VGPU_BACKEND_HOST;
#define FILL(fn) b->fn = host_##fn;
	VGPU_BACKEND_FUNCS(FILL)
VGPU_GEN_SLOTS_BEGIN
	VGPU_BACKEND_GEN_FUNCS(FILL)	/* weak: backend_missing_NAME unless emulated */
VGPU_GEN_SLOTS_END
#undef FILL
	return 0;
}
