// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the GPU query of vgpu's NVML (daemon/supervisor/
 * nvml_view.c), as the supervisor meets it on a client socket.
 *
 * Input: byte 0, the caller (bit 0: admin; bits 1-7: its uid); then the
 * message as received. A message is tried as a hello (nvq_is_query,
 * nvq_parse); the same bytes, from offset 1, are taken as the GPU table
 * and the sessions a worker's statistics page and sv.w[] could hold, and
 * the caller's view of them is built. What the view promises is checked:
 * only the caller's sessions (all for an admin), on GPUs that exist,
 * counted in the length sent, names ending in a NUL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_view.h"

static void check_parse(const uint8_t *msg, size_t len)
{
	struct vgpu_hello h;

	if (nvq_parse(msg, len))
		return;
	memcpy(&h, msg, sizeof(h));
	if (len != sizeof(h) || !nvq_is_query(msg, len) || h.flags != VGPU_HELLO_QUERY ||
	    h.carrier || h.sq_entries || h.cq_entries || h.kmod_session || h.resume_session ||
	    h.reserved)
		__builtin_trap();
}

static void check_view(const uint8_t *msg, size_t len, uint32_t uid, bool admin)
{
	static struct nvq_devtab dt;
	static struct nvq_session s[64];
	static union {
		struct vgpu_query_reply r;
		uint8_t room[sizeof(struct vgpu_query_reply) + 64 * sizeof(struct vgpu_query_process)];
	} out;
	size_t n = 0, used, max = len % 65, sent;

	memset(&dt, 0, sizeof(dt));
	used = len < sizeof(dt) ? len : sizeof(dt);
	memcpy(&dt, msg, used);
	if (len > used) {
		n = (len - used) / sizeof(s[0]);
		n = n < 64 ? n : 64;
		memcpy(s, msg + used, n * sizeof(s[0]));
	}
	sent = nvq_view(&out.r, max, &dt, s, n, uid, admin);
	if (out.r.device_count > VGPU_MAX_DEVICES || out.r.process_count > max ||
	    sent != sizeof(out.r) + out.r.process_count * sizeof(out.r.proc[0]))
		__builtin_trap();
	if (out.r.driver_version[sizeof(out.r.driver_version) - 1])
		__builtin_trap();
	for (uint32_t d = 0; d < out.r.device_count; d++)
		if (out.r.dev[d].name[sizeof(out.r.dev[d].name) - 1])
			__builtin_trap();
	for (uint32_t p = 0; p < out.r.process_count; p++) {
		const struct vgpu_query_process *q = &out.r.proc[p];
		bool found = false;

		if (q->gpu >= out.r.device_count || !q->pid)
			__builtin_trap();	/* pid 0: one the caller cannot see */
		for (size_t i = 0; i < n; i++)
			found |= s[i].pid == q->pid && s[i].id == q->session &&
				 (admin || s[i].uid == uid);
		if (!found)
			__builtin_trap();	/* listed, and not the caller's */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *msg;

	if (size < 1)
		return 0;
	/* A copy of its own size: reads past the message are caught. */
	msg = malloc(size - 1 ? size - 1 : 1);
	memcpy(msg, data + 1, size - 1);
	check_parse(msg, size - 1);
	(void)nvq_is_query(msg, size - 1);
	check_view(msg, size - 1, data[0] >> 1, data[0] & 1);
	free(msg);
	return 0;
}
