/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging to stderr for every vgpu program and library.
 * VGPU_LOG=debug|info|warn|error picks the threshold (default: warn for the
 * runtime, which lives inside the user's program; info for daemons).
 */
#ifndef VGPU_LOG_H
#define VGPU_LOG_H

enum vgpu_log_level {
	VGPU_LOG_DEBUG,
	VGPU_LOG_INFO,
	VGPU_LOG_WARN,
	VGPU_LOG_ERROR,
};

/* Names the program in every line and sets the default threshold. */
void vgpu_log_init(const char *ident, enum vgpu_log_level dflt);
int vgpu_log_enabled(enum vgpu_log_level level);
void vgpu_log(enum vgpu_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * One line a second at most from one place: what a tenant can trigger at
 * will (a refusal) must not flood the log. vgpu_ratelimit() says whether to
 * log now and how many lines were held back since the last one.
 */
struct vgpu_ratelimit {
	long long last_ns;
	unsigned int held;
};

int vgpu_ratelimit(struct vgpu_ratelimit *rl, unsigned int *held);

#define vlog_debug(...) \
	do { if (vgpu_log_enabled(VGPU_LOG_DEBUG)) vgpu_log(VGPU_LOG_DEBUG, __VA_ARGS__); } while (0)
#define vlog_info(...)  vgpu_log(VGPU_LOG_INFO, __VA_ARGS__)
#define vlog_warn(...)  vgpu_log(VGPU_LOG_WARN, __VA_ARGS__)
#define vlog_err(...)   vgpu_log(VGPU_LOG_ERROR, __VA_ARGS__)

#endif
