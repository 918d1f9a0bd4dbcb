// SPDX-License-Identifier: MIT
/*
 * Graph host nodes. The program's function runs in the program, as
 * cuLaunchHostFunc's does (exec_stream.c): the node the driver holds calls
 * a trampoline here with a job naming the client's cookie, which posts the
 * cookie back and waits for the program's acknowledgement. A node runs at
 * every launch of every instance and copy of its graph, which the driver
 * makes without telling, so a job lives as long as the session; there is one
 * for each cookie (the runtime gives one cookie for each function and data),
 * up to MAX_JOBS.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "barrier.h"
#include "futex.h"
#include "log.h"
#include "worker.h"

#define MAX_JOBS 4096

struct host_job {
	struct worker *w;
	uint64_t cookie;
	bool staged;	/* fills or empties a staged copy (graph_hostcopy.c) */
};

static struct host_job *jobs[MAX_JOBS];
static unsigned njobs;

/* Runs where the driver runs host nodes (its callback thread; inline on the
 * host backend), for every launch: an acknowledgement slot of its own first. */
static void CUDA_CB graph_host_trampoline(void *arg)
{
	const struct host_job *j = arg;
	struct worker *w = j->w;
	struct vgpu_cqe c = { .tag = 0 };
	uint32_t seq, *ack;

	while (__atomic_load_n(&w->cb_posted, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&w->cb_finished, __ATOMIC_ACQUIRE) >= VGPU_CB_SLOTS - 1) {
		if (worker_client_gone(w))
			return;
		usleep(1000);
	}
	seq = __atomic_add_fetch(&w->cb_posted, 1, __ATOMIC_ACQ_REL);
	ack = &w->ring.sh->cb_ack[seq % VGPU_CB_SLOTS];
	c.val[0] = j->cookie;
	c.val[1] = seq;
	worker_post(w, &c);
	for (;;) {
		uint32_t v = load_acquire(ack);

		if (v == seq)
			break;
		if (vgpu_futex_wait(ack, v, 50) != -ETIMEDOUT)
			continue;
		if (worker_client_gone(w))
			break;
		worker_order_stalled(w, "in a graph host node");
	}
	__atomic_add_fetch(&w->cb_finished, 1, __ATOMIC_RELEASE);
}

static CUresult job_for(struct worker *w, uint64_t cookie, bool staged,
			CUDA_HOST_NODE_PARAMS_v2 *p)
{
	struct host_job *j = NULL;

	if (!cookie)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < njobs && !j; i++)
		if (jobs[i]->cookie == cookie)
			j = jobs[i];
	if (j && j->staged != staged)	/* one cookie is one or the other */
		return CUDA_ERROR_INVALID_VALUE;
	if (!j) {
		if (njobs == MAX_JOBS) {
			vlog_warn("session %llu: more than %u host node functions",
				  (unsigned long long)w->session_id, MAX_JOBS);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (!(j = malloc(sizeof(*j))))
			return CUDA_ERROR_OUT_OF_MEMORY;
		*j = (struct host_job){ w, cookie, staged };
		jobs[njobs++] = j;
	}
	p->fn = graph_host_trampoline;
	p->userData = j;
	return CUDA_SUCCESS;
}

CUresult graph_host_params(struct worker *w, uint64_t cookie, CUDA_HOST_NODE_PARAMS_v2 *p)
{
	return job_for(w, cookie, false, p);
}

CUresult graph_host_staged_params(struct worker *w, uint64_t cookie, CUDA_HOST_NODE_PARAMS_v2 *p)
{
	return job_for(w, cookie, true, p);
}

static const struct host_job *job_of(struct worker *w, CUgraphNode n)
{
	CUDA_HOST_NODE_PARAMS p;

	if (w->B.cuGraphHostNodeGetParams(n, &p) || p.fn != graph_host_trampoline)
		return NULL;
	for (unsigned i = 0; i < njobs; i++)
		if (jobs[i] == p.userData)
			return jobs[i];
	return NULL;
}

bool graph_host_staged(struct worker *w, CUgraphNode n)
{
	const struct host_job *j = job_of(w, n);

	return j && j->staged;
}

uint64_t graph_host_cookie(struct worker *w, CUgraphNode n)
{
	const struct host_job *j = job_of(w, n);

	return j && !j->staged ? j->cookie : 0;
}
