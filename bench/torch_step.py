#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A launch-bound PyTorch training step: a small transformer (2 encoder
layers, d_model 256, 4 heads, batch 8, sequence 64, fp32, AdamW) whose
step is hundreds of small kernels, so the time goes to launching them.
The median step time over 300 steps after 50 steps of warm-up; each step
ends with torch.cuda.synchronize()."""
import statistics
import time

import torch
from torch import nn

VOCAB, D_MODEL, HEADS, LAYERS, BATCH, SEQ = 1000, 256, 4, 2, 8, 64
WARMUP, STEPS = 50, 300


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.zeros(SEQ, D_MODEL))
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=4 * D_MODEL,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos))


torch.manual_seed(0)
model = Model().cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
loss_fn = nn.CrossEntropyLoss()
x = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")
y = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x).reshape(-1, VOCAB), y.reshape(-1))
    loss.backward()
    opt.step()


for _ in range(WARMUP):
    step()
torch.cuda.synchronize()
times = []
for _ in range(STEPS):
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    times.append((time.perf_counter() - t0) * 1e3)
print(f"BENCH torch_step_ms {statistics.median(times):.4f} ms")
