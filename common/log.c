// SPDX-License-Identifier: MIT
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_ident = "vgpu";
static int log_threshold = -1;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

static int parse_level(const char *s, int dflt)
{
	for (int i = 0; i < 4; i++)
		if (s && !strcasecmp(s, level_names[i]))
			return i;
	return dflt;
}

void vgpu_log_init(const char *ident, enum vgpu_log_level dflt)
{
	log_ident = ident;
	log_threshold = parse_level(getenv("VGPU_LOG"), dflt);
}

int vgpu_log_enabled(enum vgpu_log_level level)
{
	if (log_threshold < 0)
		log_threshold = parse_level(getenv("VGPU_LOG"), VGPU_LOG_WARN);
	return (int)level >= log_threshold;
}

void vgpu_log(enum vgpu_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (!vgpu_log_enabled(level))
		return;
	n = snprintf(line, sizeof(line), "%s[%d]: %s: ", log_ident, (int)getpid(),
		     level_names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	/* One write per line so lines from many processes never interleave. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

int vgpu_ratelimit(struct vgpu_ratelimit *rl, unsigned int *held)
{
	struct timespec ts;
	long long now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000ll + ts.tv_nsec;
	if (rl->last_ns && now - rl->last_ns < 1000000000ll) {
		rl->held++;
		return 0;
	}
	*held = rl->held;
	rl->held = 0;
	rl->last_ns = now;
	return 1;
}
