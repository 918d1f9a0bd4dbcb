// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A hand-made client that sends the worker pinned-copy entries no runtime
 * would: h_pinbad SOCKET. A handle that is not the session's (0, unknown,
 * with offset bits, unregistered without PIN_FORGET), an offset or length
 * outside the region, a length that wraps, a download into a read-only
 * region, a device address outside the session's memory: each fails with
 * CUDA_ERROR_INVALID_VALUE, and the worker keeps serving (good copies both
 * ways and a NOP afterwards). "h_pinbad --zero" checks that the module has
 * no region and no pinned page left.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fdpass.h"
#include "kmod.h"
#include "kt.h"
#include "ring.h"

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1

static struct vgpu_kmod k;
static struct vgpu_ring ring;
static uint32_t next_tag;

static int dial(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	CHECK(fd >= 0);
	CHECK_OK(connect(fd, (struct sockaddr *)&a, sizeof(a)));
	return fd;
}

static void connect_session(const char *path)
{
	struct vgpu_hello h = {
		.magic = VGPU_PROTO_MAGIC, .version = VGPU_PROTO_VERSION,
		.features = VGPU_FEAT_ALL, .pid = getpid(), .carrier = VGPU_CARRIER_KMOD,
	};
	struct vgpu_welcome wl;
	int fds[3], nfds = 3, sock;
	void *hdr;

	CHECK_OK(vgpu_kmod_client(&k, 256, 512, sizeof(struct vgpu_sqe), sizeof(struct vgpu_cqe),
				  64 << 20));
	CHECK(vgpu_kmod_pin_notify(&k));
	h.kmod_session = k.session_id;
	h.sq_entries = k.sq_entries;
	h.cq_entries = k.cq_entries;
	strcpy(h.comm, "h_pinbad");
	sock = dial(path);
	CHECK(vgpu_send_fds(sock, &h, sizeof(h), NULL, 0) == sizeof(h));
	CHECK(vgpu_recv_fds(sock, &wl, sizeof(wl), fds, &nfds) == sizeof(wl));
	CHECK(wl.status == 0 && nfds == 3);
	CHECK(wl.features & VGPU_FEAT_PINNED_COPY);
	hdr = mmap(NULL, sizeof(struct vgpu_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	CHECK(hdr != MAP_FAILED);
	CHECK_OK(vgpu_ring_attach_kmod(&ring, hdr, &k, &wl));
}

/* One synchronous call; returns its result, *val0 its first value. */
static int call(uint16_t op, uint32_t ctx, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
		uint64_t *val0)
{
	uint32_t tag = next_tag++ % 200 + 1;
	struct vgpu_sqe s = { .opcode = op, .tag = tag, .ctx = ctx, .arg = { a0, a1, a2, a3 } };
	struct vgpu_cqe c;

	CHECK(client_sq_push(&ring, &s));
	for (;;) {
		while (client_cq_pop(&ring, &c)) {
			if (c.tag != tag)
				continue;
			if (val0)
				*val0 = c.val[0];
			return c.result;
		}
		CHECK(!vgpu_kmod_dead(&k));
		vgpu_kmod_wait(&k, 100);
	}
}

static void post(uint16_t op, uint64_t a0)
{
	struct vgpu_sqe s = { .opcode = op, .arg = { a0 } };

	CHECK(client_sq_push(&ring, &s));
}

static int htod(uint64_t dev, uint64_t h, uint64_t off, uint64_t n)
{
	return call(VGPU_OP_MEMCPY_HTOD_PINNED, 1, dev, h, off, n, NULL);
}

static int dtoh(uint64_t h, uint64_t off, uint64_t dev, uint64_t n)
{
	return call(VGPU_OP_MEMCPY_DTOH_PINNED, 1, h, off, dev, n, NULL);
}

static int zero(void)
{
	struct kt_stats st;

	CHECK_OK(kt_stats(&st));
	printf("h_pinbad: module: %llu regions, %llu pinned pages\n",
	       (unsigned long long)st.regions, (unsigned long long)st.pinned_pages);
	return st.regions || st.pinned_pages;
}

int main(int argc, char **argv)
{
	static uint8_t a[1 << 20] __attribute__((aligned(4096))), b[1 << 20];
	const uint64_t n = 256 << 10;
	struct vgpu_kmod_region ra, rb, ro;
	uint64_t dev, h;
	uint8_t *rom;

	if (argc == 2 && !strcmp(argv[1], "--zero"))
		return zero();
	if (argc != 2) {
		fprintf(stderr, "usage: h_pinbad SOCKET | --zero\n");
		return 2;
	}
	connect_session(argv[1]);
	CHECK(call(VGPU_OP_CTX_CREATE, 0, 1, 0, 0, 0, NULL) == CUDA_SUCCESS);
	CHECK(call(VGPU_OP_MEM_ALLOC, 1, 1 << 20, 0, 0, 0, &dev) == CUDA_SUCCESS);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 7 + 1);
	CHECK_OK(vgpu_kmod_register(&k, (uintptr_t)a + 5, n, false, &ra));
	CHECK_OK(vgpu_kmod_register(&k, (uintptr_t)b, sizeof(b), false, &rb));
	rom = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(rom != MAP_FAILED);
	CHECK_OK(vgpu_kmod_register(&k, (uintptr_t)rom, 1 << 20, true, &ro));

	/* Handles that are not the session's. */
	CHECK(htod(dev, 0, 0, n) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle + 3, 0, n) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle + (1000ull << VGPU_REGION_SHIFT), 0, n) ==
	      CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ~0ull, 0, n) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dtoh(0x4242ull << VGPU_REGION_SHIFT, 0, dev, n) == CUDA_ERROR_INVALID_VALUE);
	/* Offsets and lengths outside the region (len n, from a + 5). */
	CHECK(htod(dev, ra.handle, 1, n) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle, n, 1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle, n + 4096, 1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle, 0, n + 1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle, 16, ~0ull - 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle, ~0ull, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ra.handle, 0, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dtoh(rb.handle, sizeof(b) - 10, dev, 11) == CUDA_ERROR_INVALID_VALUE);
	/* The device end must be the session's memory. */
	CHECK(htod(0x1000, ra.handle, 0, n) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(~0ull - 4095, ra.handle, 0, 4096) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dtoh(rb.handle, 0, (uintptr_t)b, 4096) == CUDA_ERROR_INVALID_VALUE);
	/* Never written through a read-only registration. */
	CHECK(dtoh(ro.handle, 0, dev, 4096) == CUDA_ERROR_INVALID_VALUE);
	CHECK(htod(dev, ro.handle, 0, 4096) == CUDA_SUCCESS);

	/* Still serving: good copies both ways. */
	CHECK(htod(dev, ra.handle, 0, n) == CUDA_SUCCESS);
	CHECK(dtoh(rb.handle, 3, dev, n) == CUDA_SUCCESS);
	CHECK(!memcmp(b + 3, a + 5, n));
	/* Unregistered without PIN_FORGET: the worker notices, no fault. */
	h = ra.handle;
	CHECK_OK(vgpu_kmod_unregister(&k, h));
	CHECK(htod(dev, h, 0, n) == CUDA_ERROR_INVALID_VALUE);
	post(VGPU_OP_PIN_FORGET, h);
	post(VGPU_OP_PIN_FORGET, 12345);
	CHECK(call(VGPU_OP_NOP, 0, 0, 0, 0, 0, NULL) == CUDA_SUCCESS);
	/* A new registration of the same range works. */
	CHECK_OK(vgpu_kmod_register(&k, (uintptr_t)a + 5, n, false, &ra));
	CHECK(ra.handle != h);
	memset(b, 0, sizeof(b));
	CHECK(htod(dev, ra.handle, 0, n) == CUDA_SUCCESS);
	CHECK(dtoh(rb.handle, 0, dev, n) == CUDA_SUCCESS);
	CHECK(!memcmp(b, a + 5, n));
	CHECK(call(VGPU_OP_NOP, 0, 0, 0, 0, 0, NULL) == CUDA_SUCCESS);
	printf("h_pinbad: every bad pinned copy refused; the worker still serves\n");
	return 0;
}
