#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuFFT through CuPy: a 1D (2^20 complex) and a 2D (1024x1024 complex) plan
made and executed, repeated 200 times with the plan cache off (so each round
makes its plan), and executed 1000 times with one plan; milliseconds per
round, medians."""
import statistics
import time

import cupy as cp
from cupyx.scipy import fft as cfft

cp.fft.config.get_plan_cache().set_size(0)
x1 = cp.random.standard_normal(1 << 20).astype(cp.complex64)
x2 = cp.random.standard_normal((1024, 1024)).astype(cp.complex64)


def timed(fn, n):
    fn()
    cp.cuda.Device().synchronize()
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


print(f"BENCH cufft_plan_exec_1d_ms {timed(lambda: cp.fft.fft(x1), 200):.4f} ms")
print(f"BENCH cufft_plan_exec_2d_ms {timed(lambda: cp.fft.fft2(x2), 200):.4f} ms")
plan = cfft.get_fft_plan(x1)
with plan:
    print(f"BENCH cufft_exec_1d_ms {timed(lambda: cp.fft.fft(x1), 1000):.4f} ms")
