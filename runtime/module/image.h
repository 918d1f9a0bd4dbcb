/* SPDX-License-Identifier: MIT */
/*
 * Module images as the driver receives them: a pointer and no length.
 * vgpu_image_size() finds where an image ends so that it can be sent to
 * the worker. Pure parsing, no session: unit-tested on its own.
 */
#ifndef VGPU_RUNTIME_IMAGE_H
#define VGPU_RUNTIME_IMAGE_H

#include <stdint.h>

#define VGPU_HIDDEN __attribute__((visibility("hidden")))

#define VGPU_FATBINC_MAGIC	0x466243b1u	/* __fatBinC_Wrapper_t */
#define VGPU_FATBIN_MAGIC	0xba55ed50u	/* fatbin header */

enum vgpu_image_kind {
	VGPU_IMG_FATBIN,	/* bare fatbin, or the one a fatbinC wrapper points to */
	VGPU_IMG_ELF,		/* cubin */
	VGPU_IMG_PTX,		/* NUL-terminated text */
};

/*
 * What to send for @image: *start (the fatbin itself when @image is a
 * fatbinC wrapper, else @image) and *size bytes from there (PTX: the text
 * and its NUL). Returns 0, or -EINVAL when @image is none of these or its
 * header is inconsistent. @kind may be NULL.
 */
VGPU_HIDDEN int vgpu_image_size(const void *image, const void **start, uint64_t *size,
				enum vgpu_image_kind *kind);

#endif
