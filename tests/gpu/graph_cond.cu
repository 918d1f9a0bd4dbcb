// SPDX-License-Identifier: MIT
/*
 * Conditional graph nodes and memory nodes with kernels: a WHILE loop whose
 * body kernel counts down and clears the condition (cudaGraphSetConditional)
 * when it reaches 0; an IF with an ELSE body decided by a kernel from a flag
 * in device memory (launched with the flag set, then clear); a memory
 * allocation node whose buffer a kernel fills and another sums before the
 * free node gives it back. Each instance is launched twice; the results are
 * printed (the same natively and through vgpu).
 */
/* { type } leaves the rest of cudaGraphNodeParams zero, as meant. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "../e2e/e2e.h"

__global__ void countdown(int *counter, int *rounds, cudaGraphConditionalHandle h)
{
	(*rounds)++;
	if (--*counter <= 0)
		cudaGraphSetConditional(h, 0);
}

__global__ void decide(const int *flag, cudaGraphConditionalHandle h)
{
	cudaGraphSetConditional(h, *flag != 0);
}

__global__ void bump(int *p)
{
	(*p)++;
}

__global__ void fill(int *buf, int n, int base)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		buf[i] = base + i;
}

__global__ void total(const int *buf, int n, long long *out)
{
	long long s = 0;

	for (int i = 0; i < n; i++)
		s += buf[i];
	*out += s;
}

static cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t *dep, void *func,
				  void **args, int blocks, int threads)
{
	cudaGraphNodeParams p = { cudaGraphNodeTypeKernel };
	cudaGraphNode_t n;

	p.kernel.func = func;
	p.kernel.gridDim = dim3(blocks);
	p.kernel.blockDim = dim3(threads);
	p.kernel.kernelParams = args;
	CHECK(cudaGraphAddNode(&n, g, dep, NULL, dep ? 1 : 0, &p));
	return n;
}

/* A conditional node of @type, @size bodies, after @dep; its bodies. */
static cudaGraph_t *add_cond(cudaGraph_t g, const cudaGraphNode_t *dep,
			     cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type,
			     unsigned int size)
{
	cudaGraphNodeParams p = { cudaGraphNodeTypeConditional };
	cudaGraphNode_t n;

	p.conditional.handle = h;
	p.conditional.type = type;
	p.conditional.size = size;
	CHECK(cudaGraphAddNode(&n, g, dep, NULL, dep ? 1 : 0, &p));
	return p.conditional.phGraph_out;
}

static int get(const int *d)
{
	int v;

	CHECK(cudaMemcpy(&v, d, sizeof(v), cudaMemcpyDeviceToHost));
	return v;
}

static void put(int *d, int v)
{
	CHECK(cudaMemcpy(d, &v, sizeof(v), cudaMemcpyHostToDevice));
}

int main(void)
{
	cudaStream_t s;
	cudaGraph_t gw, gi, gm;
	cudaGraphExec_t ew, ei, em;
	cudaGraphConditionalHandle hw, hi;
	cudaGraphNode_t n, na, nf;
	int *d;			/* counter, rounds, flag, then, else */
	long long *sum, host_sum = 0;
	const int words = 1 << 16;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d, 5 * sizeof(int)));
	CHECK(cudaMalloc(&sum, sizeof(*sum)));
	CHECK(cudaMemset(d, 0, 5 * sizeof(int)));
	CHECK(cudaMemset(sum, 0, sizeof(*sum)));

	/* WHILE counter > 0 (the default 1 enters the loop). */
	int *counter = d, *rounds = d + 1;
	CHECK(cudaGraphCreate(&gw, 0));
	CHECK(cudaGraphConditionalHandleCreate(&hw, gw, 1, cudaGraphCondAssignDefault));
	cudaGraph_t *wb = add_cond(gw, NULL, hw, cudaGraphCondTypeWhile, 1);
	void *wargs[] = { &counter, &rounds, &hw };
	add_kernel(wb[0], NULL, (void *)countdown, wargs, 1, 1);
	CHECK(cudaGraphInstantiate(&ew, gw, 0));
	for (int k = 0; k < 2; k++) {
		put(counter, 5 + k);
		put(rounds, 0);
		CHECK(cudaGraphLaunch(ew, s));
		CHECK(cudaStreamSynchronize(s));
		printf("while: counter from %d: %d rounds, counter %d\n", 5 + k, get(rounds),
		       get(counter));
	}

	/* IF flag: then += 1, else += 1. */
	int *flag = d + 2, *then_n = d + 3, *else_n = d + 4;
	CHECK(cudaGraphCreate(&gi, 0));
	CHECK(cudaGraphConditionalHandleCreate(&hi, gi, 0, cudaGraphCondAssignDefault));
	void *dargs[] = { &flag, &hi };
	n = add_kernel(gi, NULL, (void *)decide, dargs, 1, 1);
	cudaGraph_t *ib = add_cond(gi, &n, hi, cudaGraphCondTypeIf, 2);
	void *targs[] = { &then_n }, *eargs[] = { &else_n };
	add_kernel(ib[0], NULL, (void *)bump, targs, 1, 1);
	add_kernel(ib[1], NULL, (void *)bump, eargs, 1, 1);
	CHECK(cudaGraphInstantiate(&ei, gi, 0));
	for (int f = 1; f >= 0; f--) {
		put(flag, f);
		CHECK(cudaGraphLaunch(ei, s));
		CHECK(cudaStreamSynchronize(s));
		printf("if: flag %d: then ran %d times, else %d times\n", f, get(then_n),
		       get(else_n));
	}

	/* alloc -> fill -> total -> free. */
	cudaMemAllocNodeParams ap = {};
	int *buf;
	int nw = words, base = 3;
	CHECK(cudaGraphCreate(&gm, 0));
	ap.poolProps.allocType = cudaMemAllocationTypePinned;
	ap.poolProps.location.type = cudaMemLocationTypeDevice;
	ap.poolProps.location.id = 0;
	ap.bytesize = words * sizeof(int);
	CHECK(cudaGraphAddMemAllocNode(&na, gm, NULL, 0, &ap));
	buf = (int *)ap.dptr;
	void *fargs[] = { &buf, &nw, &base }, *sargs[] = { &buf, &nw, &sum };
	n = add_kernel(gm, &na, (void *)fill, fargs, (words + 255) / 256, 256);
	n = add_kernel(gm, &n, (void *)total, sargs, 1, 1);
	CHECK(cudaGraphAddMemFreeNode(&nf, gm, &n, 1, buf));
	CHECK(cudaGraphInstantiate(&em, gm, 0));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaGraphLaunch(em, s));
		CHECK(cudaStreamSynchronize(s));
		CHECK(cudaMemcpy(&host_sum, sum, sizeof(host_sum), cudaMemcpyDeviceToHost));
		printf("memory nodes: launch %d: sum %lld\n", k + 1, host_sum);
	}
	CHECK(cudaDeviceGraphMemTrim(0));

	CHECK(cudaGraphExecDestroy(em));
	CHECK(cudaGraphExecDestroy(ei));
	CHECK(cudaGraphExecDestroy(ew));
	CHECK(cudaGraphDestroy(gm));
	CHECK(cudaGraphDestroy(gi));
	CHECK(cudaGraphDestroy(gw));
	CHECK(cudaFree(sum));
	CHECK(cudaFree(d));
	printf("graph_cond: done\n");
	return 0;
}
