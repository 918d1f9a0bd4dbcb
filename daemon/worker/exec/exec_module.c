// SPDX-License-Identifier: MIT
/* Module images, kernels, globals and launches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_image.h"
#include "log.h"
#include "retained.h"
#include "worker.h"

#define MAX_IMAGE (4ull << 30)	/* larger than any fatbin NVIDIA ships */

/*
 * The driver reads an image as far as its own headers say: they must say
 * no further than the bytes received. A fatbinC wrapper holds a pointer
 * into the client; the client sends the fatbin it points to instead.
 */
static CUresult image_within(struct worker *w, const uint8_t *img, uint64_t size)
{
	size_t extent;
	int ret = vgpu_image_check(img, size, &extent);

	if (ret == -EPERM)
		vlog_warn("session %llu: module image refused: a fatbinC wrapper (it points into "
			  "the client; the client sends the fatbin itself)",
			  (unsigned long long)w->session_id);
	else if (ret)
		vlog_warn("session %llu: module image refused: its headers reach past the %llu "
			  "bytes received, or PTX text has no NUL",
			  (unsigned long long)w->session_id, (unsigned long long)size);
	return ret ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
}

static enum op_status op_module_load(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	uint64_t size = s->arg[1];
	struct retained_image *kept;
	CUmodule mod;
	CUresult rc = CUDA_SUCCESS;
	uint8_t *img;
	int ret;

	/* The image arrives in staging chunks whatever we decide: take it all,
	 * then refuse, so the client is never left filling chunks. */
	img = size && size <= MAX_IMAGE ? malloc(size + 1) : NULL;
	if (!img) {
		call->cqe->result = size && size <= MAX_IMAGE ? CUDA_ERROR_OUT_OF_MEMORY
							      : CUDA_ERROR_INVALID_IMAGE;
		return OP_DONE;	/* the client sees the answer and stops sending */
	}
	ret = bulk_recv_buffer(w, img, size);
	if (ret) {
		free(img);
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	img[size] = 0;	/* PTX text must end; a binary image ignores it */
	if (obj_get(&w->modules, s->arg[0]))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc)
		rc = image_within(w, img, size);
	if (!rc)
		rc = w->B.cuModuleLoadData(&mod, img);
	/* The image stays with the module: a checkpoint writes it. */
	kept = rc ? NULL : malloc(sizeof(*kept) + size);
	if (kept) {
		kept->len = size;
		memcpy(kept->bytes, img, size);
	} else if (!rc) {
		w->B.cuModuleUnload(mod);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	free(img);
	if (!rc && obj_insert(&w->modules, s->arg[0], mod, s->ctx, kept)) {
		w->B.cuModuleUnload(mod);
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	if (rc)
		vlog_debug("module %llu: loading %llu bytes: error %d", (unsigned long long)s->arg[0],
			   (unsigned long long)size, rc);
	call->cqe->result = rc;
	return OP_DONE;
}

int worker_global_contains(struct worker *w, uint64_t p, uint64_t len)
{
	for (size_t i = 0; i < w->nglobals; i++) {
		const struct global_range *g = &w->globals[i];

		if (p >= g->addr && len <= g->size && p - g->addr <= g->size - len)
			return 1;
	}
	return 0;
}

static void remember_global(struct worker *w, uint64_t addr, uint64_t size, uint32_t module,
			    const char *name)
{
	struct global_range *g;
	char *kept;

	if (worker_global_contains(w, addr, size))
		return;
	kept = strdup(name);	/* a restore looks it up again by name */
	if (!kept)
		return;
	if (w->nglobals == w->cap_globals) {
		size_t cap = w->cap_globals ? 2 * w->cap_globals : 32;

		g = realloc(w->globals, cap * sizeof(*g));
		if (!g) {
			free(kept);
			return;	/* copies to it will be refused, not wild */
		}
		w->globals = g;
		w->cap_globals = cap;
	}
	w->globals[w->nglobals++] = (struct global_range){ addr, size, module, kept };
}

void worker_remember_global(struct worker *w, uint64_t addr, uint64_t size, uint32_t module,
			    const char *name)
{
	remember_global(w, addr, size, module, name);
}

static void forget_globals(struct worker *w, uint32_t module)
{
	size_t j = 0;

	for (size_t i = 0; i < w->nglobals; i++)
		if (w->globals[i].module != module)
			w->globals[j++] = w->globals[i];
		else
			free(w->globals[i].name);
	w->nglobals = j;
}

static enum op_status op_module_unload(struct worker *w, struct op_call *call)
{
	struct obj_entry *e = obj_get(&w->modules, call->sqe->arg[0]);
	struct obj_entry *f;
	uint32_t i;

	if (!e) {
		call->cqe->result = CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	/* Functions and globals die with their module. */
	forget_globals(w, call->sqe->arg[0]);
	obj_for_each(&w->funcs, i, f)
		if (f->aux == call->sqe->arg[0])
			obj_remove(&w->funcs, i);
	call->cqe->result = w->B.cuModuleUnload(e->obj);
	obj_remove(&w->modules, call->sqe->arg[0]);
	return OP_DONE;
}

/* A NUL-terminated name of sane length out of the payload. */
static const char *payload_name(const struct op_call *call)
{
	const char *p = call->payload;

	if (!call->len || call->len > VGPU_MAX_NAME || p[call->len - 1])
		return NULL;
	return p;
}

static CUresult describe(struct worker *w, CUfunction f, struct vgpu_func_info *fi,
			 size_t room)
{
	uint32_t n = 0, end = 0;

	for (int a = 0; a < VGPU_FUNC_ATTRS; a++)
		if (w->B.cuFuncGetAttribute(&fi->attr[a], (CUfunction_attribute)a, f))
			fi->attr[a] = 0;
	for (;;) {
		size_t off, size;
		CUresult rc = w->B.cuFuncGetParamInfo(f, n, &off, &size);

		if (rc == CUDA_ERROR_INVALID_VALUE)
			break;	/* past the last parameter */
		if (rc)
			return rc;
		if (n >= VGPU_MAX_KERNEL_PARAMS ||
		    sizeof(*fi) + (n + 1) * sizeof(fi->param[0]) > room)
			return CUDA_ERROR_NOT_SUPPORTED;
		fi->param[n].offset = off;
		fi->param[n].size = size;
		if (off + size > end)
			end = off + size;
		n++;
	}
	fi->param_count = n;
	fi->param_bytes = end;
	return CUDA_SUCCESS;
}

static enum op_status op_get_function(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	struct obj_entry *m = obj_get(&w->modules, s->arg[0]);
	const char *name = payload_name(call);
	struct vgpu_func_info *fi = (struct vgpu_func_info *)call->reply;
	char *kept = NULL;
	CUfunction f;
	CUresult rc;

	if (!m || !name) {
		call->cqe->result = m ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	rc = w->B.cuModuleGetFunction(&f, m->obj, name);
	if (!rc)
		rc = describe(w, f, fi, w->ring.reply_slot_size);
	if (!rc && !(kept = strdup(name)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	/* The name stays with the function: a checkpoint writes it. */
	if (!rc && obj_insert(&w->funcs, s->arg[1], f, s->arg[0], kept))
		rc = CUDA_ERROR_INVALID_VALUE;
	call->cqe->result = rc;
	call->cqe->val[2] = rc ? 0 : sizeof(*fi) + fi->param_count * sizeof(fi->param[0]);
	return OP_DONE;
}

static enum op_status op_get_global(struct worker *w, struct op_call *call)
{
	struct obj_entry *m = obj_get(&w->modules, call->sqe->arg[0]);
	const char *name = payload_name(call);
	CUdeviceptr p = 0;
	size_t size = 0;

	if (!m || !name) {
		call->cqe->result = m ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	call->cqe->result = w->B.cuModuleGetGlobal_v2(&p, &size, m->obj, name);
	if (!call->cqe->result)
		remember_global(w, p, size, call->sqe->arg[0], name);
	call->cqe->val[0] = p;
	call->cqe->val[1] = size;
	return OP_DONE;
}

static CUfunction func_of(struct worker *w, uint64_t id)
{
	struct obj_entry *e = obj_get(&w->funcs, id);

	return e ? e->obj : NULL;
}

static enum op_status op_func_set_attr(struct worker *w, struct op_call *call)
{
	CUfunction f = func_of(w, call->sqe->arg[0]);

	call->cqe->result = f ? w->B.cuFuncSetAttribute(f, (CUfunction_attribute)call->sqe->arg[1],
							(int)call->sqe->arg[2])
			      : CUDA_ERROR_INVALID_HANDLE;
	return OP_DONE;
}

static enum op_status op_func_cache(struct worker *w, struct op_call *call)
{
	CUfunction f = func_of(w, call->sqe->arg[0]);

	call->cqe->result = f ? w->B.cuFuncSetCacheConfig(f, (CUfunc_cache)call->sqe->arg[1])
			      : CUDA_ERROR_INVALID_HANDLE;
	return OP_DONE;
}

CUlaunchConfig worker_launch_config(const struct vgpu_sqe *s)
{
	return (CUlaunchConfig){
		.gridDimX = VGPU_DIM_X(s->arg[1]), .gridDimY = VGPU_DIM_Y(s->arg[1]),
		.gridDimZ = VGPU_DIM_Z(s->arg[1]), .blockDimX = VGPU_DIM_X(s->arg[2]),
		.blockDimY = VGPU_DIM_Y(s->arg[2]), .blockDimZ = VGPU_DIM_Z(s->arg[2]),
		.sharedMemBytes = (unsigned int)s->arg[3],
	};
}

static enum op_status op_launch(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUfunction f = func_of(w, s->arg[0]);
	struct vgpu_launch l;
	CUlaunchAttribute attr[3];
	CUlaunchConfig cfg = { 0 };
	size_t pbytes;
	void *extra[5];
	CUresult rc;
	CUstream st = worker_stream(w, s, &rc);

	if (rc || !f) {
		call->cqe->result = rc ? rc : CUDA_ERROR_INVALID_HANDLE;
		return OP_DONE;
	}
	if (call->len < sizeof(l)) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	memcpy(&l, call->payload, sizeof(l));
	if (l.param_bytes != call->len - sizeof(l) || l.param_bytes > VGPU_MAX_PARAM_BYTES ||
	    l.reserved[0] || l.reserved[1] || (l.flags & ~VGPU_LAUNCH_COOPERATIVE)) {
		call->cqe->result = CUDA_ERROR_INVALID_VALUE;
		return OP_DONE;
	}
	cfg = worker_launch_config(s);
	cfg.hStream = st;
	cfg.attrs = attr;
	if (l.flags & VGPU_LAUNCH_COOPERATIVE) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[cfg.numAttrs++].value.cooperative = 1;
	}
	if (l.cluster_x) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[cfg.numAttrs].value.clusterDim.x = l.cluster_x;
		attr[cfg.numAttrs].value.clusterDim.y = l.cluster_y;
		attr[cfg.numAttrs++].value.clusterDim.z = l.cluster_z;
	}
	if (l.priority) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		attr[cfg.numAttrs++].value.priority = l.priority;
	}
	pbytes = l.param_bytes;
	extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	extra[1] = (uint8_t *)call->payload + sizeof(l);
	extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
	extra[3] = &pbytes;
	extra[4] = CU_LAUNCH_PARAM_END;
	call->cqe->result = w->B.cuLaunchKernelEx(&cfg, f, NULL, extra);
	return OP_DONE;
}

static enum op_status op_occupancy(struct worker *w, struct op_call *call)
{
	CUfunction f = func_of(w, call->sqe->arg[0]);
	int n = 0;

	call->cqe->result = f ? w->B.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
					&n, f, (int)call->sqe->arg[1], (size_t)call->sqe->arg[2],
					(unsigned int)call->sqe->arg[3])
			      : CUDA_ERROR_INVALID_HANDLE;
	call->cqe->val[0] = n;
	return OP_DONE;
}

static enum op_status op_occupancy_clusters(struct worker *w, struct op_call *call)
{
	const struct vgpu_sqe *s = call->sqe;
	CUfunction f = func_of(w, s->arg[0]);
	CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
	CUlaunchConfig cfg = worker_launch_config(s);
	int n = 0;

	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	attr.value.clusterDim.x = VGPU_DIM_X(s->arg[4]);
	attr.value.clusterDim.y = VGPU_DIM_Y(s->arg[4]);
	attr.value.clusterDim.z = VGPU_DIM_Z(s->arg[4]);
	if (!attr.value.clusterDim.x)
		cfg.numAttrs = 0;	/* the kernel's compile-time cluster, if any */
	call->cqe->result = f ? w->B.cuOccupancyMaxActiveClusters(&n, f, &cfg)
			      : CUDA_ERROR_INVALID_HANDLE;
	call->cqe->val[0] = n;
	return OP_DONE;
}

const struct op_desc exec_module_ops[] = {
	OP(MODULE_LOAD, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_module_load),
	OP(MODULE_UNLOAD, OPF_NEEDS_CTX, op_module_unload),
	OP(MODULE_GET_FUNCTION, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_get_function),
	OP(MODULE_GET_GLOBAL, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_get_global),
	OP(FUNC_SET_ATTRIBUTE, OPF_NEEDS_CTX, op_func_set_attr),
	OP(FUNC_SET_CACHE_CONFIG, OPF_NEEDS_CTX, op_func_cache),
	OP(LAUNCH, OPF_NEEDS_CTX, op_launch),
	OP(OCCUPANCY, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_occupancy),
	OP(OCCUPANCY_CLUSTERS, OPF_NEEDS_CTX | OPF_SYNC_ONLY, op_occupancy_clusters),
	{ 0 },
};
