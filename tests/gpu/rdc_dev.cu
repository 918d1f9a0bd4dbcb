// SPDX-License-Identifier: MIT
/* Relocatable device code: device functions and a global defined here,
 * used by kernels in rdc_main.cu (built with -rdc=true, device-linked). */
__device__ int rdc_calls;

__device__ float rdc_poly(float x)
{
	atomicAdd(&rdc_calls, 1);
	return 3.0f * x * x - 2.0f * x + 1.0f;
}

__device__ unsigned rdc_hash(unsigned x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}
