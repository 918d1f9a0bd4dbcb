// SPDX-License-Identifier: MIT
/*
 * Parallel memcpy for staged copies. A pageable copy moves every byte
 * through the staging chunks with one memcpy on the program's side, and
 * one core's memcpy (about 7 GB/s on the H100 machine) is slower than the
 * driver's own pageable path; the GPU's side runs at 50 GB/s. Large pieces
 * are therefore split among a few helper threads, started on first use.
 *
 *   VGPU_COPY_THREADS  helpers besides the caller (default: 3, fewer on a
 *                      machine with fewer cores; 0 turns them off)
 */
#include "pcopy.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define MAX_HELPERS	8
#define SPLIT_MIN	(1u << 20)	/* smaller pieces: one memcpy */
#define PART_ALIGN	4096u

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;		/* one parallel copy at a time */
	pthread_mutex_t job_lock;
	pthread_cond_t start, done;
	int helpers;
	/* the current job, under job_lock */
	uint64_t gen;
	uint8_t *dst;
	const uint8_t *src;
	size_t len, part;
	int parts, next, finished;
} pc = {
	.once = PTHREAD_ONCE_INIT,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.job_lock = PTHREAD_MUTEX_INITIALIZER,
	.start = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

/* Copies part i of the current job (its fields are stable while it runs). */
static void copy_part(int i)
{
	size_t off = (size_t)i * pc.part;
	size_t n = off + pc.part > pc.len ? pc.len - off : pc.part;

	memcpy(pc.dst + off, pc.src + off, n);
}

/* Takes parts of the current job until none is left. */
static void work(void)
{
	for (;;) {
		int i;

		pthread_mutex_lock(&pc.job_lock);
		i = pc.next < pc.parts ? pc.next++ : -1;
		pthread_mutex_unlock(&pc.job_lock);
		if (i < 0)
			return;
		copy_part(i);
		pthread_mutex_lock(&pc.job_lock);
		if (++pc.finished == pc.parts)
			pthread_cond_signal(&pc.done);
		pthread_mutex_unlock(&pc.job_lock);
	}
}

static void *helper_main(void *arg)
{
	uint64_t seen = 0;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&pc.job_lock);
		while (pc.gen == seen)
			pthread_cond_wait(&pc.start, &pc.job_lock);
		seen = pc.gen;
		pthread_mutex_unlock(&pc.job_lock);
		work();
	}
	return NULL;
}

static void start_helpers(void)
{
	const char *env = getenv("VGPU_COPY_THREADS");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int want = env ? atoi(env) : (int)(cpus > 4 ? 3 : cpus - 1);
	pthread_attr_t attr;
	sigset_t all, old;

	if (want < 0)
		want = 0;
	if (want > MAX_HELPERS)
		want = MAX_HELPERS;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 << 10);
	/* The program's signals are not ours to take. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < want; i++) {
		pthread_t t;

		int err = pthread_create(&t, &attr, helper_main, NULL);

		/*
		 * glibc puts the static TLS of every loaded library on a new
		 * thread's stack: beside cuBLAS, a small stack is EINVAL.
		 */
		if (err == EINVAL) {
			pthread_attr_setstacksize(&attr, 16 << 20);
			err = pthread_create(&t, &attr, helper_main, NULL);
		}
		if (err) {
			vlog_warn("parallel copy: %d helper threads, not %d: %s", i, want,
				  strerror(err));
			break;
		}
		pc.helpers++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

void vgpu_copy_parallel(void *dst, const void *src, size_t len)
{
	int parts;

	if (len < 2 * SPLIT_MIN) {
		memcpy(dst, src, len);
		return;
	}
	pthread_once(&pc.once, start_helpers);
	parts = pc.helpers + 1;
	if ((size_t)parts > len / SPLIT_MIN)
		parts = (int)(len / SPLIT_MIN);
	if (parts < 2 || pthread_mutex_trylock(&pc.lock)) {
		memcpy(dst, src, len);	/* no helpers, or busy with another copy */
		return;
	}
	pthread_mutex_lock(&pc.job_lock);
	pc.dst = dst;
	pc.src = src;
	pc.len = len;
	pc.part = (len / parts + PART_ALIGN - 1) & ~(size_t)(PART_ALIGN - 1);
	pc.parts = (int)((len + pc.part - 1) / pc.part);
	pc.next = 0;
	pc.finished = 0;
	pc.gen++;
	pthread_cond_broadcast(&pc.start);
	pthread_mutex_unlock(&pc.job_lock);
	work();
	pthread_mutex_lock(&pc.job_lock);
	while (pc.finished < pc.parts)
		pthread_cond_wait(&pc.done, &pc.job_lock);
	pthread_mutex_unlock(&pc.job_lock);
	pthread_mutex_unlock(&pc.lock);
}
