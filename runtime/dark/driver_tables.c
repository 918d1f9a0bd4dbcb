// SPDX-License-Identifier: MIT
/*
 * The client side of the worker's table operations (daemon/worker/exec/exec_tables.c)
 * that are not about modules: the TPC mapping behind ClusterPrototype[4],
 * and vgpuDriverExportTableInfo, vgpu's own export for test programs.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "dark_api.h"
#include "handles.h"
#include "init.h"

#include "vgpu/export_tables.h"

CUresult vgpu_tpc_mapping(CUdevice dev, unsigned char **vgpc, unsigned char **mtpc)
{
	struct vgpu_ctx *ctx;
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_TPC_MAPPING } };
	unsigned char *a = NULL, *b = NULL;
	uint64_t n;
	CUresult rc = vgpu_initialized();

	if (!rc)
		rc = vgpu_ctx_current(&ctx);
	if (!rc)
		rc = vgpu_reply_whole_slot(&r);
	if (rc)
		return rc;
	r.sqe.ctx = ctx->id;
	r.sqe.arg[0] = (uint64_t)dev;
	rc = vgpu_call(&r);
	n = r.cqe.val[0];
	/* The worker's answer, checked: n bytes of each array, in the slot. */
	if (!rc && (!n || r.cqe.val[2] != 2 * n || 2 * n > r.reply_cap))
		rc = CUDA_ERROR_UNKNOWN;
	if (!rc) {
		a = malloc(n);
		b = malloc(n);
		if (!a || !b)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!rc) {
		memcpy(a, r.reply, n);
		memcpy(b, (const unsigned char *)r.reply + n, n);
		*vgpc = a;
		*mtpc = b;
	} else {
		free(a);
		free(b);
	}
	free(r.reply);
	return rc;
}

/* include/vgpu/export_tables.h says what it answers. */
VGPU_EXPORT CUresult vgpuDriverExportTableInfo(const CUuuid *id, uint64_t *size_word)
{
	struct vgpu_req r = { .sqe = { .opcode = VGPU_OP_DRIVER_EXPORT_TABLE } };
	CUresult rc = vgpu_initialized();

	if (rc)
		return rc;
	if (!id || !size_word)
		return CUDA_ERROR_INVALID_VALUE;
	r.payload = id->bytes;
	r.payload_len = sizeof(id->bytes);
	rc = vgpu_call(&r);
	*size_word = rc ? 0 : r.cqe.val[0];
	return rc;
}
