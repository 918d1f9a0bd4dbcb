// SPDX-License-Identifier: MIT
/*
 * Unit test for daemon/supervisor/nvml_view.c, the GPU query of vgpu's
 * NVML: a query hello is accepted only as vgpu/query.h says (nothing of a
 * session in it); the answer is the caller's view: another user's sessions
 * are neither counted nor listed (an admin sees all), a worker's figures
 * out of range are bounded, never trusted. Exit 0 = pass.
 */
#include "nvml_view.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static struct vgpu_hello query(void)
{
	return (struct vgpu_hello){ .magic = VGPU_PROTO_MAGIC, .version = VGPU_PROTO_VERSION,
				    .flags = VGPU_HELLO_QUERY, .pid = 42, .comm = "nvidia-smi" };
}

static void parse(void)
{
	struct vgpu_hello h = query(), bad;
	uint8_t longer[sizeof(h) + 1] = { 0 };

	CHECK(nvq_parse(&h, sizeof(h)) == 0, "a query");
	CHECK(nvq_is_query(&h, sizeof(h)));
	CHECK(nvq_is_query(&h, offsetof(struct vgpu_hello, flags) + 4), "flags are enough to tell");
	CHECK(!nvq_is_query(&h, offsetof(struct vgpu_hello, flags)), "too short to tell");
	CHECK(nvq_parse(&h, sizeof(h) - 1) == -EINVAL, "cut");
	memcpy(longer, &h, sizeof(h));
	CHECK(nvq_parse(longer, sizeof(longer)) == -EINVAL, "longer than a hello");

	bad = h; bad.flags = 0;
	CHECK(!nvq_is_query(&bad, sizeof(bad)), "a session's hello is no query");
	bad = h; bad.flags |= VGPU_HELLO_RESUME;
	CHECK(nvq_is_query(&bad, sizeof(bad)) && nvq_parse(&bad, sizeof(bad)) == -EINVAL, "resume too");
	bad = h; bad.flags |= 1u << 31;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "an unknown flag");
	bad = h; bad.magic++;
	CHECK(!nvq_is_query(&bad, sizeof(bad)) && nvq_parse(&bad, sizeof(bad)) == -EINVAL, "magic");
	bad = h; bad.version++;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "version");
	bad = h; bad.features = 1;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "features");
	bad = h; bad.sq_entries = 64;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "rings");
	bad = h; bad.cq_entries = 64;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "rings");
	bad = h; bad.carrier = VGPU_CARRIER_MEMFD;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "a carrier");
	bad = h; bad.kmod_session = 1;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "a /dev/vgpu session");
	bad = h; bad.resume_session = 1;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "a session to take up");
	bad = h; bad.reserved = 1;
	CHECK(nvq_parse(&bad, sizeof(bad)) == -EINVAL, "reserved");
}

static struct nvq_devtab table(void)
{
	struct nvq_devtab dt = { .state = NVQ_READY, .count = 2, .cuda_driver_version = 13000,
				 .backend = VGPU_BACKEND_HOST };

	strcpy(dt.driver_version, "580.65.06");
	for (int d = 0; d < 2; d++) {
		memset(dt.dev[d].name, 'A' + d, sizeof(dt.dev[d].name));	/* no NUL */
		dt.dev[d].total_mem = 80ull << 30;
		dt.dev[d].used_mem = 12345;	/* not the caller's: ignored */
		dt.dev[d].uuid[0] = (uint8_t)d;
	}
	return dt;
}

static const struct nvq_session sessions[] = {
	{ .id = 1, .pid = 100, .uid = 1000, .gpu = 0, .device_bytes = 1 << 20 },
	{ .id = 2, .pid = 101, .uid = 1000, .gpu = 1, .device_bytes = 2 << 20 },
	{ .id = 3, .pid = 200, .uid = 2000, .gpu = 0, .device_bytes = 4 << 20 },
	{ .id = 4, .pid = 102, .uid = 1000, .gpu = 7, .device_bytes = 8 << 20 },	/* no GPU 7 */
	{ .id = 5, .pid = 103, .uid = 1000, .gpu = 65535, .device_bytes = 16 << 20 },
};
#define NS (sizeof(sessions) / sizeof(sessions[0]))

static struct vgpu_query_reply *room(void)
{
	return calloc(1, sizeof(struct vgpu_query_reply) +
			 VGPU_QUERY_MAX_PROCS * sizeof(struct vgpu_query_process));
}

static bool lists(const struct vgpu_query_reply *r, uint32_t pid)
{
	for (uint32_t i = 0; i < r->process_count; i++)
		if (r->proc[i].pid == pid)
			return true;
	return false;
}

static void view(void)
{
	struct nvq_devtab dt = table();
	struct vgpu_query_reply *r = room();
	size_t len;

	/* A tenant: its own sessions, on the GPUs that exist. */
	len = nvq_view(r, VGPU_QUERY_MAX_PROCS, &dt, sessions, NS, 1000, false);
	CHECK(r->magic == VGPU_QUERY_MAGIC && r->version == VGPU_QUERY_VERSION && !r->status);
	CHECK(r->flags == 0, "not an admin's view");
	CHECK(r->device_count == 2 && r->cuda_driver_version == 13000);
	CHECK(!strcmp(r->driver_version, "580.65.06"));
	CHECK(r->dev[0].used_mem == 1 << 20, "%llu", (unsigned long long)r->dev[0].used_mem);
	CHECK(r->dev[1].used_mem == 2 << 20, "%llu", (unsigned long long)r->dev[1].used_mem);
	CHECK(r->dev[0].total_mem == 80ull << 30, "the device's total (no limits yet)");
	CHECK(r->process_count == 2, "%u", r->process_count);
	CHECK(lists(r, 100) && lists(r, 101));
	CHECK(!lists(r, 200), "another user's process");
	CHECK(!lists(r, 102) && !lists(r, 103), "a GPU that does not exist");
	CHECK(len == sizeof(*r) + 2 * sizeof(r->proc[0]), "%zu", len);
	CHECK(r->dev[0].name[sizeof(r->dev[0].name) - 1] == 0, "names end in a NUL");
	CHECK(r->dev[1].uuid[0] == 1);

	/* Another tenant: its session alone. */
	nvq_view(r, VGPU_QUERY_MAX_PROCS, &dt, sessions, NS, 2000, false);
	CHECK(r->dev[0].used_mem == 4 << 20 && r->dev[1].used_mem == 0);
	CHECK(r->process_count == 1 && r->proc[0].pid == 200 && r->proc[0].session == 3);

	/* A user without sessions: nothing. */
	len = nvq_view(r, VGPU_QUERY_MAX_PROCS, &dt, sessions, NS, 3000, false);
	CHECK(r->dev[0].used_mem == 0 && r->dev[1].used_mem == 0 && r->process_count == 0);
	CHECK(len == sizeof(*r));

	/* An admin: everyone's. */
	nvq_view(r, VGPU_QUERY_MAX_PROCS, &dt, sessions, NS, 0, true);
	CHECK(r->flags == VGPU_QUERY_ALL);
	CHECK(r->dev[0].used_mem == 5 << 20 && r->process_count == 3, "%u", r->process_count);
	CHECK(lists(r, 200));

	/* Room for one process: one, and the memory all the same. */
	len = nvq_view(r, 1, &dt, sessions, NS, 1000, false);
	CHECK(r->process_count == 1 && len == sizeof(*r) + sizeof(r->proc[0]));
	CHECK(r->dev[1].used_mem == 2 << 20);
	free(r);
}

/* A process the caller cannot see (another pid namespace: pid 0 after
 * nvml_query.c's translation) is not listed; its memory counts. */
static void unseen(void)
{
	struct nvq_devtab dt = table();
	struct vgpu_query_reply *r = room();
	struct nvq_session s[2] = {
		{ .id = 1, .pid = 0, .uid = 5, .gpu = 0, .device_bytes = 3 << 20 },
		{ .id = 2, .pid = 17, .uid = 5, .gpu = 0, .device_bytes = 1 << 20 },
	};

	nvq_view(r, VGPU_QUERY_MAX_PROCS, &dt, s, 2, 5, false);
	CHECK(r->process_count == 1 && r->proc[0].pid == 17, "%u", r->process_count);
	CHECK(r->dev[0].used_mem == 4 << 20);
	free(r);
}

static void bounds(void)
{
	struct nvq_devtab dt = table();
	struct vgpu_query_reply *r = room();
	struct nvq_session big[2] = {
		{ .pid = 1, .uid = 5, .gpu = 0, .device_bytes = UINT64_MAX - 1 },
		{ .pid = 2, .uid = 5, .gpu = 0, .device_bytes = 10 },
	};

	nvq_view(r, VGPU_QUERY_MAX_PROCS, &dt, big, 2, 5, false);
	CHECK(r->dev[0].used_mem == UINT64_MAX, "a sum that would wrap stays at the top");
	dt.count = 1000;	/* more than there is room for */
	nvq_view(r, VGPU_QUERY_MAX_PROCS, &dt, big, 2, 5, false);
	CHECK(r->device_count == VGPU_MAX_DEVICES);
	free(r);
}

int main(void)
{
	parse();
	view();
	unseen();
	bounds();
	printf("test_nvml_view: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
