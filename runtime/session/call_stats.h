/* SPDX-License-Identifier: MIT */
/*
 * VGPU_CALL_STATS=1: the runtime counts what it sends the worker, by
 * opcode, and at exit prints to stderr how many of each were waited for
 * (and how long in all) and how many were posted. A developer's measure of
 * where a program's time goes through vgpu: which calls cost a round trip.
 */
#ifndef VGPU_CALL_STATS_H
#define VGPU_CALL_STATS_H

#include <stdbool.h>
#include <stdint.h>

bool vgpu_call_stats_on(void);
/* One entry of @opcode: waited @ns for its answer (0 and !waited: posted). */
void vgpu_call_stats_add(uint16_t opcode, bool waited, uint64_t ns);

#endif
