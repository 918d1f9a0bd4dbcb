#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CuPy and the CUDA libraries it drives: cuFFT (1D, 2D, real), cuBLAS,
cuRAND, cuSOLVER, a CUB-backed reduction and sort, an NVRTC RawKernel and an
ElementwiseKernel. Kernels are compiled afresh (an empty kernel cache), so
NVRTC runs every time."""
import os
import tempfile

os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cupy-cache-")
os.environ.setdefault("CUPY_ACCELERATORS", "cub")
import stack

cp = stack.need("cupy")
np = stack.need("numpy")
c = stack.Checks()

x = np.arange(256, dtype=np.complex64) * (1 + 0.5j)
got = cp.asnumpy(cp.fft.fft(cp.asarray(x)))
c.true("cufft 1d", np.allclose(got, np.fft.fft(x), rtol=1e-4, atol=1e-2))
print("fft[1]:", np.round(got[1], 2))
img = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float32)
got = cp.asnumpy(cp.fft.fft2(cp.asarray(img)))
c.true("cufft 2d", np.allclose(got, np.fft.fft2(img), rtol=1e-3, atol=1e-2))
got = cp.asnumpy(cp.fft.irfft(cp.fft.rfft(cp.asarray(img[0]))))
c.true("cufft real round trip", np.allclose(got, img[0], atol=1e-4))

a = np.random.default_rng(2).standard_normal((300, 200)).astype(np.float32)
b = np.random.default_rng(3).standard_normal((200, 100)).astype(np.float32)
got = cp.asnumpy(cp.asarray(a) @ cp.asarray(b))
c.true("cublas gemm", np.allclose(got, a @ b, rtol=1e-3, atol=1e-3))

rs = cp.random.RandomState(seed=42)
r = rs.standard_normal(1 << 20, dtype=cp.float32)
print("curand first:", [round(float(v), 4) for v in cp.asnumpy(r[:3])])
c.true("curand moments", abs(float(r.mean())) < 0.01 and abs(float(r.std()) - 1) < 0.01)

m = np.random.default_rng(4).standard_normal((64, 64))
spd = m @ m.T + 64 * np.eye(64)
rhs = np.arange(64.0)
got = cp.asnumpy(cp.linalg.solve(cp.asarray(spd), cp.asarray(rhs)))
c.true("cusolver solve", np.allclose(got, np.linalg.solve(spd, rhs)))
w = cp.asnumpy(cp.linalg.eigh(cp.asarray(spd))[0])
c.true("cusolver eigh", np.allclose(w, np.linalg.eigvalsh(spd)))

v = cp.asarray(np.random.default_rng(5).integers(0, 1 << 30, 1 << 20))
s = cp.sort(v)
c.true("sort", bool((s[1:] >= s[:-1]).all()) and int(s.sum()) == int(v.sum()))
print("sum via cub:", int(v.sum()) % 1000003)

saxpy = cp.RawKernel(r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}''', "saxpy")
n = 100000
xs = cp.arange(n, dtype=cp.float32)
ys = cp.ones(n, dtype=cp.float32)
saxpy(((n + 255) // 256,), (256,), (cp.float32(3.0), xs, ys, cp.int32(n)))
c.true("nvrtc raw kernel", float(ys[-1]) == 3.0 * (n - 1) + 1)
sq = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * x + y", "sqplus")
c.true("elementwise kernel", float(sq(xs, ys)[10]) == 100.0 + float(ys[10]))
print("saxpy[12345]:", float(ys[12345]))
c.done()
