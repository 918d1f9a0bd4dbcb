#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""torch.distributed with the NCCL backend on one rank: an all-reduce, a
broadcast, and DistributedDataParallel training steps."""
import os
import socket

import stack

torch = stack.need("torch")
import torch.distributed as dist  # noqa: E402

c = stack.Checks()
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", str(port))
dist.init_process_group("nccl", rank=0, world_size=1)
torch.cuda.set_device(0)
t = torch.arange(1024, dtype=torch.float32, device="cuda")
dist.all_reduce(t)
c.true("all_reduce", float(t.sum().item()) == 1023 * 1024 / 2)
b = torch.full((16,), 5.0, device="cuda")
dist.broadcast(b, src=0)
c.true("broadcast", float(b.sum().item()) == 80.0)

torch.manual_seed(9)
net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4)).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(net, device_ids=[0])
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
x = torch.randn(256, 64, device="cuda")
y = torch.randint(0, 4, (256,), device="cuda")
losses = []
for _ in range(20):
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
c.true("ddp loss falls", losses[-1] < losses[0], f"{losses[0]} -> {losses[-1]}")
dist.destroy_process_group()
print("backend: nccl, world size 1")
c.done()
