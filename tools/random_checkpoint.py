#!/usr/bin/env python3
"""Write a Llama-architecture Hugging Face checkpoint with RANDOM bf16 weights, without torch or
numpy, for speed work where the weights' values do not matter (speculative decoding measured with
the oracle, which replays the model's own outputs; tensor parallelism's scaling). Presets:
  smollm2-135m (default)  30 layers, hidden 576, 9 q / 3 kv heads, tied embeddings
  llama3-8b               Llama-3-8B: 32 layers, hidden 4096, 32 / 8 heads, vocab 128,256 (16 GB)
  llama3-70b              Llama-3-70B: 80 layers, hidden 8192, 64 / 8 heads, MLP 28,672 (141 GB:
                          make it on the machine that runs it, on a disk that holds it)
The Llama-3 presets carry the published config (llama3 rope scaling, theta 500,000, untied head)
and are written as shards of at most --shard-gb GB with model.safetensors.index.json.
Usage: random_checkpoint.py OUT_DIR [--preset P] [--layers N] [--hidden H] [--intermediate I]
       [--vocab V] [--heads Q] [--kv-heads KV] [--shard-gb G]
The values repeat a 1 MiB block of small random bf16 numbers (|w| < 0.06), norms are 1: finite,
no NaN."""
import argparse, json, os, random, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_shards import write_sharded  # noqa: E402

LLAMA3_CONFIG = {"rope_theta": 500000.0, "max_position_embeddings": 131072, "tie_word_embeddings": False,
                 "bos_token_id": 128000, "eos_token_id": 128001,
                 "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
PRESETS = {
    "smollm2-135m": dict(layers=30, hidden=576, intermediate=1536, vocab=49152, heads=9, kv_heads=3,
                         config={"rope_theta": 100000.0, "max_position_embeddings": 2048, "tie_word_embeddings": True,
                                 "bos_token_id": 1, "eos_token_id": 2}),
    "llama3-8b": dict(layers=32, hidden=4096, intermediate=14336, vocab=128256, heads=32, kv_heads=8,
                      config=LLAMA3_CONFIG),
    "llama3-70b": dict(layers=80, hidden=8192, intermediate=28672, vocab=128256, heads=64, kv_heads=8,
                       config=LLAMA3_CONFIG),
}

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--preset", choices=sorted(PRESETS), default="smollm2-135m")
for flag in ("layers", "hidden", "intermediate", "vocab", "heads", "kv-heads"):
    ap.add_argument("--" + flag, type=int, help="overrides the preset's")
ap.add_argument("--shard-gb", type=float, default=5.0)
a = ap.parse_args()
shape = {k: v for k, v in PRESETS[a.preset].items() if k != "config"}
for key in shape:
    if getattr(a, key) is not None:
        shape[key] = getattr(a, key)
L, H, I, V, Q, KV = (shape[k] for k in ("layers", "hidden", "intermediate", "vocab", "heads", "kv_heads"))
if H % Q:
    ap.error(f"--hidden {H} is not a multiple of --heads {Q}")
D = H // Q
extra = PRESETS[a.preset]["config"]

rng = random.Random(0)
def bf16(x):  # the high half of the float32 bit pattern
    return struct.pack("<f", x)[2:]
BLOCK = b"".join(bf16(rng.uniform(-0.06, 0.06)) for _ in range(1 << 19))  # 1 MiB
ONES = bf16(1.0) * (1 << 19)  # norms near 1, as trained models have

tensors = {"model.embed_tokens.weight": ("BF16", [V, H], BLOCK)}
for l in range(L):
    p = f"model.layers.{l}."
    tensors.update({
        p + "input_layernorm.weight": ("BF16", [H], ONES),
        p + "self_attn.q_proj.weight": ("BF16", [Q * D, H], BLOCK),
        p + "self_attn.k_proj.weight": ("BF16", [KV * D, H], BLOCK),
        p + "self_attn.v_proj.weight": ("BF16", [KV * D, H], BLOCK),
        p + "self_attn.o_proj.weight": ("BF16", [H, Q * D], BLOCK),
        p + "post_attention_layernorm.weight": ("BF16", [H], ONES),
        p + "mlp.gate_proj.weight": ("BF16", [I, H], BLOCK),
        p + "mlp.up_proj.weight": ("BF16", [I, H], BLOCK),
        p + "mlp.down_proj.weight": ("BF16", [H, I], BLOCK),
    })
tensors["model.norm.weight"] = ("BF16", [H], ONES)
if not extra["tie_word_embeddings"]:
    tensors["lm_head.weight"] = ("BF16", [V, H], BLOCK)
files = write_sharded(a.out, tensors, a.shard_gb)

# Special token ids a smaller --vocab does not hold are left out, as for a model without them.
extra = {k: (None if k.endswith("_token_id") and v >= V else v) for k, v in extra.items()}
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V, "hidden_size": H,
          "intermediate_size": I, "num_hidden_layers": L, "num_attention_heads": Q, "num_key_value_heads": KV,
          "head_dim": D, "hidden_act": "silu", "rms_norm_eps": 1e-5, "attention_bias": False, "mlp_bias": False,
          "torch_dtype": "bfloat16", **extra}
with open(os.path.join(a.out, "config.json"), "w") as f:
    json.dump(config, f, indent=1)
params = sum(n for n in (s[0] * (s[1] if len(s) > 1 else 1) for _, s, _ in tensors.values()))
print(f"{a.out}: {params / 1e9:.2f}B parameters ({a.preset} shape) in {files} file(s)")
