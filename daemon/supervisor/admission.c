// SPDX-License-Identifier: MIT
#include "admission.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "clock.h"
#include "fdpass.h"
#include "log.h"
#include "worker.h"

static struct {
	struct admission_limits lim;
	struct admit_entry e[ADMIT_MAX];
	uint64_t seq;
} ad;

void admit_init(const struct admission_limits *lim)
{
	ad.lim = *lim;
	for (int i = 0; i < ADMIT_MAX; i++)
		ad.e[i].fd = -1;
}

static unsigned int waiting_of(uid_t uid)
{
	unsigned int n = 0;

	for (int i = 0; i < ADMIT_MAX; i++)
		n += ad.e[i].fd >= 0 && ad.e[i].cr.uid == uid;
	return n;
}

/*
 * What the client sent is read and dropped first (with the descriptors it
 * brought): a socket closed with unread data resets its peer, and the
 * client would lose the refusal with it.
 */
static void discard_input(int fd)
{
	union {
		char buf[VGPU_FDS_CMSG_SPACE];
		struct cmsghdr align;
	} c;
	char scratch[512];
	struct iovec iov = { scratch, sizeof(scratch) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[VGPU_MAX_FDS], cut;

	for (int i = 0; i < 4; i++) {	/* a hello is one message; a few at most */
		m.msg_control = c.buf;
		m.msg_controllen = sizeof(c.buf);
		if (recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
			return;
		vgpu_fds_close(fds, vgpu_fds_take(&m, fds, VGPU_MAX_FDS, &cut));
	}
}

/*
 * The client reads a refusal as its welcome; one that does not read loses
 * it. A flood would flood the log too: one line a second at most, with the
 * number of refusals it stands for.
 */
static void refuse(int fd, int err, const char *why)
{
	static struct vgpu_ratelimit rl;
	unsigned int held;

	discard_input(fd);
	worker_send_refusal(fd, err, why);
	close(fd);
	if (!vgpu_ratelimit(&rl, &held))
		return;
	if (held)
		vlog_warn("session refused: %s (and %u more not logged)", why, held);
	else
		vlog_warn("session refused: %s", why);
}

int admit_add(int fd, const struct ucred *cr)
{
	char why[96];
	int i;

	if (waiting_of(cr->uid) >= ad.lim.user_waiting) {
		snprintf(why, sizeof(why), "uid %d already has %u connections waiting "
			 "(vgpud --user-waiting)", (int)cr->uid, ad.lim.user_waiting);
		refuse(fd, EUSERS, why);
		return -1;
	}
	for (i = 0; i < ADMIT_MAX && ad.e[i].fd >= 0; i++)
		;
	if (i == ADMIT_MAX) {
		refuse(fd, EAGAIN, "too many connections waiting for vgpud");
		return -1;
	}
	ad.e[i] = (struct admit_entry){
		.fd = fd, .cr = *cr, .gen = (uint16_t)(ad.e[i].gen + 1), .seq = ++ad.seq,
		.deadline = vgpu_now_ns() + (uint64_t)ad.lim.hello_timeout * 1000000000ull,
	};
	return i;
}

struct admit_entry *admit_at(int i)
{
	return &ad.e[i];
}

int admit_oldest_ready(void)
{
	int best = -1;

	for (int i = 0; i < ADMIT_MAX; i++)
		if (ad.e[i].fd >= 0 && ad.e[i].hello && (best < 0 || ad.e[i].seq < ad.e[best].seq))
			best = i;
	return best;
}

unsigned int admit_ready_count(void)
{
	unsigned int n = 0;

	for (int i = 0; i < ADMIT_MAX; i++)
		n += ad.e[i].fd >= 0 && ad.e[i].hello;
	return n;
}

int admit_take(int i)
{
	int fd = ad.e[i].fd;

	ad.e[i].fd = -1;
	return fd;
}

void admit_drop(int i, int err, const char *why)
{
	int fd = admit_take(i);

	if (why)
		refuse(fd, err, why);
	else
		close(fd);
}

void admit_sweep(uint64_t now, void (*expired)(int i))
{
	for (int i = 0; i < ADMIT_MAX; i++)
		if (ad.e[i].fd >= 0 && !ad.e[i].hello && now >= ad.e[i].deadline)
			expired(i);
}

void admit_close_all(void)
{
	for (int i = 0; i < ADMIT_MAX; i++)
		if (ad.e[i].fd >= 0)
			close(admit_take(i));
}
