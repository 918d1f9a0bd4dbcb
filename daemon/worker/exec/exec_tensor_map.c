// SPDX-License-Identifier: MIT
/*
 * Tensor maps (TMA descriptors): the driver encodes them on the host into
 * 128 bytes the program then passes to kernels by value. The client sends
 * the arguments; the backend encodes (and refuses what its rules refuse);
 * the 128 bytes go back in the reply slot. One round trip per encode.
 */
#include <string.h>

#include "worker.h"

static enum op_status op_encode(struct worker *w, struct op_call *call)
{
	struct vgpu_tensor_map_req q;
	CUtensorMap map;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (call->len != sizeof(q) || !call->reply)
		goto out;
	memcpy(&q, call->payload, sizeof(q));
	/* The arrays hold rank entries: nothing past them is read. */
	if (q.rank == 0 || q.rank > VGPU_TMAP_MAX_RANK || q.reserved[0] || q.reserved[1])
		goto out;
	void *addr = (void *)(uintptr_t)q.global_address;

	switch (q.kind) {
	case VGPU_TMAP_TILED:
		rc = w->B.cuTensorMapEncodeTiled(&map, q.data_type, q.rank, addr, q.global_dim,
						 q.global_strides, q.box_dim, q.element_strides,
						 q.interleave, q.swizzle, q.l2_promotion,
						 q.oob_fill);
		break;
	case VGPU_TMAP_IM2COL:
		rc = w->B.cuTensorMapEncodeIm2col(&map, q.data_type, q.rank, addr, q.global_dim,
						  q.global_strides, q.lower, q.upper,
						  q.channels_per_pixel, q.pixels_per_column,
						  q.element_strides, q.interleave, q.swizzle,
						  q.l2_promotion, q.oob_fill);
		break;
	case VGPU_TMAP_IM2COL_WIDE:
		rc = w->B.cuTensorMapEncodeIm2colWide(&map, q.data_type, q.rank, addr,
						      q.global_dim, q.global_strides, q.lower[0],
						      q.upper[0], q.channels_per_pixel,
						      q.pixels_per_column, q.element_strides,
						      q.interleave, q.wide_mode, q.swizzle,
						      q.l2_promotion, q.oob_fill);
		break;
	}
out:
	if (!rc) {
		memcpy(call->reply, &map, sizeof(map));
		call->cqe->val[2] = sizeof(map);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

static enum op_status op_replace(struct worker *w, struct op_call *call)
{
	CUtensorMap map;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (call->len == sizeof(map) && call->reply) {
		memcpy(&map, call->payload, sizeof(map));
		rc = w->B.cuTensorMapReplaceAddress(&map, (void *)(uintptr_t)call->sqe->arg[0]);
	}
	if (!rc) {
		memcpy(call->reply, &map, sizeof(map));
		call->cqe->val[2] = sizeof(map);
	}
	call->cqe->result = rc;
	return OP_DONE;
}

const struct op_desc exec_tensor_map_ops[] = {
	OP(TENSOR_MAP_ENCODE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_encode),
	OP(TENSOR_MAP_REPLACE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_replace),
	{ 0 },
};
