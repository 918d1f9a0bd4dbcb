// SPDX-License-Identifier: MIT
/*
 * ELF cubins, read for the host backend: kernels (FUNC symbols marked
 * entry), their parameter layouts (EIATTR_KPARAM_INFO in .nv.info.<kernel>)
 * and globals (.nv.global, .nv.global.init, .nv.constant3), every table
 * within the bytes given.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_image_fmt.h"
#include "log.h"

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

int host_image_elf_arch(const uint8_t *d)
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
				int r = host_image_add_param(k, rd16(p + 8), rd16(p + 10),
							     (fl >> 18) & 0x3fff);

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
			k = host_image_add_kernel(img, name, len);
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
			g = host_image_add_global(img, name, len);
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
CUresult host_image_elf_parse(const uint8_t *d, size_t n, struct host_image *img)
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
