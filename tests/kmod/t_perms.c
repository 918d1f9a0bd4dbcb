// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * An unprivileged user (65534) may be a client, but not the server, and
 * over netlink sees only its own sessions and cannot kill or listen.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

struct seen {
	int n;
	uint64_t id[16];
	uint32_t uid[16];
};

static void seen_cb(const struct kt_nlmsg *m, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		s->id[s->n] = kt_nl_u64(m, VGPU_A_SESSION_ID);
		s->uid[s->n] = kt_nl_u32(m, VGPU_A_UID);
	}
	s->n++;
}

static void dump(struct seen *s)
{
	struct kt_nl nl;

	memset(s, 0, sizeof(*s));
	CHECK_OK(kt_nl_open(&nl));
	CHECK_OK(kt_nl_send(&nl, VGPU_CMD_GET_SESSION, 0, NLM_F_DUMP));
	CHECK(kt_nl_recv(&nl, seen_cb, s) == 0);
	kt_nl_close(&nl);
}

static int nl_cmd(uint8_t cmd, uint64_t id)
{
	struct kt_nl nl;
	int ret;

	CHECK_OK(kt_nl_open(&nl));
	CHECK_OK(kt_nl_send(&nl, cmd, id, 0));
	ret = kt_nl_recv(&nl, NULL, NULL);
	kt_nl_close(&nl);
	return ret;
}

static int nobody(uint64_t root_id)
{
	struct vgpu_server_setup ss = { 0 };
	struct vgpu_attach a = { .session_id = root_id };
	struct vgpu_setup g;
	struct kt_stats st;
	struct kt_nl nl;
	struct seen s;
	int fd, cfd;

	CHECK_OK(setgroups(0, NULL));
	CHECK_OK(setgid(65534));
	CHECK_OK(setuid(65534));
	fd = kt_open();
	CHECK_ERR(ioctl(fd, VGPU_IOC_SERVER, &ss), EPERM);
	cfd = kt_client_default(&g);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_ATTACH, &a), EBADFD);
	CHECK_ERR(ioctl(fd, VGPU_IOC_ATTACH, &a), EBADFD);
	CHECK_ERR(ioctl(cfd, VGPU_IOC_KILL, &a), EBADFD);

	dump(&s);
	CHECK(s.n == 1 && s.id[0] == g.session_id && s.uid[0] == 65534);
	CHECK(nl_cmd(VGPU_CMD_GET_SESSION, root_id) == -ENOENT);
	CHECK(nl_cmd(VGPU_CMD_GET_SESSION, g.session_id) == 0);
	CHECK(nl_cmd(VGPU_CMD_KILL_SESSION, root_id) == -EPERM);
	CHECK(nl_cmd(VGPU_CMD_KILL_SESSION, g.session_id) == -EPERM);
	CHECK_OK(kt_stats(&st));
	CHECK(st.sessions == 2);
	CHECK_OK(kt_nl_open(&nl));
	CHECK_ERR(kt_nl_join(&nl), EPERM);
	kt_nl_close(&nl);
	CHECK(kt_param_set("max_pinned_mb", "1") < 0 && errno == EACCES);
	CHECK_OK(kt_doorbell(cfd));
	return 0;
}

int main(void)
{
	struct vgpu_setup g;
	int srv, rfd, status;
	struct seen s;
	pid_t pid;

	srv = kt_server();
	rfd = kt_client_default(&g);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		close(srv);
		_exit(nobody(g.session_id));
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	dump(&s);
	CHECK(s.n == 1 && s.id[0] == g.session_id && s.uid[0] == 0);
	CHECK_OK(kt_doorbell(rfd));
	close(rfd);
	close(srv);
	return 0;
}
