/* SPDX-License-Identifier: MIT */
/*
 * Where a checkpoint's sections go while the program waits.
 *
 *   stream    straight into the file: device bytes GPU -> the writer's
 *             staging buffers -> file. The program waits for the disk.
 *   snapshot  into memory: device bytes GPU -> one pinned host buffer
 *             prepared before the pause, everything else copied to the
 *             heap. The program waits only for those copies; the file is
 *             written from memory afterwards (ckpt_sink_flush, on any
 *             thread), while the program runs again.
 */
#ifndef VGPU_CKPT_SINK_H
#define VGPU_CKPT_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "ckpt.h"
#include "ckpt_bulk.h"

struct ckpt_sink;

/* Writes through @wr (owned by the caller). */
/* bulk (uncompressed writers only): device sections are reserved in the
 * file and copied by several threads at ckpt_sink_device_flush(). */
struct ckpt_sink *ckpt_sink_stream(const struct vgpu_backend *B, struct vgpu_ckpt_writer *wr,
				   bool bulk);
/* Keeps the sections; device bytes go to @buf (@cap bytes, registered with
 * the GPU), then, when it is full, to the heap. */
struct ckpt_sink *ckpt_sink_snapshot(const struct vgpu_backend *B, void *buf, size_t cap);

int ckpt_sink_begin(struct ckpt_sink *s, uint32_t type, uint64_t id, uint64_t aux);
int ckpt_sink_write(struct ckpt_sink *s, const void *p, size_t len);
/* Device bytes [p, p + len), read with the current context's copies. */
int ckpt_sink_device(struct ckpt_sink *s, uint64_t p, uint64_t len);
int ckpt_sink_end(struct ckpt_sink *s);
/* A whole section of device bytes: begin, device and end in one. */
int ckpt_sink_device_section(struct ckpt_sink *s, uint32_t type, uint64_t id, uint64_t p,
			     uint64_t len);
/* A section whose bytes the parent checkpoint has (the writer's opts.parent). */
int ckpt_sink_ref_parent(struct ckpt_sink *s, uint32_t type, uint64_t id);
/* The device sections a bulk sink has reserved, copied (before the finish). */
int ckpt_sink_device_flush(struct ckpt_sink *s);
/* Stream, bulk: the file mapped and registered beforehand (not owned). */
void ckpt_sink_landing(struct ckpt_sink *s, const struct ckpt_landing *land);
/* Why the last call failed. */
const char *ckpt_sink_error(const struct ckpt_sink *s);
/* A whole section of @n records of @size bytes (aux: @n). */
int ckpt_sink_table(struct ckpt_sink *s, uint32_t type, const void *rec, size_t n, size_t size);
/* For the sections' writers and readers: @why (@len bytes) says why;
 * returns @err. */
__attribute__((format(printf, 4, 5)))
int ckpt_say(char *why, size_t len, int err, const char *fmt, ...);
/* Device bytes copied are added to *progress from now on. */
void ckpt_sink_progress(struct ckpt_sink *s, uint64_t *progress);

/* Snapshot: writes every kept section to @wr, in order. */
int ckpt_sink_flush(struct ckpt_sink *s, struct vgpu_ckpt_writer *wr);
void ckpt_sink_free(struct ckpt_sink *s);

#endif
