// SPDX-License-Identifier: MIT
/*
 * Device printf follows the program's fd 1. The program may point its fd 1
 * elsewhere (dup2, freopen) after it connected; natively the driver writes
 * device printf output to whatever fd 1 is when a synchronizing call
 * flushes it. The runtime notices a new fd 1 before a synchronous call
 * (runtime/session/print_follow.c) and sends it on the session's socket
 * with a PRINT_TO entry ahead of that call: what earlier calls flushed is
 * relayed to the old descriptor first, then the relay writes to the new
 * one. The descriptor is the program's own: the worker only writes to it.
 */
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ipc.h"
#include "log.h"

/* arg0 token. Asynchronous and never an error the program would see: a
 * descriptor that did not come, or cannot be written, changes nothing. */
static enum op_status op_print_to(struct worker *w, struct op_call *call)
{
	int fd = worker_fd_take(w, call->sqe->arg[0]);
	struct stat st;
	int fl;

	call->cqe->result = CUDA_SUCCESS;
	if (fd < 0) {
		vlog_info("printf: the program's new stdout did not come; output stays where it went");
		return OP_DONE;
	}
	fl = fcntl(fd, F_GETFL);
	if (fstat(fd, &st) || S_ISDIR(st.st_mode) || fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
		vlog_info("printf: the program's new stdout cannot be written; output stays "
			  "where it went");
		close(fd);
		return OP_DONE;
	}
	worker_print_switch(w, fd);
	return OP_DONE;
}

const struct op_desc exec_print_follow_ops[] = {
	OP(PRINT_TO, OPF_NO_PRINT, op_print_to),
	{ 0 },
};
