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
 */
#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_backend.h"
#include "host_image.h"
#include "log.h"

#define FATBINC_MAGIC	0x466243b1u
#define FATBIN_MAGIC	0xba55ed50u
#define FAT_PTX		1
#define FAT_ELF		2
#define FAT_LZ4		0x2000ull
#define FAT_ZSTD	0x8000ull
#define EM_CUDA_	190
#define STO_ENTRY	0x10
#define EIATTR_KPARAM_INFO	0x17
#define MAX_INFLATED	(1ull << 30)
#define DEVICE_ARCH	(HOST_CC_MAJOR * 10 + HOST_CC_MINOR)
#define MAX_PTX_ISA	90	/* 9.0, CUDA 13.0 */
#define MAX_IMAGE	(4ull << 30)	/* as the client's and the worker's */
#define MIN_ENTRY	48	/* the entry header fields every entry has */
#define MAX_ENTRY_HDR	4096

static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* --- bounds: what the headers declare lies within the bytes received ---- */

/* Widens *end to off + n, if that does not pass lim. */
static bool span(uint64_t off, uint64_t n, uint64_t lim, uint64_t *end)
{
	uint64_t e;

	if (__builtin_add_overflow(off, n, &e) || e > lim)
		return false;
	if (e > *end)
		*end = e;
	return true;
}

/* A string table's strings all end inside it. */
static bool strtab_ok(const uint8_t *d, const Elf64_Shdr *s)
{
	return s->sh_type == SHT_STRTAB && (!s->sh_size || !d[s->sh_offset + s->sh_size - 1]);
}

static int symtab_bounds(const uint8_t *d, const Elf64_Shdr *s, uint64_t shoff,
			 uint64_t stride, uint64_t shnum)
{
	Elf64_Shdr str;
	Elf64_Sym sym;

	if (s->sh_entsize != sizeof(sym) || s->sh_size % sizeof(sym))
		return -EINVAL;
	memcpy(&str, d + shoff + s->sh_link * stride, sizeof(str));
	if (!strtab_ok(d, &str))
		return -EINVAL;
	for (uint64_t off = 0; off < s->sh_size; off += sizeof(sym)) {
		memcpy(&sym, d + s->sh_offset + off, sizeof(sym));
		if (sym.st_name >= (str.sh_size ? str.sh_size : 1) ||
		    (sym.st_shndx >= shnum && sym.st_shndx < SHN_LORESERVE))
			return -EINVAL;
	}
	return 0;
}

/* Notes: records of 12 bytes, then name and description, each padded to
 * 4 (nvcc's), or to 8 in a section aligned so (as some 64-bit producers do). */
static int notes_bounds(const uint8_t *d, const Elf64_Shdr *s)
{
	const uint8_t *p = d + s->sh_offset;
	uint64_t pos = 0, end, pad = s->sh_addralign == 8 ? 7 : 3;

	while (pos < s->sh_size) {
		end = 0;
		if (!span(pos, 12, s->sh_size, &end) ||
		    !span(end, ((uint64_t)rd32(p + pos) + pad) & ~pad, s->sh_size, &end) ||
		    !span(end, ((uint64_t)rd32(p + pos + 4) + pad) & ~pad, s->sh_size, &end))
			return -EINVAL;
		pos = end;
	}
	return 0;
}

/* Links and tables of a section; every section's bytes lie within the image. */
static int section_tables(const uint8_t *d, const Elf64_Ehdr *eh, const Elf64_Shdr *s,
			  uint64_t shnum)
{
	if (s->sh_link >= shnum)
		return -EINVAL;
	if ((s->sh_type == SHT_REL || s->sh_type == SHT_RELA) && s->sh_info >= shnum)
		return -EINVAL;
	if (s->sh_type == SHT_STRTAB && !strtab_ok(d, s))
		return -EINVAL;
	if (s->sh_type == SHT_SYMTAB || s->sh_type == SHT_DYNSYM)
		return symtab_bounds(d, s, eh->e_shoff, eh->e_shentsize, shnum);
	if (s->sh_type == SHT_NOTE)
		return notes_bounds(d, s);
	return 0;
}

/* Each section's bytes, then its links and tables; the header table lies within lim. */
static int sections_bounds(const uint8_t *d, const Elf64_Ehdr *eh, uint64_t shnum,
			   uint64_t lim, uint64_t *end)
{
	Elf64_Shdr s;

	for (int pass = 0; pass < 2; pass++)
		for (uint64_t i = 0; i < shnum; i++) {
			memcpy(&s, d + eh->e_shoff + i * eh->e_shentsize, sizeof(s));
			if (s.sh_type == SHT_NULL || s.sh_type == SHT_NOBITS)
				continue;
			if (!pass ? !span(s.sh_offset, s.sh_size, lim, end)
				  : section_tables(d, eh, &s, shnum) < 0)
				return -EINVAL;
		}
	return 0;
}

static int elf_bounds(const uint8_t *d, uint64_t lim, uint64_t *extent)
{
	uint64_t end = sizeof(Elf64_Ehdr), shnum, phnum, shstrndx, bytes;
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	Elf64_Phdr ph;

	if (lim < sizeof(eh))
		return -EINVAL;
	memcpy(&eh, d, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_ehsize < sizeof(eh))
		return -EINVAL;
	shnum = eh.e_shnum;
	phnum = eh.e_phnum;
	shstrndx = eh.e_shstrndx;
	if (eh.e_shoff || eh.e_shnum) {
		if (eh.e_shentsize < sizeof(sh0) || !span(eh.e_shoff, sizeof(sh0), lim, &end))
			return -EINVAL;
		/* Extended numbering: the real counts live in section 0. */
		memcpy(&sh0, d + eh.e_shoff, sizeof(sh0));
		if (!shnum)
			shnum = sh0.sh_size;
		if (phnum == PN_XNUM)
			phnum = sh0.sh_info;
		if (shstrndx == SHN_XINDEX)
			shstrndx = sh0.sh_link;
		if (__builtin_mul_overflow(shnum, (uint64_t)eh.e_shentsize, &bytes) ||
		    !span(eh.e_shoff, bytes, lim, &end) || shstrndx >= shnum)
			return -EINVAL;
		if (sections_bounds(d, &eh, shnum, lim, &end))
			return -EINVAL;
	}
	if (phnum) {
		if (eh.e_phentsize < sizeof(ph) ||
		    __builtin_mul_overflow(phnum, (uint64_t)eh.e_phentsize, &bytes) ||
		    !span(eh.e_phoff, bytes, lim, &end))
			return -EINVAL;
		for (uint64_t i = 0; i < phnum; i++) {
			memcpy(&ph, d + eh.e_phoff + i * eh.e_phentsize, sizeof(ph));
			if (!span(ph.p_offset, ph.p_filesz, lim, &end))
				return -EINVAL;
		}
	}
	*extent = end;
	return 0;
}

/* A cubin entry: an ELF whose headers reach no further than its n bytes. */
static bool elf_within(const uint8_t *d, uint64_t n)
{
	uint64_t extent;

	return n >= SELFMAG && !memcmp(d, ELFMAG, SELFMAG) && !elf_bounds(d, n, &extent);
}

/* Where the fatbin entry at pos ends, within a container ending at total; 0 if it does not. */
static uint64_t entry_end(const uint8_t *d, uint64_t pos, uint64_t total)
{
	const uint8_t *e = d + pos;
	uint64_t end = 0, flags;
	uint32_t ehs;

	if (total - pos < MIN_ENTRY)
		return 0;
	ehs = rd32(e + 4);
	if (ehs < MIN_ENTRY || ehs > MAX_ENTRY_HDR || !span(pos, ehs, total, &end) ||
	    !span(end, rd64(e + 8), total, &end))
		return 0;
	flags = rd64(e + 40);
	/* Compressed: the sizes at 16 and 56 are read, and the first must fit the payload. */
	if (flags & (FAT_LZ4 | FAT_ZSTD))
		return ehs >= 64 && rd32(e + 16) <= rd64(e + 8) ? end : 0;
	/* A cubin is read where it lies: its own headers must stay in its payload. */
	if (rd16(e) == FAT_ELF && !elf_within(e + ehs, end - pos - ehs))
		return 0;
	return end;
}

static int fatbin_bounds(const uint8_t *d, uint64_t lim, uint64_t *extent)
{
	uint64_t total = 0, pos, next;

	if (lim < 16 || rd16(d + 6) < 16 || !span(rd16(d + 6), rd64(d + 8), lim, &total))
		return -EINVAL;
	for (pos = rd16(d + 6); pos < total; pos = next) {
		next = entry_end(d, pos, total);
		if (!next)
			return -EINVAL;
	}
	*extent = total;
	return 0;
}

/* PTX: text up to a NUL inside the bytes (the driver reads to the NUL). */
static int ptx_bounds(const uint8_t *d, size_t len, uint64_t *extent)
{
	size_t n = strnlen((const char *)d, len);

	if (n == len)
		return -EINVAL;
	*extent = n + 1;
	return 0;
}

/* The magic, read only if the first four bytes are there: no magic holds a NUL. */
static uint32_t magic_of(const uint8_t *d, size_t len)
{
	uint32_t magic = 0;

	if (strnlen((const char *)d, len < 4 ? len : 4) == 4)
		memcpy(&magic, d, 4);
	return magic;
}

int vgpu_image_check(const void *image, size_t len, size_t *extent)
{
	const uint8_t *d = image;
	uint64_t lim = len < MAX_IMAGE ? len : MAX_IMAGE, end = 0;
	uint32_t magic;
	int ret;

	if (!d || !len)
		return -EINVAL;
	magic = magic_of(d, len);
	if (magic == FATBINC_MAGIC)
		return -EPERM;	/* its second word points into the client */
	if (magic == FATBIN_MAGIC)
		ret = fatbin_bounds(d, lim, &end);
	else if (!memcmp(&magic, ELFMAG, SELFMAG))
		ret = elf_bounds(d, lim, &end);
	else
		ret = ptx_bounds(d, len, &end);
	if (!ret)
		*extent = end;
	return ret;
}

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

static struct host_image_kernel *add_kernel(struct host_image *img, const char *name, size_t len)
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

static struct host_image_global *add_global(struct host_image *img, const char *name, size_t len)
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
static int add_param(struct host_image_kernel *k, uint32_t idx, uint32_t off, uint32_t size)
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

/* --- ELF ---------------------------------------------------------------- */

struct elf {
	const uint8_t *d;
	size_t n;
	const Elf64_Shdr *sh;
	unsigned shnum;
	const char *shstr;
	size_t shstr_n;
};

static const char *sec_name(const struct elf *f, unsigned i)
{
	uint32_t off = f->sh[i].sh_name;

	if (off >= f->shstr_n || !memchr(f->shstr + off, 0, f->shstr_n - off))
		return "";
	return f->shstr + off;
}

static int sec_ok(const struct elf *f, const Elf64_Shdr *s)
{
	return s->sh_type == SHT_NOBITS ||
	       (s->sh_offset <= f->n && s->sh_size <= f->n - s->sh_offset);
}

static int elf_open(struct elf *f, const uint8_t *d, size_t n)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
	const Elf64_Shdr *ss;

	if (n < sizeof(*eh) || memcmp(d, ELFMAG, SELFMAG) || d[EI_CLASS] != ELFCLASS64 ||
	    d[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_CUDA_)
		return -1;
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || !eh->e_shnum || eh->e_shoff > n ||
	    (n - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum || eh->e_shoff % 8 ||
	    eh->e_shstrndx >= eh->e_shnum)
		return -1;
	f->d = d;
	f->n = n;
	f->sh = (const Elf64_Shdr *)(d + eh->e_shoff);
	f->shnum = eh->e_shnum;
	ss = &f->sh[eh->e_shstrndx];
	if (ss->sh_type != SHT_STRTAB || !sec_ok(f, ss))
		return -1;
	f->shstr = (const char *)d + ss->sh_offset;
	f->shstr_n = ss->sh_size;
	return 0;
}

static int elf_arch(const uint8_t *d)
{
	uint32_t flags = rd32(d + offsetof(Elf64_Ehdr, e_flags));

	return d[EI_ABIVERSION] >= 7 ? (flags >> 8) & 0xff : flags & 0xff;
}

static int elf_find_sec(const struct elf *f, const char *prefix, const char *name)
{
	size_t pl = strlen(prefix);

	for (unsigned i = 0; i < f->shnum; i++) {
		const char *s = sec_name(f, i);

		if (!strncmp(s, prefix, pl) && !strcmp(s + pl, name))
			return (int)i;
	}
	return -1;
}

/* Parameters of kernel k from .nv.info.<name>; leaves nparams -1 if unknown. */
static int elf_params(const struct elf *f, struct host_image_kernel *k)
{
	int si = elf_find_sec(f, ".nv.info.", k->name);
	const uint8_t *p, *end;

	if (si < 0 || f->sh[si].sh_type == SHT_NOBITS || !sec_ok(f, &f->sh[si]))
		return 0;
	p = f->d + f->sh[si].sh_offset;
	end = p + f->sh[si].sh_size;
	k->nparams = 0;
	while (end - p >= 4) {
		unsigned fmt = p[0], attr = p[1];
		size_t len = 4;

		if (fmt == 4) {	/* a value of u16 size follows */
			len += rd16(p + 2);
			if (len > (size_t)(end - p))
				break;
			if (attr == EIATTR_KPARAM_INFO && len >= 16) {
				uint32_t fl = rd32(p + 12);
				int r = add_param(k, rd16(p + 8), rd16(p + 10), (fl >> 18) & 0x3fff);

				if (r < 0)
					return -1;
				if (r) {
					k->nparams = -1;
					return 0;
				}
			}
		} else if (fmt < 1 || fmt > 3) {
			k->nparams = -1;	/* a record we cannot step over */
			return 0;
		}
		p += len;
	}
	for (int i = 0; i < k->nparams; i++)
		if (k->param_off[i] == UINT32_MAX)
			k->nparams = -1;
	return 0;
}

static int is_global_sec(const char *s)
{
	return !strcmp(s, ".nv.global") || !strcmp(s, ".nv.global.init") ||
	       !strcmp(s, ".nv.constant3");
}

static CUresult elf_read(const uint8_t *d, size_t n, struct host_image *img)
{
	const Elf64_Shdr *symsh = NULL, *strsh;
	const Elf64_Sym *sym;
	const char *str;
	struct elf f;
	size_t nsym;
	int any_entry = 0;

	if (elf_open(&f, d, n))
		return CUDA_ERROR_INVALID_IMAGE;
	for (unsigned i = 0; i < f.shnum; i++)
		if (f.sh[i].sh_type == SHT_SYMTAB)
			symsh = &f.sh[i];
	if (!symsh)
		return CUDA_SUCCESS;	/* nothing to name */
	if (!sec_ok(&f, symsh) || symsh->sh_entsize != sizeof(Elf64_Sym) ||
	    symsh->sh_link >= f.shnum || symsh->sh_offset % 8)
		return CUDA_ERROR_INVALID_IMAGE;
	strsh = &f.sh[symsh->sh_link];
	if (strsh->sh_type != SHT_STRTAB || !sec_ok(&f, strsh))
		return CUDA_ERROR_INVALID_IMAGE;
	sym = (const Elf64_Sym *)(d + symsh->sh_offset);
	nsym = symsh->sh_size / sizeof(*sym);
	str = (const char *)d + strsh->sh_offset;

	for (size_t i = 0; i < nsym; i++)
		if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && (sym[i].st_other & STO_ENTRY))
			any_entry = 1;
	for (size_t i = 0; i < nsym; i++) {
		const Elf64_Sym *s = &sym[i];
		const char *name;
		size_t len;

		if (s->st_name >= strsh->sh_size || s->st_shndx == SHN_UNDEF ||
		    s->st_shndx >= f.shnum)
			continue;
		name = str + s->st_name;
		len = strnlen(name, strsh->sh_size - s->st_name);
		if (!len || len == strsh->sh_size - s->st_name)
			continue;
		if (ELF64_ST_TYPE(s->st_info) == STT_FUNC) {
			struct host_image_kernel *k;

			if (any_entry ? !(s->st_other & STO_ENTRY)
				      : elf_find_sec(&f, ".nv.info.", name) < 0)
				continue;
			k = add_kernel(img, name, len);
			if (!k || elf_params(&f, k))
				return CUDA_ERROR_OUT_OF_MEMORY;
		} else if (ELF64_ST_TYPE(s->st_info) == STT_OBJECT &&
			   is_global_sec(sec_name(&f, s->st_shndx)) && name[0] != '.') {
			const Elf64_Shdr *gs = &f.sh[s->st_shndx];
			struct host_image_global *g;

			if (gs->sh_type != SHT_NOBITS &&
			    (!sec_ok(&f, gs) || s->st_value > gs->sh_size ||
			     s->st_size > gs->sh_size - s->st_value))
				return CUDA_ERROR_INVALID_IMAGE;
			if (s->st_size > MAX_INFLATED)
				return CUDA_ERROR_INVALID_IMAGE;
			g = add_global(img, name, len);
			if (!g)
				return CUDA_ERROR_OUT_OF_MEMORY;
			g->size = s->st_size;
			g->align = gs->sh_addralign ? gs->sh_addralign : 1;
			if (g->align > 4096 || (g->align & (g->align - 1)))
				g->align = 4096;
			if (gs->sh_type != SHT_NOBITS && s->st_size) {
				g->init = malloc(s->st_size);
				if (!g->init)
					return CUDA_ERROR_OUT_OF_MEMORY;
				memcpy(g->init, d + gs->sh_offset + s->st_value, s->st_size);
			}
		}
	}
	return CUDA_SUCCESS;
}

/* The tables are read in place: an ELF inside a fatbin may sit at any offset. */
static CUresult elf_parse(const uint8_t *d, size_t n, struct host_image *img)
{
	uint8_t *copy = NULL;
	CUresult r;

	if ((uintptr_t)d % 8) {
		copy = malloc(n ? n : 1);
		if (!copy)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(copy, d, n);
		d = copy;
	}
	r = elf_read(d, n, img);
	free(copy);
	return r;
}

/* --- PTX ---------------------------------------------------------------- */

struct lex {
	const char *p, *end;
	const char *tok;
	size_t len;
};

static int is_punct(char c)
{
	return strchr("{}()[],;=<>", c) != NULL;
}

/* The next token, skipping white space and comments; 0 at the end. */
static int next(struct lex *x)
{
	const char *p = x->p;

	for (;;) {
		while (p < x->end && isspace((unsigned char)*p))
			p++;
		if (x->end - p >= 2 && p[0] == '/' && p[1] == '/') {
			while (p < x->end && *p != '\n')
				p++;
		} else if (x->end - p >= 2 && p[0] == '/' && p[1] == '*') {
			const char *e = NULL;

			for (const char *q = p + 2; x->end - q >= 2; q++)
				if (q[0] == '*' && q[1] == '/') {
					e = q + 2;
					break;
				}
			p = e ? e : x->end;
		} else {
			break;
		}
	}
	if (p == x->end) {
		x->p = p;
		return 0;
	}
	x->tok = p;
	if (is_punct(*p)) {
		p++;
	} else if (*p == '"') {
		for (p++; p < x->end && *p != '"'; p++)
			;
		if (p < x->end)
			p++;
	} else {
		while (p < x->end && !isspace((unsigned char)*p) && !is_punct(*p) &&
		       !(x->end - p >= 2 && p[0] == '/' && (p[1] == '/' || p[1] == '*')))
			p++;
	}
	x->len = (size_t)(p - x->tok);
	x->p = p;
	return 1;
}

/* The token as a C string, cut to fit: tokens are not NUL-terminated. */
static const char *tok_str(const struct lex *x, char *buf, size_t size)
{
	size_t n = x->len < size - 1 ? x->len : size - 1;

	memcpy(buf, x->tok, n);
	buf[n] = 0;
	return buf;
}

static int is(const struct lex *x, const char *s)
{
	return x->len == strlen(s) && !memcmp(x->tok, s, x->len);
}

static unsigned type_size(const struct lex *x)
{
	static const struct { const char *t; unsigned n; } types[] = {
		{ ".b8", 1 }, { ".u8", 1 }, { ".s8", 1 }, { ".pred", 1 },
		{ ".b16", 2 }, { ".u16", 2 }, { ".s16", 2 }, { ".f16", 2 }, { ".bf16", 2 },
		{ ".b32", 4 }, { ".u32", 4 }, { ".s32", 4 }, { ".f32", 4 },
		{ ".f16x2", 4 }, { ".bf16x2", 4 },
		{ ".b64", 8 }, { ".u64", 8 }, { ".s64", 8 }, { ".f64", 8 }, { ".b128", 16 },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (is(x, types[i].t))
			return types[i].n;
	return 0;
}

static int tok_num(const struct lex *x, uint64_t *v)
{
	char buf[64], *e;
	int neg = 0;
	const char *s;

	if (!x->len || x->len >= sizeof(buf))
		return -1;
	memcpy(buf, x->tok, x->len);
	buf[x->len] = 0;
	s = buf;
	if (*s == '-') {
		neg = 1;
		s++;
	}
	/* 0fXXXXXXXX and 0dXXXXXXXXXXXXXXXX are float and double bit patterns. */
	if (s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D') &&
	    isxdigit((unsigned char)s[2]))
		*v = strtoull(s + 2, &e, 16);
	else
		*v = strtoull(s, &e, 0);
	if (*e == 'U' || *e == 'u')
		e++;
	if (*e)
		return -1;
	if (neg)
		*v = (uint64_t)-(int64_t)*v;
	return 0;
}

/* After '=': {a, b, {c}} or a single value, up to ';'; esz the scalar's size
 * (a vector's elements are listed one by one; .b128 holds a 64-bit value). */
static int ptx_init(struct lex *x, struct host_image_global *g, unsigned esz)
{
	uint64_t idx = 0, v;
	int bad = 0;

	g->init = calloc(1, g->size ? g->size : 1);
	if (!g->init)
		return -1;
	while (next(x) && !is(x, ";")) {
		if (is(x, "{") || is(x, "}") || is(x, ","))
			continue;
		if (tok_num(x, &v)) {
			bad = 1;	/* an address (generic(sym)) or an expression */
			continue;
		}
		if ((idx + 1) * esz <= g->size)
			memcpy(g->init + idx * esz, &v, esz < sizeof(v) ? esz : sizeof(v));
		idx++;
	}
	if (bad)
		vlog_warn("host backend: PTX global %s has an initializer that is not a number; "
			  "those elements are zero", g->name);
	return 0;
}

/* count elements of esz bytes, no more than a device could hold. */
static int global_size(struct host_image_global *g, uint64_t count, unsigned esz)
{
	if (__builtin_mul_overflow(count, (uint64_t)esz, &g->size) || g->size > MAX_INFLATED)
		return -1;
	return 0;
}

/* A .global or .const declaration at module scope, up to its ';'. */
static int ptx_global(struct lex *x, struct host_image *img)
{
	unsigned esz = 0, scalar = 0, vec = 1;
	uint64_t align = 0, count = 1;
	struct host_image_global *g = NULL;

	while (next(x) && !is(x, ";")) {
		if (is(x, ".align")) {
			uint64_t a;

			if (!next(x) || tok_num(x, &a))
				return 0;
			align = a;
		} else if (is(x, ".v2") || is(x, ".v4") || is(x, ".v8")) {
			vec = (unsigned)(x->tok[2] - '0');
		} else if (is(x, ".attribute") || is(x, ".texref") || is(x, ".surfref") ||
			   is(x, ".samplerref")) {
			while (next(x) && !is(x, ";"))	/* managed or opaque: not ours */
				;
			return 0;
		} else if (type_size(x)) {
			scalar = type_size(x);
			esz = scalar * vec;
		} else if (!g && x->tok[0] != '.' && esz) {
			g = add_global(img, x->tok, x->len);
			if (!g)
				return -1;
		} else if (g && is(x, "[")) {
			uint64_t n;

			if (!next(x) || tok_num(x, &n))
				n = 0;	/* [] : sized elsewhere */
			else if (!next(x) || !is(x, "]"))
				return 0;
			if (__builtin_mul_overflow(count, n, &count))
				return -1;
		} else if (g && is(x, "=")) {
			/* Sized before the initializer is allocated: the text chooses it. */
			if (global_size(g, count, esz) || ptx_init(x, g, scalar))
				return -1;
			break;
		}
	}
	if (g) {
		if (global_size(g, count, esz))
			return -1;
		g->align = align ? align : esz;
		if (g->align > 4096 || (g->align & (g->align - 1)))
			g->align = 4096;
	}
	return 0;
}

/* An .entry's parameter list: the device layout, each at its alignment. */
static int ptx_params(struct lex *x, struct host_image_kernel *k)
{
	uint32_t off = 0;
	unsigned idx = 0;
	int r;

	k->nparams = 0;
	while (next(x) && !is(x, ")")) {
		unsigned esz = 0, align = 0, ptr = 0;
		uint64_t count = 1;

		if (!is(x, ".param"))
			continue;
		while (next(x) && !is(x, ",") && !is(x, ")")) {
			uint64_t n;

			if (is(x, ".ptr"))
				ptr = 1;
			else if (is(x, ".align") && next(x) && !tok_num(x, &n) && !ptr)
				align = n > 4096 ? 3 : (unsigned)n;	/* 3: refused below */
			else if (type_size(x) && !esz)
				esz = type_size(x);
			else if (is(x, "[") && next(x) && !tok_num(x, &n) &&
				 __builtin_mul_overflow(count, n, &count))
				count = UINT64_MAX;
		}
		if (!align)
			align = esz;
		if (!esz || count > 0x3fff || (align & (align - 1))) {
			k->nparams = -1;	/* a layout we do not know */
			return 0;
		}
		off = (off + align - 1) & ~(align - 1);
		r = add_param(k, idx++, off, (uint32_t)(count * esz));
		if (r) {
			if (r > 0)
				k->nparams = -1;
			return r < 0 ? -1 : 0;
		}
		off += (uint32_t)(count * esz);
		if (is(x, ")"))
			break;
	}
	return 0;
}

static CUresult ptx_parse(const char *text, size_t n, struct host_image *img, int *target)
{
	struct lex x = { .p = text, .end = text + n };
	int depth = 0, ext = 0, version = 0;
	char buf[32];

	*target = 0;
	while (next(&x)) {
		if (is(&x, "{")) {
			depth++;
		} else if (is(&x, "}")) {
			depth--;
		} else if (depth) {
			continue;
		} else if (is(&x, ".version") && next(&x)) {
			unsigned ma = 0, mi = 0;

			if (sscanf(tok_str(&x, buf, sizeof(buf)), "%4u.%4u", &ma, &mi) == 2)
				version = (int)(ma * 10 + mi);
		} else if (is(&x, ".target") && next(&x)) {
			if (x.len > 3 && !memcmp(x.tok, "sm_", 3))
				*target = atoi(tok_str(&x, buf, sizeof(buf)) + 3);
		} else if (is(&x, ".extern")) {
			ext = 1;
			continue;
		} else if (is(&x, ".entry") && next(&x)) {
			struct host_image_kernel *k = add_kernel(img, x.tok, x.len);

			if (!k)
				return CUDA_ERROR_OUT_OF_MEMORY;
			if (!next(&x))
				break;
			if (is(&x, "{"))
				depth++;
			else if (is(&x, "(") && ptx_params(&x, k))
				return CUDA_ERROR_OUT_OF_MEMORY;
		} else if ((is(&x, ".global") || is(&x, ".const")) && !ext) {
			if (ptx_global(&x, img))
				return CUDA_ERROR_OUT_OF_MEMORY;
		}
		ext = 0;
	}
	if (!version || !*target)
		return CUDA_ERROR_INVALID_PTX;
	if (version > MAX_PTX_ISA)
		return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
	if (*target > DEVICE_ARCH)
		return CUDA_ERROR_INVALID_PTX;	/* ptxas: target higher than the device */
	img->ptx_version = *target;
	img->binary_version = DEVICE_ARCH;
	return CUDA_SUCCESS;
}

/* n bytes of text, then a NUL. */
static int looks_like_ptx(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isprint((unsigned char)s[i]) && !isspace((unsigned char)s[i]))
			return 0;
	return strstr(s, ".version") && strstr(s, ".target");
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
		r = elf_parse(d, n, img);
	} else {
		/* PTX payloads are NUL-padded text. */
		size_t len = strnlen((const char *)d, n);

		r = ptx_parse((const char *)d, len, img, &target);
	}
	free(buf);
	return r;
}

/* A fatbin of len bytes; its entries are read within them (entry_end()). */
static CUresult fatbin_parse(const uint8_t *d, size_t len, struct host_image *img)
{
	uint64_t total = 0, pos, next;
	struct entry ents[64];
	size_t n = 0;
	int best_elf = 0, best_ptx = 0;
	CUresult r = CUDA_ERROR_INVALID_IMAGE;

	if (len < 16 || rd16(d + 6) < 16 || !span(rd16(d + 6), rd64(d + 8), len, &total))
		return CUDA_ERROR_INVALID_IMAGE;
	for (pos = rd16(d + 6); pos < total && n < 64; pos = next) {
		const uint8_t *e = d + pos;
		struct entry *en = &ents[n];

		next = entry_end(d, pos, total);
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
	magic = magic_of(d, n);
	if (magic == FATBIN_MAGIC) {
		r = fatbin_parse(d, n, img);
	} else if (!memcmp(&magic, ELFMAG, SELFMAG)) {
		int arch = elf_arch(d);

		if (arch / 10 != HOST_CC_MAJOR || arch % 10 > HOST_CC_MINOR) {
			vlog_err("host backend: the cubin is for sm_%d, not sm_90", arch);
			return CUDA_ERROR_NO_BINARY_FOR_GPU;
		}
		r = elf_parse(d, n, img);
		img->ptx_version = img->binary_version = DEVICE_ARCH;
	} else if (looks_like_ptx((const char *)d, n - 1)) {
		r = ptx_parse((const char *)d, n - 1, img, &target);
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
