// SPDX-License-Identifier: MIT
/*
 * Occupancy: the worker's answers, cached per function and (block size,
 * dynamic shared memory, flags); the potential block size searched here
 * as cuda_runtime.h does; available dynamic shared memory computed from
 * the attributes alone.
 */
#include <pthread.h>
#include <string.h>

#include "driver.h"
#include "init.h"
#include "module.h"

/* ---- occupancy ------------------------------------------------------------ */

static CUresult max_active_blocks(struct vgpu_func *f, int block, size_t smem,
				  unsigned int flags, int *out)
{
	struct func *fn = func_of(f);
	struct module *m = mod_of(f->mod);
	struct occ *o = &fn->occ[((unsigned int)block / 32 + smem / 256 + flags) % OCC_SLOTS];
	struct vgpu_cqe cqe = { 0 };
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&m->lock);
	if (o->block == block && o->smem == smem && o->flags == flags) {
		*out = o->blocks;
		goto out;
	}
	rc = vgpu_call5(VGPU_OP_OCCUPANCY, m->m.ctx->id, 0, f->id, (uint64_t)block, smem, flags, 0,
			&cqe);
	if (rc)
		goto out;
	*out = (int)cqe.val[0];
	*o = (struct occ){ .block = block, .flags = flags, .smem = smem, .blocks = *out };
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static CUresult occupancy(int *numBlocks, CUfunction func, int blockSize, size_t smem,
			  unsigned int flags)
{
	struct vgpu_func *f;
	CUresult rc = vgpu_func_get(func, &f);

	if (rc)
		return rc;
	if (!numBlocks || blockSize <= 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	return max_active_blocks(f, blockSize, smem, flags, numBlocks);
}

VGPU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
								 int blockSize,
								 size_t dynamicSMemSize)
{
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

VGPU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
{
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

/*
 * The cluster queries: the function, then the output and launch
 * configuration checked, the query's own attribute read and checked (the
 * configuration's last one of its kind, as the driver reads them), then
 * one round trip. cuOccupancyMaxActiveClusters sends the cluster
 * dimensions; cuOccupancyMaxPotentialClusterSize ignores them, as the
 * driver documents, and sends its scheduling policy, if any.
 */
static CUresult cluster_query(uint16_t op, int *out, CUfunction func, const CUlaunchConfig *config)
{
	CUlaunchAttributeID id = op == VGPU_OP_OCCUPANCY_CLUSTERS ?
		CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION :
		CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
	CUlaunchAttributeValue v;
	struct vgpu_cqe cqe = { 0 };
	struct vgpu_func *f;
	uint64_t arg;
	CUresult rc = vgpu_func_get(func, &f);

	if (rc)
		return rc;
	if (!out || !config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	memset(&v, 0, sizeof(v));
	for (unsigned int i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == id)
			v = config->attrs[i].value;
	if (op == VGPU_OP_OCCUPANCY_CLUSTERS) {
		if (v.clusterDim.x > 0xffffu * 2 || v.clusterDim.y > 0xffff ||
		    v.clusterDim.z > 0xffff)
			return CUDA_ERROR_INVALID_VALUE;
		arg = VGPU_DIM_PACK(v.clusterDim.x, v.clusterDim.y, v.clusterDim.z);
	} else {
		if (v.clusterSchedulingPolicyPreference > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING ||
		    config->gridDimX > 0x7fffffff || config->blockDimX > 0x7fffffff)
			return CUDA_ERROR_INVALID_VALUE;
		arg = v.clusterSchedulingPolicyPreference;
	}
	if (config->gridDimY > 0xffff || config->gridDimZ > 0xffff ||
	    config->blockDimY > 0xffff || config->blockDimZ > 0xffff)
		return CUDA_ERROR_INVALID_VALUE;
	rc = vgpu_call5(op, f->mod->ctx->id, 0, f->id,
			VGPU_DIM_PACK(config->gridDimX, config->gridDimY, config->gridDimZ),
			VGPU_DIM_PACK(config->blockDimX, config->blockDimY, config->blockDimZ),
			config->sharedMemBytes, arg, &cqe);
	if (!rc)
		*out = (int)cqe.val[0];
	return rc;
}

VGPU_EXPORT CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
						  const CUlaunchConfig *config)
{
	return cluster_query(VGPU_OP_OCCUPANCY_CLUSTERS, numClusters, func, config);
}

VGPU_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func,
							const CUlaunchConfig *config)
{
	return cluster_query(VGPU_OP_OCCUPANCY_CLUSTER_SIZE, clusterSize, func, config);
}

/* The search cuda_runtime.h's cudaOccupancyMaxPotentialBlockSize makes:
 * every warp multiple from the limit down, keeping the best thread count. */
static CUresult potential_block_size(int *minGridSize, int *blockSize, CUfunction func,
				     CUoccupancyB2DSize b2smem, size_t smem, int limit,
				     unsigned int flags)
{
	struct vgpu_func *f;
	CUdevice dev;
	int warp, sm_threads, sms, dev_max, best = 0, best_blocks = 0, best_threads = 0;
	CUresult rc = vgpu_func_get(func, &f);

	if (rc)
		return rc;
	if (!minGridSize || !blockSize || limit < 0 ||
	    flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	dev = f->mod->ctx->dev;
	warp = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
	sm_threads = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
	sms = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	dev_max = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
	if (warp <= 0)
		warp = 32;
	if (!limit || limit > dev_max)
		limit = dev_max;
	if (limit > vgpu_func_attr_read(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
		limit = vgpu_func_attr_read(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
	for (int aligned = (limit + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
		int try = aligned < limit ? aligned : limit, blocks = 0;

		rc = max_active_blocks(f, try, b2smem ? b2smem(try) : smem, flags, &blocks);
		if (rc)
			return rc;
		if (try * blocks > best_threads) {
			best = try;
			best_blocks = blocks;
			best_threads = try * blocks;
		}
		if (best_threads == sm_threads)
			break;
	}
	*minGridSize = best_blocks * sms;
	*blockSize = best;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
						      CUfunction func,
						      CUoccupancyB2DSize blockSizeToDynamicSMemSize,
						      size_t dynamicSMemSize, int blockSizeLimit)
{
	return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
				    dynamicSMemSize, blockSizeLimit, 0);
}

VGPU_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
	int *minGridSize, int *blockSize, CUfunction func,
	CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
	unsigned int flags)
{
	return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
				    dynamicSMemSize, blockSizeLimit, flags);
}

/*
 * From the attributes alone: the SM's shared memory split numBlocks ways
 * in 128-byte units, less the per-block reservation and the kernel's
 * static shared memory, capped by the opt-in limit. Register pressure is
 * not considered.
 */
VGPU_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize,
							     CUfunction func, int numBlocks,
							     int blockSize)
{
	struct vgpu_func *f;
	CUdevice dev;
	long per_sm, per_block, cap, stat;
	CUresult rc = vgpu_func_get(func, &f);

	if (rc)
		return rc;
	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	dev = f->mod->ctx->dev;
	stat = vgpu_func_attr_read(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
	*dynamicSmemSize = 0;
	if (blockSize > vgpu_func_attr_read(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) ||
	    numBlocks > vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR) ||
	    (long)numBlocks * blockSize >
		    vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR))
		return CUDA_SUCCESS;
	per_sm = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	per_block = per_sm / numBlocks / 128 * 128 -
		    vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK) - stat;
	cap = vgpu_device_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) - stat;
	if (per_block > cap)
		per_block = cap;
	if (per_block > 0)
		*dynamicSmemSize = per_block;
	return CUDA_SUCCESS;
}
