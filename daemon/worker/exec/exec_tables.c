// SPDX-License-Identifier: MIT
/*
 * What the client's hidden tables (runtime/dark_*.c) need from the driver
 * behind the worker: a module's function names (cuModuleEnumerateFunctions
 * and ToolsModule's function iterator), the largest cluster a kernel can
 * use, the GPU's TPC-to-vGPC mapping (ClusterPrototype, which cuBLASLt asks
 * for before its GEMMs), and what the driver's own cuGetExportTable answers
 * for a table id, so a test can tell when a driver release changed a table.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "worker.h"

/* More functions than any module NVIDIA ships; bounds the worker's array. */
#define MAX_MODULE_FUNCTIONS (1u << 20)

/* The largest table a size word may claim (the largest known is 0x318). */
#define MAX_TABLE_BYTES 0x10000

/* The largest TPC mapping copied back (bytes per array). */
#define MAX_TPCS 256

static enum op_status op_module_function_names(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *m = obj_get(&w->modules, s->arg[0]);
	uint32_t room = w->ring.reply_slot_size, used = 0, given = 0;
	unsigned int n = 0;
	CUfunction *fs = NULL;
	CUresult rc;

	if (!m) {
		call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	rc = w->B.cuModuleGetFunctionCount(&n, m->obj);
	if (!rc && n > MAX_MODULE_FUNCTIONS)
		rc = CUDA_ERROR_NOT_SUPPORTED;
	if (!rc && s->arg[1] > n)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && n) {
		fs = calloc(n, sizeof(*fs));
		rc = fs ? w->B.cuModuleEnumerateFunctions(fs, n, m->obj) : CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint64_t i = s->arg[1]; !rc && i < n; i++) {
		const char *name = NULL;
		size_t len;

		rc = w->B.cuFuncGetName(&name, fs[i]);
		if (rc)
			break;
		len = name ? strlen(name) + 1 : 0;
		if (!len || len > VGPU_MAX_NAME) {
			rc = CUDA_ERROR_NOT_SUPPORTED;	/* the client could not look it up */
			break;
		}
		if (len > room - used)
			break;	/* the client asks again from here */
		memcpy(call->reply + used, name, len);
		used += (uint32_t)len;
		given++;
	}
	free(fs);
	call->cqe->result = rc;
	call->cqe->val[0] = rc ? 0 : n;
	call->cqe->val[1] = rc ? 0 : given;
	call->cqe->val[2] = rc ? 0 : used;
	return OP_DONE;
}

static enum op_status op_driver_export_table(struct worker *w, struct op_call *call)
{
	const uint64_t *table = NULL;
	CUuuid id;
	CUresult rc;

	if (call->len != sizeof(id.bytes)) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	memcpy(id.bytes, call->payload, sizeof(id.bytes));
	rc = w->B.cuGetExportTable((const void **)&table, &id);
	if (!rc && !table)
		rc = CUDA_ERROR_INVALID_VALUE;
	call->cqe->result = rc;
	/* Slot 0 is the table's size in bytes for every table but context local
	 * storage, whose slot 0 is a function: a driver address is never sent
	 * to a tenant, only that there is no size word (val1). */
	if (!rc && (uintptr_t)table[0] <= MAX_TABLE_BYTES && !((uintptr_t)table[0] % 8))
		call->cqe->val[0] = (uintptr_t)table[0];
	else if (!rc)
		call->cqe->val[1] = 1;
	return OP_DONE;
}

static enum op_status op_occupancy_cluster_size(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *e = obj_get(&w->funcs, s->arg[0]);
	CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE };
	CUlaunchConfig cfg = worker_launch_config(s);
	int n = 0;

	if (s->arg[4] > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	attr.value.clusterSchedulingPolicyPreference = (CUclusterSchedulingPolicy)s->arg[4];
	cfg.attrs = &attr;
	cfg.numAttrs = s->arg[4] ? 1 : 0;	/* none: the default policy */
	call->cqe->result = e ? w->B.cuOccupancyMaxPotentialClusterSize(&n, e->obj, &cfg)
			      : CUDA_ERROR_INVALID_HANDLE;
	call->cqe->val[0] = n;
	return OP_DONE;
}

/* ClusterPrototype, raw id 1734dc26-800d-4745-8726-c0f1e7dd8bca. */
static const CUuuid cluster_prototype_id = { .bytes = {
	0x17, 0x34, (char)0xdc, 0x26, (char)0x80, 0x0d, 0x47, 0x45,
	(char)0x87, 0x26, (char)0xc0, (char)0xf1, (char)0xe7, (char)0xdd, (char)0x8b, (char)0xca } };

#define CLUSTER_SLOT_TPC_MAPPING 4
#define CLUSTER_SLOT_FREE_TPC_MAPPING 13

typedef CUresult (*tpc_mapping_fn)(unsigned char **vgpc, unsigned char **mtpc);
typedef CUresult (*tpc_free_fn)(unsigned char *vgpc, unsigned char *mtpc);

/*
 * The driver's ClusterPrototype[4] hands out two arrays it allocated, one
 * byte per TPC (vGPC id, index within it), and [13] frees them; the caller
 * knows the TPC count. Hopper and Blackwell have two SMs per TPC, so the
 * count is half the SM count: that many bytes are copied, never more than
 * MAX_TPCS.
 */
static enum op_status op_tpc_mapping(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	const void *const *table = NULL;
	unsigned char *vgpc = NULL, *mtpc = NULL;
	int sms = 0;
	size_t n;
	CUresult rc;

	if (s->arg[0] >= (uint64_t)w->device_count) {
		call->cqe->result = CUDA_ERROR_INVALID_DEVICE;
		return OP_DONE;
	}
	rc = w->B.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
				       w->devices[s->arg[0]]);
	if (!rc)
		rc = w->B.cuGetExportTable((const void **)&table, &cluster_prototype_id);
	if (rc == CUDA_ERROR_NOT_FOUND || rc == CUDA_ERROR_INVALID_VALUE || (!rc && !table))
		rc = CUDA_ERROR_NOT_SUPPORTED;	/* no such table behind us */
	if (!rc && (uintptr_t)table[0] < (CLUSTER_SLOT_FREE_TPC_MAPPING + 1) * sizeof(void *))
		rc = CUDA_ERROR_NOT_SUPPORTED;
	n = sms > 0 ? ((size_t)sms + 1) / 2 : 0;
	if (!rc && (!n || 2 * n > w->ring.reply_slot_size || n > MAX_TPCS))
		rc = CUDA_ERROR_NOT_SUPPORTED;
	if (!rc)
		rc = ((tpc_mapping_fn)(uintptr_t)table[CLUSTER_SLOT_TPC_MAPPING])(&vgpc, &mtpc);
	if (!rc && (!vgpc || !mtpc))
		rc = CUDA_ERROR_UNKNOWN;
	if (!rc) {
		memcpy(call->reply, vgpc, n);
		memcpy(call->reply + n, mtpc, n);
	}
	if (vgpc || mtpc)
		((tpc_free_fn)(uintptr_t)table[CLUSTER_SLOT_FREE_TPC_MAPPING])(vgpc, mtpc);
	call->cqe->result = rc;
	call->cqe->val[0] = rc ? 0 : n;
	call->cqe->val[2] = rc ? 0 : 2 * n;
	return OP_DONE;
}

const struct op_desc exec_tables_ops[] = {
	OP(MODULE_FUNCTION_NAMES, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_module_function_names),
	OP(DRIVER_EXPORT_TABLE, OPF_SYNC_ONLY, op_driver_export_table),
	OP(OCCUPANCY_CLUSTER_SIZE, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_occupancy_cluster_size),
	OP(TPC_MAPPING, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_tpc_mapping),
	{ 0 },
};
