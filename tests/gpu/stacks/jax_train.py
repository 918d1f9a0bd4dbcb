#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""JAX with its default allocator settings (XLA preallocates most of the
device): a jit-compiled MLP trained by SGD on a fixed regression task. The
loss must fall and the learned weights must fit the task."""
import stack

jax = stack.need("jax")
import jax.numpy as jnp  # noqa: E402

c = stack.Checks()
devs = jax.devices()
c.true("a cuda device", devs[0].platform == "gpu", str(devs))
print("platform:", devs[0].platform)

key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
x = jax.random.normal(k1, (4096, 32))
w_true = jax.random.normal(k2, (32, 1))
y = jnp.tanh(x @ w_true)
params = {"w1": jax.random.normal(k3, (32, 64)) * 0.1, "b1": jnp.zeros(64),
          "w2": jnp.zeros((64, 1)), "b2": jnp.zeros(1)}


def loss_fn(p, xb, yb):
    h = jax.nn.relu(xb @ p["w1"] + p["b1"])
    return jnp.mean((h @ p["w2"] + p["b2"] - yb) ** 2)


@jax.jit
def step(p, xb, yb):
    loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
    return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g), loss


first = None
for i in range(300):
    params, loss = step(params, x, y)
    first = float(loss) if first is None else first
last = float(loss)
c.true("loss falls", last < first * 0.5, f"{first} -> {last}")
m = jnp.asarray([[1.0, 2.0], [3.0, 4.0]])
print("2x2 matmul:", (m @ m).tolist())
print("fft:", [round(float(v), 3) for v in jnp.abs(jnp.fft.fft(jnp.arange(8.0)))])
c.done()
