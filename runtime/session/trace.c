// SPDX-License-Identifier: MIT
/*
 * VGPU_TRACE=1: one line on stderr per driver entry point the program (or a
 * library in it) calls, named by the symbol it entered through. It is how a
 * library's failure is traced to the driver call behind it, when the
 * library only says "invalid value". Every entry point's first check,
 * vgpu_initialized(), reports its caller here; off, it costs one load.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace.h"

int vgpu_trace_on;

__attribute__((constructor)) static void trace_init(void)
{
	const char *v = getenv("VGPU_TRACE");

	vgpu_trace_on = v && *v && *v != '0';
}

void vgpu_trace_caller(const void *where)
{
	Dl_info di;

	if (dladdr(where, &di) && di.dli_sname)
		fprintf(stderr, "vgpu[%d]: trace: %s\n", (int)getpid(), di.dli_sname);
	else
		fprintf(stderr, "vgpu[%d]: trace: %p\n", (int)getpid(), where);
}
