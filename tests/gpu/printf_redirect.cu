// SPDX-License-Identifier: MIT
/*
 * Device printf follows the program's fd 1: kernels print before, while and
 * after the program points fd 1 at a file with dup2 (a synchronization
 * flushes each), and the file holds exactly the lines printed while it was
 * fd 1. The same lines natively and through vgpu. (vgpu looks at fd 1 at
 * synchronizing calls: output a launch flushes between a dup2 and the next
 * synchronizing call still goes to the fd 1 of before.)
 */
#include <fcntl.h>
#include <unistd.h>

#include "../e2e/e2e.h"

__global__ void say(int v)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		printf("printf_redirect: kernel %d\n", v);
}

int main(void)
{
	char path[] = "/tmp/vgpu-printf-redirect.XXXXXX", buf[512];
	const char *want = "printf_redirect: kernel 2\nprintf_redirect: kernel 3\n";
	int file, saved;
	ssize_t n;

	say<<<4, 64>>>(1);
	CHECK(cudaDeviceSynchronize());
	file = mkstemp(path);
	saved = dup(STDOUT_FILENO);
	if (file < 0 || saved < 0)
		return 2;
	fflush(stdout);
	dup2(file, STDOUT_FILENO);
	say<<<4, 64>>>(2);
	CHECK(cudaDeviceSynchronize());
	say<<<4, 64>>>(3);
	CHECK(cudaStreamSynchronize(0));
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	say<<<4, 64>>>(4);
	CHECK(cudaDeviceSynchronize());

	n = pread(file, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	close(file);
	unlink(path);
	EXPECT(!strcmp(buf, want), "the file holds \"%s\"", buf);
	printf("printf_redirect: the file holds the lines printed while it was fd 1: %s\n",
	       strcmp(buf, want) ? "no" : "yes");
	return e2e_finish("printf_redirect");
}
