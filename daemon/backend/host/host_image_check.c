// SPDX-License-Identifier: MIT
/*
 * vgpu_image_check(): whether everything a module image's headers declare
 * (the fatbin and each entry, the ELF's tables and sections, PTX up to its
 * NUL) lies within the bytes received. The worker runs it before either
 * backend sees an image; host_image.c's reader relies on it too.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "host_image.h"
#include "host_image_fmt.h"

/* Widens *end to off + n, if that does not pass lim. */
bool host_image_span(uint64_t off, uint64_t n, uint64_t lim, uint64_t *end)
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
		if (!host_image_span(pos, 12, s->sh_size, &end) ||
		    !host_image_span(end, ((uint64_t)rd32(p + pos) + pad) & ~pad, s->sh_size,
				     &end) ||
		    !host_image_span(end, ((uint64_t)rd32(p + pos + 4) + pad) & ~pad, s->sh_size,
				     &end))
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
			if (!pass ? !host_image_span(s.sh_offset, s.sh_size, lim, end)
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
		if (eh.e_shentsize < sizeof(sh0) ||
		    !host_image_span(eh.e_shoff, sizeof(sh0), lim, &end))
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
		    !host_image_span(eh.e_shoff, bytes, lim, &end) || shstrndx >= shnum)
			return -EINVAL;
		if (sections_bounds(d, &eh, shnum, lim, &end))
			return -EINVAL;
	}
	if (phnum) {
		if (eh.e_phentsize < sizeof(ph) ||
		    __builtin_mul_overflow(phnum, (uint64_t)eh.e_phentsize, &bytes) ||
		    !host_image_span(eh.e_phoff, bytes, lim, &end))
			return -EINVAL;
		for (uint64_t i = 0; i < phnum; i++) {
			memcpy(&ph, d + eh.e_phoff + i * eh.e_phentsize, sizeof(ph));
			if (!host_image_span(ph.p_offset, ph.p_filesz, lim, &end))
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
uint64_t host_image_entry_end(const uint8_t *d, uint64_t pos, uint64_t total)
{
	const uint8_t *e = d + pos;
	uint64_t end = 0, flags;
	uint32_t ehs;

	if (total - pos < MIN_ENTRY)
		return 0;
	ehs = rd32(e + 4);
	if (ehs < MIN_ENTRY || ehs > MAX_ENTRY_HDR || !host_image_span(pos, ehs, total, &end) ||
	    !host_image_span(end, rd64(e + 8), total, &end))
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

	if (lim < 16 || rd16(d + 6) < 16 || !host_image_span(rd16(d + 6), rd64(d + 8), lim, &total))
		return -EINVAL;
	for (pos = rd16(d + 6); pos < total; pos = next) {
		next = host_image_entry_end(d, pos, total);
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
uint32_t host_image_magic_of(const uint8_t *d, size_t len)
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
	magic = host_image_magic_of(d, len);
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
