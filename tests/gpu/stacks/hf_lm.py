#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Hugging Face causal LM built from a config (random weights, nothing
downloaded), in bf16, generating greedily: the token ids are printed, so a
run through vgpu must produce exactly the native tokens. cuBLAS is made
deterministic so the native runs agree with each other."""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import stack

torch = stack.need("torch")
transformers = stack.need("transformers")
c = stack.Checks()
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)

cfg = transformers.LlamaConfig(vocab_size=8000, hidden_size=512, intermediate_size=1376,
                               num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                               max_position_embeddings=512)
model = transformers.LlamaForCausalLM(cfg).to("cuda", dtype=torch.bfloat16).eval()
prompt = torch.tensor([[1, 17, 345, 2901, 77, 5, 4000, 12]], device="cuda")
with torch.no_grad():
    out = model.generate(prompt, max_new_tokens=int(sys.argv[1]) if len(sys.argv) > 1 else 40,
                         do_sample=False, pad_token_id=0)
tokens = out[0, prompt.shape[1]:].tolist()
print("generated:", " ".join(map(str, tokens)))
c.true("generated every token", len(tokens) == (int(sys.argv[1]) if len(sys.argv) > 1 else 40))
with torch.autocast("cuda", dtype=torch.bfloat16), torch.no_grad():
    logits = model(prompt).logits.float()
c.true("logits finite", bool(torch.isfinite(logits).all()))
c.done()
