// SPDX-License-Identifier: MIT
/*
 * cuGraphDebugDotPrint: the worker has the driver write the text where it
 * can (never the program's path: the daemon would write it with its own
 * rights) and sends it back in pieces; the program's own process writes it
 * to the path, with the program's rights, as the driver would have.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "client.h"
#include "entry.h"
#include "graph.h"
#include "init.h"

#define PIECE (64u << 10)	/* at most a reply slot */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

VGPU_EXPORT CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
	struct vgpu_ctx *ctx;
	uint8_t *buf;
	uint64_t off = 0, total = 0;
	uint32_t gid;
	int fd = -1;
	CUresult rc = vgpu_need_out(vgpu_enter_graph(hGraph, &ctx, &gid), path);

	if (rc)
		return rc;
	if (!(buf = malloc(PIECE)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	do {
		struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_GRAPH_DOT } };

		r.sqe.ctx = ctx->id;
		r.sqe.arg[0] = gid;
		r.sqe.arg[1] = flags;
		r.sqe.arg[2] = off;
		r.reply = buf;
		r.reply_cap = PIECE;
		rc = vgpu_call(&r);
		if (rc)
			break;
		total = r.cqe.val[0];
		if (r.cqe.val[2] > PIECE || (!r.cqe.val[2] && off < total)) {
			rc = CUDA_ERROR_UNKNOWN;	/* the worker gave no progress */
			break;
		}
		/* Opened once the text exists: a refused graph leaves the path alone. */
		if (fd < 0 && (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
			rc = CUDA_ERROR_OPERATING_SYSTEM;
			break;
		}
		if (write_all(fd, buf, r.cqe.val[2])) {
			rc = CUDA_ERROR_OPERATING_SYSTEM;
			break;
		}
		off += r.cqe.val[2];
	} while (off < total);
	if (fd >= 0 && close(fd) && !rc)
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	free(buf);
	return rc;
}
