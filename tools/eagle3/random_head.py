#!/usr/bin/env python3
"""Writes a random-weight EAGLE-3 head shaped for a target checkpoint, for speed measurements
(its drafts are noise: acceptance is measured with the oracle provider instead).

  python3 tools/eagle3/random_head.py TARGET_DIR OUT_DIR [--draft-vocab 32000] [--target-head]
                                                          [--intermediate I]

Layout as real heads on the Hub (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B): fc [H, 3H], one Llama
decoder layer whose attention reads 2H, its own lm_head over the draft vocabulary, d2t / t2d;
aux layers (2, L/2, L-3). --target-head: no lm_head, d2t or t2d -- the head drafts over the
target's vocabulary with the target's head, as the published gpt-oss EAGLE-3 heads do
(nvidia/gpt-oss-120b-Eagle3). --intermediate: the head's MLP width (default the target's
intermediate_size; a mixture of experts' is one expert's). bf16; needs torch and safetensors (on
the GPU machine)."""
import argparse
import json
import os

import torch
from safetensors.torch import save_file

p = argparse.ArgumentParser()
p.add_argument("target")
p.add_argument("out")
p.add_argument("--draft-vocab", type=int, default=32000)
p.add_argument("--target-head", action="store_true")
p.add_argument("--intermediate", type=int)
a = p.parse_args()
t = json.load(open(os.path.join(a.target, "config.json")))
H, V, L = t["hidden_size"], t["vocab_size"], t["num_hidden_layers"]
I = a.intermediate or t["intermediate_size"]
nh, nkv = t["num_attention_heads"], t["num_key_value_heads"]
hd = t.get("head_dim", H // nh)
theta = t.get("rope_theta", (t.get("rope_parameters") or {}).get("rope_theta", 10000.0))
Vd = V if a.target_head else min(a.draft_vocab, V)
g = torch.Generator().manual_seed(0)


def w(*shape):
    return (torch.randn(*shape, generator=g) * (shape[-1] ** -0.5)).to(torch.bfloat16)


ids = torch.randperm(V, generator=g)[:Vd].sort().values
t2d = torch.zeros(V, dtype=torch.bool)
t2d[ids] = True
sd = {"fc.weight": w(H, 3 * H), "midlayer.input_layernorm.weight": torch.ones(H, dtype=torch.bfloat16),
      "midlayer.hidden_norm.weight": torch.ones(H, dtype=torch.bfloat16),
      "midlayer.self_attn.q_proj.weight": w(nh * hd, 2 * H), "midlayer.self_attn.k_proj.weight": w(nkv * hd, 2 * H),
      "midlayer.self_attn.v_proj.weight": w(nkv * hd, 2 * H), "midlayer.self_attn.o_proj.weight": w(H, nh * hd),
      "midlayer.post_attention_layernorm.weight": torch.ones(H, dtype=torch.bfloat16),
      "midlayer.mlp.gate_proj.weight": w(I, H), "midlayer.mlp.up_proj.weight": w(I, H),
      "midlayer.mlp.down_proj.weight": w(H, I), "norm.weight": torch.ones(H, dtype=torch.bfloat16)}
if not a.target_head:
    sd.update({"lm_head.weight": w(Vd, H), "d2t": ids - torch.arange(Vd), "t2d": t2d})
os.makedirs(a.out, exist_ok=True)
save_file(sd, os.path.join(a.out, "model.safetensors"))
cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": H, "intermediate_size": I,
       "num_attention_heads": nh, "num_key_value_heads": nkv, "head_dim": hd, "num_hidden_layers": 1,
       "rms_norm_eps": t.get("rms_norm_eps", 1e-5), "rope_theta": theta, "vocab_size": V, "draft_vocab_size": Vd,
       "target_hidden_size": H, "hidden_act": "silu", "tie_word_embeddings": False,
       "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, L // 2, L - 3], "use_aux_hidden_state": True}}
json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
head = "the target's head" if a.target_head else f"draft vocab {Vd}"
print(f"random EAGLE-3 head for {a.target}: hidden {H}, intermediate {I}, {head}, aux layers {[2, L // 2, L - 3]} -> {a.out}")
