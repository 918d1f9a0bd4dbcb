/* SPDX-License-Identifier: MIT */
/*
 * vgpu's own runtime export for test programs: what the real driver behind
 * the daemon answers for a hidden export table (cuGetExportTable). Find it
 * with dlsym(RTLD_DEFAULT, "vgpuDriverExportTableInfo"): a program that runs
 * natively too must not link against it. tests/gpu/export_tables.c uses it
 * to fail as soon as a driver release serves a table vgpu does not, or at
 * another size.
 */
#ifndef VGPU_EXPORT_TABLES_H
#define VGPU_EXPORT_TABLES_H

#include <cuda.h>
#include <stdint.h>

/*
 * id: 16 raw bytes, as cuGetExportTable takes them. Returns
 *   CUDA_SUCCESS            the driver serves the table; *size_word is its
 *                           slot 0 (the table's size in bytes), or 0 for a
 *                           table whose slot 0 is not a size (context local
 *                           storage);
 *   CUDA_ERROR_INVALID_VALUE  the driver does not serve it;
 *   CUDA_ERROR_NOT_FOUND    no real driver is behind the daemon (host
 *                           backend): it has no hidden tables at all;
 *   another error           the session's (not initialized, worker gone).
 */
CUresult vgpuDriverExportTableInfo(const CUuuid *id, uint64_t *size_word);

typedef CUresult (*vgpuDriverExportTableInfo_fn)(const CUuuid *id, uint64_t *size_word);

#endif
