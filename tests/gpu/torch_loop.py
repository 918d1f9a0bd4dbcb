#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small PyTorch training loop for the checkpoint tests: an MLP fitted to
a fixed regression target with SGD, one step every 50 ms, printing "step I"
after each (the runner checkpoints and moves the session meanwhile), then
the rounded loss and weights. Deterministic: the same text natively and
through vgpu, moved or not.

    torch_loop.py STEPS

exit 0 when the loss went down, 1 otherwise, 77 when torch or a GPU is
missing."""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
try:
    import torch
except Exception as e:  # noqa: BLE001
    print(f"torch_loop: no torch ({e})")
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch_loop: torch.cuda.is_available() is False")
    sys.exit(1)

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
torch.manual_seed(7)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.use_deterministic_algorithms(True)
dev = torch.device("cuda")

x = torch.randn(1024, 64, device=dev)
y = torch.sin(x[:, :8].sum(dim=1, keepdim=True))
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(),
                            torch.nn.Linear(256, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
first = None
for s in range(1, steps + 1):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if first is None:
        first = loss.item()
    torch.cuda.synchronize()
    print("step", s, flush=True)
    time.sleep(0.05)
last = loss.item()
wsum = sum(p.double().sum().item() for p in model.parameters())
print("loss: %.4f -> %.4f" % (first, last))
print("weights sum: %.3f" % wsum)
ok = last < first
print("torch_loop:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
