// SPDX-License-Identifier: MIT
/*
 * ClusterPrototype {1734dc26-800d-4745-8726-c0f1e7dd8bca} (raw bytes; GUID
 * form 26dc3417-0d80-4547-...), 0x88 bytes: a size word and 16 functions,
 * "prototype cluster APIs" that predate the public cluster attributes.
 * cuBLASLt asks for it before every fp16/bf16 GEMM on Hopper.
 *
 * What was seen (tools/dark-trace on an H100, driver 580.159, a bf16 torch
 * matmul): cuBLASLt calls only [4](&vgpc, &mtpc), which returns 0 and two
 * arrays the driver allocated, one byte per TPC (66 on a 132-SM H100): the
 * TPC's virtual GPC and its index within it; then [13](vgpc, mtpc), which
 * frees them. The other slots' order and signatures are those of NVIDIA's
 * header for the table (reference/export_tables.md); none was seen called,
 * but tests/e2e/tables_driver, run natively on that H100, found [1], [3],
 * [5], [7], [8], [9], [10] and [12] giving what the public calls below
 * give. Through vgpu, [4] forwarded to the worker, the bf16 matmul gives
 * the native result.
 *
 *   [1]  set cluster dims (func, x, y, z)       cuFuncSetAttribute REQUIRED_CLUSTER_*
 *   [2]  set scheduling policy (func, policy)   ... CLUSTER_SCHEDULING_POLICY_PREFERENCE
 *   [3]  set non-portable size (func, enable)   ... NON_PORTABLE_CLUSTER_SIZE_ALLOWED
 *   [4]  TPC -> vGPC / mTPC mapping (&vgpc, &mtpc)   the worker asks the driver
 *   [5]  get cluster dims (func, &x, &y, &z)    cuFuncGetAttribute REQUIRED_CLUSTER_*
 *   [6]  get scheduling policy (func, &policy)  cuFuncGetAttribute
 *   [7]  get non-portable size (func, &enable)  cuFuncGetAttribute
 *   [8]  cluster launch supported (dev, &yes)   CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH
 *   [9]  max potential cluster size (func, block, smem, &size)
 *                                               cuOccupancyMaxPotentialClusterSize
 *   [10] max active clusters (func, block, smem, cluster size, &n)
 *                                               cuOccupancyMaxActiveClusters
 *   [11] override per-device max cluster size (dev, size) -> old size (a u32,
 *        not a CUresult): a test hook with no public equivalent; answers 0
 *   [12] dims must be set (func, &yes)          ... CLUSTER_SIZE_MUST_BE_SET
 *   [13] free [4]'s arrays (vgpc, mtpc)
 *   [14] CNP cluster attributes supported (&yes), [15] singleton vGPC base
 *        (dev, &base), [16] preferred cluster supported (dev, &yes): no
 *        public equivalent, stubs.
 */
#include "dark_api.h"
#include "log.h"

#include <stdlib.h>

static CUresult set_attr(CUfunction f, CUfunction_attribute a, int v)
{
	return cuFuncSetAttribute(f, a, v);
}

/* [1] */
static CUresult cluster_set_dims(CUfunction f, int x, int y, int z)
{
	CUresult rc = set_attr(f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, x);

	if (!rc)
		rc = set_attr(f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, y);
	if (!rc)
		rc = set_attr(f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, z);
	return rc;
}

/* [2] */
static CUresult cluster_set_policy(CUfunction f, int policy)
{
	return set_attr(f, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, policy);
}

/* [3] */
static CUresult cluster_set_nonportable(CUfunction f, int enable)
{
	return set_attr(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, enable);
}

/* [4] both arrays malloc'd here, freed by [13]. */
static CUresult cluster_tpc_mapping(unsigned char **vgpc, unsigned char **mtpc)
{
	CUdevice dev;
	CUresult rc;

	if (!vgpc || !mtpc)
		return CUDA_ERROR_INVALID_VALUE;
	rc = cuCtxGetDevice(&dev);
	if (rc)
		return rc;
	return vgpu_tpc_mapping(dev, vgpc, mtpc);
}

/* [5] */
static CUresult cluster_get_dims(CUfunction f, int *x, int *y, int *z)
{
	CUresult rc;

	if (!x || !y || !z)
		return CUDA_ERROR_INVALID_VALUE;
	rc = cuFuncGetAttribute(x, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f);
	if (!rc)
		rc = cuFuncGetAttribute(y, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f);
	if (!rc)
		rc = cuFuncGetAttribute(z, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f);
	return rc;
}

/* [6] */
static CUresult cluster_get_policy(CUfunction f, int *policy)
{
	return cuFuncGetAttribute(policy, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, f);
}

/* [7] */
static CUresult cluster_get_nonportable(CUfunction f, int *enable)
{
	return cuFuncGetAttribute(enable, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, f);
}

/* [8] */
static CUresult cluster_launch_supported(CUdevice dev, int *yes)
{
	return cuDeviceGetAttribute(yes, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev);
}

/* [9] one block shape, no cluster asked for: the largest that fits. */
static CUresult cluster_max_potential_size(CUfunction f, int block, size_t smem, int *size)
{
	CUlaunchConfig cfg = {
		.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = (unsigned int)block, .blockDimY = 1, .blockDimZ = 1,
		.sharedMemBytes = (unsigned int)smem,
	};

	if (block <= 0 || smem > UINT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	return cuOccupancyMaxPotentialClusterSize(size, f, &cfg);
}

/* [10] clusters of cluster_size blocks along x. */
static CUresult cluster_max_active(CUfunction f, int block, size_t smem, int cluster_size,
				   int *n)
{
	CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
	CUlaunchConfig cfg = {
		.gridDimX = (unsigned int)cluster_size, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = (unsigned int)block, .blockDimY = 1, .blockDimZ = 1,
		.sharedMemBytes = (unsigned int)smem, .attrs = &attr, .numAttrs = 1,
	};

	if (block <= 0 || cluster_size <= 0 || smem > UINT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	attr.value.clusterDim.x = (unsigned int)cluster_size;
	attr.value.clusterDim.y = 1;
	attr.value.clusterDim.z = 1;
	return cuOccupancyMaxActiveClusters(n, f, &cfg);
}

/* [11] returns the old size, not a CUresult: nothing is overridden here. */
static uint32_t cluster_override_max_size(int dev, uint32_t size)
{
	static int said;

	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		vlog_warn("dark API: CLUSTER_PROTOTYPE[11] (override device %d's largest cluster "
			  "to %u) is not emulated; nothing changed, answering 0 (said once)",
			  dev, size);
	return 0;
}

/* [12] */
static CUresult cluster_dims_must_be_set(CUfunction f, int *yes)
{
	return cuFuncGetAttribute(yes, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, f);
}

/* [13] */
static CUresult cluster_free_tpc_mapping(unsigned char *vgpc, unsigned char *mtpc)
{
	free(vgpc);
	free(mtpc);
	return CUDA_SUCCESS;
}

VGPU_DARK_TABLE(CLUSTER_PROTOTYPE,
	[1] = (const void *)cluster_set_dims,
	[2] = (const void *)cluster_set_policy,
	[3] = (const void *)cluster_set_nonportable,
	[4] = (const void *)cluster_tpc_mapping,
	[5] = (const void *)cluster_get_dims,
	[6] = (const void *)cluster_get_policy,
	[7] = (const void *)cluster_get_nonportable,
	[8] = (const void *)cluster_launch_supported,
	[9] = (const void *)cluster_max_potential_size,
	[10] = (const void *)cluster_max_active,
	[11] = (const void *)cluster_override_max_size,
	[12] = (const void *)cluster_dims_must_be_set,
	[13] = (const void *)cluster_free_tpc_mapping)
