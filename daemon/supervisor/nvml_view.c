// SPDX-License-Identifier: MIT
/*
 * The GPU query's parser and the caller's view of the GPUs (nvml_view.h).
 * A tenant sees its own sessions only: the memory they hold and their
 * processes; another tenant's are neither counted nor listed.
 */
#include "nvml_view.h"

#include <errno.h>
#include <string.h>

bool nvq_is_query(const void *buf, size_t len)
{
	struct vgpu_hello h;

	if (len < offsetof(struct vgpu_hello, flags) + sizeof(h.flags))
		return false;
	memcpy(&h, buf, len < sizeof(h) ? len : sizeof(h));
	return h.magic == VGPU_PROTO_MAGIC && (h.flags & VGPU_HELLO_QUERY);
}

int nvq_parse(const void *buf, size_t len)
{
	struct vgpu_hello h;

	if (len != sizeof(h))
		return -EINVAL;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != VGPU_PROTO_MAGIC || h.version != VGPU_PROTO_VERSION)
		return -EINVAL;
	if (h.flags != VGPU_HELLO_QUERY || h.features)
		return -EINVAL;
	/* Nothing of a session: no rings, no carrier, nothing to take up. */
	if (h.sq_entries || h.cq_entries || h.carrier || h.kmod_session || h.resume_session ||
	    h.reserved)
		return -EINVAL;
	return 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

size_t nvq_view(struct vgpu_query_reply *r, size_t max_procs, const struct nvq_devtab *dt,
		const struct nvq_session *s, size_t n, uint32_t uid, bool admin)
{
	uint32_t count = dt->count < VGPU_MAX_DEVICES ? dt->count : VGPU_MAX_DEVICES;
	uint32_t np = 0;

	memset(r, 0, sizeof(*r));
	r->magic = VGPU_QUERY_MAGIC;
	r->version = VGPU_QUERY_VERSION;
	r->flags = admin ? VGPU_QUERY_ALL : 0;
	r->device_count = count;
	r->cuda_driver_version = dt->cuda_driver_version;
	r->backend = dt->backend;
	memcpy(r->driver_version, dt->driver_version, sizeof(r->driver_version));
	r->driver_version[sizeof(r->driver_version) - 1] = 0;
	memcpy(r->dev, dt->dev, count * sizeof(r->dev[0]));
	for (uint32_t d = 0; d < count; d++) {
		/* Where the tenant's memory limit will be read (issue 14's
		 * limits): until then a tenant may use the whole device. */
		r->dev[d].used_mem = 0;
		r->dev[d].name[sizeof(r->dev[d].name) - 1] = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct nvq_session *e = &s[i];

		if (!admin && e->uid != uid)
			continue;
		/* A GPU the devices do not have: a worker's figure gone
		 * wrong. Its memory is counted nowhere, its process not
		 * listed, rather than under a device it is not on. */
		if (e->gpu >= count)
			continue;
		r->dev[e->gpu].used_mem = add_sat(r->dev[e->gpu].used_mem, e->device_bytes);
		/* pid 0: a process the caller cannot see (another pid
		 * namespace): its memory counts, it is not listed. */
		if (e->pid && np < max_procs && np < VGPU_QUERY_MAX_PROCS)
			r->proc[np++] = (struct vgpu_query_process){
				.pid = e->pid, .gpu = e->gpu, .used_mem = e->device_bytes,
				.session = e->id,
			};
	}
	r->process_count = np;
	return sizeof(*r) + np * sizeof(r->proc[0]);
}
