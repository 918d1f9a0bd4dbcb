// SPDX-License-Identifier: MIT
/* vgpu: the user's command. `vgpu run -- CMD...` runs CMD with vgpu as its
 * CUDA driver, so its CUDA calls go to vgpud. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vgpu/proto.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: vgpu run [--socket PATH] -- COMMAND [ARG...]\n"
"Runs COMMAND with vgpu's runtime as its CUDA driver (libcuda.so.1): its\n"
"CUDA calls execute in vgpud, on the GPU the daemon owns. The program is\n"
"not rebuilt; static and shared CUDA runtimes, the driver API and CUDA\n"
"libraries all go through it.\n"
"\n"
"  --socket PATH   the daemon's socket (default $VGPU_SOCKET or " VGPU_DEFAULT_SOCKET ")\n");
}

/* The runtime lives beside us: <prefix>/bin/vgpu -> <prefix>/lib/vgpu. */
static int runtime_dir(char *out, size_t len)
{
	char exe[PATH_MAX], *dir;
	const char *env = getenv("VGPU_RUNTIME_DIR");
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = 0;
	dir = dirname(exe);
	snprintf(out, len, "%s/../lib/vgpu", dir);
	return 0;
}

static int run(int argc, char **argv)
{
	char dir[PATH_MAX], lib[PATH_MAX + 32], *path;
	const char *old = getenv("LD_LIBRARY_PATH");
	int i = 0;

	while (i < argc && strcmp(argv[i], "--")) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			setenv("VGPU_SOCKET", argv[i + 1], 1);
			i += 2;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] != '-') {
			break;	/* "vgpu run prog args" without "--" */
		} else {
			fprintf(stderr, "vgpu run: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	if (runtime_dir(dir, sizeof(dir)) < 0) {
		fprintf(stderr, "vgpu run: cannot find the runtime\n");
		return 1;
	}
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	if (access(lib, R_OK)) {
		fprintf(stderr, "vgpu run: %s is missing: is vgpu installed?\n", lib);
		return 1;
	}
	/* First on the path, so even dlopen("libcuda.so.1") finds ours. */
	if (old && *old) {
		path = malloc(strlen(dir) + strlen(old) + 2);
		if (!path)
			return 1;
		sprintf(path, "%s:%s", dir, old);
	} else {
		path = dir;
	}
	setenv("LD_LIBRARY_PATH", path, 1);
	execvp(argv[i], argv + i);
	fprintf(stderr, "vgpu run: %s: %s\n", argv[i], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "run"))
		return run(argc - 2, argv + 2);
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
