// SPDX-License-Identifier: MIT
/*
 * Compressible memory, as NVIDIA's cudaCompressibleMemory sample asks for
 * it: cuMemCreate with allocFlags.compressionType GENERIC, the handle's
 * properties saying whether the driver gave it (compression is a hint:
 * the device's GENERIC_COMPRESSION_SUPPORTED tells), then mapped, written,
 * read and used by a kernel. Under vgpu the session is then checkpointed
 * and restored in the middle (the process-checkpoint API on itself): the
 * memory, and what its properties say, are the same after.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "driver_check.h"

#define BYTES (6u << 20)

static uint32_t word(size_t i)
{
	return (uint32_t)(i * 2246822519u) + 7;
}

static void check_data(CUdeviceptr p, CUfunction poke, uint32_t v, const char *when)
{
	uint32_t *h = malloc(BYTES);
	void *args[] = { &p, &v };
	size_t bad = BYTES / 4;

	if (!h)
		exit(1);
	EXPECT_OK(cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
		  "a kernel writes the compressible memory %s", when);
	EXPECT_OK(cuMemcpyDtoH(h, p, BYTES), "the compressible memory read %s", when);
	for (size_t i = 1; i < BYTES / 4 && bad == BYTES / 4; i++)
		if (h[i] != word(i))
			bad = i;
	expect(bad == BYTES / 4 && h[0] == v, "the compressible memory holds what was written",
	       CUDA_SUCCESS);
	free(h);
}

/* The compression the handle's properties report; 0xff when they cannot
 * be read (a check of its own when @loud: stdout is compared with a
 * native run, so what vgpu alone checks prints nothing there). */
static unsigned char granted(CUmemGenericAllocationHandle h, bool loud)
{
	CUmemAllocationProp got;
	CUresult rc;

	memset(&got, 0xff, sizeof(got));
	rc = cuMemGetAllocationPropertiesFromHandle(&got, h);
	if (loud)
		expect(!rc, "the handle's properties", rc);
	return rc ? 0xff : got.allocFlags.compressionType;
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction poke;
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUmemGenericAllocationHandle h;
	CUdeviceptr p;
	size_t gran = 0, size;
	int supported = -1, me = getpid();
	unsigned char got;
	uint32_t *w = malloc(BYTES);

	if (!w)
		return 1;
	MUST(cuInit(0));
	MUST(cuDeviceGet(&dev, 0));
	MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
	MUST(cuCtxSetCurrent(ctx));
	MUST(cuModuleLoadData(&mod, POKE_U32_PTX));
	MUST(cuModuleGetFunction(&poke, mod, "vgpu_poke_u32"));
	EXPECT_OK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, dev),
		  "GENERIC_COMPRESSION_SUPPORTED");
	printf("generic compression supported: %d\n", supported);

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
	MUST(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	size = (BYTES + gran - 1) / gran * gran;
	MUST(cuMemAddressReserve(&p, size, 0, 0, 0));
	EXPECT_OK(cuMemCreate(&h, size, &prop, 0), "cuMemCreate of compressible memory");
	got = granted(h, true);
	printf("compression granted: %u\n", got);
	/* The hint is taken only where the device compresses. */
	expect(got == CU_MEM_ALLOCATION_COMP_NONE || (supported == 1 && got == CU_MEM_ALLOCATION_COMP_GENERIC),
	       "the properties say what the device can give", CUDA_SUCCESS);
	EXPECT_OK(cuMemMap(p, size, 0, h, 0), "map it");
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	EXPECT_OK(cuMemSetAccess(p, size, &acc, 1), "open it");
	for (size_t i = 0; i < BYTES / 4; i++)
		w[i] = word(i);
	EXPECT_OK(cuMemcpyHtoD(p, w, BYTES), "write it (the sample's cudaMemcpy)");
	check_data(p, poke, 0xc0ffee, "before");

	if (under_vgpu()) {	/* vgpu's checkpoint in the middle */
		CUresult rc = cuCheckpointProcessLock(me, NULL);

		if (!rc)
			rc = cuCheckpointProcessCheckpoint(me, NULL);
		if (!rc)
			rc = cuCheckpointProcessRestore(me, NULL);
		if (!rc)
			rc = cuCheckpointProcessUnlock(me, NULL);
		expect_vgpu(!rc, "checkpointed and restored in the middle", rc);
		expect_vgpu(granted(h, false) == got, "the same compression after the restore", CUDA_SUCCESS);
	}
	check_data(p, poke, 0xbeef, "after");

	EXPECT_OK(cuMemUnmap(p, size), "unmap it");
	EXPECT_OK(cuMemRelease(h), "release it");
	EXPECT_OK(cuMemAddressFree(p, size), "free its addresses");
	free(w);
	return checks_done("compress_driver");
}
