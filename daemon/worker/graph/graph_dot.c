// SPDX-License-Identifier: MIT
/*
 * cuGraphDebugDotPrint. The driver writes the text to a path; the daemon
 * must not open the program's path with its own rights, so the driver
 * writes into a memory file of the worker's (/proc/self/fd/N) and the text
 * goes back in pieces, which the runtime writes to the path the program
 * named, as the program. Node names in it are the driver's addresses, as
 * the driver prints them.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"

/* The text last made: the pieces after the first come from it. */
static int text_fd = -1;
static uint32_t text_graph;
static uint64_t text_flags;

#define DOT_PIECE (64u << 10)	/* what the runtime takes at a time */
#define DOT_FLAGS_KNOWN ((1ull << 16) - 1)	/* CU_GRAPH_DEBUG_DOT_FLAGS_* */

static CUresult make_text(struct worker *w, CUgraph g, uint64_t flags)
{
	char path[64];
	int fd = memfd_create("vgpu-graph-dot", MFD_CLOEXEC);
	CUresult rc;

	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rc = w->B.cuGraphDebugDotPrint(g, path, (unsigned int)flags);
	if (rc) {
		close(fd);
		return rc;
	}
	if (text_fd >= 0)
		close(text_fd);
	text_fd = fd;
	return CUDA_SUCCESS;
}

static enum op_status op_graph_dot(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *g = obj_get(&w->graphs, (uint32_t)s->arg[0]);
	uint64_t cap = w->ring.reply_slot_size < DOT_PIECE ? w->ring.reply_slot_size : DOT_PIECE;
	struct stat st;
	ssize_t got = 0;
	CUresult rc = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	if (!rc && (s->arg[1] & ~DOT_FLAGS_KNOWN))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && !s->arg[2])
		rc = make_text(w, g->obj, s->arg[1]);
	else if (!rc && (text_fd < 0 || text_graph != s->arg[0] || text_flags != s->arg[1]))
		rc = CUDA_ERROR_INVALID_VALUE;	/* a piece of no text made */
	if (!rc && !s->arg[2]) {
		text_graph = (uint32_t)s->arg[0];
		text_flags = s->arg[1];
	}
	if (!rc && fstat(text_fd, &st))
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	if (!rc && s->arg[2] > (uint64_t)st.st_size)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && (got = pread(text_fd, call->reply, cap, (off_t)s->arg[2])) < 0)
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	call->cqe->result = rc;
	call->cqe->val[0] = rc ? 0 : (uint64_t)st.st_size;
	call->cqe->val[2] = rc ? 0 : (uint64_t)got;
	return OP_DONE;
}

const struct op_desc exec_graph_dot_ops[] = {
	OP(GRAPH_DOT, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_graph_dot),
	{ 0 },
};
