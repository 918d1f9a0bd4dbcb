// SPDX-License-Identifier: MIT
/*
 * vgpu's NVML and the daemon: the GPU query (vgpu/query.h) over the
 * daemon's client socket, answered by its supervisor: no session, no
 * worker, no CUDA context. nvmlInit asks once and keeps the devices; what
 * changes (memory, processes) is asked again at each call. Without a
 * daemon to ask, nvmlInit fails as on a machine without NVIDIA's driver.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dial.h"
#include "nvml_state.h"

#define ANSWER_WAIT_MS	10000	/* the supervisor answers at once; a bound all the same */
#define NOT_READY_TRIES	100	/* no worker has described the GPUs yet: */
#define NOT_READY_MS	50	/* ask again this often, five seconds at most */

static struct {
	pthread_mutex_t lock;
	unsigned int refs;
	struct nvml_answer *snap;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* nvmlDevice_t handles: one per device, never freed. */
static struct nvmlDevice_st handles[VGPU_MAX_DEVICES];

/* Whether @n bytes received are an answer whose counts its length bears out. */
static bool well_formed(const struct nvml_answer *a, ssize_t n)
{
	const struct vgpu_query_reply *r = &a->r;

	if (n < (ssize_t)sizeof(*r) || r->magic != VGPU_QUERY_MAGIC ||
	    r->version != VGPU_QUERY_VERSION)
		return false;
	if (r->status)
		return true;
	return r->device_count <= VGPU_MAX_DEVICES && r->process_count <= VGPU_QUERY_MAX_PROCS &&
	       (size_t)n == sizeof(*r) + r->process_count * sizeof(r->proc[0]);
}

/* One question and its answer: 0, -errno from the daemon, or an NVML error > 0. */
static int ask_once(struct nvml_answer *a)
{
	struct vgpu_hello h = {
		.magic = VGPU_PROTO_MAGIC,
		.version = VGPU_PROTO_VERSION,
		.pid = (uint32_t)getpid(),
		.flags = VGPU_HELLO_QUERY,
	};
	struct pollfd p = { .events = POLLIN };
	ssize_t n;

	p.fd = vgpu_dial(vgpu_socket_path(), 0);
	if (p.fd < 0)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	/* A refusal at accept comes whether or not the hello went. */
	(void)!send(p.fd, &h, sizeof(h), MSG_NOSIGNAL);
	if (poll(&p, 1, ANSWER_WAIT_MS) <= 0) {
		close(p.fd);
		return NVML_ERROR_TIMEOUT;
	}
	n = recv(p.fd, a, sizeof(*a), 0);
	close(p.fd);
	if (n >= (ssize_t)sizeof(struct vgpu_welcome) &&
	    ((const struct vgpu_welcome *)a)->magic == VGPU_PROTO_MAGIC)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;	/* turned away: too many of us */
	if (!well_formed(a, n))
		return NVML_ERROR_UNKNOWN;
	return a->r.status;
}

nvmlReturn_t nvml_ask(struct nvml_answer *a)
{
	struct timespec nap = { 0, NOT_READY_MS * 1000000L };
	int ret;

	for (int i = 0;; i++) {
		ret = ask_once(a);
		if (ret != -EAGAIN || i == NOT_READY_TRIES)
			break;
		nanosleep(&nap, NULL);
	}
	if (ret > 0)
		return (nvmlReturn_t)ret;
	if (ret == -EAGAIN)
		return NVML_ERROR_NOT_READY;
	return ret ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}

nvmlReturn_t nvml_ref(unsigned int flags)
{
	struct nvml_answer *a;
	nvmlReturn_t rc = NVML_SUCCESS;

	pthread_mutex_lock(&st.lock);
	if (st.refs) {
		st.refs++;
		goto out;
	}
	a = malloc(sizeof(*a));
	if (!a) {
		rc = NVML_ERROR_MEMORY;
		goto out;
	}
	rc = nvml_ask(a);
	if (!rc && !a->r.device_count && !(flags & NVML_INIT_FLAG_NO_GPUS))
		rc = NVML_ERROR_GPU_NOT_FOUND;
	if (rc) {
		free(a);
		goto out;
	}
	st.snap = a;
	st.refs = 1;
out:
	pthread_mutex_unlock(&st.lock);
	return rc;
}

nvmlReturn_t nvml_unref(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;

	pthread_mutex_lock(&st.lock);
	if (!st.refs)
		rc = NVML_ERROR_UNINITIALIZED;
	else if (!--st.refs) {
		free(st.snap);
		st.snap = NULL;
	}
	pthread_mutex_unlock(&st.lock);
	return rc;
}

const struct vgpu_query_reply *nvml_snapshot(void)
{
	const struct vgpu_query_reply *r;

	/* Kept until the last nvmlShutdown: a call racing that one is the
	 * program's bug, as with NVIDIA's library. */
	pthread_mutex_lock(&st.lock);
	r = st.snap ? &st.snap->r : NULL;
	pthread_mutex_unlock(&st.lock);
	return r;
}

nvmlReturn_t nvml_device(nvmlDevice_t dev, unsigned int *index)
{
	const struct vgpu_query_reply *r = nvml_snapshot();

	if (!r)
		return NVML_ERROR_UNINITIALIZED;
	if (dev < handles || dev >= handles + r->device_count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = (unsigned int)(dev - handles);
	return NVML_SUCCESS;
}

nvmlDevice_t nvml_handle(unsigned int index)
{
	handles[index].index = index;
	return &handles[index];
}

nvmlReturn_t nvml_copy_str(char *out, unsigned int len, const char *s)
{
	size_t n = strlen(s);

	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n >= len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(out, s, n + 1);
	return NVML_SUCCESS;
}
