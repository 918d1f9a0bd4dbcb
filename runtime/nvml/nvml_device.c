// SPDX-License-Identifier: MIT
/*
 * NVML's device calls: what a device is comes from nvmlInit's answer;
 * memory and processes are asked again, and are the caller's: its own
 * sessions' use and processes (all tenants' for an admin), never another
 * tenant's. The tenant's memory limit, once the daemon has limits, is
 * what the daemon answers as a device's total.
 *
 * Utilization is not answered (NVML_ERROR_NOT_SUPPORTED, the weak
 * default): the tenant's share needs the GPU time of each session, which
 * the daemon does not measure yet, and the device's own figure would show
 * every other tenant's work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_state.h"

#define NO_MIG 0xFFFFFFFFu	/* gpuInstanceId, computeInstanceId without MIG */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	const struct vgpu_query_reply *r = nvml_snapshot();

	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = r->device_count;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return nvmlDeviceGetCount_v2(deviceCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	const struct vgpu_query_reply *r = nvml_snapshot();

	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= r->device_count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = nvml_handle(index);
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
	unsigned int i;
	nvmlReturn_t rc = nvml_device(device, &i);

	if (rc)
		return rc;
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = i;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	unsigned int i;
	nvmlReturn_t rc = nvml_device(device, &i);

	return rc ? rc : nvml_copy_str(name, length, nvml_snapshot()->dev[i].name);
}

/* "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits, as nvidia-smi -L shows. */
static void uuid_str(const uint8_t u[16], char out[NVML_DEVICE_UUID_BUFFER_SIZE])
{
	int n = snprintf(out, NVML_DEVICE_UUID_BUFFER_SIZE, "GPU-");

	for (int b = 0; b < 16; b++)
		n += snprintf(out + n, NVML_DEVICE_UUID_BUFFER_SIZE - n, "%s%02x",
			      b == 4 || b == 6 || b == 8 || b == 10 ? "-" : "", u[b]);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	char s[NVML_DEVICE_UUID_BUFFER_SIZE];
	unsigned int i;
	nvmlReturn_t rc = nvml_device(device, &i);

	if (rc)
		return rc;
	uuid_str(nvml_snapshot()->dev[i].uuid, s);
	return nvml_copy_str(uuid, length, s);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	const struct vgpu_query_reply *r = nvml_snapshot();
	char s[NVML_DEVICE_UUID_BUFFER_SIZE];

	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned int i = 0; i < r->device_count; i++) {
		uuid_str(r->dev[i].uuid, s);
		if (!strcasecmp(s, uuid)) {
			*device = nvml_handle(i);
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

static void pci_info(const struct vgpu_query_device *d, nvmlPciInfo_t *pci)
{
	memset(pci, 0, sizeof(*pci));
	pci->domain = d->pci_domain;
	pci->bus = d->pci_bus;
	pci->device = d->pci_device;
	pci->pciDeviceId = d->pci_id;
	pci->pciSubSystemId = d->pci_subsystem;
	snprintf(pci->busId, sizeof(pci->busId), "%08x:%02x:%02x.0", d->pci_domain & 0xffffffffu,
		 d->pci_bus & 0xffu, d->pci_device & 0x1fu);
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04x:%02x:%02x.0",
		 d->pci_domain & 0xffffu, d->pci_bus & 0xffu, d->pci_device & 0x1fu);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	unsigned int i;
	nvmlReturn_t rc = nvml_device(device, &i);

	if (rc)
		return rc;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	pci_info(&nvml_snapshot()->dev[i], pci);
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	return nvmlDeviceGetPciInfo_v3(device, pci);
}

/* NVML 1's struct: busId of 16 bytes first, then the numbers and room. */
struct pci_info_v1 {
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	unsigned int reserved[4];
};

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, struct pci_info_v1 *pci)
{
	nvmlPciInfo_t p;
	nvmlReturn_t rc = nvmlDeviceGetPciInfo_v3(device, pci ? &p : NULL);

	if (rc)
		return rc;
	memset(pci, 0, sizeof(*pci));
	memcpy(pci->busId, p.busIdLegacy, sizeof(pci->busId));
	pci->domain = p.domain;
	pci->bus = p.bus;
	pci->device = p.device;
	pci->pciDeviceId = p.pciDeviceId;
	pci->pciSubSystemId = p.pciSubSystemId;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
	const struct vgpu_query_reply *r = nvml_snapshot();
	unsigned int dom, bus, dev;

	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	if (!pciBusId || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* "domain:bus:device.function" with a domain of 4 or 8 digits, or "bus:device". */
	if (sscanf(pciBusId, "%x:%x:%x", &dom, &bus, &dev) != 3) {
		dom = 0;
		if (sscanf(pciBusId, "%x:%x", &bus, &dev) != 2)
			return NVML_ERROR_INVALID_ARGUMENT;
	}
	for (unsigned int i = 0; i < r->device_count; i++)
		if (r->dev[i].pci_domain == dom && r->dev[i].pci_bus == bus &&
		    r->dev[i].pci_device == dev) {
			*device = nvml_handle(i);
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
							    int *minor)
{
	unsigned int i;
	nvmlReturn_t rc = nvml_device(device, &i);

	if (rc)
		return rc;
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*major = nvml_snapshot()->dev[i].cc_major;
	*minor = nvml_snapshot()->dev[i].cc_minor;
	return NVML_SUCCESS;
}

/* Device @i's memory as the caller sees it now: total, used by it. */
static nvmlReturn_t memory_now(nvmlDevice_t device, uint64_t *total, uint64_t *used)
{
	struct nvml_answer *a;
	unsigned int i;
	nvmlReturn_t rc = nvml_device(device, &i);

	if (rc)
		return rc;
	a = malloc(sizeof(*a));
	if (!a)
		return NVML_ERROR_MEMORY;
	rc = nvml_ask(a);
	if (!rc && i >= a->r.device_count)
		rc = NVML_ERROR_GPU_IS_LOST;	/* the daemon sees fewer devices now */
	if (!rc) {
		*total = a->r.dev[i].total_mem;
		*used = a->r.dev[i].used_mem < *total ? a->r.dev[i].used_mem : *total;
	}
	free(a);
	return rc;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	uint64_t total, used;
	nvmlReturn_t rc;

	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = memory_now(device, &total, &used);
	if (rc)
		return rc;
	*memory = (nvmlMemory_t){ .total = total, .used = used, .free = total - used };
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	uint64_t total, used;
	nvmlReturn_t rc;

	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memory->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	rc = memory_now(device, &total, &used);
	if (rc)
		return rc;
	*memory = (nvmlMemory_v2_t){ .version = nvmlMemory_v2, .total = total, .reserved = 0,
				     .used = used, .free = total - used };
	return NVML_SUCCESS;
}

/*
 * The caller's processes on device @i into @infos (NVML's rules: room for
 * *count; too little, and *count says how many there are), each written
 * by @put at its index.
 */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *count, void *infos,
			      void (*put)(void *infos, unsigned int k,
					  const struct vgpu_query_process *p))
{
	struct nvml_answer *a;
	unsigned int i, n = 0;
	nvmlReturn_t rc = nvml_device(device, &i);

	if (rc)
		return rc;
	if (!count || (*count && !infos))
		return NVML_ERROR_INVALID_ARGUMENT;
	a = malloc(sizeof(*a));
	if (!a)
		return NVML_ERROR_MEMORY;
	rc = nvml_ask(a);
	for (uint32_t k = 0; !rc && k < a->r.process_count; k++) {
		if (a->r.proc[k].gpu != i)
			continue;
		if (n < *count)
			put(infos, n, &a->r.proc[k]);
		n++;
	}
	free(a);
	if (rc)
		return rc;
	rc = n > *count ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
	*count = n;
	return rc;
}

static void put_v2(void *infos, unsigned int k, const struct vgpu_query_process *p)
{
	((nvmlProcessInfo_t *)infos)[k] = (nvmlProcessInfo_t){
		.pid = p->pid, .usedGpuMemory = p->used_mem,
		.gpuInstanceId = NO_MIG, .computeInstanceId = NO_MIG,
	};
}

static void put_v1(void *infos, unsigned int k, const struct vgpu_query_process *p)
{
	((nvmlProcessInfo_v1_t *)infos)[k] = (nvmlProcessInfo_v1_t){
		.pid = p->pid, .usedGpuMemory = p->used_mem,
	};
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
								 unsigned int *infoCount,
								 nvmlProcessInfo_t *infos)
{
	return processes(device, infoCount, infos, put_v2);
}

/* v2 and v3 share nvmlProcessInfo_t. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
								 unsigned int *infoCount,
								 nvmlProcessInfo_v2_t *infos)
{
	return processes(device, infoCount, infos, put_v2);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
							      unsigned int *infoCount,
							      nvmlProcessInfo_v1_t *infos)
{
	return processes(device, infoCount, infos, put_v1);
}

/* vgpu serves compute sessions only, never through MPS: no graphics or MPS
 * processes, on a device the caller may ask about. */
static nvmlReturn_t none(nvmlDevice_t device, unsigned int *count)
{
	unsigned int i;
	nvmlReturn_t rc = nvml_device(device, &i);

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = 0;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
								  unsigned int *infoCount,
								  nvmlProcessInfo_t *infos)
{
	(void)infos;
	return none(device, infoCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
								  unsigned int *infoCount,
								  nvmlProcessInfo_v2_t *infos)
{
	(void)infos;
	return none(device, infoCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
							       unsigned int *infoCount,
							       nvmlProcessInfo_v1_t *infos)
{
	(void)infos;
	return none(device, infoCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
								    unsigned int *infoCount,
								    nvmlProcessInfo_t *infos)
{
	(void)infos;
	return none(device, infoCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
								    unsigned int *infoCount,
								    nvmlProcessInfo_v2_t *infos)
{
	(void)infos;
	return none(device, infoCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device,
								 unsigned int *infoCount,
								 nvmlProcessInfo_v1_t *infos)
{
	(void)infos;
	return none(device, infoCount);
}
