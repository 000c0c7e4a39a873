#!/usr/bin/env python3
"""The tiny GPT-OSS checkpoint (tests/data/golden/gptoss-tiny) with its experts stored in MXFP4 as
the published gpt-oss checkpoints store them, and Hugging Face transformers' goldens from loading it.

Layout (transformers' integrations/mxfp4.py, OpenAI's gpt-oss checkpoints):
  mlp.experts.gate_up_proj_blocks [E, 2I, H/32, 16] uint8: each row (an output, gate and up
      interleaved as in the dense gate_up_proj [E, H, 2I]) in blocks of 32 inputs, two e2m1 codes a
      byte, the low nibble first; mlp.experts.gate_up_proj_scales [E, 2I, H/32] uint8: the block's
      power-of-two scale as an E8M0 exponent biased by 127;
  mlp.experts.down_proj_blocks [E, H, I/32, 16], down_proj_scales [E, H, I/32];
  the biases, router, attention, embeddings and head unquantized;
  config.json quantization_config {"quant_method": "mxfp4", "modules_to_not_convert": [...]}.
The quantizer (nearest e2m1 code, a block's scale the smallest power of two that brings its largest
magnitude within 6) only has to produce a valid checkpoint: the goldens come from transformers
loading it (dequantize=True: the experts expanded exactly, every value being e2m1 times a power of
two, then the fp32 eager forward as make_gptoss.py's).

Run where PyTorch and transformers are (the GPU machine):
  make_mxfp4_golden.py SRC_DIR OUT_DIR [SEED]"""
import json, os, shutil, sys

import torch
import transformers as tf
from safetensors.torch import load_file, save_file

SRC, OUT = sys.argv[1], sys.argv[2]
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 7
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def quantize(w):
    """w [E, rows, cols] fp32, blocks along cols -> (blocks [E, rows, cols/32, 16] u8, scales u8)."""
    e, rows, cols = w.shape
    b = w.reshape(e, rows, cols // 32, 32)
    amax = b.abs().amax(-1)
    exp = torch.ceil(torch.log2(amax.clamp_min(2.0**-100) / 6.0)).clamp(-127, 127).to(torch.int32)
    scaled = b / torch.pow(2.0, exp.to(torch.float32))[..., None]
    code = (scaled.abs()[..., None] - E2M1).abs().argmin(-1) | ((scaled < 0).to(torch.int64) << 3)
    blocks = (code[..., 0::2] | (code[..., 1::2] << 4)).to(torch.uint8)
    return blocks.contiguous(), (exp + 127).to(torch.uint8).contiguous()


def dequantize(blocks, scales):
    """Our own reading of the layout, as the C++ loader reads it: [E, rows, cols] fp32."""
    lut = torch.cat([E2M1, -E2M1])
    lo, hi = lut[(blocks & 15).long()], lut[(blocks >> 4).long()]
    values = torch.stack([lo, hi], -1).reshape(*blocks.shape[:-1], 32)
    values = values * torch.pow(2.0, scales.to(torch.float32) - 127)[..., None]
    return values.reshape(blocks.shape[0], blocks.shape[1], -1)


os.makedirs(OUT, exist_ok=True)
dense = load_file(os.path.join(SRC, "model.safetensors"))
tensors = {}
for name, t in dense.items():
    if name.endswith("experts.gate_up_proj") or name.endswith("experts.down_proj"):
        blocks, scales = quantize(t.transpose(1, 2).contiguous())  # outputs as rows: [E, out, in]
        tensors[name + "_blocks"], tensors[name + "_scales"] = blocks, scales
    else:
        tensors[name] = t.contiguous()
save_file(tensors, os.path.join(OUT, "model.safetensors"), metadata={"format": "pt"})
config = json.load(open(os.path.join(SRC, "config.json")))
config["quantization_config"] = {
    "quant_method": "mxfp4",
    "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                               "lm_head"],
}
json.dump(config, open(os.path.join(OUT, "config.json"), "w"), indent=2)
shutil.copy(os.path.join(SRC, "generation_config.json"), OUT)

model = tf.GptOssForCausalLM.from_pretrained(OUT, quantization_config=tf.Mxfp4Config(dequantize=True),
                                             attn_implementation="eager", dtype=torch.float32)
for p in model.parameters():  # the dequantized experts come as bfloat16 (exact): the forward is fp32
    p.data = p.data.float()
model = model.eval()
state = model.state_dict()
worst = 0.0
for name in [n for n in tensors if n.endswith("_blocks")]:
    base = name[: -len("_blocks")]
    ours = dequantize(tensors[name], tensors[base + "_scales"]).transpose(1, 2)  # back to [E, in, out]
    worst = max(worst, (state[base].float() - ours).abs().max().item())
print("transformers' experts against our reading of the blocks: max |difference|", worst)
assert worst == 0.0, "the layout read here is not transformers'"

g = torch.Generator().manual_seed(SEED)
vocab = config["vocab_size"]
golden, meta = {}, []
for i, n in enumerate([3, 20, 70]):
    prompt = torch.randint(0, vocab, (1, n), generator=g)
    with torch.no_grad():
        full = model.generate(prompt, max_new_tokens=40, min_new_tokens=40, do_sample=False, eos_token_id=None,
                              pad_token_id=0)[0]
        logits = model(full[None, :-1]).logits[0].float()
    top2 = logits.topk(2, dim=-1).values
    golden[f"prompt_{i}"] = prompt[0].to(torch.int32).contiguous()
    golden[f"output_{i}"] = full[n:].to(torch.int32).contiguous()
    golden[f"logits_{i}"] = logits.contiguous()
    meta.append({"prompt_len": n, "new_tokens": 40, "min_top2_margin": (top2[:, 0] - top2[:, 1]).min().item()})
save_file(golden, os.path.join(OUT, "golden.safetensors"), metadata={"transformers": tf.__version__})
json.dump({"model": "gptoss-tiny-mxfp4", "seed": SEED, "source": "gptoss-tiny quantized by make_mxfp4_golden.py",
           "cases": meta}, open(os.path.join(OUT, "golden.json"), "w"), indent=1)
print("transformers", tf.__version__, "torch", torch.__version__, meta)
