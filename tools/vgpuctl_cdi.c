// SPDX-License-Identifier: MIT
/*
 * vgpuctl cdi [--runtime-dir DIR] [--socket PATH]: a Container Device
 * Interface spec (JSON) for kind vgpu.dev/gpu, device "all". Save it as
 * /etc/cdi/vgpu.json and `podman run --device vgpu.dev/gpu=all IMAGE`
 * gets /dev/vgpu, vgpu's runtime in place of the driver's libcuda.so.1,
 * vgpu's NVML in place of its libnvidia-ml.so.1 and the daemon's socket,
 * with no NVIDIA driver in the container.
 *
 * The socket's directory is mounted, not the socket: vgpud unlinks and
 * binds its socket anew on every start, and a bind mount of the file would
 * keep pointing at the old one. Read-only still allows connect(). The
 * control socket must not be in that folder (vgpud's default keeps it in
 * a folder of its own: /run/vgpu/control): a warning says so when it is.
 *
 * This file alone includes vgpu/proto.h (the daemon's defaults): its limits
 * share names with uapi/vgpu.h's.
 */
#include "vgpuctl.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vgpu/ctl.h"
#include "vgpu/proto.h"

#define CDI_VERSION	"0.6.0"
#define CDI_KIND	"vgpu.dev/gpu"
#define CONTAINER_RUN	"/run/vgpu"

/* Where a container's loader finds libcuda.so.1 and libnvidia-ml.so.1:
 * Debian, then Red Hat. */
static const char *const lib_dirs[] = {
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib64",
};

const char *vgpuctl_socket_path(void)
{
	const char *env = getenv("VGPU_SOCKET");

	return env && *env ? env : VGPU_DEFAULT_SOCKET;
}

/* <prefix>/bin/vgpuctl -> <prefix>/lib/vgpu, as `vgpu run` finds it. */
static int default_runtime_dir(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = 0;
	if ((size_t)snprintf(out, len, "%s/../lib/vgpu", dirname(exe)) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* @dir/@name as an absolute, resolved path where it exists. */
static int runtime_lib(const char *dir, const char *name, char *out, size_t len)
{
	char path[PATH_MAX + 32], real[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	if (realpath(path, real)) {
		snprintf(out, len, "%s", real);
		return 0;
	}
	fprintf(stderr, "vgpuctl: warning: %s: %s; the spec names it anyway\n",
		path, strerror(errno));
	if (path[0] != '/') {
		fprintf(stderr, "vgpuctl: --runtime-dir must be absolute when "
			"the library is not there yet\n");
		return -EINVAL;
	}
	snprintf(out, len, "%s", path);
	return 0;
}

static void bind_ro(const char *host, const char *container, int comma)
{
	printf("          {\"hostPath\": ");
	vgpuctl_json_str(stdout, host);
	printf(", \"containerPath\": ");
	vgpuctl_json_str(stdout, container);
	printf(", \"options\": [\"ro\", \"nosuid\", \"nodev\", \"bind\"]}%s\n",
	       comma ? "," : "");
}

static void spec(const char *lib, const char *nvml, const char *sock_dir, const char *sock_name)
{
	char env[PATH_MAX + 32], in[PATH_MAX];
	size_t i;

	printf("{\n  \"cdiVersion\": \"" CDI_VERSION "\",\n"
	       "  \"kind\": \"" CDI_KIND "\",\n"
	       "  \"devices\": [\n"
	       "    {\n"
	       "      \"name\": \"all\",\n"
	       "      \"containerEdits\": {\n"
	       "        \"deviceNodes\": [\n"
	       "          {\"path\": \"/dev/vgpu\"}\n"
	       "        ],\n"
	       "        \"env\": [\n          ");
	snprintf(env, sizeof(env), "VGPU_SOCKET=" CONTAINER_RUN "/%s", sock_name);
	vgpuctl_json_str(stdout, env);
	printf("\n        ],\n        \"mounts\": [\n");
	for (i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		snprintf(in, sizeof(in), "%s/libcuda.so.1", lib_dirs[i]);
		bind_ro(lib, in, 1);
		snprintf(in, sizeof(in), "%s/libnvidia-ml.so.1", lib_dirs[i]);
		bind_ro(nvml, in, 1);
	}
	bind_ro(sock_dir, CONTAINER_RUN, 0);
	printf("        ]\n      }\n    }\n  ]\n}\n");
}

/* The control socket of @sock_path in @dir, the folder a container gets. */
static void warn_control(const char *sock_path, const char *dir)
{
	char ctl[PATH_MAX];
	size_t n = strlen(dir);

	if (vgpu_ctl_path_for(sock_path, ctl, sizeof(ctl)) && !strncmp(ctl, dir, n) &&
	    ctl[n] == '/')
		fprintf(stderr, "vgpuctl: warning: the control socket %s is in the folder the "
			"spec mounts: a container could reach it; put the socket in a folder "
			"named client (vgpud --socket DIR/client/NAME.sock, its control socket "
			"then goes to DIR/control)\n", ctl);
}

int vgpuctl_cdi(int argc, char **argv)
{
	char dir[PATH_MAX], lib[PATH_MAX + 32], nvml[PATH_MAX + 32], sock[PATH_MAX];
	const char *rt = NULL, *sock_arg = vgpuctl_socket_path();
	char *slash;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runtime-dir") && i + 1 < argc)
			rt = argv[++i];
		else if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			sock_arg = argv[++i];
		else
			return vgpuctl_usage(argv[0]);
	}
	if (rt)
		snprintf(dir, sizeof(dir), "%s", rt);
	else if (default_runtime_dir(dir, sizeof(dir))) {
		fprintf(stderr, "vgpuctl: cannot find the runtime library; "
			"use --runtime-dir\n");
		return VGPUCTL_FAIL;
	}
	if (runtime_lib(dir, "libvgpu.so", lib, sizeof(lib)) ||
	    runtime_lib(dir, "libnvidia-ml.so.1", nvml, sizeof(nvml)))
		return VGPUCTL_FAIL;
	snprintf(sock, sizeof(sock), "%s", sock_arg);
	slash = strrchr(sock, '/');
	if (sock[0] != '/' || !slash[1] || slash == sock) {
		fprintf(stderr, "vgpuctl: the socket must be an absolute path in "
			"a directory of its own, like %s\n", VGPU_DEFAULT_SOCKET);
		return VGPUCTL_USAGE;
	}
	*slash = 0;
	warn_control(sock_arg, sock);
	spec(lib, nvml, sock, slash + 1);
	return VGPUCTL_OK;
}
