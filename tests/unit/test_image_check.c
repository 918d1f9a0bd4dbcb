// SPDX-License-Identifier: MIT
/*
 * Unit test for the worker's reading of module images (daemon/backend/host/host_image.c):
 * vgpu_image_check(), which both backends rely on before a driver sees an
 * image, and host_image_parse_len(), the host backend's reader. Images come
 * from a tenant: nothing may be read past the bytes received, and a fatbinC
 * wrapper (a pointer into the client) is never followed.
 *
 * Every image is placed so that its last byte is the last byte before an
 * inaccessible page: a read past the received length is a SIGSEGV, not a
 * silent pass. The real images are the fuzzer's seeds (nvcc 13.0 from
 * tests/e2e/kernels.cu), in tests/fuzz/corpus/image. Exit 0 = pass, 1 = fail.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "host_backend.h"
#include "host_image.h"

#define FATBINC_MAGIC	0x466243b1u
#define FATBIN_MAGIC	0xba55ed50u
#define SEEDS		"tests/fuzz/corpus/image"


/* Room for the largest seed, then a guard page. */
#define ROOM	(256u << 10)
static uint8_t *arena;
static size_t page;

static void arena_init(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	arena = mmap(NULL, ROOM + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED || mprotect(arena + ROOM, page, PROT_NONE)) {
		perror("guard page");
		exit(1);
	}
}

/* @len bytes of @src, ending right before the guard page (8-aligned when len is). */
static uint8_t *guarded(const void *src, size_t len)
{
	uint8_t *p = arena + ROOM - len;

	memmove(p, src, len);
	return p;
}

static int check(const void *src, size_t len, size_t *extent)
{
	size_t e = 0;
	int ret = vgpu_image_check(guarded(src, len), len, &e);

	if (extent)
		*extent = e;
	return ret;
}

static CUresult parse(const void *src, size_t len)
{
	struct host_image img;
	CUresult r = host_image_parse_len(guarded(src, len), len, &img);

	if (!r)
		host_image_free(&img);
	return r;
}

/* A refused image: by the check and by the host reader alike. */
static int refused(const void *src, size_t len)
{
	return check(src, len, NULL) == -EINVAL && parse(src, len) == CUDA_ERROR_INVALID_IMAGE;
}

static uint8_t *read_seed(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	uint8_t *buf = malloc(ROOM);

	snprintf(path, sizeof(path), "%s/%s", SEEDS, name);
	f = fopen(path, "rb");
	if (!f || !buf) {
		fprintf(stderr, "FAIL cannot read %s (run from the repo root)\n", path);
		exit(1);
	}
	*len = fread(buf, 1, ROOM, f);
	fclose(f);
	return buf;
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* The nvcc images: accepted whole, their extent the file; refused cut short. */
static void test_seeds(void)
{
	static const struct { const char *name; CUresult parsed; } seeds[] = {
		{ "k90.cubin", CUDA_SUCCESS }, { "k.ptx", CUDA_SUCCESS },
		{ "kplain.fatbin", CUDA_SUCCESS }, { "klz4.fatbin", CUDA_SUCCESS },
		{ "k90.fatbin", CUDA_SUCCESS },	/* zstd PTX: the ELF entry names all */
		{ "k80.fatbin", CUDA_SUCCESS },	/* its compute_80 PTX (zstd) */
	};

	void *zstd = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		CUresult r;
		size_t len, ext = 0;
		uint8_t *d = read_seed(seeds[i].name, &len);
		int is_ptx = strstr(seeds[i].name, ".ptx") != NULL;

		CHECK(!is_ptx || !d[len - 1]);	/* with its NUL, as the client sends it */
		CHECK(check(d, len, &ext) == 0);
		CHECK(ext == len);
		r = parse(d, len);
		if (r == CUDA_ERROR_INVALID_IMAGE && !zstd)
			r = CUDA_SUCCESS;	/* only a zstd entry could be read */
		if (r != seeds[i].parsed)
			fprintf(stderr, "  (seed %s: %d)\n", seeds[i].name, r);
		CHECK(r == seeds[i].parsed);
		/* Every length short of the whole: refused, never read past. */
		for (size_t cut = 0; cut < len; cut += cut < 256 ? 1 : 97)
			CHECK(is_ptx || refused(d, cut));
		if (is_ptx)	/* the text without its NUL */
			CHECK(refused(d, len - 1));
		free(d);
	}
	if (zstd)
		dlclose(zstd);
}

/* A wrapper is refused even when it points at a good fatbin: never followed. */
static void test_wrapper(void)
{
	struct { uint32_t magic, version; const void *data, *name; } w = { FATBINC_MAGIC, 1, NULL, NULL };
	size_t len;
	uint8_t *fatbin = read_seed("kplain.fatbin", &len);
	struct host_image img;

	w.data = fatbin;
	CHECK(check(&w, sizeof(w), NULL) == -EPERM);
	CHECK(parse(&w, sizeof(w)) == CUDA_ERROR_INVALID_IMAGE);
	/* Nor through the driver's contract (no length). */
	CHECK(host_image_parse(&w, &img) == CUDA_ERROR_INVALID_IMAGE);
	w.data = (void *)(uintptr_t)0x10;	/* a pointer that would crash */
	CHECK(check(&w, sizeof(w), NULL) == -EPERM);
	CHECK(parse(&w, sizeof(w)) == CUDA_ERROR_INVALID_IMAGE);
	CHECK(parse(&w, 4) == CUDA_ERROR_INVALID_IMAGE);
	free(fatbin);
}

static void test_elf(void)
{
	size_t len;
	uint8_t *good = read_seed("k90.cubin", &len), *d = malloc(len);
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	uint64_t sym_sec = 0, note_sec = 0, str_sec = 0;

	memcpy(&eh, good, sizeof(eh));
	for (uint64_t i = 0; i < eh.e_shnum; i++) {
		memcpy(&sh, good + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_SYMTAB)
			sym_sec = i;
		if (sh.sh_type == SHT_NOTE && !note_sec)
			note_sec = i;
		if (sh.sh_type == SHT_STRTAB && sh.sh_size && !str_sec)
			str_sec = i;
	}
	CHECK(sym_sec && note_sec && str_sec);
#define MUTATE(field_off, put, value)                                            \
	do {                                                                     \
		memcpy(d, good, len);                                            \
		put(d + (field_off), value);                                     \
		CHECK(refused(d, len));                                          \
	} while (0)
#define SH(i, field) (eh.e_shoff + (i) * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, field))
	MUTATE(offsetof(Elf64_Ehdr, e_shoff), put64, 0xffffffffffffff00ull);
	MUTATE(offsetof(Elf64_Ehdr, e_shoff), put64, len - 8);
	MUTATE(offsetof(Elf64_Ehdr, e_shoff), put64, 1ull << 40);
	MUTATE(offsetof(Elf64_Ehdr, e_shnum), put16, 0xffff);
	MUTATE(offsetof(Elf64_Ehdr, e_shnum), put16, eh.e_shnum + 1);
	MUTATE(offsetof(Elf64_Ehdr, e_shentsize), put16, 0xffff);
	MUTATE(offsetof(Elf64_Ehdr, e_shentsize), put16, 8);
	MUTATE(offsetof(Elf64_Ehdr, e_shstrndx), put16, eh.e_shnum);
	MUTATE(offsetof(Elf64_Ehdr, e_phoff), put64, 0xfffffffffffffff0ull);
	MUTATE(offsetof(Elf64_Ehdr, e_phnum), put16, 0xfff0);
	MUTATE(offsetof(Elf64_Ehdr, e_phentsize), put16, 4);
	MUTATE(offsetof(Elf64_Ehdr, e_ehsize), put16, 8);
	CHECK(eh.e_phnum > 0);	/* a segment past the end */
	MUTATE(eh.e_phoff + offsetof(Elf64_Phdr, p_filesz), put64, 1ull << 40);
	MUTATE(eh.e_phoff + offsetof(Elf64_Phdr, p_offset), put64, 0xffffffffffffff00ull);
	/* Section 0 holds the counts when e_shnum is 0: a huge one. */
	memcpy(d, good, len);
	put16(d + offsetof(Elf64_Ehdr, e_shnum), 0);
	put64(d + SH(0, sh_size), 1ull << 58);
	CHECK(refused(d, len));
	MUTATE(SH(str_sec, sh_offset), put64, len);
	MUTATE(SH(str_sec, sh_offset), put64, 0xfffffffffffffff0ull);
	MUTATE(SH(str_sec, sh_size), put64, len);
	MUTATE(SH(str_sec, sh_size), put64, 0xffffffffffffffffull);
	MUTATE(SH(sym_sec, sh_link), put32, eh.e_shnum);
	MUTATE(SH(sym_sec, sh_entsize), put64, 1);
	MUTATE(SH(sym_sec, sh_size), put64, 25);
	MUTATE(SH(note_sec, sh_link), put32, 0xffffffff);
	/* A string table whose last string does not end in it. */
	memcpy(d, good, len);
	memcpy(&sh, good + SH(str_sec, sh_name) , sizeof(sh));
	d[sh.sh_offset + sh.sh_size - 1] = 'x';
	CHECK(refused(d, len));
	/* A note whose name runs past its section. */
	memcpy(d, good, len);
	memcpy(&sh, good + SH(note_sec, sh_name), sizeof(sh));
	put32(d + sh.sh_offset, (uint32_t)sh.sh_size);
	CHECK(refused(d, len));
	/* A symbol whose name starts past its string table, or whose section does not exist. */
	memcpy(&sh, good + SH(sym_sec, sh_name), sizeof(sh));
	MUTATE(sh.sh_offset + sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_name), put32, 0x7fffffff);
	MUTATE(sh.sh_offset + sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_shndx), put16, 0xfeff);
	/* Too short for its own header. */
	CHECK(refused(good, 4));
	CHECK(refused(good, sizeof(Elf64_Ehdr) - 1));
#undef MUTATE
#undef SH
	free(d);
	free(good);
}

static void test_fatbin(void)
{
	size_t len;
	uint8_t *good = read_seed("klz4.fatbin", &len), *d = malloc(len);
	uint16_t hs;
	uint32_t ehs;
	uint64_t psize, second;

	memcpy(&hs, good + 6, 2);
	memcpy(&ehs, good + hs + 4, 4);
	memcpy(&psize, good + hs + 8, 8);
	second = hs + ehs + psize;	/* the compressed PTX entry */
#define MUTATE(off, put, value)                                                  \
	do {                                                                     \
		memcpy(d, good, len);                                            \
		put(d + (off), value);                                           \
		CHECK(refused(d, len));                                          \
	} while (0)
	MUTATE(6, put16, 0xffff);			/* header size */
	MUTATE(6, put16, 4);
	MUTATE(8, put64, len);				/* entries' size */
	MUTATE(8, put64, 0xfffffffffffffff8ull);
	MUTATE(hs + 4, put32, 4000);			/* entry header size */
	MUTATE(hs + 4, put32, 0xffffffffu);
	MUTATE(hs + 4, put32, 16);
	MUTATE(hs + 8, put64, psize + 1);		/* entry payload size */
	MUTATE(hs + 8, put64, 0xffffffffffffffc0ull);
	/* The cubin entry's section table past its payload, still inside the fatbin. */
	MUTATE(hs + ehs + offsetof(Elf64_Ehdr, e_shoff), put64, psize);
	MUTATE(hs + ehs + offsetof(Elf64_Ehdr, e_shnum), put16, 0xffff);
	MUTATE(hs + ehs, put32, 0x12345678);		/* a cubin entry that is no ELF */
	MUTATE(second + 16, put32, 0xfffffff0u);	/* compressed size */
	memcpy(&psize, good + second + 8, 8);
	MUTATE(second + 16, put32, (uint32_t)psize + 1);
	/* The last entry's header cut: fewer bytes than an entry header. */
	memcpy(d, good, len);
	put64(d + 8, second - hs + 20);
	CHECK(refused(d, second + 20));
	/* An entry header that ends past a container which the bytes hold. */
	memcpy(d, good, len);
	put64(d + 8, second - hs + 64);
	put32(d + second + 4, 4000);
	CHECK(refused(d, len));
#undef MUTATE
	free(d);
	free(good);
}

/* A fatbin of one plain PTX entry: @text without its NUL, the entry last. */
static size_t ptx_fatbin(uint8_t *d, const char *text)
{
	size_t n = strlen(text);

	memset(d, 0, 80);
	put32(d, FATBIN_MAGIC);
	put16(d + 4, 1);
	put16(d + 6, 16);
	put64(d + 8, 64 + n);
	put16(d + 16, 1);		/* PTX */
	put16(d + 18, 0x101);
	put32(d + 20, 64);
	put64(d + 24, n);
	put16(d + 16 + 24, 0);		/* ISA 8.0 */
	put16(d + 16 + 26, 8);
	put32(d + 16 + 28, 90);
	put64(d + 16 + 40, 0x11);
	memcpy(d + 80, text, n);
	return 80 + n;
}

/* PTX payloads in a fatbin are not NUL-terminated: numbers at their very end
 * are read within them (a .version or .target last, before the guard page). */
static void test_ptx_entry_end(void)
{
	uint8_t d[256];
	size_t n;

	n = ptx_fatbin(d, ".target sm_90\n.version 8.0");
	CHECK(check(d, n, NULL) == 0);
	CHECK(parse(d, n) == CUDA_SUCCESS);
	n = ptx_fatbin(d, ".version 8.0\n.target sm_90");
	CHECK(parse(d, n) == CUDA_SUCCESS);
	n = ptx_fatbin(d, ".version 8.0\n.target sm_90\n.global .u32 g[4] = { 1, 2");
	CHECK(parse(d, n) == CUDA_SUCCESS);
}

static void test_ptx_and_small(void)
{
	static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .entry vgpu_spin(.param .u64 ns)\n{\n\tret;\n}\n";
	size_t ext = 0;

	CHECK(check(ptx, sizeof(ptx), &ext) == 0 && ext == sizeof(ptx));
	CHECK(parse(ptx, sizeof(ptx)) == CUDA_SUCCESS);
	CHECK(refused(ptx, sizeof(ptx) - 1));	/* no NUL */
	CHECK(check(ptx, 0, NULL) == -EINVAL);	/* empty */
	CHECK(parse(ptx, 0) == CUDA_ERROR_INVALID_IMAGE);
	CHECK(refused("\x50\xed\x55", 3));	/* a magic cut short, no NUL */
	CHECK(refused("\x7f" "ELF", 4));
	CHECK(parse("\x01\x02garbage", 10) == CUDA_ERROR_INVALID_IMAGE);
}

int main(void)
{
	arena_init();
	test_seeds();
	test_wrapper();
	test_elf();
	test_fatbin();
	test_ptx_entry_end();
	test_ptx_and_small();
	if (failures) {
		fprintf(stderr, "test_image_check: %d failures\n", failures);
		return 1;
	}
	printf("test_image_check: ok\n");
	return 0;
}
