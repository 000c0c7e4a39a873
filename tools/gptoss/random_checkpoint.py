#!/usr/bin/env python3
"""Write a GPT-OSS checkpoint with RANDOM weights in the published layout, for speed work where
the weights' values do not matter (the oracle replays the model's own outputs). No torch or numpy.
Defaults: gpt-oss-20b's shape and files -- 24 layers alternating sliding-window (128) and full
attention, hidden 2880, 64 q / 8 kv heads of 64, 32 experts top-4 with intermediate 2880, vocab
201,088, YaRN rope (factor 32 over 4,096), attention sinks, q/k/v/o and expert biases; the experts
in MXFP4 (`*_blocks` [E, rows, cols/32, 16] uint8, two e2m1 codes a byte; `*_scales`
[E, rows, cols/32] uint8 E8M0 exponents), everything else bf16; safetensors shards of at most
--shard-gb GB with model.safetensors.index.json, and config.json's quantization_config, as
openai/gpt-oss-20b ships them (about 13 GB: make it on the machine that uses it, never carry it).
llama.cpp's convert_hf_to_gguf.py reads such a checkpoint as it reads the real one.

Usage: random_checkpoint.py OUT_DIR [--layers N] [--hidden H] [--heads Q] [--kv-heads KV]
       [--head-dim D] [--experts E] [--experts-per-token K] [--intermediate I] [--vocab V]
       [--window W] [--shard-gb G]
Values: bf16 weights repeat a 1 MiB block of small random numbers (|w| < 0.06), norms are 1;
expert codes are random bytes (every nibble is a valid e2m1 code) and scales 2^-8 .. 2^-6, so an
expert weight is at most 6 * 2^-6 < 0.1: finite everywhere, no NaN scale (255)."""
import argparse, json, os, random, struct, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from safetensors_shards import nbytes, write_sharded  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--layers", type=int, default=24)
ap.add_argument("--hidden", type=int, default=2880)
ap.add_argument("--heads", type=int, default=64)
ap.add_argument("--kv-heads", type=int, default=8)
ap.add_argument("--head-dim", type=int, default=64)
ap.add_argument("--experts", type=int, default=32)
ap.add_argument("--experts-per-token", type=int, default=4)
ap.add_argument("--intermediate", type=int, default=2880)
ap.add_argument("--vocab", type=int, default=201088)
ap.add_argument("--window", type=int, default=128)
ap.add_argument("--shard-gb", type=float, default=4.0)
a = ap.parse_args()
if a.hidden % 32 or a.intermediate % 32:
    ap.error("--hidden and --intermediate must be multiples of 32 (MXFP4 blocks)")

rng = random.Random(0)
MIB = 1 << 20
def bf16(x):  # the high half of the float32 bit pattern
    return struct.pack("<f", x)[2:]
BF16_BLOCK = b"".join(bf16(rng.uniform(-0.06, 0.06)) for _ in range(MIB // 2))
CODE_BLOCK = bytes(rng.randrange(256) for _ in range(MIB))
SCALE_BLOCK = bytes(rng.choice((119, 120, 121)) for _ in range(MIB))  # 2^-8 .. 2^-6
ONES = bf16(1.0) * (MIB // 2)

H, E, I, D = a.hidden, a.experts, a.intermediate, a.head_dim
tensors = {"model.embed_tokens.weight": ("BF16", [a.vocab, H], BF16_BLOCK)}
for l in range(a.layers):
    p = f"model.layers.{l}."
    tensors.update({
        p + "input_layernorm.weight": ("BF16", [H], ONES),
        p + "self_attn.q_proj.weight": ("BF16", [a.heads * D, H], BF16_BLOCK),
        p + "self_attn.q_proj.bias": ("BF16", [a.heads * D], BF16_BLOCK),
        p + "self_attn.k_proj.weight": ("BF16", [a.kv_heads * D, H], BF16_BLOCK),
        p + "self_attn.k_proj.bias": ("BF16", [a.kv_heads * D], BF16_BLOCK),
        p + "self_attn.v_proj.weight": ("BF16", [a.kv_heads * D, H], BF16_BLOCK),
        p + "self_attn.v_proj.bias": ("BF16", [a.kv_heads * D], BF16_BLOCK),
        p + "self_attn.o_proj.weight": ("BF16", [H, a.heads * D], BF16_BLOCK),
        p + "self_attn.o_proj.bias": ("BF16", [H], BF16_BLOCK),
        p + "self_attn.sinks": ("BF16", [a.heads], BF16_BLOCK),
        p + "post_attention_layernorm.weight": ("BF16", [H], ONES),
        p + "mlp.router.weight": ("BF16", [E, H], BF16_BLOCK),
        p + "mlp.router.bias": ("BF16", [E], BF16_BLOCK),
        # gate and up interleaved by output row, as the published checkpoints store them.
        p + "mlp.experts.gate_up_proj_blocks": ("U8", [E, 2 * I, H // 32, 16], CODE_BLOCK),
        p + "mlp.experts.gate_up_proj_scales": ("U8", [E, 2 * I, H // 32], SCALE_BLOCK),
        p + "mlp.experts.gate_up_proj_bias": ("BF16", [E, 2 * I], BF16_BLOCK),
        p + "mlp.experts.down_proj_blocks": ("U8", [E, H, I // 32, 16], CODE_BLOCK),
        p + "mlp.experts.down_proj_scales": ("U8", [E, H, I // 32], SCALE_BLOCK),
        p + "mlp.experts.down_proj_bias": ("BF16", [E, H], BF16_BLOCK),
    })
tensors["model.norm.weight"] = ("BF16", [H], ONES)
tensors["lm_head.weight"] = ("BF16", [a.vocab, H], BF16_BLOCK)


nfiles = write_sharded(a.out, tensors, a.shard_gb)

config = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True, "attention_dropout": 0.0,
    "eos_token_id": 200002 if a.vocab > 200002 else None, "pad_token_id": 199999 if a.vocab > 199999 else None,
    "experts_per_token": a.experts_per_token, "num_experts_per_tok": a.experts_per_token, "head_dim": D,
    "hidden_act": "silu", "hidden_size": H, "initial_context_length": 4096, "initializer_range": 0.02,
    "intermediate_size": I, "layer_types": ["sliding_attention" if l % 2 == 0 else "full_attention" for l in range(a.layers)],
    "max_position_embeddings": 131072, "num_attention_heads": a.heads, "num_hidden_layers": a.layers,
    "num_key_value_heads": a.kv_heads, "num_local_experts": E, "output_router_logits": False, "rms_norm_eps": 1e-05,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                     "rope_type": "yarn", "truncate": False},
    "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": a.window, "swiglu_limit": 7.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": a.vocab,
    "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]},
}
with open(os.path.join(a.out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
params = sum(nbytes(d, s) // 2 if d == "BF16" else nbytes(d, s) * (2 if name.endswith("_blocks") else 0)
             for name, (d, s, _) in tensors.items())
print(f"{a.out}: {params / 1e9:.2f}B parameters in {nfiles} file(s)")
