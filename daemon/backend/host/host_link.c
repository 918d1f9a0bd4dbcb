// SPDX-License-Identifier: MIT
/*
 * The JIT linker on the host backend. No code is compiled or run here, so
 * linking means making one image this backend loads out of the inputs:
 *   - PTX inputs only: one PTX text, the first input whole and the others
 *     without their .version/.target/.address_size lines; an entry defined
 *     twice is refused, as the real linker refuses a duplicate symbol.
 *     (Whether every .extern is defined somewhere is not checked.)
 *   - one cubin or fatbin input alone: that image.
 * Anything else (a cubin with other inputs, objects, libraries, NVVM) is
 * refused with CUDA_ERROR_NOT_SUPPORTED and says so in the error log.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_backend.h"
#include "host_image.h"

#define HOST_LINK_MAGIC 0x4b4e4c48u	/* "HLNK" */

struct link_input {
	CUjitInputType type;
	uint8_t *data;
	size_t size;
	struct host_image img;
};

struct host_link {
	uint32_t magic;
	char *info, *err;
	size_t info_cap, err_cap;
	unsigned *info_len, *err_len;	/* where the sizes go back, if asked */
	float *wall;
	struct timespec start;
	struct link_input *in;
	size_t n;
	void *out;
	size_t out_size;
};

static void say(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
}

static CUresult check_options(unsigned n, CUjit_option *opt, void **val)
{
	if (n && (!opt || !val))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < n; i++)
		if ((unsigned)opt[i] >= CU_JIT_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult host_cuLinkCreate_v2(unsigned int n, CUjit_option *opt, void **val, CUlinkState *out)
{
	struct host_link *l;
	CUresult rc = host_check_init();

	if (!rc)
		rc = check_options(n, opt, val);
	if (!rc && !out)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;
	l->magic = HOST_LINK_MAGIC;
	for (unsigned i = 0; i < n; i++) {
		switch (opt[i]) {
		case CU_JIT_INFO_LOG_BUFFER:
			l->info = val[i];
			break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
			l->info_cap = (uintptr_t)val[i];
			l->info_len = (unsigned *)&val[i];
			break;
		case CU_JIT_ERROR_LOG_BUFFER:
			l->err = val[i];
			break;
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			l->err_cap = (uintptr_t)val[i];
			l->err_len = (unsigned *)&val[i];
			break;
		case CU_JIT_WALL_TIME:
			l->wall = (float *)&val[i];
			break;
		default:
			break;
		}
	}
	say(l->info, l->info_cap, "%s", "");
	say(l->err, l->err_cap, "%s", "");
	clock_gettime(CLOCK_MONOTONIC, &l->start);
	*out = (CUlinkState)l;
	return CUDA_SUCCESS;
}

static struct host_link *link_get(CUlinkState s)
{
	struct host_link *l = (struct host_link *)s;

	return l && l->magic == HOST_LINK_MAGIC ? l : NULL;
}

CUresult host_cuLinkAddData_v2(CUlinkState s, CUjitInputType type, void *data, size_t size,
			       const char *name, unsigned int n, CUjit_option *opt, void **val)
{
	struct host_link *l = link_get(s);
	struct link_input *in, *grown;
	CUresult rc;

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	rc = check_options(n, opt, val);
	if (rc || !data || !size)
		return rc ? rc : CUDA_ERROR_INVALID_VALUE;
	if (type != CU_JIT_INPUT_PTX && type != CU_JIT_INPUT_CUBIN &&
	    type != CU_JIT_INPUT_FATBINARY) {
		say(l->err, l->err_cap, "host backend: input %s: only PTX, cubin and fatbin inputs "
			"are linked", name ? name : "");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	grown = realloc(l->in, (l->n + 1) * sizeof(*l->in));
	if (!grown)
		return CUDA_ERROR_OUT_OF_MEMORY;
	l->in = grown;
	in = &l->in[l->n];
	memset(in, 0, sizeof(*in));
	rc = host_image_parse_len(data, size, &in->img);
	if (rc) {
		say(l->err, l->err_cap, "host backend: input %s is not an image this device loads",
		    name ? name : "");
		return rc;
	}
	in->data = malloc(size + 1);
	if (!in->data) {
		host_image_free(&in->img);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(in->data, data, size);
	in->data[size] = 0;
	in->size = size;
	in->type = type;
	l->n++;
	return CUDA_SUCCESS;
}

/* A later input's PTX without the lines only the first one keeps. */
static size_t append_body(char *dst, const char *text)
{
	static const char *const header[] = { ".version", ".target", ".address_size" };
	size_t w = 0;

	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		const char *t = p;
		size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
		int skip = 0;

		while (*t == ' ' || *t == '\t')
			t++;
		for (size_t i = 0; i < 3; i++)
			skip |= !strncmp(t, header[i], strlen(header[i]));
		if (!skip) {
			memcpy(dst + w, p, len);
			w += len;
		}
		p += len;
	}
	return w;
}

static CUresult merge_ptx(struct host_link *l)
{
	size_t total = 2, w;
	char *text;

	for (size_t i = 0; i < l->n; i++) {
		for (size_t j = 0; j < i; j++)
			for (size_t a = 0; a < l->in[i].img.nkernels; a++)
				for (size_t b = 0; b < l->in[j].img.nkernels; b++)
					if (!strcmp(l->in[i].img.kernels[a].name,
						    l->in[j].img.kernels[b].name)) {
						say(l->err, l->err_cap,
						    "host backend: duplicate entry %s",
						    l->in[i].img.kernels[a].name);
						return CUDA_ERROR_INVALID_IMAGE;
					}
		total += strlen((char *)l->in[i].data) + 1;
	}
	text = malloc(total);
	if (!text)
		return CUDA_ERROR_OUT_OF_MEMORY;
	w = strlen((char *)l->in[0].data);
	memcpy(text, l->in[0].data, w);
	text[w++] = '\n';
	for (size_t i = 1; i < l->n; i++)
		w += append_body(text + w, (char *)l->in[i].data);
	text[w++] = 0;
	l->out = text;
	l->out_size = w;
	return CUDA_SUCCESS;
}

static CUresult complete(struct host_link *l)
{
	int all_ptx = 1;
	struct host_image check;
	CUresult rc;

	if (!l->n) {
		say(l->err, l->err_cap, "host backend: nothing to link");
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = 0; i < l->n; i++)
		all_ptx &= l->in[i].type == CU_JIT_INPUT_PTX;
	if (all_ptx) {
		rc = merge_ptx(l);
	} else if (l->n == 1) {
		l->out = malloc(l->in[0].size);
		rc = l->out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
		if (!rc) {
			memcpy(l->out, l->in[0].data, l->in[0].size);
			l->out_size = l->in[0].size;
		}
	} else {
		say(l->err, l->err_cap, "host backend: a cubin or fatbin links only alone; "
			"several inputs link when all are PTX");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (rc)
		return rc;
	/* What the program loads next must load. */
	rc = host_image_parse_len(l->out, l->out_size, &check);
	if (!rc)
		host_image_free(&check);
	return rc;
}

CUresult host_cuLinkComplete(CUlinkState s, void **cubin, size_t *size)
{
	struct host_link *l = link_get(s);
	struct timespec now;
	CUresult rc;

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!cubin || !size)
		return CUDA_ERROR_INVALID_VALUE;
	free(l->out);
	l->out = NULL;
	rc = complete(l);
	if (!rc) {
		*cubin = l->out;
		*size = l->out_size;
		say(l->info, l->info_cap, "host backend: %zu input%s linked into %zu bytes", l->n,
		    l->n == 1 ? "" : "s", l->out_size);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (l->wall)
		*l->wall = (float)((now.tv_sec - l->start.tv_sec) * 1e3 +
				   (now.tv_nsec - l->start.tv_nsec) / 1e6);
	if (l->info_len)
		*l->info_len = l->info && l->info_cap ? (unsigned)strlen(l->info) : 0;
	if (l->err_len)
		*l->err_len = l->err && l->err_cap ? (unsigned)strlen(l->err) : 0;
	return rc;
}

CUresult host_cuLinkDestroy(CUlinkState s)
{
	struct host_link *l = link_get(s);

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	for (size_t i = 0; i < l->n; i++) {
		host_image_free(&l->in[i].img);
		free(l->in[i].data);
	}
	free(l->in);
	free(l->out);
	l->magic = 0;
	free(l);
	return CUDA_SUCCESS;
}
