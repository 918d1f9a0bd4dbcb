// SPDX-License-Identifier: MIT
/* vgpuctl stats [--json]: the module-wide counters (GET_STATS). */
#include "vgpuctl.h"

#include <inttypes.h>
#include <unistd.h>

#include "nl.h"

static void text(const struct vgpu_nl_stats *st)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	char now[16], max[16];

	printf("server:        %s\n", st->server ? "registered" : "none");
	printf("sessions:      %" PRIu64 " open, %" PRIu64 " since load\n",
	       st->sessions, st->sessions_total);
	printf("workers:       %" PRIu64 "\n", st->workers);
	printf("pinned:        %s of %s (%" PRIu64 " of %" PRIu64 " pages)\n",
	       vgpuctl_size(st->pinned_pages * page, now, sizeof(now)),
	       vgpuctl_size(st->max_pinned_pages * page, max, sizeof(max)),
	       st->pinned_pages, st->max_pinned_pages);
	printf("regions:       %" PRIu64 " now, %" PRIu64 " registered since load\n",
	       st->regions, st->registrations);
	printf("doorbells:     %" PRIu64 "\n", st->doorbells);
}

static void json(const struct vgpu_nl_stats *st)
{
	printf("{\"server\": %s, \"sessions\": %" PRIu64
	       ", \"sessions_total\": %" PRIu64 ", \"workers\": %" PRIu64
	       ", \"pinned_pages\": %" PRIu64 ", \"max_pinned_pages\": %" PRIu64
	       ", \"regions\": %" PRIu64 ", \"registrations\": %" PRIu64
	       ", \"doorbells\": %" PRIu64 "}\n",
	       st->server ? "true" : "false", st->sessions, st->sessions_total,
	       st->workers, st->pinned_pages, st->max_pinned_pages,
	       st->regions, st->registrations, st->doorbells);
}

int vgpuctl_stats(int argc, char **argv)
{
	struct vgpu_nl_stats st;
	struct vgpu_nl nl;
	int as_json, ret;

	if (vgpuctl_json_flag(argc, argv, &as_json))
		return vgpuctl_usage(argv[0]);
	if (vgpuctl_nl_open(&nl))
		return VGPUCTL_FAIL;
	ret = vgpu_nl_stats(&nl, &st);
	vgpu_nl_close(&nl);
	if (ret) {
		vgpuctl_nl_error("GET_STATS", ret);
		return VGPUCTL_FAIL;
	}
	if (as_json)
		json(&st);
	else
		text(&st);
	return VGPUCTL_OK;
}
