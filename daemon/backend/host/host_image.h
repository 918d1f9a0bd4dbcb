/* SPDX-License-Identifier: MIT */
/*
 * Module images as they come over the wire: bytes and a length, from a
 * tenant. vgpu_image_check() runs in the worker before either backend sees
 * an image (the real driver takes a pointer and trusts the image's own
 * headers for its length); host_image_parse_len() is the host backend's
 * reader, bounded by the length it is given. Neither follows a pointer
 * found in the bytes: a fatbinC wrapper is unwrapped by the client.
 */
#ifndef VGPU_DAEMON_HOST_IMAGE_H
#define VGPU_DAEMON_HOST_IMAGE_H

#include <stddef.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

struct host_image;

/*
 * Whether every byte the image's headers declare (the fatbin container and
 * each entry with its compressed size, the ELF header, section and program
 * header tables, sections, symbol and note tables; PTX up to its NUL) lies
 * within the first @len bytes at @image. On success *extent is where the
 * image ends (<= @len). Returns 0, -EPERM for a fatbinC wrapper (it holds
 * a pointer into the client), or -EINVAL.
 */
int vgpu_image_check(const void *image, size_t len, size_t *extent);

/* The host backend's reading of an image of @len bytes; never past them. */
CUresult host_image_parse_len(const void *image, size_t len, struct host_image *out);

#endif
