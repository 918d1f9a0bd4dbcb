#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Greedy generation with a Hugging Face causal LM (Llama layout from a config,
random weights, bf16): tokens per second over 128 new tokens, best of 3,
after a warm-up generation."""
import time

import torch
import transformers

torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816,
                               num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=8,
                               max_position_embeddings=1024)
model = transformers.LlamaForCausalLM(cfg).to("cuda", dtype=torch.bfloat16).eval()
prompt = torch.randint(0, 32000, (1, 32), device="cuda")
new = 128
with torch.no_grad():
    model.generate(prompt, max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=0)
    best = 0.0
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.generate(prompt, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                       pad_token_id=0)
        torch.cuda.synchronize()
        best = max(best, new / (time.perf_counter() - t0))
print(f"BENCH lm_tokens_per_s {best:.3f} tokens/s")
