// SPDX-License-Identifier: MIT
/*
 * Device queries, answered locally from the snapshot the worker wrote into
 * the shared region at connect (struct vgpu_device_info[], proto.h): never
 * a round trip. Device ordinals are the worker's (0 .. device_count-1).
 *
 * Peer access between two devices of one session is not offered (vgpu has
 * no cuCtxEnablePeerAccess): cuDeviceCanAccessPeer answers 0 and
 * cuDeviceGetP2PAttribute answers 0 for every attribute, which is what the
 * driver says of two GPUs without a P2P path.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "calls_hand_gen.h"
#include "driver.h"
#include "client.h"
#include "entry.h"
#include "init.h"
#include "log.h"

int vgpu_device_count(void)
{
	struct vgpu_session *s;

	if (vgpu_initialized())
		return 0;
	s = vgpu_session_peek();
	if (!s)
		return 0;
	return s->ring.device_count < VGPU_MAX_DEVICES ? (int)s->ring.device_count :
							 (int)VGPU_MAX_DEVICES;
}

CUresult vgpu_device_info(CUdevice dev, const struct vgpu_device_info **out)
{
	CUresult rc = vgpu_initialized();
	struct vgpu_session *s;

	if (rc)
		return rc;
	s = vgpu_session_peek();
	if (!s)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || (unsigned)dev >= s->ring.device_count || (unsigned)dev >= VGPU_MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = &s->ring.devinfo[dev];
	return CUDA_SUCCESS;
}

int vgpu_device_attr(CUdevice dev, CUdevice_attribute attr)
{
	const struct vgpu_device_info *d;

	if ((int)attr <= 0 || (int)attr >= VGPU_DEV_ATTRS || vgpu_device_info(dev, &d))
		return 0;
	return d->attr[attr];
}

/* The usual prologue: initialised, output pointer given, device valid. */
#define DEVICE_PROLOGUE(ptr, dev, d)				\
	do {							\
		CUresult rc_ = vgpu_enter_nonnull(ptr);		\
		if (!rc_)					\
			rc_ = vgpu_device_info((dev), &(d));	\
		if (rc_)					\
			return rc_;				\
	} while (0)

VGPU_EXPORT CUresult cuDeviceGetCount(int *count)
{
	CUresult rc = vgpu_enter_nonnull(count);

	if (rc)
		return rc;
	*count = vgpu_device_count();
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(device, ordinal, d);
	(void)d;
	*device = ordinal;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	const struct vgpu_device_info *d;
	size_t n;

	DEVICE_PROLOGUE(name, dev, d);
	if (len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* The snapshot lives in shared memory: never trust its terminator. */
	n = strnlen(d->name, sizeof(d->name) - 1);
	if (n > (size_t)len - 1)
		n = (size_t)len - 1;
	memcpy(name, d->name, n);
	name[n] = '\0';
	return CUDA_SUCCESS;
}

CUresult vgpu_hand_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(uuid, dev, d);
	memcpy(uuid->bytes, d->uuid, sizeof(uuid->bytes));
	return CUDA_SUCCESS;
}

/* v1 and v2 differ on MIG instances only (v1 gave the parent GPU's); the
 * worker hands out whole devices, so both are the snapshot's UUID. */

VGPU_EXPORT CUresult cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(luid, dev, d);
	if (!deviceNodeMask)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(luid, d->luid, sizeof(d->luid));
	*deviceNodeMask = d->luid_mask;
	return CUDA_SUCCESS;
}

/* The 32-bit original: clamped, where the driver would truncate. */
VGPU_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(bytes, dev, d);
	*bytes = d->total_mem > UINT_MAX ? UINT_MAX : (unsigned int)d->total_mem;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(bytes, dev, d);
	*bytes = (size_t)d->total_mem;
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(pi, dev, d);
	if ((int)attrib <= 0 || (int)attrib >= CU_DEVICE_ATTRIBUTE_MAX ||
	    (int)attrib >= VGPU_DEV_ATTRS)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = d->attr[attrib];
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(major, dev, d);
	if (!minor)
		return CUDA_ERROR_INVALID_VALUE;
	*major = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
	*minor = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
	return CUDA_SUCCESS;
}

VGPU_EXPORT CUresult cuDeviceGetProperties(CUdevprop *prop, CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(prop, dev, d);
	memset(prop, 0, sizeof(*prop));
	prop->maxThreadsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	prop->maxThreadsDim[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
	prop->maxThreadsDim[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y];
	prop->maxThreadsDim[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z];
	prop->maxGridSize[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
	prop->maxGridSize[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y];
	prop->maxGridSize[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z];
	prop->sharedMemPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
	prop->totalConstantMemory = d->attr[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY];
	prop->SIMDWidth = d->attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
	prop->memPitch = d->attr[CU_DEVICE_ATTRIBUTE_MAX_PITCH];
	prop->regsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
	prop->clockRate = d->attr[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
	prop->textureAlign = d->attr[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
	return CUDA_SUCCESS;
}

/* "domain:bus:device.0", the driver's format (13 bytes with the NUL). */
VGPU_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	const struct vgpu_device_info *d;
	char buf[32];

	DEVICE_PROLOGUE(pciBusId, dev, d);
	if (len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(buf, sizeof(buf), "%04x:%02x:%02x.0",
		 (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
		 (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
		 (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
	snprintf(pciBusId, (size_t)len, "%s", buf);
	return CUDA_SUCCESS;
}

/*
 * Accepts what the driver documents: "[domain]:[bus]:[device].[function]",
 * "[domain]:[bus]:[device]" and "[bus]:[device].[function]", in hex.
 */
static int parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *devno)
{
	unsigned a, b, c, f;
	int n = -1;

	if (sscanf(s, "%x:%x:%x.%x%n", &a, &b, &c, &f, &n) == 4 && n > 0 && !s[n])
		goto three;
	n = -1;
	if (sscanf(s, "%x:%x:%x%n", &a, &b, &c, &n) == 3 && n > 0 && !s[n])
		goto three;
	n = -1;
	if (sscanf(s, "%x:%x.%x%n", &b, &c, &f, &n) == 3 && n > 0 && !s[n]) {
		*dom = 0;
		*bus = b;
		*devno = c;
		return 0;
	}
	return -1;
three:
	*dom = a;
	*bus = b;
	*devno = c;
	return 0;
}

VGPU_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
	CUresult rc = vgpu_initialized();
	unsigned dom, bus, devno;
	int n;

	if (rc)
		return rc;
	if (!dev || !pciBusId)
		return CUDA_ERROR_INVALID_VALUE;
	if (parse_bus_id(pciBusId, &dom, &bus, &devno))
		return CUDA_ERROR_INVALID_VALUE;
	n = vgpu_device_count();
	for (int i = 0; i < n; i++) {
		const struct vgpu_device_info *d;

		if (vgpu_device_info(i, &d))
			continue;
		if ((unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] == dom &&
		    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] == bus &&
		    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] == devno) {
			*dev = i;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_DEVICE;
}

/* A device is never its own peer (the driver answers 0, CUDA_SUCCESS);
 * between two devices vgpu offers no peer access (see the top). */
VGPU_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(canAccessPeer, dev, d);
	if (vgpu_device_info(peerDev, &d))
		return CUDA_ERROR_INVALID_DEVICE;
	*canAccessPeer = 0;
	return CUDA_SUCCESS;
}

/* The driver: CUDA_ERROR_INVALID_DEVICE if either device is invalid or
 * both are the same device. */
VGPU_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
					     CUdevice srcDevice, CUdevice dstDevice)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(value, srcDevice, d);
	if (vgpu_device_info(dstDevice, &d) || srcDevice == dstDevice)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attrib) {
	case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
	case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
		*value = 0;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/*
 * The widest 1-D linear texture of @format with @numChannels: the device's
 * (deprecated) CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, the same
 * for every format; 2^27 elements if the snapshot lacks it.
 */
VGPU_EXPORT CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements,
							CUarray_format format,
							unsigned numChannels, CUdevice dev)
{
	const struct vgpu_device_info *d;
	int w;

	DEVICE_PROLOGUE(maxWidthInElements, dev, d);
	if (numChannels != 1 && numChannels != 2 && numChannels != 4)
		return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned)format == 0 || format == CU_AD_FORMAT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	w = d->attr[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH];
	*maxWidthInElements = w > 0 ? (size_t)w : (size_t)1 << 27;
	return CUDA_SUCCESS;
}

/* Execution affinity (SM partitions of a context) is not offered. */
VGPU_EXPORT CUresult cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type,
						    CUdevice dev)
{
	const struct vgpu_device_info *d;

	DEVICE_PROLOGUE(pi, dev, d);
	(void)d;
	if ((unsigned)type >= CU_EXEC_AFFINITY_TYPE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = 0;
	return CUDA_SUCCESS;
}
