// SPDX-License-Identifier: MIT
/*
 * vgpuctl version: the tool's version, the module's ABI (GET_INFO on
 * /dev/vgpu, which any role may call) and the daemon's socket. Succeeds
 * whether or not the module is loaded or the daemon runs.
 */
#include "vgpuctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uapi/vgpu.h"

static int get_info(struct vgpu_info *info)
{
	int fd, ret = 0;

	fd = open("/dev/" VGPU_DEVICE_NAME, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, VGPU_IOC_GET_INFO, info))
		ret = -errno;
	close(fd);
	return ret;
}

static void module(void)
{
	struct vgpu_info info;
	struct stat st;
	int ret = get_info(&info);

	if (!ret) {
		printf("module:  ABI %u (this tool: %d), features 0x%" PRIx64 "\n",
		       info.abi_version, VGPU_ABI_VERSION,
		       (uint64_t)info.features);
		return;
	}
	if (ret == -ENOENT && stat("/sys/module/vgpu", &st))
		printf("module:  not loaded (modprobe vgpu)\n");
	else if (ret == -ENOENT)
		printf("module:  loaded, but /dev/vgpu is missing\n");
	else if (ret == -EACCES)
		printf("module:  loaded; /dev/vgpu: %s (not in group vgpu?)\n",
		       strerror(-ret));
	else
		printf("module:  /dev/vgpu: %s\n", strerror(-ret));
}

int vgpuctl_version(int argc, char **argv)
{
	const char *sock = vgpuctl_socket_path();
	struct stat st;

	if (argc != 1)
		return vgpuctl_usage(argv[0]);
	printf("vgpuctl: %s\n", VGPU_VERSION);
	module();
	printf("daemon:  %s (%s)\n", sock,
	       !stat(sock, &st) && S_ISSOCK(st.st_mode) ? "present" : "absent");
	return VGPUCTL_OK;
}
