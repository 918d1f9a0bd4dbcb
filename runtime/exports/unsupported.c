// SPDX-License-Identifier: MIT
#include "unsupported.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "driver.h"
#include "log.h"

/*
 * Names already reported: an open-addressing set of string pointers, keyed by
 * content (the same name may come from several literals). Far more slots than
 * there are driver symbols; should it ever fill up, we log every time rather
 * than lose a line.
 */
#define SEEN_SLOTS 2048

static const char *seen[SEEN_SLOTS];
static unsigned int seen_count;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* True the first time NAME is seen. */
static int first_sighting(const char *name)
{
	uint32_t i = hash_name(name) & (SEEN_SLOTS - 1);
	int first = 1;

	pthread_mutex_lock(&seen_lock);
	for (;;) {
		if (!seen[i]) {
			if (seen_count < SEEN_SLOTS - 1) {
				seen[i] = name;
				seen_count++;
			}
			break;
		}
		if (!strcmp(seen[i], name)) {
			first = 0;
			break;
		}
		i = (i + 1) & (SEEN_SLOTS - 1);
	}
	pthread_mutex_unlock(&seen_lock);
	return first;
}

int vgpu_unsupported(const char *name)
{
	if (!name)
		name = "(unnamed driver call)";
	if (first_sighting(name))
		vlog_warn("%s: not supported by vgpu, returning CUDA_ERROR_NOT_SUPPORTED", name);
	return CUDA_ERROR_NOT_SUPPORTED;
}
