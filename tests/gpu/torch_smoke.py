#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch smoke test: tensors on cuda, an elementwise op, a matmul, .cpu()
back. Prints rounded results (the same text natively and through vgpu);
exit 0 pass, 1 fail, 77 when torch or a GPU is missing."""
import sys

try:
    import torch
except Exception as e:  # noqa: BLE001
    print(f"torch_smoke: no torch ({e})")
    sys.exit(77)

if not torch.cuda.is_available():
    print("torch_smoke: torch.cuda.is_available() is False")
    sys.exit(1)

torch.manual_seed(1234)
dev = torch.device("cuda")
print("devices:", torch.cuda.device_count())
print("capability:", torch.cuda.get_device_capability(0))

ok = True
a_cpu = torch.arange(0, 1024, dtype=torch.float32).reshape(32, 32) / 100.0
b_cpu = torch.linspace(-1.0, 1.0, 1024, dtype=torch.float32).reshape(32, 32)
a = a_cpu.to(dev)
b = b_cpu.to(dev)

# elementwise
c = torch.sin(a) * b + 2.0
c_ref = torch.sin(a_cpu) * b_cpu + 2.0
err = (c.cpu() - c_ref).abs().max().item()
print("elementwise sum: %.3f" % c.sum().item())
ok &= err < 1e-4

# matmul (no TF32: exact enough to compare)
torch.backends.cuda.matmul.allow_tf32 = False
m = a @ b
m_ref = a_cpu.double() @ b_cpu.double()
err = (m.cpu().double() - m_ref).abs().max().item()
print("matmul sum: %.2f" % m.sum().item())
ok &= err < 1e-3

# a larger random matmul, a reduction, an in-place op, a copy back
x = torch.randn(512, 256, device=dev)
y = torch.randn(256, 128, device=dev)
z = (x @ y).relu_()
z_ref = (x.cpu().double() @ y.cpu().double()).relu()
err = (z.cpu().double() - z_ref).abs().max().item()
print("random matmul within tolerance:", err < 1e-2)
ok &= err < 1e-2
print("mean of relu(x @ y): %.2f" % z.mean().item())

# int tensors, indexing, a cumsum
i = torch.arange(100000, device=dev, dtype=torch.int64)
print("int sum:", int(i.sum().item()), "cumsum[-1]:", int(i.cumsum(0)[-1].item()))
print("every 7th:", i[::7][:5].cpu().tolist())

# a stream and an event
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    w = torch.ones(1 << 20, device=dev) * 3
e = torch.cuda.Event()
e.record(s)
e.synchronize()
print("stream result:", int(w.sum().item()))
torch.cuda.synchronize()

print("torch_smoke:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
