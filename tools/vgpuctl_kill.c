// SPDX-License-Identifier: MIT
/*
 * vgpuctl kill SESSION: KILL_SESSION. The session becomes dead
 * (VGPU_RING_KILLED); its client and worker see it on their next step.
 */
#include "vgpuctl.h"

#include <errno.h>
#include <inttypes.h>

#include "nl.h"

int vgpuctl_kill(int argc, char **argv)
{
	struct vgpu_nl nl;
	uint64_t id;
	int ret;

	if (argc != 2)
		return vgpuctl_usage(argv[0]);
	if (vgpuctl_parse_id(argv[1], &id)) {
		fprintf(stderr, "vgpuctl: '%s' is not a session id\n", argv[1]);
		return VGPUCTL_USAGE;
	}
	if (vgpuctl_nl_open(&nl))
		return VGPUCTL_FAIL;
	ret = vgpu_nl_kill(&nl, id);
	vgpu_nl_close(&nl);
	if (ret == -ENOENT) {
		fprintf(stderr, "vgpuctl: no session %" PRIu64 "\n", id);
		return VGPUCTL_FAIL;
	}
	if (ret) {
		vgpuctl_nl_error("KILL_SESSION", ret);
		return VGPUCTL_FAIL;
	}
	return VGPUCTL_OK;
}
