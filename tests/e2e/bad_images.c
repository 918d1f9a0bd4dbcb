// SPDX-License-Identifier: MIT
/*
 * Malformed module images from a tenant (issue 10, finding 3): each is
 * refused with CUDA_ERROR_INVALID_IMAGE and the session goes on: a good
 * module then loads, its kernel runs and writes what it was given.
 *
 * cuModuleLoad sends a file's bytes as they are (the client cannot tell
 * where a broken image ends), so the worker's own checks are what refuse
 * them: a fatbinC wrapper (a pointer into the client, never followed), ELF
 * headers and sections past the bytes received, fatbin container and entry
 * sizes past them, a compressed size past its entry. cuModuleLoadData reads
 * the client's memory: the client unwraps a wrapper and sends the fatbin.
 *
 * Through vgpu only (the real driver is not asked to survive these), on
 * either backend. One line per check on stdout; exit 0 pass, 1 fail.
 */
#include <cuda.h>
#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FATBINC_MAGIC	0x466243b1u
#define FATBIN_MAGIC	0xba55ed50u

static int failures;
static char dir[] = "/tmp/vgpu-bad-images.XXXXXX";

static void expect(bool ok, const char *what, CUresult rc)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	if (!ok) {
		failures++;
		fprintf(stderr, "bad_images: %s: got %d\n", what, rc);
	}
}

/* The kernel the host backend implements too (daemon/backend/host/host_kernels.c). */
static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry vgpu_poke_u32(.param .u64 p, .param .u32 v)\n{\n"
	"\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n"
	"\tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [v];\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n\tst.global.u32 [%rd2], %r1;\n\tret;\n}\n";

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* A fatbin of one PTX entry, laid out as nvcc 13.0 writes one; its size. */
#define FAT_HDR		16
#define ENT_HDR		80
static size_t make_fatbin(uint8_t *d)
{
	size_t text = (sizeof(ptx) + 15) & ~(size_t)15;	/* NUL-padded */

	memset(d, 0, FAT_HDR + ENT_HDR + text);
	put32(d, FATBIN_MAGIC);
	put16(d + 4, 1);
	put16(d + 6, FAT_HDR);
	put64(d + 8, ENT_HDR + text);
	d += FAT_HDR;
	put16(d, 1);			/* PTX */
	put16(d + 2, 0x101);
	put32(d + 4, ENT_HDR);
	put64(d + 8, text);
	put32(d + 20, 64);
	put16(d + 24, 0);		/* ISA 8.0 */
	put16(d + 26, 8);
	put32(d + 28, 90);		/* compute_90 */
	put64(d + 40, 0x11);		/* 64-bit, Linux */
	put64(d + 64, 72);
	memcpy(d + ENT_HDR, ptx, sizeof(ptx));
	return FAT_HDR + ENT_HDR + text;
}

/* An ELF64 for CUDA with a section-name table and nothing else; its size. */
#define SHSTR_OFF	64
#define SH_OFF		80
static size_t make_elf(uint8_t *d)
{
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
			     EV_CURRENT, 0x33, 8 },
		.e_type = ET_EXEC, .e_machine = 190, .e_version = 1,
		.e_shoff = SH_OFF, .e_flags = 90 << 8, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 2, .e_shstrndx = 1,
	};
	Elf64_Shdr sh[2] = {
		{ 0 },
		{ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = SHSTR_OFF, .sh_size = 11,
		  .sh_addralign = 1 },
	};

	memset(d, 0, SH_OFF + sizeof(sh));
	memcpy(d, &eh, sizeof(eh));
	memcpy(d + SHSTR_OFF, "\0.shstrtab", 11);
	memcpy(d + SH_OFF, sh, sizeof(sh));
	return SH_OFF + sizeof(sh);
}

/* cuModuleLoad of @len bytes: what the worker receives, unchecked by the client. */
static CUresult load_file(const void *bytes, size_t len, CUmodule *mod)
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/image", dir);
	f = fopen(path, "wb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	ok = fwrite(bytes, 1, len, f) == len;
	if (fclose(f) || !ok)
		return CUDA_ERROR_FILE_NOT_FOUND;
	return cuModuleLoad(mod, path);
}

static void refused(const void *bytes, size_t len, const char *what)
{
	CUmodule mod = NULL;
	CUresult rc = load_file(bytes, len, &mod);

	expect(rc == CUDA_ERROR_INVALID_IMAGE, what, rc);
	if (!rc)
		cuModuleUnload(mod);
}

static void bad_elves(void)
{
	uint8_t good[512], d[512];
	size_t n = make_elf(good);

#define MUTATE(what, off, put, value)                                            \
	do {                                                                     \
		memcpy(d, good, n);                                              \
		put(d + (off), value);                                           \
		refused(d, n, what);                                             \
	} while (0)
	refused(good, n - 40, "ELF cut inside its section headers");
	refused(good, 40, "ELF cut inside its own header");
	MUTATE("ELF with a huge e_shoff", offsetof(Elf64_Ehdr, e_shoff), put64,
	       0xffffffffffff0000ull);
	MUTATE("ELF with e_shoff at its last bytes", offsetof(Elf64_Ehdr, e_shoff), put64, n - 8);
	MUTATE("ELF with a huge e_shnum", offsetof(Elf64_Ehdr, e_shnum), put16, 0xffff);
	MUTATE("ELF with a huge e_shentsize", offsetof(Elf64_Ehdr, e_shentsize), put16, 0xffff);
	MUTATE("ELF with a section past its end",
	       SH_OFF + sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_offset), put64, 1ull << 40);
	MUTATE("ELF with a section larger than the image",
	       SH_OFF + sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size), put64, 1ull << 32);
#undef MUTATE
}

static void bad_fatbins(void)
{
	static uint8_t good[4096], d[4096];
	size_t n = make_fatbin(good);
	uint8_t *e = d + FAT_HDR;

#define MUTATE(what, p, put, value)                                              \
	do {                                                                     \
		memcpy(d, good, n);                                              \
		put(p, value);                                                   \
		refused(d, n, what);                                             \
	} while (0)
	MUTATE("fatbin header size past the image", d + 6, put16, 0xfff0);
	MUTATE("fatbin entries' size past the image", d + 8, put64, 2 * n);
	MUTATE("fatbin entries' size that wraps", d + 8, put64, 0xfffffffffffffff0ull);
	MUTATE("fatbin entry header size past the image", e + 4, put32, 4000);
	MUTATE("fatbin entry payload size past the image", e + 8, put64, n);
	memcpy(d, good, n);
	put64(e + 40, 0x2011);			/* LZ4 */
	put64(e + 56, 4096);
	put32(e + 16, (uint32_t)n);		/* compressed size past the payload */
	refused(d, n, "fatbin entry compressed size past its payload");
	refused(good, n - 8, "fatbin cut short");
#undef MUTATE
}

/* A wrapper as bytes: its pointer would be followed in the worker. */
static void wrappers(const uint8_t *fatbin)
{
	struct { uint32_t magic, version; const void *data, *name; } w = {
		FATBINC_MAGIC, 1, fatbin, NULL,
	};
	CUmodule mod = NULL;
	CUresult rc;

	refused(&w, sizeof(w), "fatbinC wrapper sent as bytes (worker refuses it)");
	w.data = (const void *)(uintptr_t)0x1000;
	refused(&w, sizeof(w), "fatbinC wrapper with a wild pointer sent as bytes");
	w.data = NULL;
	rc = cuModuleLoadData(&mod, &w);
	expect(rc == CUDA_ERROR_INVALID_IMAGE, "fatbinC wrapper to nothing (client refuses)", rc);
	rc = cuModuleLoadData(&mod, "");
	expect(rc == CUDA_ERROR_INVALID_IMAGE, "empty image in memory", rc);
	refused("", 0, "empty image file");
}

/* The session still works: good images load, the kernel runs. */
static void poke(CUmodule mod, unsigned v, const char *what)
{
	CUfunction f = NULL;
	CUdeviceptr p = 0;
	unsigned got = 0;
	void *args[2] = { &p, &v };
	CUresult rc = cuModuleGetFunction(&f, mod, "vgpu_poke_u32");

	if (!rc)
		rc = cuMemAlloc(&p, sizeof(got));
	if (!rc)
		rc = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
	if (!rc)
		rc = cuCtxSynchronize();
	if (!rc)
		rc = cuMemcpyDtoH(&got, p, sizeof(got));
	if (p)
		cuMemFree(p);
	expect(!rc && got == v, what, rc);
}

static void good_images(const uint8_t *fatbin, size_t fatbin_len)
{
	struct { uint32_t magic, version; const void *data, *name; } w = {
		FATBINC_MAGIC, 1, fatbin, NULL,
	};
	CUmodule mod = NULL;
	CUresult rc;

	rc = cuModuleLoadData(&mod, ptx);
	expect(rc == CUDA_SUCCESS, "good PTX in memory loads", rc);
	if (!rc) {
		poke(mod, 0x1234abcd, "its kernel runs");
		cuModuleUnload(mod);
	}
	rc = load_file(ptx, sizeof(ptx) - 1, &mod);
	expect(rc == CUDA_SUCCESS, "good PTX file without a NUL loads", rc);
	if (!rc) {
		poke(mod, 0x600d, "its kernel runs");
		cuModuleUnload(mod);
	}
	rc = load_file(fatbin, fatbin_len, &mod);
	expect(rc == CUDA_SUCCESS, "good fatbin file loads", rc);
	if (!rc)
		cuModuleUnload(mod);
	rc = cuModuleLoadData(&mod, &w);
	expect(rc == CUDA_SUCCESS, "fatbinC wrapper in memory: the client sends its fatbin", rc);
	if (!rc) {
		poke(mod, 0xfa7b1, "its kernel runs");
		cuModuleUnload(mod);
	}
}

int main(void)
{
	static uint8_t fatbin[4096];
	size_t fatbin_len = make_fatbin(fatbin);
	char path[64];
	CUcontext ctx;
	CUdevice dev;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "bad_images: no device\n");
		return 1;
	}
	if (!mkdtemp(dir)) {
		perror("bad_images: mkdtemp");
		return 1;
	}
	bad_elves();
	bad_fatbins();
	wrappers(fatbin);
	good_images(fatbin, fatbin_len);
	snprintf(path, sizeof(path), "%s/image", dir);
	unlink(path);
	rmdir(dir);
	cuDevicePrimaryCtxRelease(dev);
	printf("%s\n", failures ? "bad_images: FAIL" : "bad_images: ok");
	return failures ? 1 : 0;
}
