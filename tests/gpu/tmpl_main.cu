// SPDX-License-Identifier: MIT
/*
 * Templates across two translation units: kernels instantiated in
 * tmpl_kern.cu and launched through its launchers, plus add_const<T>,
 * instantiated in both units (two modules carry the same kernel name).
 */
#include "../e2e/e2e.h"
#include "tmpl.cuh"

template <typename T> static int run(const char *name, T factor, T add)
{
	const int n = 1000;
	T h[1000], *d;
	int bad = 0;
	double sum = 0;

	for (int i = 0; i < n; i++)
		h[i] = (T)(i % 17);
	CHECK(cudaMalloc(&d, sizeof(h)));
	CHECK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
	CHECK(launch_scale<T>(d, factor, n, 0));
	add_const<T><<<(n + 127) / 128, 128>>>(d, add, n);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		bad += h[i] != (T)(i % 17) * factor + add;
		sum += (double)h[i];
	}
	EXPECT(bad == 0, "%s: %d wrong", name, bad);
	printf("tmpl %s: sum %.2f\n", name, sum);
	CHECK(cudaFree(d));
	return bad;
}

template <typename T, int N> static void window(const char *name)
{
	const int n = 777;
	T in[777], out[777], *din, *dout;
	int bad = 0;

	for (int i = 0; i < n; i++)
		in[i] = (T)(i % 10);
	CHECK(cudaMalloc(&din, sizeof(in)));
	CHECK(cudaMalloc(&dout, sizeof(out)));
	CHECK(cudaMemcpy(din, in, sizeof(in), cudaMemcpyHostToDevice));
	CHECK((launch_window_sum<T, N>(din, dout, n)));
	CHECK(cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		T want = 0;

		for (int k = 0; k < N && i + k < n; k++)
			want += in[i + k];
		bad += out[i] != want;
	}
	EXPECT(bad == 0, "window %s: %d wrong", name, bad);
	printf("tmpl window %s: %s\n", name, bad ? "wrong" : "ok");
	CHECK(cudaFree(din));
	CHECK(cudaFree(dout));
}

int main(void)
{
	run<float>("float", 1.5f, 0.25f);
	run<double>("double", -2.0, 100.0);
	run<int>("int", 3, -7);
	window<int, 3>("int,3");
	window<double, 5>("double,5");
	return e2e_finish("tmpl");
}
