#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Half precision in PyTorch: fp16 and bf16 matmul, bmm and linear (cuBLASLt),
scaled dot-product attention, and cuDNN fp16/bf16 convolutions. Each result
is checked against an fp32/fp64 reference and printed rounded."""
import stack

torch = stack.need("torch")
c = stack.Checks()
if not torch.cuda.is_available():
    print("torch.cuda.is_available() is False")
    raise SystemExit(1)
torch.manual_seed(7)
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

for dt in (torch.float16, torch.bfloat16):
    name = str(dt).split(".")[1]
    tol = 2e-2 if dt == torch.bfloat16 else 5e-3
    a = torch.randn(1024, 1024, device=dev)
    b = torch.randn(1024, 1024, device=dev)
    ref = (a.double() @ b.double())
    m = (a.to(dt) @ b.to(dt)).double()
    rel = ((m - ref).norm() / ref.norm()).item()
    print(f"{name} matmul 1024^3 sum/1e3: {stack.sig(m.sum().item() / 1e3, 3)}")
    c.true(f"{name} matmul", rel < tol, f"relative error {rel}")

    x = torch.randn(16, 128, 64, device=dev)
    y = torch.randn(16, 64, 96, device=dev)
    ref = torch.bmm(x.double(), y.double())
    got = torch.bmm(x.to(dt), y.to(dt)).double()
    rel = ((got - ref).norm() / ref.norm()).item()
    c.true(f"{name} bmm", rel < tol, f"relative error {rel}")

    lin = torch.nn.Linear(512, 256).to(dev)
    inp = torch.randn(64, 512, device=dev)
    ref = lin(inp).double()
    got = lin.to(dt)(inp.to(dt)).double()
    rel = ((got - ref).norm() / ref.norm()).item()
    c.true(f"{name} linear", rel < tol, f"relative error {rel}")

    q = torch.randn(4, 8, 256, 64, device=dev)
    k = torch.randn(4, 8, 256, 64, device=dev)
    v = torch.randn(4, 8, 256, 64, device=dev)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                           is_causal=True)
    got = torch.nn.functional.scaled_dot_product_attention(q.to(dt), k.to(dt), v.to(dt),
                                                           is_causal=True).double()
    rel = ((got - ref).norm() / ref.norm()).item()
    c.true(f"{name} sdpa causal", rel < 2 * tol, f"relative error {rel}")

    conv = torch.nn.Conv2d(16, 32, 3, padding=1).to(dev)
    img = torch.randn(8, 16, 64, 64, device=dev)
    ref = conv.double()(img.double())
    got = conv.to(dt)(img.to(dt)).double()
    rel = ((got - ref).norm() / ref.norm()).item()
    c.true(f"{name} cudnn conv2d", rel < tol, f"relative error {rel}")
    torch.cuda.synchronize()

c.done()
