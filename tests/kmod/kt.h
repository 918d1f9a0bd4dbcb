/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Helpers for the vgpu.ko tests. Each test is one static program run inside
 * the QEMU guest: exit 0 pass, 1 fail, 77 skip.
 */
#ifndef KT_H
#define KT_H

#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uapi/vgpu.h"

#define KT_SKIP 77

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: CHECK(%s) failed (errno %d %s)\n", \
				__FILE__, __LINE__, #cond, errno,	\
				strerror(errno));			\
			exit(1);					\
		}							\
	} while (0)

/* @call must fail with errno @err. */
#define CHECK_ERR(call, err)						\
	do {								\
		long kt_r_;						\
		errno = 0;						\
		kt_r_ = (long)(call);					\
		if (kt_r_ != -1 || errno != (err)) {			\
			fprintf(stderr, "%s:%d: %s = %ld errno %d (%s), want %s\n", \
				__FILE__, __LINE__, #call, kt_r_, errno, \
				strerror(errno), #err);			\
			exit(1);					\
		}							\
	} while (0)

#define CHECK_OK(call)							\
	do {								\
		errno = 0;						\
		if ((long)(call) < 0) {					\
			fprintf(stderr, "%s:%d: %s failed: %s\n",	\
				__FILE__, __LINE__, #call, strerror(errno)); \
			exit(1);					\
		}							\
	} while (0)

/* An SPSC ring as one side sees it. */
struct kt_ring {
	uint32_t *head;
	uint32_t *tail;
	uint32_t *flags;
	uint8_t *entries;
	uint32_t mask;
	uint32_t entry_size;
};

struct kt_map {
	struct vgpu_setup geo;
	volatile uint32_t *status;	/* flags word */
	uint8_t *rings;
	uint8_t *arena;
	struct kt_ring sq;
	struct kt_ring cq;
};

int kt_open(void);
int kt_server(void);
/* A client fd with the given geometry; exits on failure. */
int kt_client(uint32_t sq, uint32_t cq, uint32_t sqe, uint32_t cqe,
	      uint64_t arena, struct vgpu_setup *geo);
int kt_client_default(struct vgpu_setup *geo);
void kt_map(int fd, struct kt_map *m);
void kt_unmap(struct kt_map *m);
/* Next server event within @ms milliseconds; 0 on success, -1 on timeout. */
int kt_event(int srv, struct vgpu_event *ev, int ms);
/* Reads events until one of @type for @id arrives; -1 on timeout. */
int kt_event_wait(int srv, uint32_t type, uint64_t id, int ms);
int kt_attach(int srv, uint64_t id);
int kt_register(int fd, void *addr, uint64_t len, uint32_t flags,
		struct vgpu_region *r);
int kt_wait(int fd, uint64_t timeout_ns);
int kt_doorbell(int fd);

/* Touches @len bytes at @p; returns 1 if it raised SIGBUS or SIGSEGV. */
int kt_faults(volatile uint8_t *p, size_t len, int write);

uint64_t kt_rand(uint64_t *state);
long kt_param_set(const char *name, const char *value);

/* Generic netlink, raw sockets. */
struct kt_nl {
	int fd;
	uint16_t family;
	uint32_t mcgrp;
	uint32_t seq;
};

#define KT_NL_MAXATTR (VGPU_A_MAX + 1)
/* One parsed message: attribute payloads or NULL. */
struct kt_nlmsg {
	uint8_t cmd;
	const void *attr[KT_NL_MAXATTR];
	uint16_t len[KT_NL_MAXATTR];
};

int kt_nl_open(struct kt_nl *nl);
void kt_nl_close(struct kt_nl *nl);
/* Sends @cmd with an optional u64 session id (0: none), @flags NLM_F_*. */
int kt_nl_send(struct kt_nl *nl, uint8_t cmd, uint64_t session_id, int flags);
/*
 * Receives until NLMSG_DONE (dump) or the ACK (doit), calling @fn for each
 * reply; returns 0 or the -errno the kernel sent.
 */
int kt_nl_recv(struct kt_nl *nl, void (*fn)(const struct kt_nlmsg *, void *),
	       void *arg);
/* Receives one multicast message within @ms; 0 or -1. */
int kt_nl_recv_event(struct kt_nl *nl, struct kt_nlmsg *m, int ms);
int kt_nl_join(struct kt_nl *nl);
uint64_t kt_nl_u64(const struct kt_nlmsg *m, int attr);
uint32_t kt_nl_u32(const struct kt_nlmsg *m, int attr);

struct kt_stats {
	uint64_t sessions, sessions_total, pinned_pages, regions;
	uint64_t registrations, doorbells, workers, max_pinned_pages;
	uint32_t server;
};

int kt_stats(struct kt_stats *st);

#endif /* KT_H */
