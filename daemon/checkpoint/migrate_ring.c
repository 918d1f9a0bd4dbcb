// SPDX-License-Identifier: MIT
/*
 * A session's rings taken over by the worker it moves to (migrate.h): the
 * client's region and doorbell over memfd, or over /dev/vgpu the shared
 * header and the module's rings through the worker fd the old worker held;
 * then where each ring stands.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "barrier.h"
#include "log.h"
#include "migrate.h"
#include "worker.h"

/* Over /dev/vgpu the region is the shared header only; the rings and the
 * arena are the module's, mapped through the worker fd fds[5] (taken over). */
static int take_kmod_ring(struct worker *w, const struct vgpu_welcome *wl, const int *fds,
			  void **base)
{
	int ret;

	*base = mmap(NULL, sizeof(struct vgpu_shared), PROT_READ | PROT_WRITE, MAP_SHARED,
		     fds[1], 0);
	if (*base == MAP_FAILED)
		return -errno;
	ret = vgpu_kmod_worker(&w->kmod, fds[5], sizeof(struct vgpu_sqe), sizeof(struct vgpu_cqe));
	if (ret)
		return ret;
	return vgpu_ring_attach_kmod(&w->ring, *base, &w->kmod, wl);
}

int migrate_take_ring(struct worker *w, const struct migrate_state *st, const int *fds)
{
	const struct vgpu_welcome *wl = &st->wl;
	struct vgpu_ring *r = &w->ring;
	void *base = MAP_FAILED;
	int ret;

	if (st->carrier == VGPU_CARRIER_KMOD) {
		ret = take_kmod_ring(w, wl, fds, &base);
	} else {
		base = mmap(NULL, wl->region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
		ret = base == MAP_FAILED ? -errno : vgpu_ring_attach(r, base, wl->region_size, wl);
	}
	if (ret)
		return ret;
	w->region = base;
	w->region_fd = fds[1];
	w->bell_fd = r->bell = fds[2];
	r->sq_local = r->sq_published = load_acquire(r->sq_head);
	r->cq_local = load_acquire(r->cq_tail);
	r->peer_seen = load_acquire(r->cq_head);
	r->payload_local = r->payload_published = load_acquire(&r->sh->payload_head);
	w->pbuf = malloc(r->payload_size / 2);
	if (!w->pbuf)
		return -ENOMEM;
	if (w->B.cuMemHostRegister_v2(r->staging, (size_t)r->staging_chunk * r->staging_chunks,
				      CU_MEMHOSTREGISTER_PORTABLE))
		vlog_warn("worker: staging not pinned; pageable copies will be slower");
	return 0;
}
