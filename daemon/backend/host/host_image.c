// SPDX-License-Identifier: MIT
/*
 * Module images for the host backend: what cuModuleLoadData accepts, read
 * for kernel names, parameter layouts and globals. No code is run from them.
 *
 *   fatbinC wrapper  u32 magic 0x466243b1, u32 version, u64 pointer to a fatbin
 *   fatbin           u32 magic 0xba55ed50, u16 version, u16 header size,
 *                    u64 size of the entries that follow; each entry:
 *     0  u16 kind (1 PTX, 2 ELF)     24 u16 minor, u16 major (PTX ISA)
 *     2  u16 version                 28 u32 arch (75 = sm_75 / compute_75)
 *     4  u32 header size             40 u64 flags: 0x2000 LZ4, 0x8000 zstd
 *     8  u64 payload size (padded)   56 u64 decompressed size
 *     16 u32 compressed size
 *   ELF cubin        kernels: FUNC symbols marked entry (st_other 0x10);
 *                    parameters: EIATTR_KPARAM_INFO in .nv.info.<kernel>;
 *                    globals: OBJECT symbols in .nv.global (zero),
 *                    .nv.global.init and .nv.constant3 (initialized)
 *   PTX              NUL-terminated text: .entry, .global, .const
 *
 * nvcc 13.0 compresses PTX entries with zstd by default (-Xfatbin=-compress
 * defaults to true, for "ptx and debug images"); SASS stays uncompressed
 * unless -Xfatbin=-compress-all. -Xfatbin=-compress-mode=speed gives LZ4.
 * LZ4 blocks are inflated here; zstd through libzstd.so.1 when present.
 * Without it, another entry (an ELF of any arch) still names everything.
 *
 * A fatbin loads only if it holds SASS for sm_90 or PTX for compute_90 or
 * older, as on an H100: else CUDA_ERROR_NO_BINARY_FOR_GPU.
 *
 * The bytes come from a tenant, to a root process. Everything is read
 * within the length received: vgpu_image_check() first (both backends: the
 * real driver trusts the image's headers for its length), then the reader
 * here, bounded again. A fatbinC wrapper holds a pointer into the client's
 * address space: the client unwraps it, the worker refuses it.
 *
 * This file: the model, the fatbin's entries (inflated where compressed)
 * and which of them is read; the bounds check is host_image_check.c's, the
 * readers host_image_elf.c's and host_image_ptx.c's (host_image_fmt.h).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_backend.h"
#include "host_image.h"
#include "host_image_fmt.h"
#include "log.h"

void host_image_free(struct host_image *img)
{
	for (size_t i = 0; i < img->nkernels; i++) {
		free(img->kernels[i].name);
		free(img->kernels[i].param_off);
		free(img->kernels[i].param_size);
	}
	for (size_t i = 0; i < img->nglobals; i++) {
		free(img->globals[i].name);
		free(img->globals[i].init);
	}
	free(img->kernels);
	free(img->globals);
	memset(img, 0, sizeof(*img));
}

struct host_image_kernel *host_image_add_kernel(struct host_image *img, const char *name,
						size_t len)
{
	struct host_image_kernel *k;

	k = realloc(img->kernels, (img->nkernels + 1) * sizeof(*k));
	if (!k)
		return NULL;
	img->kernels = k;
	k = &img->kernels[img->nkernels];
	memset(k, 0, sizeof(*k));
	k->nparams = -1;
	k->name = strndup(name, len);
	if (!k->name)
		return NULL;
	img->nkernels++;
	return k;
}

struct host_image_global *host_image_add_global(struct host_image *img, const char *name,
						size_t len)
{
	struct host_image_global *g;

	g = realloc(img->globals, (img->nglobals + 1) * sizeof(*g));
	if (!g)
		return NULL;
	img->globals = g;
	g = &img->globals[img->nglobals];
	memset(g, 0, sizeof(*g));
	g->name = strndup(name, len);
	if (!g->name)
		return NULL;
	img->nglobals++;
	return g;
}

/* 0, -1 out of memory, 1 an index past any kernel's: the layout is unknown. */
int host_image_add_param(struct host_image_kernel *k, uint32_t idx, uint32_t off, uint32_t size)
{
	uint32_t *o, *s;
	int n = k->nparams < 0 ? 0 : k->nparams;

	if (idx >= 4096)
		return 1;
	if ((int)idx >= n) {
		o = realloc(k->param_off, (idx + 1) * sizeof(*o));
		if (!o)
			return -1;
		k->param_off = o;
		s = realloc(k->param_size, (idx + 1) * sizeof(*s));
		if (!s)
			return -1;
		k->param_size = s;
		for (int i = n; i <= (int)idx; i++)
			o[i] = s[i] = UINT32_MAX;
		n = (int)idx + 1;
	}
	k->nparams = n;
	k->param_off[idx] = off;
	k->param_size[idx] = size;
	return 0;
}

/* --- decompression ------------------------------------------------------ */

/* One LZ4 block (no frame): literals and matches, 16-bit offsets. */
static int lz4_block(const uint8_t *ip, size_t n, uint8_t *out, size_t cap, size_t *got)
{
	const uint8_t *iend = ip + n;
	uint8_t *op = out, *oend = out + cap;

	while (ip < iend) {
		unsigned token = *ip++;
		size_t lit = token >> 4, mlen = token & 15, off;
		unsigned b;

		if (lit == 15)
			do {
				if (ip == iend)
					return -1;
				b = *ip++;
				lit += b;
			} while (b == 255);
		if (lit > (size_t)(iend - ip) || lit > (size_t)(oend - op))
			return -1;
		memcpy(op, ip, lit);
		op += lit;
		ip += lit;
		if (ip == iend)
			break;		/* the last sequence has literals only */
		if (iend - ip < 2)
			return -1;
		off = rd16(ip);
		ip += 2;
		if (!off || off > (size_t)(op - out))
			return -1;
		if (mlen == 15)
			do {
				if (ip == iend)
					return -1;
				b = *ip++;
				mlen += b;
			} while (b == 255);
		mlen += 4;
		if (mlen > (size_t)(oend - op))
			return -1;
		for (size_t i = 0; i < mlen; i++, op++)	/* may overlap itself */
			*op = *(op - off);
	}
	*got = (size_t)(op - out);
	return 0;
}

static size_t (*zstd_decompress)(void *, size_t, const void *, size_t);
static unsigned (*zstd_is_error)(size_t);

static void zstd_open(void)
{
	void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	*(void **)&zstd_decompress = dlsym(h, "ZSTD_decompress");
	*(void **)&zstd_is_error = dlsym(h, "ZSTD_isError");
}

/* libzstd's two stable entry points, found at run time: no build dependency. */
static int zstd_load(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, zstd_open);
	return zstd_decompress && zstd_is_error ? 0 : -1;
}

/* The payload of a fatbin entry, inflated if needed: *buf is malloc'ed or NULL. */
static CUresult entry_bytes(const uint8_t *e, uint32_t hsize, const uint8_t *pl, uint64_t psize,
			    const uint8_t **out, size_t *outn, uint8_t **buf)
{
	uint64_t flags = rd64(e + 40), csize = rd32(e + 16), usize;
	size_t got = 0;

	*buf = NULL;
	if (!(flags & (FAT_LZ4 | FAT_ZSTD))) {
		*out = pl;
		*outn = psize;
		return CUDA_SUCCESS;
	}
	if (hsize < 64)
		return CUDA_ERROR_INVALID_IMAGE;
	usize = rd64(e + 56);
	if (csize > psize)
		return CUDA_ERROR_INVALID_IMAGE;
	if (!csize)
		csize = psize;
	/* An LZ4 sequence yields at most 255 bytes a byte: no gigabyte from a few. */
	if (!usize || usize > MAX_INFLATED || ((flags & FAT_LZ4) && usize / 255 > csize))
		return CUDA_ERROR_INVALID_IMAGE;
	*buf = malloc(usize + 1);
	if (!*buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (flags & FAT_LZ4) {
		if (lz4_block(pl, csize, *buf, usize, &got) || got != usize)
			goto bad;
	} else {
		size_t n;

		if (zstd_load()) {
			vlog_warn("host backend: a fatbin entry is zstd-compressed and libzstd.so.1 "
				  "is not available; trying other entries");
			free(*buf);
			*buf = NULL;
			return CUDA_ERROR_INVALID_IMAGE;
		}
		n = zstd_decompress(*buf, usize, pl, csize);
		if (zstd_is_error(n) || n != usize)
			goto bad;
	}
	(*buf)[usize] = 0;	/* PTX is text */
	*out = *buf;
	*outn = usize;
	return CUDA_SUCCESS;
bad:
	vlog_warn("host backend: a compressed fatbin entry does not inflate");
	free(*buf);
	*buf = NULL;
	return CUDA_ERROR_INVALID_IMAGE;
}
/* --- fatbin ------------------------------------------------------------- */

struct entry {
	const uint8_t *hdr;
	uint32_t hsize;
	const uint8_t *payload;
	uint64_t psize;
	unsigned kind, arch;
};

static int entry_runs_here(const struct entry *e)
{
	if (e->kind == FAT_ELF)
		return e->arch / 10 == HOST_CC_MAJOR && e->arch % 10 <= HOST_CC_MINOR;
	return e->kind == FAT_PTX && e->arch <= DEVICE_ARCH;
}

static CUresult entry_parse(const struct entry *e, struct host_image *img)
{
	const uint8_t *d;
	uint8_t *buf;
	size_t n;
	int target;
	CUresult r = entry_bytes(e->hdr, e->hsize, e->payload, e->psize, &d, &n, &buf);

	if (r)
		return r;
	vlog_debug("host backend: reading the %s_%u entry (%s)",
		   e->kind == FAT_ELF ? "sm" : "compute", e->arch,
		   rd64(e->hdr + 40) & FAT_LZ4 ? "lz4" : rd64(e->hdr + 40) & FAT_ZSTD ? "zstd" : "plain");
	if (e->kind == FAT_ELF) {
		r = host_image_elf_parse(d, n, img);
	} else {
		/* PTX payloads are NUL-padded text. */
		size_t len = strnlen((const char *)d, n);

		r = host_image_ptx_parse((const char *)d, len, img, &target);
	}
	free(buf);
	return r;
}

/* A fatbin of len bytes; its entries are read within them (host_image_entry_end()). */
static CUresult fatbin_parse(const uint8_t *d, size_t len, struct host_image *img)
{
	uint64_t total = 0, pos, next;
	struct entry ents[64];
	size_t n = 0;
	int best_elf = 0, best_ptx = 0;
	CUresult r = CUDA_ERROR_INVALID_IMAGE;

	if (len < 16 || rd16(d + 6) < 16 || !host_image_span(rd16(d + 6), rd64(d + 8), len, &total))
		return CUDA_ERROR_INVALID_IMAGE;
	for (pos = rd16(d + 6); pos < total && n < 64; pos = next) {
		const uint8_t *e = d + pos;
		struct entry *en = &ents[n];

		next = host_image_entry_end(d, pos, total);
		if (!next)
			return CUDA_ERROR_INVALID_IMAGE;
		en->hdr = e;
		en->kind = rd16(e);
		en->hsize = rd32(e + 4);
		en->psize = next - pos - en->hsize;
		en->arch = rd32(e + 28);
		en->payload = e + en->hsize;
		if (en->kind == FAT_ELF || en->kind == FAT_PTX)
			n++;
	}
	for (size_t i = 0; i < n; i++)
		if (entry_runs_here(&ents[i])) {
			if (ents[i].kind == FAT_ELF)
				best_elf = 1;
			else if ((int)ents[i].arch > best_ptx)
				best_ptx = (int)ents[i].arch;
		}
	if (!best_elf && !best_ptx) {
		char archs[256] = "";

		for (size_t i = 0; i < n; i++)
			snprintf(archs + strlen(archs), sizeof(archs) - strlen(archs), " %s_%u",
				 ents[i].kind == FAT_ELF ? "sm" : "compute", ents[i].arch);
		vlog_err("host backend: no code for sm_90 in this image (it has:%s)", archs);
		return CUDA_ERROR_NO_BINARY_FOR_GPU;
	}
	/* Names come from any entry: runnable ones first, ELF before PTX. */
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < n; i++) {
			const struct entry *e = &ents[i];

			if (entry_runs_here(e) != (pass < 2) ||
			    (e->kind == FAT_ELF) != (pass % 2 == 0))
				continue;
			host_image_free(img);
			r = entry_parse(e, img);
			if (!r) {
				img->ptx_version = best_elf ? DEVICE_ARCH : best_ptx;
				img->binary_version = DEVICE_ARCH;
				return CUDA_SUCCESS;
			}
			if (r == CUDA_ERROR_OUT_OF_MEMORY)
				return r;
		}
	host_image_free(img);
	vlog_err("host backend: no entry of this fatbin could be read (zstd entries need "
		 "libzstd.so.1; or build with -Xfatbin=-compress-mode=speed, or "
		 "-Xfatbin=-compress=false)");
	return r;
}

CUresult host_image_parse_len(const void *image, size_t len, struct host_image *img)
{
	const uint8_t *d = image;
	uint32_t magic;
	size_t n;
	CUresult r;
	int target;

	memset(img, 0, sizeof(*img));
	if (vgpu_image_check(d, len, &n))
		return CUDA_ERROR_INVALID_IMAGE;	/* a wrapper too: never followed */
	magic = host_image_magic_of(d, n);
	if (magic == FATBIN_MAGIC) {
		r = fatbin_parse(d, n, img);
	} else if (!memcmp(&magic, ELFMAG, SELFMAG)) {
		int arch = host_image_elf_arch(d);

		if (arch / 10 != HOST_CC_MAJOR || arch % 10 > HOST_CC_MINOR) {
			vlog_err("host backend: the cubin is for sm_%d, not sm_90", arch);
			return CUDA_ERROR_NO_BINARY_FOR_GPU;
		}
		r = host_image_elf_parse(d, n, img);
		img->ptx_version = img->binary_version = DEVICE_ARCH;
	} else if (host_image_looks_like_ptx((const char *)d, n - 1)) {
		r = host_image_ptx_parse((const char *)d, n - 1, img, &target);
	} else {
		r = CUDA_ERROR_INVALID_IMAGE;
	}
	if (r)
		host_image_free(img);
	return r;
}

/*
 * The driver's contract: a pointer, the length in the image's own headers.
 * The worker has checked those against the bytes it received
 * (vgpu_image_check() in exec_module.c) before any backend sees them.
 */
CUresult host_image_parse(const void *image, struct host_image *img)
{
	size_t n;

	memset(img, 0, sizeof(*img));
	if (!image || vgpu_image_check(image, SIZE_MAX, &n))
		return CUDA_ERROR_INVALID_IMAGE;
	return host_image_parse_len(image, n, img);
}
