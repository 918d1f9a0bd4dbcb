// SPDX-License-Identifier: MIT
/*
 * The host backend's sharing of device memory: an export is a sealed memfd
 * that maps the same bytes; an import takes only such a memfd (its name,
 * its seals, a size of whole granules) and refuses any other descriptor.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "host_backend.h"

#include "check.h"

static int refused(const struct vgpu_backend *B, int fd)
{
	CUmemGenericAllocationHandle h = 0;

	return B->cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
						 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
	       CUDA_ERROR_INVALID_VALUE;
}

int main(void)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
	};
	CUmemAccessDesc acc = {
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	const size_t g = HOST_GRANULARITY;
	CUmemGenericAllocationHandle h, hi;
	struct vgpu_backend B;
	CUdeviceptr a, b;
	size_t free0, free1, free2, total;
	CUcontext ctx;
	CUdevice dev;
	int fd = -1, other, fake;
	void *m;

	if (vgpu_backend_host_open(&B) || B.cuInit(0) || B.cuDeviceGet(&dev, 0) ||
	    B.cuDevicePrimaryCtxRetain(&ctx, dev) || B.cuCtxSetCurrent(ctx)) {
		printf("test_host_vmm: host backend did not start\n");
		return 1;
	}
	CHECK(B.cuMemGetInfo_v2(&free0, &total) == CUDA_SUCCESS);
	CHECK(B.cuMemCreate(&h, 2 * g, &prop, 0) == CUDA_SUCCESS, "create");
	CHECK(B.cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
	      CUDA_SUCCESS && fd >= 0, "export");
	CHECK(B.cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_FABRIC, 0) ==
	      CUDA_ERROR_NOT_SUPPORTED, "fabric handles are not supported");
	CHECK(B.cuMemExportToShareableHandle(NULL, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
	      CUDA_ERROR_INVALID_VALUE, "export to NULL");
	CHECK((fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
	      (F_SEAL_SHRINK | F_SEAL_GROW), "the exported memfd cannot change size");
	CHECK(ftruncate(fd, 0) < 0, "not even by its holder");

	/* Compression is a hint the emulated device does not take; the
	 * properties of a handle say what it was given. */
	{
		CUmemAllocationProp cp = prop, got;
		CUmemGenericAllocationHandle hc;
		int sup = -1;

		cp.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
		CHECK(B.cuDeviceGetAttribute(&sup, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED,
					     dev) == CUDA_SUCCESS && sup == 0);
		CHECK(B.cuMemCreate(&hc, g, &cp, 0) == CUDA_SUCCESS, "compressible memory asked");
		memset(&got, 0xff, sizeof(got));
		CHECK(B.cuMemGetAllocationPropertiesFromHandle(&got, hc) == CUDA_SUCCESS &&
		      got.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_NONE &&
		      got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.id == 0 &&
		      got.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
		      "plain memory given, and said");
		CHECK(B.cuMemGetAllocationPropertiesFromHandle(NULL, hc) == CUDA_ERROR_INVALID_VALUE);
		cp.allocFlags.compressionType = 0x7f;
		CHECK(B.cuMemCreate(&hi, g, &cp, 0) == CUDA_ERROR_INVALID_VALUE, "unknown compression");
		CHECK(B.cuMemRelease(hc) == CUDA_SUCCESS);
		CHECK(B.cuMemGetAllocationPropertiesFromHandle(&got, hc) == CUDA_ERROR_INVALID_VALUE,
		      "a released handle has no properties");
	}

	/* The same bytes through an import, mapped elsewhere. */
	CHECK(B.cuMemImportFromShareableHandle(&hi, (void *)(intptr_t)fd,
					       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
	      CUDA_SUCCESS, "import");
	CHECK(B.cuMemGetInfo_v2(&free1, &total) == CUDA_SUCCESS && free1 == free0 - 2 * g,
	      "an import takes no memory of its own");
	CHECK(B.cuMemAddressReserve(&a, 2 * g, 0, 0, 0) == CUDA_SUCCESS);
	CHECK(B.cuMemAddressReserve(&b, 2 * g, 0, 0, 0) == CUDA_SUCCESS);
	CHECK(B.cuMemMap(a, 2 * g, 0, h, 0) == CUDA_SUCCESS);
	CHECK(B.cuMemMap(b, 2 * g, 0, hi, 0) == CUDA_SUCCESS);
	CHECK(B.cuMemSetAccess(a, 2 * g, &acc, 1) == CUDA_SUCCESS);
	CHECK(B.cuMemSetAccess(b, 2 * g, &acc, 1) == CUDA_SUCCESS);
	memset((void *)(uintptr_t)a, 0x5c, 2 * g);
	CHECK(((unsigned char *)(uintptr_t)b)[2 * g - 1] == 0x5c, "one memory");
	m = mmap(NULL, 2 * g, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED && ((unsigned char *)m)[7] == 0x5c, "the descriptor maps it too");
	if (m != MAP_FAILED)
		munmap(m, 2 * g);

	/* What an import refuses. */
	CHECK(refused(&B, -1), "descriptor -1");
	other = open("/dev/null", O_RDONLY);
	CHECK(refused(&B, other), "/dev/null");
	close(other);
	fake = memfd_create("vgpu-host-device", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(fake >= 0 && ftruncate(fake, (off_t)g) == 0);
	CHECK(refused(&B, fake), "our name without the seals");
	CHECK(fcntl(fake, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
	CHECK(!refused(&B, fake), "our name with the seals: no worse than our own");
	close(fake);
	fake = memfd_create("vgpu-host-device", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(fake >= 0 && ftruncate(fake, (off_t)(g + 4096)) == 0 &&
	      fcntl(fake, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
	CHECK(refused(&B, fake), "a size off the granularity");
	close(fake);
	fake = memfd_create("something-else", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(fake >= 0 && ftruncate(fake, (off_t)g) == 0 &&
	      fcntl(fake, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
	CHECK(refused(&B, fake), "another name");
	close(fake);
	CHECK(B.cuMemImportFromShareableHandle(&hi, (void *)(intptr_t)fd,
					       CU_MEM_HANDLE_TYPE_FABRIC) ==
	      CUDA_ERROR_NOT_SUPPORTED, "fabric imports are not supported");
	CHECK(B.cuMemGetHandleForAddressRange(&other, a, 2 * g,
					      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) ==
	      CUDA_ERROR_NOT_SUPPORTED, "no dma-buf here");
	CHECK(B.cuMemGetHandleForAddressRange(&other, a, 2 * g, (CUmemRangeHandleType)0, 0) ==
	      CUDA_ERROR_INVALID_VALUE, "range handle of type 0");

	/* The exporter's memory lives while the importer maps it. */
	CHECK(B.cuMemUnmap(a, 2 * g) == CUDA_SUCCESS);
	CHECK(B.cuMemRelease(h) == CUDA_SUCCESS);
	CHECK(B.cuMemGetInfo_v2(&free2, &total) == CUDA_SUCCESS && free2 == free0,
	      "the exporter's budget is given back");
	CHECK(((unsigned char *)(uintptr_t)b)[0] == 0x5c, "the importer still sees the bytes");
	CHECK(B.cuMemUnmap(b, 2 * g) == CUDA_SUCCESS);
	CHECK(B.cuMemRelease(hi) == CUDA_SUCCESS);
	CHECK(B.cuMemAddressFree(a, 2 * g) == CUDA_SUCCESS);
	CHECK(B.cuMemAddressFree(b, 2 * g) == CUDA_SUCCESS);
	close(fd);
	printf("test_host_vmm: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
