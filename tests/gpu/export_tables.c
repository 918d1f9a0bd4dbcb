// SPDX-License-Identifier: MIT
/*
 * The driver's hidden export tables (cuGetExportTable), as a CUDA 13 program
 * sees them: for every table id the CUDA 13 libraries are known to ask for,
 * prints the id (raw byte order), its name and how many pointer-sized slots
 * it has (slot 0's size word / 8), or that it is not served. The GPU suite
 * runs it natively and through vgpu; the two outputs must be identical.
 *
 * Through vgpu it also asks the worker, by the vgpu-specific
 * vgpuDriverExportTableInfo (found with dlsym, so the native run does not
 * need it), what the real driver behind the daemon serves for each id, and
 * fails, naming every difference on stderr, when the driver serves a table
 * vgpu does not or with another size: a new driver release shows at once
 * what changed. Without a real driver behind the daemon (host backend) that
 * comparison is skipped and said so on stderr.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct known_table {
	const char *name;
	unsigned char id[16];	/* raw bytes, as cuGetExportTable compares them */
	int size_word;		/* slot 0 is the table's size in bytes */
	int refused;		/* vgpu refuses it on purpose (runtime/dark/dark_api.c
				 * says why): not printed, checked under vgpu */
};

static const struct known_table tables[] = {
	{ "CUDART_INTERFACE", { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9,
				0x39, 0x12, 0xfd, 0x9d, 0xf9 }, 1, 0 },
	{ "TOOLS_TLS", { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7,
			 0x8a, 0x3a, 0xec, 0xdc }, 1, 0 },
	{ "TOOLS_RUNTIME_CALLBACK_HOOKS", { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93,
					    0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 }, 1, 0 },
	{ "CONTEXT_LOCAL_STORAGE", { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3,
				     0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 }, 0, 0 },
	{ "CTX_CREATE_BYPASS", { 0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0,
				 0xdf, 0x10, 0xe7, 0x72, 0x86 }, 1, 0 },
	{ "HEAP_ACCESS", { 0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a, 0xac, 0xc5, 0x1d, 0x29,
			   0xce, 0xa6, 0x31, 0xae }, 1, 0 },
	{ "TOOLS_DEVICE", { 0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a, 0x9f, 0x64, 0xf2, 0x23,
			    0xbe, 0x99, 0xf1, 0xe2 }, 1, 0 },
	{ "INTEGRITY_CHECK", { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba,
			       0x12, 0x3c, 0x66, 0xe1, 0xf2 }, 1, 0 },
	{ "CONTEXT_CHECKS", { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb,
			      0xd5, 0x00, 0x6d, 0xfa, 0x7e }, 1, 0 },
	{ "TOOLS_CONTEXT", { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff,
			     0x73, 0x24, 0xc8, 0xf2 }, 1, 0 },
	{ "TOOLS_MODULE", { 0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82,
			    0xaf, 0xf1, 0x99, 0x1e }, 1, 0 },
	{ "TOOLS_MEMORY", { 0xbf, 0xdb, 0x43, 0x2d, 0xbf, 0x3c, 0x5a, 0x4a, 0x94, 0x5e, 0xb3, 0x40,
			    0x29, 0xe8, 0x1e, 0x75 }, 1, 0 },
	{ "TOOLS_TRAP_HANDLER", { 0xcc, 0x52, 0x9e, 0x94, 0x5c, 0x4e, 0x9d, 0x46, 0x83, 0x7c, 0x96,
				  0x25, 0x86, 0x83, 0x34, 0xe4 }, 1, 0 },
	{ "TOOLS_PUSH_BUFFER_HAL", { 0xa6, 0xb1, 0xff, 0x99, 0xec, 0xc4, 0xc9, 0x4f, 0x92, 0xf9,
				     0x19, 0x28, 0x66, 0x3d, 0x55, 0x85 }, 1, 0 },
	{ "TOOLS_RM", { 0x14, 0x06, 0x18, 0x0d, 0x72, 0xd6, 0xcb, 0x47, 0xab, 0x6e, 0xb9, 0x63, 0xe5,
			0x1b, 0xf4, 0xc6 }, 1, 0 },
	{ "CLUSTER_PROTOTYPE", { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0,
				 0xf1, 0xe7, 0xdd, 0x8b, 0xca }, 1, 0 },
	{ "NVML", { 0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47, 0xb0, 0x30, 0xc5, 0xda, 0x33,
		    0x0e, 0xa4, 0xe9 }, 1, 1 },
	{ "CUDART_F8CFF951", { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb,
			       0x46, 0x9e, 0x7c, 0x0d, 0xd9 }, 1, 1 },
	{ "JIT", { 0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41, 0xa5, 0xc0, 0x4f, 0x26, 0xd5,
		   0x33, 0xe3, 0x28 }, 1, 0 },
};

#define NTABLES (sizeof(tables) / sizeof(tables[0]))

/* vgpu's runtime: what the real driver behind the daemon answers. */
typedef CUresult (*driver_table_info_fn)(const CUuuid *id, uint64_t *size_word);

static void format_id(char out[37], const unsigned char *b)
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
}

int main(void)
{
	driver_table_info_fn driver_info =
		(driver_table_info_fn)dlsym(RTLD_DEFAULT, "vgpuDriverExportTableInfo");
	int differences = 0, compared = 0, no_driver = 0;
	CUresult rc = cuInit(0);

	if (rc) {
		fprintf(stderr, "cuInit: %d\n", (int)rc);
		return 1;
	}
	for (unsigned i = 0; i < NTABLES; i++) {
		const struct known_table *t = &tables[i];
		const uint64_t *table = NULL;
		CUuuid id;
		char text[37];
		uint64_t ours = 0;
		int served;

		memcpy(id.bytes, t->id, 16);
		format_id(text, t->id);
		rc = cuGetExportTable((const void **)&table, &id);
		served = rc == CUDA_SUCCESS && table;
		if (rc && rc != CUDA_ERROR_INVALID_VALUE) {
			fprintf(stderr, "%s: cuGetExportTable: unexpected %d\n", t->name, (int)rc);
			differences++;
		}
		if (served && t->size_word)
			ours = table[0];
		if (t->refused)
			;	/* the native run prints nothing for it either */
		else if (!served)
			printf("%s %-28s not served\n", text, t->name);
		else if (!t->size_word)
			printf("%s %-28s served (no size word)\n", text, t->name);
		else
			printf("%s %-28s %llu slots\n", text, t->name,
			       (unsigned long long)(ours / sizeof(void *)));
		/* vgpu never serves a NULL slot (the driver has a few). */
		for (uint64_t s = 1; driver_info && served && s < ours / sizeof(void *); s++)
			if (!table[s]) {
				fprintf(stderr, "%s[%llu] is NULL\n", t->name, (unsigned long long)s);
				differences++;
			}
		if (driver_info) {
			uint64_t real = 0;
			CUresult drc = driver_info(&id, &real);

			if (drc == CUDA_ERROR_NOT_FOUND) {
				if (!no_driver++)
					fprintf(stderr, "no real driver behind the daemon: "
							"its tables not compared\n");
				continue;
			}
			compared++;
			if (drc && drc != CUDA_ERROR_INVALID_VALUE) {
				fprintf(stderr, "%s: vgpuDriverExportTableInfo: %d\n", t->name,
					(int)drc);
				differences++;
			} else if (t->refused && served) {
				fprintf(stderr, "%s %s: vgpu serves it, though it means to refuse it\n",
					text, t->name);
				differences++;
			} else if (t->refused) {
				fprintf(stderr, "%s %s: not served by vgpu on purpose (the driver: %s)\n",
					text, t->name, drc ? "not served" : "served");
			} else if (!drc && !served) {
				fprintf(stderr, "%s %s: the driver serves it (size word %#llx), "
						"vgpu does not\n", text, t->name,
					(unsigned long long)real);
				differences++;
			} else if (drc && served) {
				fprintf(stderr, "%s %s: vgpu serves it, the driver does not\n",
					text, t->name);
				differences++;
			} else if (!drc && t->size_word && real != ours) {
				fprintf(stderr, "%s %s: the driver's table is %#llx bytes "
						"(%llu slots), vgpu's %#llx (%llu slots)\n",
					text, t->name, (unsigned long long)real,
					(unsigned long long)(real / sizeof(void *)),
					(unsigned long long)ours,
					(unsigned long long)(ours / sizeof(void *)));
				differences++;
			}
		}
	}
	if (differences) {
		fprintf(stderr, "export_tables: %d difference(s)\n", differences);
		return 1;
	}
	if (driver_info && compared > 0)
		fprintf(stderr, "export_tables: vgpu serves every table the driver does, at its size\n");
	return 0;
}
