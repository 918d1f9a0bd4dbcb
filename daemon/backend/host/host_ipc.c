// SPDX-License-Identifier: MIT
/*
 * CUDA IPC event handles on the host backend. The worker authenticates the
 * handle and carries these bytes from the exporter's worker to the
 * importer's (daemon/worker/ipc/); they only say "an interprocess event of
 * the host backend".
 *
 * Why an imported event is simply a fresh event of the importer's: this
 * backend runs every operation to completion when the worker takes it, and
 * the runtime sends the record of an interprocess event synchronously
 * (runtime/api/event.c), so any record the exporting program made before
 * it told another process about it is complete, in the driver's sense,
 * by the time that process waits on, queries or synchronizes with the
 * event; and an event never recorded is complete too. Waits on it never
 * wait; that is what the exporter's event would answer at every moment a
 * waiter can look.
 */
#include <string.h>

#include "host_backend.h"

#define HOST_IPC_EVENT_MAGIC	"vgpu-host-ipc-event"

CUresult host_cuIpcGetEventHandle(CUipcEventHandle *out, CUevent h)
{
	struct host_event *e = (struct host_event *)h;
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&host.lock);
	if (!host_set_has(&host.events, e))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (!(e->flags & CU_EVENT_INTERPROCESS))
		r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&host.lock);
	if (r)
		return r;
	memset(out, 0, sizeof(*out));
	memcpy(out->reserved, HOST_IPC_EVENT_MAGIC, sizeof(HOST_IPC_EVENT_MAGIC));
	return CUDA_SUCCESS;
}

CUresult host_cuIpcOpenEventHandle(CUevent *ph, CUipcEventHandle handle)
{
	CUipcEventHandle want;
	CUresult r = host_check_init();

	if (r)
		return r;
	if (!ph)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&want, 0, sizeof(want));
	memcpy(want.reserved, HOST_IPC_EVENT_MAGIC, sizeof(HOST_IPC_EVENT_MAGIC));
	if (memcmp(&want, &handle, sizeof(want)))
		return CUDA_ERROR_INVALID_HANDLE;
	return host_cuEventCreate(ph, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS);
}
