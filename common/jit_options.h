/* SPDX-License-Identifier: MIT */
/*
 * JIT options that travel to the worker (VGPU_OP_LINK): those whose value
 * is the scalar itself. Options whose value points into the client (log
 * buffers, symbol tables) never do: the client handles the log buffers and
 * wall time itself, and the symbol-table options are not supported. The
 * worker checks every option against this list again.
 */
#ifndef VGPU_JIT_OPTIONS_H
#define VGPU_JIT_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

static inline bool vgpu_jit_option_scalar(uint32_t o)
{
	switch (o) {
	case 0:		/* CU_JIT_MAX_REGISTERS */
	case 1:		/* CU_JIT_THREADS_PER_BLOCK (also an output) */
	case 7:		/* CU_JIT_OPTIMIZATION_LEVEL */
	case 8:		/* CU_JIT_TARGET_FROM_CUCONTEXT */
	case 9:		/* CU_JIT_TARGET */
	case 10:	/* CU_JIT_FALLBACK_STRATEGY */
	case 11:	/* CU_JIT_GENERATE_DEBUG_INFO */
	case 12:	/* CU_JIT_LOG_VERBOSE */
	case 13:	/* CU_JIT_GENERATE_LINE_INFO */
	case 14:	/* CU_JIT_CACHE_MODE */
	case 15:	/* CU_JIT_NEW_SM3X_OPT */
	case 16:	/* CU_JIT_FAST_COMPILE */
	case 20:	/* CU_JIT_LTO */
	case 21:	/* CU_JIT_FTZ */
	case 22:	/* CU_JIT_PREC_DIV */
	case 23:	/* CU_JIT_PREC_SQRT */
	case 24:	/* CU_JIT_FMA */
	case 29:	/* CU_JIT_OPTIMIZE_UNUSED_DEVICE_VARIABLES */
	case 30:	/* CU_JIT_POSITION_INDEPENDENT_CODE */
	case 31:	/* CU_JIT_MIN_CTA_PER_SM */
	case 32:	/* CU_JIT_MAX_THREADS_PER_BLOCK */
	case 33:	/* CU_JIT_OVERRIDE_DIRECTIVE_VALUES */
	case 34:	/* CU_JIT_SPLIT_COMPILE */
		return true;
	default:
		return false;
	}
}

#endif
