// SPDX-License-Identifier: MIT
/*
 * Unit test for vgpu_image_size() (runtime/module/image.c): fatbinC wrappers,
 * bare fatbins, ELF64 cubins (synthetic, and this very executable), PTX
 * text, and garbage. Exit 0 = pass, 1 = fail.
 *
 * Build (from the repo root):
 *   gcc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I include -I common \
 *     -I runtime tests/unit/test_image_size.c runtime/module/image.c -o test_image_size
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image.h"

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                              \
		}                                                                \
	} while (0)

struct fatbinc {
	uint32_t magic, version;
	const void *data;
	const void *filename;
};

/* An aligned scratch image, big enough for every synthetic case. */
static union {
	uint8_t b[8192];
	uint64_t align;
} img;

static uint64_t size_of(const void *p, const void **start, enum vgpu_image_kind *kind)
{
	uint64_t size = 0;
	const void *s = NULL;

	if (vgpu_image_size(p, &s, &size, kind))
		return 0;
	if (start)
		*start = s;
	return size;
}

static void make_fatbin(uint8_t *p, uint16_t hsize, uint64_t fsize)
{
	uint32_t magic = VGPU_FATBIN_MAGIC;
	uint16_t version = 1;

	memset(p, 0, 64);
	memcpy(p, &magic, 4);
	memcpy(p + 4, &version, 2);
	memcpy(p + 6, &hsize, 2);
	memcpy(p + 8, &fsize, 8);
}

static void test_fatbin(void)
{
	enum vgpu_image_kind kind = VGPU_IMG_PTX;
	const void *start = NULL;
	struct fatbinc w = { VGPU_FATBINC_MAGIC, 1, img.b, NULL };

	make_fatbin(img.b, 16, 100);
	CHECK(size_of(img.b, &start, &kind) == 116);
	CHECK(start == img.b && kind == VGPU_IMG_FATBIN);

	/* The wrapper: what is sent is the fatbin it points to. */
	start = NULL;
	kind = VGPU_IMG_PTX;
	CHECK(size_of(&w, &start, &kind) == 116);
	CHECK(start == img.b && kind == VGPU_IMG_FATBIN);
	w.version = 2;
	CHECK(size_of(&w, NULL, NULL) == 116);

	/* Bad wrappers and headers. */
	w.version = 3;
	CHECK(size_of(&w, NULL, NULL) == 0);
	w.version = 1;
	w.data = NULL;
	CHECK(size_of(&w, NULL, NULL) == 0);
	w.data = "not a fatbin";
	CHECK(size_of(&w, NULL, NULL) == 0);
	make_fatbin(img.b, 8, 100);		/* header shorter than itself */
	CHECK(size_of(img.b, NULL, NULL) == 0);
	make_fatbin(img.b, 16, 1ull << 40);	/* absurd size */
	CHECK(size_of(img.b, NULL, NULL) == 0);
	make_fatbin(img.b, 64, 0);		/* larger header, no entries */
	CHECK(size_of(img.b, NULL, NULL) == 64);
}

static Elf64_Ehdr *make_elf(uint64_t shoff, uint16_t shnum)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img.b;

	memset(img.b, 0, sizeof(img.b));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = 190;	/* EM_CUDA */
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shoff = shoff;
	eh->e_shnum = shnum;
	eh->e_phentsize = sizeof(Elf64_Phdr);
	return eh;
}

static Elf64_Shdr *shdr(Elf64_Ehdr *eh, unsigned int i)
{
	return (Elf64_Shdr *)(img.b + eh->e_shoff) + i;
}

static void test_elf(void)
{
	enum vgpu_image_kind kind = VGPU_IMG_PTX;
	const void *start = NULL;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;

	/* Section headers last, as linkers write them: they set the end. */
	eh = make_elf(512, 4);
	shdr(eh, 1)->sh_type = SHT_PROGBITS;
	shdr(eh, 1)->sh_offset = 64;
	shdr(eh, 1)->sh_size = 400;
	shdr(eh, 2)->sh_type = SHT_NOBITS;	/* .bss: no file bytes */
	shdr(eh, 2)->sh_offset = 1000;
	shdr(eh, 2)->sh_size = 1 << 20;
	shdr(eh, 3)->sh_type = SHT_STRTAB;
	shdr(eh, 3)->sh_offset = 464;
	shdr(eh, 3)->sh_size = 48;
	CHECK(size_of(img.b, &start, &kind) == 512 + 4 * sizeof(Elf64_Shdr));
	CHECK(start == img.b && kind == VGPU_IMG_ELF);

	/* A section past the header table. */
	shdr(eh, 3)->sh_offset = 3000;
	shdr(eh, 3)->sh_size = 100;
	CHECK(size_of(img.b, NULL, NULL) == 3100);

	/* A segment further still. */
	ph = (Elf64_Phdr *)(img.b + 2048);
	eh->e_phoff = 2048;
	eh->e_phnum = 2;
	ph[0].p_type = PT_LOAD;
	ph[0].p_offset = 0;
	ph[0].p_filesz = 3200;
	ph[1].p_type = PT_LOAD;
	ph[1].p_offset = 4000;
	ph[1].p_filesz = 96;
	ph[1].p_memsz = 1 << 20;	/* memory size does not count */
	CHECK(size_of(img.b, NULL, NULL) == 4096);

	/* Extended numbering: e_shnum 0, the count in section 0's sh_size. */
	eh = make_elf(256, 0);
	shdr(eh, 0)->sh_size = 3;
	shdr(eh, 1)->sh_type = SHT_PROGBITS;
	shdr(eh, 1)->sh_offset = 64;
	shdr(eh, 1)->sh_size = 100;
	CHECK(size_of(img.b, NULL, NULL) == 256 + 3 * sizeof(Elf64_Shdr));

	/* No section headers at all: just the ELF header. */
	make_elf(0, 0);
	CHECK(size_of(img.b, NULL, NULL) == sizeof(Elf64_Ehdr));

	/* Lies. */
	eh = make_elf(512, 2);
	shdr(eh, 1)->sh_type = SHT_PROGBITS;
	shdr(eh, 1)->sh_offset = ~0ull - 10;
	shdr(eh, 1)->sh_size = 100;
	CHECK(size_of(img.b, NULL, NULL) == 0);
	eh = make_elf(512, 2);
	eh->e_shentsize = 8;
	CHECK(size_of(img.b, NULL, NULL) == 0);
	eh = make_elf(512, 2);
	eh->e_ident[EI_CLASS] = ELFCLASS32;
	CHECK(size_of(img.b, NULL, NULL) == 0);
	eh = make_elf(512, 2);
	eh->e_ident[EI_DATA] = ELFDATA2MSB;
	CHECK(size_of(img.b, NULL, NULL) == 0);
}

/* A real linker's output: this program's own file. */
static void test_self(void)
{
	struct stat st;
	FILE *f = fopen("/proc/self/exe", "rb");
	uint8_t *buf;

	if (!f || fstat(fileno(f), &st)) {
		CHECK(!"open /proc/self/exe");
		return;
	}
	buf = malloc(st.st_size + 8);
	CHECK(buf && fread(buf, 1, st.st_size, f) == (size_t)st.st_size);
	fclose(f);
	if (buf)
		CHECK(size_of(buf, NULL, NULL) == (uint64_t)st.st_size);
	free(buf);
}

static void test_ptx(void)
{
	static const char ptx[] =
		"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n"
		".version 9.0\n.target sm_90\n.address_size 64\n\n"
		".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tret;\n}\n";
	enum vgpu_image_kind kind = VGPU_IMG_ELF;
	const void *start = NULL;

	CHECK(size_of(ptx, &start, &kind) == strlen(ptx) + 1);
	CHECK(start == ptx && kind == VGPU_IMG_PTX);
}

static void test_garbage(void)
{
	static const uint8_t bin[] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x00 };
	static const char text[] = "hello, world: no directive here\n";
	static const char ctl[] = ".version 9.0\n\x01\x02";
	uint64_t size = 7;
	const void *start = NULL;

	CHECK(vgpu_image_size(NULL, &start, &size, NULL) == -EINVAL);
	CHECK(vgpu_image_size(bin, &start, &size, NULL) == -EINVAL);
	CHECK(vgpu_image_size(text, &start, &size, NULL) == -EINVAL);
	CHECK(vgpu_image_size(ctl, &start, &size, NULL) == -EINVAL);
	CHECK(vgpu_image_size("", &start, &size, NULL) == -EINVAL);
	CHECK(vgpu_image_size("ab", &start, &size, NULL) == -EINVAL);
	CHECK(start == NULL && size == 7);	/* untouched on failure */
}

int main(void)
{
	test_fatbin();
	test_elf();
	test_self();
	test_ptx();
	test_garbage();
	if (failures) {
		fprintf(stderr, "test_image_size: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_image_size: ok\n");
	return 0;
}
