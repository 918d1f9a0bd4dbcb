// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Helper for t_vgpuctl.sh, which busybox sh cannot do itself:
 *
 *   h_vgpuctl serve       registers as the server and opens one session
 *                         (sq 64, cq 128, 1 MiB arena, 3 client and 2
 *                         worker doorbells, 3 pinned pages); prints
 *                         "SESSION id". Then reads commands on stdin:
 *                         "open" opens one more ("SESSION id"), "close"
 *                         closes the newest ("CLOSED id"). Exits at EOF.
 *   h_vgpuctl as UID CMD  runs CMD as UID:UID with no groups (busybox has
 *                         no setpriv --reuid)
 */
#define _GNU_SOURCE
#include <grp.h>
#include <unistd.h>

#include "kt.h"

#define MAX_OPEN 16

static int open_session(int srv, uint64_t *id)
{
	static uint8_t buf[3 * 4096] __attribute__((aligned(4096)));
	struct vgpu_setup g;
	struct vgpu_region r;
	int cfd, wfd, i;

	cfd = kt_client(64, 128, 64, 32, 1 << 20, &g);
	for (i = 0; i < 3; i++)
		CHECK_OK(kt_doorbell(cfd));
	wfd = kt_attach(srv, g.session_id);
	CHECK(wfd >= 0);
	for (i = 0; i < 2; i++)
		CHECK_OK(kt_doorbell(wfd));
	close(wfd);
	CHECK_OK(kt_register(cfd, buf, sizeof(buf), 0, &r));
	*id = g.session_id;
	printf("SESSION %llu\n", (unsigned long long)g.session_id);
	return cfd;
}

static int serve(void)
{
	int srv, fds[MAX_OPEN], n = 0;
	uint64_t ids[MAX_OPEN];
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	srv = kt_server();
	fds[n] = open_session(srv, &ids[n]);
	n++;
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "open\n") && n < MAX_OPEN) {
			fds[n] = open_session(srv, &ids[n]);
			n++;
		} else if (!strcmp(line, "close\n") && n > 0) {
			n--;
			close(fds[n]);
			printf("CLOSED %llu\n", (unsigned long long)ids[n]);
		} else {
			fprintf(stderr, "h_vgpuctl: bad command %s", line);
			return 1;
		}
	}
	return 0;
}

static int run_as(const char *uid_str, char **argv)
{
	uid_t uid = (uid_t)strtoul(uid_str, NULL, 10);

	CHECK_OK(setgroups(0, NULL));
	CHECK_OK(setgid(uid));
	CHECK_OK(setuid(uid));
	execvp(argv[0], argv);
	fprintf(stderr, "h_vgpuctl: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "serve"))
		return serve();
	if (argc >= 4 && !strcmp(argv[1], "as"))
		return run_as(argv[2], argv + 3);
	fprintf(stderr, "usage: h_vgpuctl serve | h_vgpuctl as UID CMD...\n");
	return 2;
}
