// SPDX-License-Identifier: MIT
/*
 * Tables the 580 driver serves whose slots no library vgpu runs has been
 * seen to need emulated: served at the driver's own length (so a caller
 * that checks the size word, or reads a slot, finds what the driver would
 * give it), every slot a stub that says once which slot was called and
 * fails with CUDA_ERROR_NOT_SUPPORTED.
 *
 *   ToolsMemory         {bfdb432d-bf3c-5a4a-945e-b34029e81e75}  0x1e0: 60 slots
 *   ToolsTrapHandler    {cc529e94-5c4e-9d46-837c-9625868334e4}  0xb8: 23 slots
 *   ToolsPushBufferHal  {a6b1ff99-ecc4-c94f-92f9-1928663d5585}  0x100: 32 slots
 *   ToolsRm             {1406180d-72d6-cb47-ab6e-b963e51bf4c6}  0x160: 44 slots
 *   JIT (libnvrtc's, libnvJitLink's)
 *                       {da9151d3-3ae6-cc41-a5c0-4f26d533e328}  0x38: 7 slots
 *
 * Traced on the 580 driver under CuPy (tools/dark-trace): NVRTC calls JIT
 * [1](&object, 2, blob, 0x5c4, ...) returning 0 and an object, then [3],
 * [2] and [4] on that object; what they compute is not known. With [1]
 * failing (this table), CuPy's NVRTC kernels and cuFFT ran through vgpu
 * with the native results, as they did with no table at all.
 */
#include "dark_api.h"

VGPU_DARK_TABLE(TOOLS_MEMORY)
VGPU_DARK_TABLE(TOOLS_TRAP_HANDLER)
VGPU_DARK_TABLE(TOOLS_PUSH_BUFFER_HAL)
VGPU_DARK_TABLE(TOOLS_RM)
VGPU_DARK_TABLE(JIT)
