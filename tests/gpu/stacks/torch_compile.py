#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""torch.compile (Inductor, Triton kernels) of a small MLP block, in the
default mode and, with "max-autotune", with autotuned GEMMs: the compiled
results must match eager."""
import sys

import stack

torch = stack.need("torch")
c = stack.Checks()
mode = sys.argv[1] if len(sys.argv) > 1 else "default"
torch.manual_seed(5)
torch.backends.cuda.matmul.allow_tf32 = False


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(256)
        self.up = torch.nn.Linear(256, 1024)
        self.down = torch.nn.Linear(1024, 256)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


net = Block().cuda()
x = torch.randn(512, 256, device="cuda")
eager = net(x)
fn = torch.compile(net, mode=None if mode == "default" else mode)
for _ in range(3):
    got = fn(x)
torch.cuda.synchronize()
err = (got - eager).abs().max().item()
print(f"compile mode={mode}")
c.true("compiled matches eager", err < 1e-3, f"max error {err}")
half = torch.compile(lambda a, b: torch.relu(a @ b) * 2, mode=None if mode == "default" else mode)
a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
ref = torch.relu(a.float() @ b.float()) * 2
rel = ((half(a, b).float() - ref).norm() / ref.norm()).item()
c.true("compiled fp16 gemm", rel < 5e-3, f"relative error {rel}")
c.done()
