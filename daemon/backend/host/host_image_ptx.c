// SPDX-License-Identifier: MIT
/*
 * PTX text, read for the host backend: a small lexer, then .entry with its
 * parameters, .global and .const with their sizes and initializers, and the
 * .version and .target the module asks for. Bounded by the text's length.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_image_fmt.h"
#include "log.h"

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
			g = host_image_add_global(img, x->tok, x->len);
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
		r = host_image_add_param(k, idx++, off, (uint32_t)(count * esz));
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

CUresult host_image_ptx_parse(const char *text, size_t n, struct host_image *img, int *target)
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
			struct host_image_kernel *k = host_image_add_kernel(img, x.tok, x.len);

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
int host_image_looks_like_ptx(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isprint((unsigned char)s[i]) && !isspace((unsigned char)s[i]))
			return 0;
	return strstr(s, ".version") && strstr(s, ".target");
}
