/* SPDX-License-Identifier: MIT */
/*
 * admission.c: clients that connected and have no worker yet. A connection
 * waits here, holding no worker, until its hello arrives (within
 * hello_timeout seconds) and then until a worker is idle. One user (uid)
 * may have at most user_waiting connections here and user_sessions
 * sessions served at once: past the first a connection is refused at
 * accept, past the second once its hello is there, so no user can take
 * every worker or every waiting place from the others.
 * The supervisor arms the polls and the timer; this file keeps the table
 * and the policy.
 */
#ifndef VGPU_ADMISSION_H
#define VGPU_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define ADMIT_MAX 1024		/* connections waiting, all users together */

struct admission_limits {
	unsigned int user_sessions;	/* sessions served at once, per uid */
	unsigned int user_waiting;	/* connections without a worker, per uid */
	unsigned int hello_timeout;	/* seconds from accept to the hello */
};

struct admit_entry {
	int fd;			/* -1: free */
	struct ucred cr;	/* SO_PEERCRED at accept */
	uint16_t gen;		/* counts the connections this entry has had */
	bool hello;		/* the hello is there to read */
	uint64_t deadline;	/* CLOCK_MONOTONIC ns; the hello must come by then */
	uint64_t seq;		/* order of arrival */
};

void admit_init(const struct admission_limits *lim);
/*
 * Takes an accepted connection from @cr: its entry's index, or -1 when
 * refused (the client is told why and the connection closed). Whether its
 * user may have another session is the supervisor's to say once the hello
 * is there (admit_drop).
 */
int admit_add(int fd, const struct ucred *cr);
struct admit_entry *admit_at(int i);
/* The oldest connection whose hello is there, or -1. */
int admit_oldest_ready(void);
/* Forgets entry @i; its fd is the caller's again. */
int admit_take(int i);
/* Refuses and closes entry @i (a connection that hung up, or was too slow). */
void admit_drop(int i, int err, const char *why);
unsigned int admit_ready_count(void);
/* Calls @expired for every entry whose hello is overdue at @now. */
void admit_sweep(uint64_t now, void (*expired)(int i));
void admit_close_all(void);

#endif
