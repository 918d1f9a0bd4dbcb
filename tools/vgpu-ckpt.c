// SPDX-License-Identifier: MIT
/*
 * vgpu-ckpt: look into a checkpoint file (include/vgpu/ckpt.h).
 *
 *   vgpu-ckpt inspect FILE [--verify]   the header and the section table;
 *                                       --verify checks every checksum, the
 *                                       parents' too (incremental)
 *   vgpu-ckpt cat FILE TYPE ID          one section's bytes to stdout
 *                                       (TYPE: a number, ID: a number)
 *
 * Exit 0, 1 when the file is refused (the reason on stderr), 2 for usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

static int usage(void)
{
	fprintf(stderr, "usage: vgpu-ckpt inspect FILE [--verify]\n"
			"       vgpu-ckpt cat FILE TYPE ID\n");
	return 2;
}

/* Text the file holds, with its non-printable bytes (and '\\') as \xNN:
 * a hostile file must not drive the terminal. */
static void print_escaped(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c < 0x20 || c > 0x7e || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static int inspect(const char *path, int verify)
{
	struct vgpu_ckpt_reader *r;
	char err[VGPU_CKPT_MSG], gpu[256], name[24];
	const struct vgpu_ckpt_header *h;

	/* --verify: the parents too, each whole; else this file alone. */
	if ((verify ? vgpu_ckpt_open_chain(&r, path, NULL, VGPU_CKPT_VERIFY, err)
		    : vgpu_ckpt_reader_open(&r, path, NULL, 0, err))) {
		fprintf(stderr, "vgpu-ckpt: %s\n", err);
		return 1;
	}
	h = vgpu_ckpt_header(r);
	printf("file: %s\nversion: %u\nsession: %" PRIu64 "\ndriver: %u\ngpu: %s\n"
	       "sections: %u\nfile bytes: %" PRIu64 "\n", path, h->version, h->session_id,
	       h->driver_version, vgpu_ckpt_gpu_describe(&h->gpu, gpu), vgpu_ckpt_count(r),
	       h->file_size);
	if (h->flags & VGPU_CKPT_F_INCREMENTAL) {
		int i = vgpu_ckpt_find(r, VGPU_CKPT_SEC_PARENT, 0);
		void *text = NULL;
		size_t len;

		if (i < 0 || vgpu_ckpt_read_whole(r, (unsigned)i, 4096, &text, &len)) {
			printf("parent: (not named)\n");
		} else {
			printf("parent: ");
			print_escaped(text, len);
			printf("\n");
		}
		free(text);
	}
	for (unsigned i = 0; i < vgpu_ckpt_count(r); i++) {
		const struct vgpu_ckpt_section *s = vgpu_ckpt_section_at(r, i);

		printf("%4u %-16s id %#-14" PRIx64 " raw %12" PRIu64 " stored %12" PRIu64
		       " records %" PRIu64 "%s\n", i, vgpu_ckpt_section_name(s->type, name), s->id,
		       s->raw_len, s->stored_len, s->aux,
		       s->flags & VGPU_CKPT_SF_PARENT ? " (in the parent)" : "");
	}
	if (verify)
		printf("verified: every checksum holds%s\n",
		       vgpu_ckpt_chain_length(r) > 1 ? ", the parents' too" : "");
	vgpu_ckpt_reader_close(r);
	return 0;
}

static int cat(const char *path, const char *type, const char *id)
{
	struct vgpu_ckpt_reader *r;
	char err[VGPU_CKPT_MSG], *end1, *end2, buf[1 << 16];
	unsigned long long t = strtoull(type, &end1, 0), k = strtoull(id, &end2, 0);
	ssize_t n;
	int i;

	if (*end1 || *end2 || !*type || !*id)
		return usage();
	if (vgpu_ckpt_open_chain(&r, path, NULL, 0, err)) {
		fprintf(stderr, "vgpu-ckpt: %s\n", err);
		return 1;
	}
	i = vgpu_ckpt_find(r, (uint32_t)t, k);
	if (i < 0 || vgpu_ckpt_read_begin(r, (unsigned)i)) {
		fprintf(stderr, "vgpu-ckpt: %s: no section of type %llu with id %#llx\n", path, t, k);
		vgpu_ckpt_reader_close(r);
		return 1;
	}
	while ((n = vgpu_ckpt_read(r, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
	if (n < 0)
		fprintf(stderr, "vgpu-ckpt: %s\n", vgpu_ckpt_reader_error(r));
	vgpu_ckpt_reader_close(r);
	return n < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "inspect") &&
	    (argc == 3 || (argc == 4 && !strcmp(argv[3], "--verify"))))
		return inspect(argv[2], argc == 4);
	if (argc == 5 && !strcmp(argv[1], "cat"))
		return cat(argv[2], argv[3], argv[4]);
	return usage();
}
