// SPDX-License-Identifier: MIT
/*
 * vgpu's NVML (libnvidia-ml.so.1 of the build), run by `vgpu run` as a
 * tenant sees it: devices, names, UUIDs against the CUDA driver's, PCI,
 * versions, memory used growing with this process's own CUDA allocation
 * and its pid among the processes, what is not supported, shutdown.
 *
 *   nvml_driver                 the checks above
 *   nvml_driver hold FILE       the same, then writes its pid to FILE and
 *                               holds its allocation until FILE is removed
 *   nvml_driver other PID       as another user: PID (holding memory) is
 *                               not listed, no memory is counted for it
 *   nvml_driver nodaemon        nvmlInit without a daemon to ask
 *
 * Exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vgpu_nvml.h"

#define ALLOC (64u << 20)

static int failures;

static void check(bool ok, const char *what, int rc)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	if (!ok) {
		failures++;
		fprintf(stderr, "FAIL %s: %s (%d)\n", what, nvmlErrorString((nvmlReturn_t)rc), rc);
	}
	fflush(stdout);
}

#define NVML_OK(call) do { rc = (call); check(rc == NVML_SUCCESS, #call, rc); } while (0)

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* @pid's entry among device 0's compute processes (-1: not listed). */
static long long listed(nvmlDevice_t dev, unsigned int pid)
{
	nvmlProcessInfo_t p[64];
	unsigned int n = 64;

	if (nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, p))
		return -2;
	for (unsigned int i = 0; i < n; i++)
		if (p[i].pid == pid)
			return (long long)p[i].usedGpuMemory;
	return -1;
}

static unsigned long long used(nvmlDevice_t dev)
{
	nvmlMemory_t m;

	return nvmlDeviceGetMemoryInfo(dev, &m) ? ~0ull : m.used;
}

static void devices(nvmlDevice_t *dev0)
{
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_BUFFER_SIZE];
	nvmlDevice_t d, again;
	nvmlPciInfo_t pci;
	unsigned int n = 0, idx = 99;
	int rc, major = -1, minor = -1;
	char tiny[4];

	NVML_OK(nvmlDeviceGetCount_v2(&n));
	check(n >= 1 && n <= 16, "at least one device", (int)n);
	NVML_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
	*dev0 = d;
	check(nvmlDeviceGetHandleByIndex_v2(n, &again) == NVML_ERROR_INVALID_ARGUMENT,
	      "no device past the count", 0);
	NVML_OK(nvmlDeviceGetIndex(d, &idx));
	check(idx == 0, "device 0's index", (int)idx);
	NVML_OK(nvmlDeviceGetName(d, name, sizeof(name)));
	check(name[0] != 0, "a name", 0);
	rc = nvmlDeviceGetName(d, tiny, sizeof(tiny));
	check(rc == NVML_ERROR_INSUFFICIENT_SIZE, "a name too long for the buffer", rc);
	NVML_OK(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)));
	check(!strncmp(uuid, "GPU-", 4) && strlen(uuid) == 40, "UUID as GPU-8-4-4-4-12", 0);
	NVML_OK(nvmlDeviceGetHandleByUUID(uuid, &again));
	check(again == d, "the handle by UUID", 0);
	NVML_OK(nvmlDeviceGetPciInfo_v3(d, &pci));
	check(strlen(pci.busId) == 16 && pci.busId[8] == ':', "PCI bus id", 0);
	NVML_OK(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &again));
	check(again == d, "the handle by PCI bus id", 0);
	NVML_OK(nvmlDeviceGetCudaComputeCapability(d, &major, &minor));
	printf("device 0: %s %s %s sm_%d%d\n", name, uuid, pci.busId, major, minor);
}

static void versions(void)
{
	char v[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
	int rc, cuda = 0;
	bool have_driver = access("/proc/driver/nvidia/version", R_OK) == 0;

	NVML_OK(nvmlSystemGetNVMLVersion(v, sizeof(v)));
	check(!strncmp(v, NVML_API_VERSION_STR, 2), "NVML version", 0);
	NVML_OK(nvmlSystemGetCudaDriverVersion_v2(&cuda));
	check(cuda >= 12000, "CUDA driver version", cuda);
	rc = nvmlSystemGetDriverVersion(v, sizeof(v));
	/* The daemon's machine is this one: a driver version where NVIDIA's
	 * driver is, not supported where there is none (the host backend). */
	check(have_driver ? rc == NVML_SUCCESS && strchr(v, '.') : rc == NVML_ERROR_NOT_SUPPORTED,
	      "driver version as the machine has it", rc);
}

/* The device as CUDA sees it agrees with NVML. */
static void same_as_cuda(nvmlDevice_t d)
{
	char uuid[NVML_DEVICE_UUID_BUFFER_SIZE], want[48], name[96], cname[96];
	CUuuid u;
	CUdevice dev;
	int cuda = 0, drv = 0, major = 0, minor = 0, cmaj = -1, cmin = -1, rc;
	size_t total = 0;
	nvmlMemory_t m;
	int n;

	check(cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuDeviceGet", 0);
	check(cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS, "cuDeviceGetUuid", 0);
	n = snprintf(want, sizeof(want), "GPU-");
	for (int b = 0; b < 16; b++)
		n += snprintf(want + n, sizeof(want) - n, "%s%02x",
			      b == 4 || b == 6 || b == 8 || b == 10 ? "-" : "",
			      (unsigned char)u.bytes[b]);
	NVML_OK(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)));
	check(!strcmp(uuid, want), "UUID is CUDA's", 0);
	cuDeviceGetName(cname, sizeof(cname), dev);
	NVML_OK(nvmlDeviceGetName(d, name, sizeof(name)));
	check(!strcmp(name, cname), "name is CUDA's", 0);
	cuDeviceGetAttribute(&cmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	cuDeviceGetAttribute(&cmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	NVML_OK(nvmlDeviceGetCudaComputeCapability(d, &major, &minor));
	check(major == cmaj && minor == cmin, "compute capability is CUDA's", 0);
	cuDriverGetVersion(&drv);
	NVML_OK(nvmlSystemGetCudaDriverVersion(&cuda));
	check(cuda == drv, "CUDA driver version is cuDriverGetVersion's", cuda);
	cuDeviceTotalMem(&total, dev);
	NVML_OK(nvmlDeviceGetMemoryInfo(d, &m));
	/* Until the daemon has memory limits, the tenant's total is the device's. */
	check(m.total == total && m.used + m.free == m.total, "memory total is CUDA's", 0);
}

static void processes(nvmlDevice_t d, unsigned long long before)
{
	unsigned int n = 0;
	long long mine = -1;
	unsigned long long now = 0;
	nvmlMemory_v2_t m2 = { .version = nvmlMemory_v2 };
	char pname[256];
	int rc;

	/* The worker publishes its use between bursts of calls: ask a while. */
	for (int i = 0; i < 100; i++) {
		cuCtxSynchronize();
		mine = listed(d, (unsigned int)getpid());
		now = used(d);
		if (mine >= ALLOC && now != ~0ull && now >= before + ALLOC)
			break;
		sleep_ms(50);
	}
	check(mine >= ALLOC, "this process is listed with its memory", (int)(mine >> 20));
	check(now != ~0ull && now >= before + ALLOC, "memory used grew by the allocation",
	      (int)((now - before) >> 20));
	rc = nvmlDeviceGetComputeRunningProcesses_v3(d, &n, NULL);
	check(rc == NVML_ERROR_INSUFFICIENT_SIZE && n >= 1, "no room: how many there are", rc);
	NVML_OK(nvmlDeviceGetMemoryInfo_v2(d, &m2));
	check(m2.used >= ALLOC && m2.used + m2.free + m2.reserved == m2.total, "memory v2", 0);
	m2.version = 1;
	rc = nvmlDeviceGetMemoryInfo_v2(d, &m2);
	check(rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "memory v2 of the wrong version", rc);
	n = 4;
	NVML_OK(nvmlDeviceGetGraphicsRunningProcesses_v3(d, &n, NULL));
	check(n == 0, "no graphics processes", (int)n);
	NVML_OK(nvmlSystemGetProcessName((unsigned int)getpid(), pname, sizeof(pname)));
	check(strstr(pname, "nvml_driver") != NULL, "this process's name", 0);
}

/* NVML 1's names, as old binaries call them (nvml.h maps ours to the newest). */
static void legacy(nvmlDevice_t d)
{
	nvmlReturn_t (*count)(unsigned int *) = (nvmlReturn_t (*)(unsigned int *))
		dlsym(RTLD_DEFAULT, "nvmlDeviceGetCount");
	nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *) =
		(nvmlReturn_t (*)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *))
			dlsym(RTLD_DEFAULT, "nvmlDeviceGetComputeRunningProcesses");
	nvmlProcessInfo_v1_t p[64];
	unsigned int n = 0, want = 0;
	bool mine = false;

	check(count && procs, "NVML 1's names are there", 0);
	if (!count || !procs)
		return;
	nvmlDeviceGetCount_v2(&want);
	check(count(&n) == NVML_SUCCESS && n == want, "nvmlDeviceGetCount (NVML 1)", (int)n);
	n = 64;
	check(procs(d, &n, p) == NVML_SUCCESS, "nvmlDeviceGetComputeRunningProcesses (NVML 1)", 0);
	for (unsigned int i = 0; i < n && i < 64; i++)
		mine |= p[i].pid == (unsigned int)getpid() && p[i].usedGpuMemory >= ALLOC;
	check(mine, "this process in NVML 1's layout", (int)n);
}

static void unsupported(nvmlDevice_t d)
{
	nvmlUtilization_t u;
	unsigned int t;
	int rc;

	rc = nvmlDeviceGetTemperature(d, 0, &t);
	check(rc == NVML_ERROR_NOT_SUPPORTED, "temperature is not supported", rc);
	rc = nvmlDeviceGetUtilizationRates(d, &u);
	check(rc == NVML_ERROR_NOT_SUPPORTED, "utilization is not supported", rc);
}

static void refcount(void)
{
	unsigned int n;
	int rc;

	NVML_OK(nvmlInit_v2());
	NVML_OK(nvmlShutdown());
	NVML_OK(nvmlDeviceGetCount_v2(&n));	/* one reference left */
	NVML_OK(nvmlShutdown());
	rc = nvmlDeviceGetCount_v2(&n);
	check(rc == NVML_ERROR_UNINITIALIZED, "nothing after the last shutdown", rc);
	rc = nvmlShutdown();
	check(rc == NVML_ERROR_UNINITIALIZED, "one shutdown too many", rc);
}

static int tenant(const char *hold)
{
	nvmlDevice_t d = NULL;
	unsigned long long before;
	CUcontext ctx;
	CUdeviceptr p;
	int rc;

	NVML_OK(nvmlInit_v2());
	if (rc)
		return 1;
	devices(&d);
	versions();
	/* NVML alone costs no session: this process is no client yet. */
	check(listed(d, (unsigned int)getpid()) == -1, "NVML alone opens no session", 0);
	before = used(d);
	check(before != ~0ull, "memory info", 0);
	unsupported(d);
	if (cuInit(0) || cuCtxCreate(&ctx, NULL, 0, 0) || cuMemAlloc(&p, ALLOC)) {
		check(false, "a CUDA session allocates", 0);
		return 1;
	}
	same_as_cuda(d);
	processes(d, before);
	legacy(d);
	if (hold) {
		FILE *f = fopen(hold, "w");

		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
			return 1;
		for (int i = 0; i < 600 && access(hold, F_OK) == 0; i++)
			sleep_ms(100);
	}
	refcount();
	cuMemFree(p);
	return failures ? 1 : 0;
}

/* Another user: the holder's process and memory are none of its business. */
static int other(unsigned int pid)
{
	char name[64];
	nvmlDevice_t d;
	int rc;

	NVML_OK(nvmlInit_v2());
	if (rc)
		return 1;
	NVML_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
	check(listed(d, pid) == -1, "another user's process is not listed", 0);
	check(used(d) == 0, "another user's memory is not counted", (int)(used(d) >> 20));
	rc = nvmlSystemGetProcessName(pid, name, sizeof(name));
	check(rc == NVML_ERROR_NOT_FOUND, "another user's process has no name", rc);
	NVML_OK(nvmlShutdown());
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc == 2 && !strcmp(argv[1], "nodaemon")) {
		rc = nvmlInit_v2();
		check(rc == NVML_ERROR_DRIVER_NOT_LOADED, "no daemon: the driver is not loaded", rc);
		return failures ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "other"))
		return other((unsigned int)strtoul(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return tenant(argv[2]);
	if (argc == 1)
		return tenant(NULL);
	fprintf(stderr, "usage: nvml_driver [hold FILE | other PID | nodaemon]\n");
	return 2;
}
