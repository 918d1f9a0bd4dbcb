/* SPDX-License-Identifier: MIT */
/* dark-trace: what trace.c shares with its page watch and its stepper. */
#ifndef DARK_TRACE_H
#define DARK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* trace.c: copies len bytes at p, or fails on memory that is not mapped. */
HIDDEN int peek(uintptr_t p, void *buf, size_t len);

/* watch.c (DARK_TRACE_WATCH): the object ToolsContext[51] handed out, then
 * the window from a ToolsContext[4] return to the next logged call. */
HIDDEN void watch_note_object(uintptr_t obj);
HIDDEN void watch_arm(uintptr_t ctx);
HIDDEN void watch_disarm(const char *why);

/* step.c (DARK_TRACE_STEP): the same window, single-stepped. */
HIDDEN void step_arm(void);
HIDDEN void step_stop(void);

#endif
