// SPDX-License-Identifier: MIT
/*
 * Peer access between contexts. vgpu offers none (runtime/api/device.c:
 * cuDeviceCanAccessPeer answers 0 for every pair, a device never being its
 * own peer), so enabling it fails the way the driver (580) fails a pair
 * that cannot access each other, a context of the same device included,
 * CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, and disabling it finds it never
 * enabled. The context and flag checks come first, as the
 * driver's do. Between two devices of a session the atomic capabilities
 * of the link are none, as cuDeviceGetP2PAttribute answers 0 (device.c).
 */
#include "driver.h"
#include "entry.h"
#include "handles.h"
#include "init.h"

static CUresult peer_pair(CUcontext peer)
{
	struct vgpu_ctx *cur, *p;
	CUresult rc = vgpu_enter_ctx(&cur);

	if (rc)
		return rc;
	if (!peer)
		return CUDA_ERROR_INVALID_CONTEXT;
	return vgpu_ctx_resolve(peer, &p);
}

VGPU_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	CUresult rc = peer_pair(peerContext);

	if (rc)
		return rc;
	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

VGPU_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
	CUresult rc = peer_pair(peerContext);

	return rc ? rc : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

/* The driver: INVALID_DEVICE for a bad device or one device twice, then
 * INVALID_VALUE for NULL arrays, no operations or an unknown one. */
VGPU_EXPORT CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int *capabilities,
						      const CUatomicOperation *operations,
						      unsigned int count, CUdevice srcDevice,
						      CUdevice dstDevice)
{
	const struct vgpu_device_info *d;
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (vgpu_device_info(srcDevice, &d) || vgpu_device_info(dstDevice, &d) ||
	    srcDevice == dstDevice)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!capabilities || !operations || !count)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < count; i++)
		if ((unsigned int)operations[i] >= CU_ATOMIC_OPERATION_MAX)
			return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < count; i++)
		capabilities[i] = 0;
	return CUDA_SUCCESS;
}
