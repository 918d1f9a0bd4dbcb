#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mixed-precision training: a small CNN+MLP trained on a fixed synthetic task
under bf16 autocast, and under fp16 autocast with GradScaler. The loss must
fall; the printed losses are rounded."""
import sys

import stack

torch = stack.need("torch")
c = stack.Checks()
torch.manual_seed(11)
dev = "cuda"
torch.use_deterministic_algorithms(True, warn_only=True)


def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(), torch.nn.Linear(512, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10),
    ).to(dev)


# A task a small CNN learns in a few dozen steps: the class is the
# brightest of ten fixed stripes of the image.
x = torch.randn(256, 3, 32, 32, device=dev)
y = torch.arange(256, device=dev) % 10
for i in range(10):
    x[y == i, :, :, i * 3:i * 3 + 3] += 2.0

for dt, scaled in ((torch.bfloat16, False), (torch.float16, True)):
    name = str(dt).split(".")[1]
    torch.manual_seed(3)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=scaled)
    losses = []
    for step in range(60):
        idx = torch.arange(step * 32, step * 32 + 32, device=dev) % 256
        with torch.autocast("cuda", dtype=dt):
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    first = sum(losses[:5]) / 5
    last = sum(losses[-5:]) / 5
    # cuDNN's backward kernels add with atomics: the losses vary in their last
    # bits from run to run, so they go to stderr, and stdout says pass/fail.
    print(f"{name}: first {first:.4f} last {last:.4f}", file=sys.stderr)
    c.true(f"{name} amp loss falls", last < first * 0.9, f"{first} -> {last}")
c.done()
