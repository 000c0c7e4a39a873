#!/usr/bin/env python3
"""Write a Llama-architecture Hugging Face checkpoint with RANDOM bf16 weights, without torch or
numpy, for CPU speed work where the weights' values do not matter (speculative decoding measured
with the oracle, which replays the model's own outputs). Shapes as SmolLM2-135M by default.
Usage: random_checkpoint.py OUT_DIR [--layers N] [--hidden H] [--intermediate I] [--vocab V]
The values repeat a 1 MiB block of small random bf16 numbers (|w| < 0.06): finite, no NaN."""
import argparse, json, os, random, struct

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--layers", type=int, default=30)
ap.add_argument("--hidden", type=int, default=576)
ap.add_argument("--intermediate", type=int, default=1536)
ap.add_argument("--vocab", type=int, default=49152)
ap.add_argument("--heads", type=int, default=9)
ap.add_argument("--kv-heads", type=int, default=3)
a = ap.parse_args()
head_dim = a.hidden // a.heads

rng = random.Random(0)
def bf16(x):  # the high half of the float32 bit pattern
    return struct.pack("<f", x)[2:]
block = b"".join(bf16(rng.uniform(-0.06, 0.06)) for _ in range(1 << 19))  # 1 MiB

tensors = {"model.embed_tokens.weight": [a.vocab, a.hidden], "model.norm.weight": [a.hidden]}
for l in range(a.layers):
    p = f"model.layers.{l}."
    tensors.update({p + "input_layernorm.weight": [a.hidden], p + "post_attention_layernorm.weight": [a.hidden],
                    p + "self_attn.q_proj.weight": [a.heads * head_dim, a.hidden],
                    p + "self_attn.k_proj.weight": [a.kv_heads * head_dim, a.hidden],
                    p + "self_attn.v_proj.weight": [a.kv_heads * head_dim, a.hidden],
                    p + "self_attn.o_proj.weight": [a.hidden, a.heads * head_dim],
                    p + "mlp.gate_proj.weight": [a.intermediate, a.hidden],
                    p + "mlp.up_proj.weight": [a.intermediate, a.hidden],
                    p + "mlp.down_proj.weight": [a.hidden, a.intermediate]})
header, offset = {}, 0
for name, shape in tensors.items():
    n = 2
    for d in shape: n *= d
    header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + n]}
    offset += n
raw = json.dumps(header, separators=(",", ":")).encode()
raw += b" " * (-len(raw) % 8)
os.makedirs(a.out, exist_ok=True)
with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(raw)) + raw)
    for name, shape in tensors.items():
        n = header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
        if name.endswith("norm.weight"):  # norms near 1, as trained models have
            f.write(bf16(1.0) * (n // 2))
            continue
        while n > 0:
            f.write(block[: min(n, len(block))])
            n -= min(n, len(block))
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": a.vocab, "hidden_size": a.hidden,
          "intermediate_size": a.intermediate, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
          "num_key_value_heads": a.kv_heads, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
          "rope_theta": 100000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "bos_token_id": 1,
          "eos_token_id": 2}
with open(os.path.join(a.out, "config.json"), "w") as f:
    json.dump(config, f, indent=1)
print(f"{a.out}: {offset / 2 / 1e6:.0f}M parameters")
