/* SPDX-License-Identifier: MIT */
/* Templates shared by tmpl_main.cu and tmpl_kern.cu (two translation units). */
#ifndef TMPL_CUH
#define TMPL_CUH
#include <cuda_runtime.h>

template <typename T> __global__ void add_const(T *p, T v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] += v;
}

/* Defined and explicitly instantiated in tmpl_kern.cu only. */
template <typename T> cudaError_t launch_scale(T *p, T factor, int n, cudaStream_t s);
template <typename T, int N> cudaError_t launch_window_sum(const T *in, T *out, int n);

#endif
