// SPDX-License-Identifier: MIT
/*
 * NVML's system calls: initialisation counted by references, error
 * strings, versions, process names. What the driver's answers would be
 * comes from the daemon (nvml_client.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvml_state.h"

#define KNOWN_INIT_FLAGS (NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH | NVML_INIT_FLAG_FORCE_INIT)

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	return nvml_ref(0);
}

/* NVML 1's name: the same call. */
NVML_EXPORT nvmlReturn_t nvmlInit(void)
{
	return nvml_ref(0);
}

NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	if (flags & ~KNOWN_INIT_FLAGS)
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_ref(flags);
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	return nvml_unref();
}

static const char *const errors[] = {
	[NVML_SUCCESS] = "Success",
	[NVML_ERROR_UNINITIALIZED] = "Uninitialized",
	[NVML_ERROR_INVALID_ARGUMENT] = "Invalid Argument",
	[NVML_ERROR_NOT_SUPPORTED] = "Not Supported",
	[NVML_ERROR_NO_PERMISSION] = "Insufficient Permissions",
	[NVML_ERROR_ALREADY_INITIALIZED] = "Already Initialized",
	[NVML_ERROR_NOT_FOUND] = "Not Found",
	[NVML_ERROR_INSUFFICIENT_SIZE] = "Insufficient Size",
	[NVML_ERROR_INSUFFICIENT_POWER] = "Insufficient External Power",
	[NVML_ERROR_DRIVER_NOT_LOADED] = "Driver Not Loaded",
	[NVML_ERROR_TIMEOUT] = "Timeout",
	[NVML_ERROR_IRQ_ISSUE] = "Interrupt request issue",
	[NVML_ERROR_LIBRARY_NOT_FOUND] = "NVML Shared Library Not Found",
	[NVML_ERROR_FUNCTION_NOT_FOUND] = "Function Not Found",
	[NVML_ERROR_CORRUPTED_INFOROM] = "Corrupted infoROM",
	[NVML_ERROR_GPU_IS_LOST] = "GPU is lost",
	[NVML_ERROR_RESET_REQUIRED] = "GPU requires restart",
	[NVML_ERROR_OPERATING_SYSTEM] = "The operating system has blocked the request.",
	[NVML_ERROR_LIB_RM_VERSION_MISMATCH] = "RM has detected an NVML/RM version mismatch.",
	[NVML_ERROR_IN_USE] = "In use by another client",
	[NVML_ERROR_MEMORY] = "Insufficient Memory",
	[NVML_ERROR_NO_DATA] = "No data",
	[NVML_ERROR_VGPU_ECC_NOT_SUPPORTED] = "Not supported on vGPU with ECC enabled",
	[NVML_ERROR_INSUFFICIENT_RESOURCES] = "Insufficient resources",
	[NVML_ERROR_FREQ_NOT_SUPPORTED] = "Frequency not supported",
	[NVML_ERROR_ARGUMENT_VERSION_MISMATCH] = "Argument version mismatch",
	[NVML_ERROR_DEPRECATED] = "Deprecated",
	[NVML_ERROR_NOT_READY] = "Not ready",
	[NVML_ERROR_GPU_NOT_FOUND] = "GPU not found",
	[NVML_ERROR_INVALID_STATE] = "Invalid state",
	[NVML_ERROR_RESET_TYPE_NOT_SUPPORTED] = "Reset type not supported",
};

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	if ((unsigned)result < sizeof(errors) / sizeof(errors[0]) && errors[result])
		return errors[result];
	return "Unknown Error";
}

/* The kernel driver's version as the daemon's machine reads it; the host
 * backend runs without one, and there is then nothing true to say. */
NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	const struct vgpu_query_reply *r = nvml_snapshot();

	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	if (!r->driver_version[0])
		return NVML_ERROR_NOT_SUPPORTED;
	return nvml_copy_str(version, length, r->driver_version);
}

/* NVML's own version: its API's, then the driver's as NVIDIA's reads
 * ("13.580.65.06"); the API's alone without a driver. */
NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	const struct vgpu_query_reply *r = nvml_snapshot();
	char v[sizeof(NVML_API_VERSION_STR) + sizeof(r->driver_version)];

	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	snprintf(v, sizeof(v), NVML_API_VERSION_STR "%s%s", r->driver_version[0] ? "." : "",
		 r->driver_version);
	return nvml_copy_str(version, length, v);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
	const struct vgpu_query_reply *r = nvml_snapshot();

	if (!cudaDriverVersion)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	if (!r->cuda_driver_version)
		return NVML_ERROR_NOT_SUPPORTED;
	*cudaDriverVersion = (int)r->cuda_driver_version;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
	return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

/* Whether @pid is one of the processes the caller may see. */
static nvmlReturn_t visible(unsigned int pid)
{
	struct nvml_answer *a = malloc(sizeof(*a));
	nvmlReturn_t rc;

	if (!a)
		return NVML_ERROR_MEMORY;
	rc = nvml_ask(a);
	if (!rc) {
		rc = NVML_ERROR_NOT_FOUND;
		for (uint32_t i = 0; i < a->r.process_count; i++)
			if (a->r.proc[i].pid == pid)
				rc = NVML_SUCCESS;
	}
	free(a);
	return rc;
}

/* The name of a process in the caller's view (its sessions'), as /proc
 * has it: the program's path, as NVIDIA's answer gives it. */
NVML_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
	char path[64], buf[256];
	nvmlReturn_t rc;
	ssize_t n = -1;
	int fd;

	if (!name || !length)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!nvml_snapshot())
		return NVML_ERROR_UNINITIALIZED;
	rc = visible(pid);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return NVML_ERROR_NOT_FOUND;	/* gone, or in another pid namespace */
	buf[n] = 0;
	/* As much as fits, as NVIDIA's does. */
	snprintf(name, length, "%s", buf);
	return NVML_SUCCESS;
}
