#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch under the allocator PYTORCH_CUDA_ALLOC_CONF names: run it with
expandable_segments:True (the virtual memory API in the client) or
backend:cudaMallocAsync (stream-ordered allocation and pools). Tensors of many
sizes are made, freed, grown and reused across streams, with a small training
loop and a CUDA graph capture; results are checked."""
import os

import stack

torch = stack.need("torch")
c = stack.Checks()
conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
print("PYTORCH_CUDA_ALLOC_CONF:", conf or "(default)")
c.true("allocator backend", torch.cuda.get_allocator_backend() ==
       ("cudaMallocAsync" if "cudaMallocAsync" in conf else "native"),
       torch.cuda.get_allocator_backend())
torch.manual_seed(2)
dev = "cuda"

keep = []
total = 0
for i in range(200):
    n = (i * 7919) % 4096 + 1
    t = torch.full((n, 64), float(i), device=dev)
    total += n * 64 * i
    if i % 3 == 0:
        keep.append(t)
got = sum(float(t.sum().item()) for t in keep)
want = sum(float(i) * ((i * 7919) % 4096 + 1) * 64 for i in range(0, 200, 3))
c.close("many sizes kept", got, want, 1e-6)

big = [torch.ones(64 << 20, device=dev, dtype=torch.uint8) for _ in range(8)]  # 8 x 64 MiB
c.true("big blocks", all(int(b.sum().item()) == 64 << 20 for b in big))
del big
torch.cuda.empty_cache()

s = torch.cuda.Stream()
a = torch.randn(1 << 20, device=dev)
a_sum = a.double().sum().item()
with torch.cuda.stream(s):
    b = a * 2
    a.record_stream(s)
s.synchronize()
del a
z = torch.zeros(1 << 20, device=dev)
c.close("cross-stream", b.double().sum().item(), 2 * a_sum, 1e-9)
c.true("fresh zeros", float(z.abs().sum().item()) == 0.0)

net = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(1024, 128, device=dev)
y = torch.randint(0, 10, (1024,), device=dev)
first = None
for step in range(50):
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    first = first if first is not None else loss.item()
c.true("training loss falls", loss.item() < first, f"{first} -> {loss.item()}")

g = torch.cuda.CUDAGraph()
static_in = torch.randn(256, 128, device=dev)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(2):
        net(static_in)
torch.cuda.current_stream().wait_stream(side)
with torch.cuda.graph(g):
    static_out = net(static_in).relu() + 1
for i in range(3):
    static_in.copy_(torch.full((256, 128), float(i), device=dev))
    g.replay()
    ref = net(static_in).relu() + 1
    c.true(f"graph replay {i}", torch.allclose(static_out, ref, atol=1e-5))
c.true("allocator stats", torch.cuda.memory_allocated() > 0 and torch.cuda.memory_reserved() > 0,
       f"{torch.cuda.memory_allocated()} allocated, {torch.cuda.memory_reserved()} reserved")
c.done()
