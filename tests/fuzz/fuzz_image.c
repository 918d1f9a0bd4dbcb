// SPDX-License-Identifier: MIT
/*
 * Fuzzes module images as MODULE_LOAD hands them to the worker
 * (daemon/worker/exec/exec_module.c): vgpu_image_check() on exactly the bytes received
 * (what guards the cuda backend's driver), the host backend's reader bounded
 * by that length (host_image_parse_len()), and, for an image the check
 * passes, the host backend's cuModuleLoadData on a copy with the worker's
 * trailing NUL, then its unload: the module's globals, functions and their
 * layouts are built and torn down as in a session.
 *
 * The harness brings its own vgpu_log: messages are formatted (a format
 * reading past a string is still caught) but not printed, so the fuzzer
 * runs at speed.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "host_backend.h"
#include "host_image.h"
#include "log.h"

static struct vgpu_backend b;

void vgpu_log_init(const char *ident, enum vgpu_log_level dflt)
{
	(void)ident;
	(void)dflt;
}

int vgpu_log_enabled(enum vgpu_log_level level)
{
	return level >= VGPU_LOG_DEBUG;	/* debug messages are formatted too */
}

void vgpu_log(enum vgpu_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
}

/* One host device with a small budget, its primary context current. */
static void setup(void)
{
	CUcontext ctx;

	setenv("VGPU_HOST_DEVICE_MEM", "256M", 1);
	if (vgpu_backend_host_open(&b) || b.cuInit(0) || b.cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    b.cuCtxSetCurrent(ctx))
		abort();
}

static void worker_load(const uint8_t *data, size_t size)
{
	uint8_t *img = malloc(size + 1);
	CUmodule mod;

	if (!img)
		return;
	memcpy(img, data, size);
	img[size] = 0;	/* as op_module_load() ends what it received */
	if (!b.cuModuleLoadData(&mod, img))
		b.cuModuleUnload(mod);
	free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct host_image img;
	size_t extent;

	if (!ready) {
		setup();
		ready = 1;
	}
	if (!host_image_parse_len(data, size, &img))
		host_image_free(&img);
	if (vgpu_image_check(data, size, &extent))
		return 0;
	if (extent > size)
		abort();	/* the check's own promise */
	worker_load(data, size);
	return 0;
}
