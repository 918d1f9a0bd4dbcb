// SPDX-License-Identifier: MIT
/*
 * Where a module image ends. The driver API hands us a pointer only; the
 * length comes from the image's own headers:
 *
 *   fatbinC wrapper  u32 magic 0x466243b1, u32 version (1, 2 for RDC),
 *                    const void *data (the fatbin), filename/prelinked list
 *   fatbin           u32 magic 0xba55ed50, u16 version, u16 header size,
 *                    u64 size of the entries: total = header + entries
 *   ELF64 (cubin)    the furthest of: the section and program header
 *                    tables, every section's bytes (not SHT_NOBITS) and
 *                    every segment's file bytes
 *   PTX              text with a .version directive, up to its NUL
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "image.h"

#define MAX_IMAGE (4ull << 30)	/* the worker's limit too */

static bool grow(uint64_t *end, uint64_t off, uint64_t len)
{
	if (off > MAX_IMAGE || len > MAX_IMAGE - off)
		return false;
	if (off + len > *end)
		*end = off + len;
	return true;
}

static int fatbin_size(const uint8_t *p, uint64_t *size)
{
	uint16_t hsize;
	uint64_t fsize, end = 0;

	memcpy(&hsize, p + 6, sizeof(hsize));
	memcpy(&fsize, p + 8, sizeof(fsize));
	if (hsize < 16 || !grow(&end, hsize, fsize) || !end)
		return -EINVAL;
	*size = end;
	return 0;
}

static int elf_size(const uint8_t *p, uint64_t *size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	Elf64_Phdr ph;
	uint64_t end = sizeof(eh), shnum, phnum;

	memcpy(&eh, p, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_ehsize < sizeof(eh))
		return -EINVAL;
	shnum = eh.e_shnum;
	phnum = eh.e_phnum;
	if (eh.e_shoff) {
		if (eh.e_shentsize < sizeof(sh) || !grow(&end, eh.e_shoff, sizeof(sh)))
			return -EINVAL;
		/* Extended numbering: the real counts live in section 0. */
		memcpy(&sh, p + eh.e_shoff, sizeof(sh));
		if (!shnum)
			shnum = sh.sh_size;
		if (phnum == PN_XNUM)
			phnum = sh.sh_info;
		if (shnum > MAX_IMAGE / eh.e_shentsize ||
		    !grow(&end, eh.e_shoff, shnum * eh.e_shentsize))
			return -EINVAL;
	}
	if (phnum) {
		if (eh.e_phentsize < sizeof(ph) || phnum > MAX_IMAGE / eh.e_phentsize ||
		    !grow(&end, eh.e_phoff, phnum * eh.e_phentsize))
			return -EINVAL;
	}
	for (uint64_t i = 0; eh.e_shoff && i < shnum; i++) {
		memcpy(&sh, p + eh.e_shoff + i * eh.e_shentsize, sizeof(sh));
		if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
		    !grow(&end, sh.sh_offset, sh.sh_size))
			return -EINVAL;
	}
	for (uint64_t i = 0; i < phnum; i++) {
		memcpy(&ph, p + eh.e_phoff + i * eh.e_phentsize, sizeof(ph));
		if (!grow(&end, ph.p_offset, ph.p_filesz))
			return -EINVAL;
	}
	*size = end;
	return 0;
}

static bool text_byte(uint8_t c)
{
	return c >= 0x20 ? c != 0x7f : (c >= '\t' && c <= '\r');
}

static int ptx_size(const uint8_t *p, uint64_t *size)
{
	uint64_t n = 0;

	while (p[n]) {
		if (!text_byte(p[n]) || n >= MAX_IMAGE - 1)
			return -EINVAL;
		n++;
	}
	if (!memmem(p, n, ".version", 8))
		return -EINVAL;
	*size = n + 1;
	return 0;
}

/* The fatbin a fatbinC wrapper points to, or NULL. */
static const uint8_t *unwrap(const uint8_t *p)
{
	uint32_t version, magic;
	const uint8_t *data;

	memcpy(&version, p + 4, sizeof(version));
	memcpy(&data, p + 8, sizeof(data));
	if ((version != 1 && version != 2) || !data)
		return NULL;
	memcpy(&magic, data, sizeof(magic));
	return magic == VGPU_FATBIN_MAGIC ? data : NULL;
}

int vgpu_image_size(const void *image, const void **start, uint64_t *size,
		    enum vgpu_image_kind *kind)
{
	const uint8_t *p = image;
	enum vgpu_image_kind k = VGPU_IMG_PTX;
	uint32_t magic = 0;
	int ret;

	if (!p)
		return -EINVAL;
	/* No magic holds a zero byte, so shorter text is never read past. */
	if (strnlen(image, sizeof(magic)) == sizeof(magic))
		memcpy(&magic, p, sizeof(magic));
	if (magic == VGPU_FATBINC_MAGIC) {
		p = unwrap(p);
		if (!p)
			return -EINVAL;
		magic = VGPU_FATBIN_MAGIC;
	}
	if (magic == VGPU_FATBIN_MAGIC) {
		k = VGPU_IMG_FATBIN;
		ret = fatbin_size(p, size);
	} else if (!memcmp(&magic, ELFMAG, SELFMAG)) {
		k = VGPU_IMG_ELF;
		ret = elf_size(p, size);
	} else {
		ret = ptx_size(p, size);
	}
	if (ret)
		return ret;
	*start = p;
	if (kind)
		*kind = k;
	return 0;
}
