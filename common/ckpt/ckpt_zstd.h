/* SPDX-License-Identifier: MIT */
/*
 * libzstd.so.1, opened with dlopen the first time compression is needed:
 * no build dependency, and machines without it still read and write
 * uncompressed checkpoints. Only zstd's stable streaming API (1.4+) is
 * used; the two buffer structs below are its documented ABI.
 */
#ifndef VGPU_CKPT_ZSTD_H
#define VGPU_CKPT_ZSTD_H

#include <stddef.h>

struct vgpu_zstd_in {	/* ZSTD_inBuffer */
	const void *src;
	size_t size;
	size_t pos;
};

struct vgpu_zstd_out {	/* ZSTD_outBuffer */
	void *dst;
	size_t size;
	size_t pos;
};

/* zstd.h's values. */
#define VGPU_ZSTD_C_LEVEL	100	/* ZSTD_c_compressionLevel */
#define VGPU_ZSTD_D_WINDOWLOG	100	/* ZSTD_d_windowLogMax */
#define VGPU_ZSTD_E_CONTINUE	0	/* ZSTD_e_continue */
#define VGPU_ZSTD_E_END		2	/* ZSTD_e_end */
#define VGPU_ZSTD_RESET_SESSION	1	/* ZSTD_reset_session_only */
#define VGPU_ZSTD_MAX_WINDOWLOG	27	/* what a reader accepts: 128 MiB */

struct vgpu_zstd {
	void *(*create_cctx)(void);
	size_t (*free_cctx)(void *);
	size_t (*cctx_set)(void *, int param, int value);
	size_t (*cctx_reset)(void *, int what);
	size_t (*compress)(void *, struct vgpu_zstd_out *, struct vgpu_zstd_in *, int op);
	void *(*create_dctx)(void);
	size_t (*free_dctx)(void *);
	size_t (*dctx_set)(void *, int param, int value);
	size_t (*dctx_reset)(void *, int what);
	size_t (*decompress)(void *, struct vgpu_zstd_out *, struct vgpu_zstd_in *);
	unsigned (*is_error)(size_t);
	const char *(*error_name)(size_t);
};

/*
 * The library, or NULL with why in *why ("libzstd.so.1: cannot open shared
 * object file..."). VGPU_ZSTD names another library file (tests use it to
 * pretend libzstd is missing).
 */
const struct vgpu_zstd *vgpu_zstd(const char **why);

#endif
