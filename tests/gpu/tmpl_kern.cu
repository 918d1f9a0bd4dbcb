// SPDX-License-Identifier: MIT
/* The second translation unit: template kernels and their launchers. */
#include "tmpl.cuh"

template <typename T> __global__ void scale(T *p, T factor, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] *= factor;
}

template <typename T, int N> __global__ void window_sum(const T *in, T *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	T acc = 0;

	if (i >= n)
		return;
#pragma unroll
	for (int k = 0; k < N; k++)
		acc += i + k < n ? in[i + k] : T(0);
	out[i] = acc;
}

template <typename T> cudaError_t launch_scale(T *p, T factor, int n, cudaStream_t s)
{
	scale<T><<<(n + 127) / 128, 128, 0, s>>>(p, factor, n);
	return cudaGetLastError();
}

template <typename T, int N> cudaError_t launch_window_sum(const T *in, T *out, int n)
{
	/* The same template as tmpl_main.cu, instantiated here too. */
	add_const<T><<<(n + 127) / 128, 128>>>(const_cast<T *>(in), T(0), n);
	window_sum<T, N><<<(n + 127) / 128, 128>>>(in, out, n);
	return cudaGetLastError();
}

template cudaError_t launch_scale<float>(float *, float, int, cudaStream_t);
template cudaError_t launch_scale<double>(double *, double, int, cudaStream_t);
template cudaError_t launch_scale<int>(int *, int, int, cudaStream_t);
template cudaError_t launch_window_sum<int, 3>(const int *, int *, int);
template cudaError_t launch_window_sum<double, 5>(const double *, double *, int);
