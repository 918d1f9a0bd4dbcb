#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bf16 GEMM 8192^3 through cuBLASLt (torch.matmul): TFLOP/s, best of 5
timed rounds of 20 GEMMs each, timed with CUDA events."""
import torch

n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(5):
    torch.matmul(a, b, out=out)
torch.cuda.synchronize()
best = 0.0
for _ in range(5):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        torch.matmul(a, b, out=out)
    end.record()
    end.synchronize()
    best = max(best, 20 * 2 * n**3 / (start.elapsed_time(end) / 1e3) / 1e12)
print(f"BENCH bf16_gemm_tflops {best:.3f} TFLOP/s")
