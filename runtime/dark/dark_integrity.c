// SPDX-License-Identifier: MIT
/*
 * INTEGRITY_CHECK export table {d4082055-bde6-704b-8d34-ba123c66e1f2}.
 *
 * The CUDA runtime calls slot 1 as check(version, unix_seconds, out[2]) at
 * initialization and compares the 16 bytes against its own computation.
 *
 * The algorithm (reverse-engineered by the ZLUDA project; this is an
 * independent implementation from that description):
 *  - version % 10 == 0 or 1: two fixed 64-bit constants;
 *  - otherwise HMAC-MD2 (RFC 1319 MD2, RFC 2104 HMAC with MD2's 16-byte
 *    block) under a fixed 16-byte key, over
 *      u32 driver_version, u32 version, u32 pid, u32 tid (pthread_self, low
 *      32 bits), ptr CUDART_INTERFACE table, ptr INTEGRITY_CHECK table,
 *      ptr slot-1 function, u64 unix_seconds            (48 bytes)
 *    followed, for every device, by
 *      16-byte UUID (cuDeviceGetUuid_v2), i32 PCI domain, i32 PCI bus,
 *      i32 PCI device                                   (28 bytes).
 *    The digest is returned as two native-endian u64.
 * Everything it mixes in is what our own driver reports (the virtual
 * device identities), so it is computed entirely in the client.
 */
#include "dark_api.h"
#include "log.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* ---- MD2 (RFC 1319) ---------------------------------------------------- */

/* The RFC's substitution table, a permutation built from the digits of pi. */
static const uint8_t md2_pi_subst[256] = {
	 41,  46,  67, 201, 162, 216, 124,   1,  61,  54,  84, 161, 236, 240,   6,  19,
	 98, 167,   5, 243, 192, 199, 115, 140, 152, 147,  43, 217, 188,  76, 130, 202,
	 30, 155,  87,  60, 253, 212, 224,  22, 103,  66, 111,  24, 138,  23, 229,  18,
	190,  78, 196, 214, 218, 158, 222,  73, 160, 251, 245, 142, 187,  47, 238, 122,
	169, 104, 121, 145,  21, 178,   7,  63, 148, 194,  16, 137,  11,  34,  95,  33,
	128, 127,  93, 154,  90, 144,  50,  39,  53,  62, 204, 231, 191, 247, 151,   3,
	255,  25,  48, 179,  72, 165, 181, 209, 215,  94, 146,  42, 172,  86, 170, 198,
	 79, 184,  56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116,   4, 241,
	 69, 157, 112,  89, 100, 113, 135,  32, 134,  91, 207, 101, 230,  45, 168,   2,
	 27,  96,  37, 173, 174, 176, 185, 246,  28,  70,  97, 105,  52,  64, 126,  15,
	 85,  71, 163,  35, 221,  81, 175,  58, 195,  92, 249, 206, 186, 197, 234,  38,
	 44,  83,  13, 110, 133,  40, 132,   9, 211, 223, 205, 244,  65, 129,  77,  82,
	106, 220,  55, 200, 108, 193, 171, 250,  36, 225, 123,   8,  12, 189, 177,  74,
	120, 136, 149, 139, 227,  99, 232, 109, 233, 203, 213, 254,  59,   0,  29,  57,
	242, 239, 183,  14, 102,  88, 208, 228, 166, 119, 114, 248, 235, 117,  75,  10,
	 49,  68,  80, 180, 143, 237,  31,  26, 219, 153, 141,  51, 159,  17, 131,  20,
};

struct md2 {
	uint8_t x[48];        /* state | block | state ^ block */
	uint8_t checksum[16];
	uint8_t last;         /* L: last checksum byte written */
	unsigned fill;        /* bytes of the current block so far */
};

static void md2_init(struct md2 *m)
{
	memset(m, 0, sizeof(*m));
}

/* Mixes the full block in x[16..31] into the state. */
static void md2_compress(struct md2 *m)
{
	uint8_t t = 0;

	for (int i = 0; i < 16; i++)
		m->x[32 + i] = m->x[16 + i] ^ m->x[i];
	for (int round = 0; round < 18; round++) {
		for (int k = 0; k < 48; k++) {
			m->x[k] ^= md2_pi_subst[t];
			t = m->x[k];
		}
		t = (uint8_t)(t + round);
	}
}

static void md2_update(struct md2 *m, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++) {
		uint8_t c = p[i];

		m->x[16 + m->fill] = c;
		m->checksum[m->fill] ^= md2_pi_subst[c ^ m->last];
		m->last = m->checksum[m->fill];
		if (++m->fill == 16) {
			md2_compress(m);
			m->fill = 0;
		}
	}
}

static void md2_final(struct md2 *m, uint8_t digest[16])
{
	uint8_t pad[16], sum[16];
	unsigned n = 16 - m->fill;

	memset(pad, (int)n, n);
	md2_update(m, pad, n);
	memcpy(sum, m->checksum, 16);
	md2_update(m, sum, 16);
	memcpy(digest, m->x, 16);
}

void vgpu_dark_md2(const void *data, size_t len, uint8_t digest[16])
{
	struct md2 m;

	md2_init(&m);
	md2_update(&m, data, len);
	md2_final(&m, digest);
}

/* ---- The integrity hash ----------------------------------------------- */

static const uint8_t integrity_key[16] = {
	0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
	0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f,
};

static void put_u32(uint8_t **p, uint32_t v)
{
	memcpy(*p, &v, 4);
	*p += 4;
}

static void put_u64(uint8_t **p, uint64_t v)
{
	memcpy(*p, &v, 8);
	*p += 8;
}

static void put_ptr(uint8_t **p, const void *v)
{
	put_u64(p, (uint64_t)(uintptr_t)v);
}

static void key_pad(uint8_t out[16], uint8_t mask)
{
	for (int i = 0; i < 16; i++)
		out[i] = integrity_key[i] ^ mask;
}

void vgpu_dark_integrity_hash(const struct vgpu_dark_integrity_input *in,
			      uint64_t out[2])
{
	uint8_t head[48], *p = head, pad[16], inner[16], digest[16];
	struct md2 m;

	switch (in->runtime_version % 10) {
	case 0:
		out[0] = 0x3341181c03cb675cULL;
		out[1] = 0x8ed383aa1f4cd1e8ULL;
		return;
	case 1:
		out[0] = 0x1841181c03cb675cULL;
		out[1] = 0x8ed383aa1f4cd1e8ULL;
		return;
	}

	put_u32(&p, in->driver_version);
	put_u32(&p, in->runtime_version);
	put_u32(&p, in->pid);
	put_u32(&p, in->tid);
	put_ptr(&p, in->cudart_table);
	put_ptr(&p, in->integrity_table);
	put_ptr(&p, in->check_fn);
	put_u64(&p, in->unix_seconds);

	md2_init(&m);
	key_pad(pad, 0x36);
	md2_update(&m, pad, sizeof(pad));
	md2_update(&m, head, sizeof(head));
	for (unsigned i = 0; i < in->ndevices; i++) {
		const struct vgpu_dark_device_id *d = &in->devices[i];
		uint8_t rec[28], *q = rec;

		memcpy(q, d->uuid.bytes, 16);
		q += 16;
		put_u32(&q, (uint32_t)d->pci_domain);
		put_u32(&q, (uint32_t)d->pci_bus);
		put_u32(&q, (uint32_t)d->pci_device);
		md2_update(&m, rec, sizeof(rec));
	}
	md2_final(&m, inner);

	md2_init(&m);
	key_pad(pad, 0x5c);
	md2_update(&m, pad, sizeof(pad));
	md2_update(&m, inner, sizeof(inner));
	md2_final(&m, digest);
	memcpy(&out[0], digest, 8);
	memcpy(&out[1], digest + 8, 8);
}

/* ---- The table --------------------------------------------------------- */

#define MAX_HASHED_DEVICES 64

static CUresult integrity_check(uint32_t version, uint64_t unix_seconds,
				uint64_t out[2])
{
	struct vgpu_dark_device_id devs[MAX_HASHED_DEVICES];
	struct vgpu_dark_integrity_input in;
	int count = 0, drv = 0;
	CUresult rc;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&in, 0, sizeof(in));
	in.runtime_version = version;
	in.unix_seconds = unix_seconds;
	if (version % 10 > 1) {
		rc = cuDriverGetVersion(&drv);
		if (rc == CUDA_SUCCESS)
			rc = cuDeviceGetCount(&count);
		if (rc != CUDA_SUCCESS) {
			vlog_warn("dark API: integrity check: driver query failed (%d)", (int)rc);
			return rc;
		}
		if (count > MAX_HASHED_DEVICES)
			count = MAX_HASHED_DEVICES;
		memset(devs, 0, sizeof(devs));
		for (int d = 0; d < count; d++) {
			rc = cuDeviceGetUuid_v2(&devs[d].uuid, d);
			if (rc == CUDA_SUCCESS)
				rc = cuDeviceGetAttribute(&devs[d].pci_domain,
							  CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
			if (rc == CUDA_SUCCESS)
				rc = cuDeviceGetAttribute(&devs[d].pci_bus,
							  CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
			if (rc == CUDA_SUCCESS)
				rc = cuDeviceGetAttribute(&devs[d].pci_device,
							  CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
			if (rc != CUDA_SUCCESS) {
				vlog_warn("dark API: integrity check: device %d query failed (%d)",
					  d, (int)rc);
				return rc;
			}
		}
		in.driver_version = (uint32_t)drv;
		in.pid = (uint32_t)getpid();
		in.tid = (uint32_t)(uintptr_t)pthread_self();
		in.cudart_table = vgpu_dark_tables[VGPU_DARK_CUDART_INTERFACE].slots;
		in.integrity_table = vgpu_dark_table_INTEGRITY_CHECK;
		in.check_fn = vgpu_dark_table_INTEGRITY_CHECK[1];
		in.ndevices = (unsigned)count;
		in.devices = devs;
	}
	vgpu_dark_integrity_hash(&in, out);
	vlog_debug("dark API: integrity check(version %u, time %llu, %d devices)",
		   version, (unsigned long long)unix_seconds, count);
	return CUDA_SUCCESS;
}

VGPU_DARK_TABLE(INTEGRITY_CHECK,
	[1] = (const void *)integrity_check)
