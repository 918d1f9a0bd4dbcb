#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One jit-compiled JAX training step of an MLP (batch 1024, 4 layers of
2048): the median step time over 200 steps after compilation and warm-up."""
import statistics
import time

import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(0)
ks = jax.random.split(key, 6)
x = jax.random.normal(ks[0], (1024, 2048))
y = jax.random.normal(ks[1], (1024, 2048))
params = [jax.random.normal(k, (2048, 2048)) * 0.02 for k in ks[2:]]


def loss_fn(p, xb, yb):
    h = xb
    for w in p:
        h = jax.nn.gelu(h @ w)
    return jnp.mean((h - yb) ** 2)


@jax.jit
def step(p, xb, yb):
    g = jax.grad(loss_fn)(p, xb, yb)
    return [w - 0.01 * gw for w, gw in zip(p, g)]


for _ in range(20):
    params = step(params, x, y)
jax.block_until_ready(params)
times = []
for _ in range(200):
    t0 = time.perf_counter()
    params = step(params, x, y)
    jax.block_until_ready(params)
    times.append((time.perf_counter() - t0) * 1e3)
print(f"BENCH jax_step_ms {statistics.median(times):.4f} ms")
