#!/usr/bin/env python3
"""Regenerates the fuzz seed corpora under tests/fuzz/corpus/<target>/ (checked in).

    python3 tests/fuzz/make_seeds.py [SHARED]      # SHARED: the test data folder, default tests/data

Seeds are small real inputs: the example configs of configs/, the config.json /
generation_config.json / tokenizer_config.json files of SHARED's checkpoints, a Qwen3
tokenizer.json trimmed to its first tokens, and hand-written variants reaching the other
branches (rope scaling kinds, added tokens, SentencePiece-style BPE, malformed values). The
safetensors files are written here byte by byte (no numpy). Every file stays under 64 KiB.
Only the standard library is used; the output is deterministic.
"""
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(HERE, "corpus")
MAX_SEED = 64 * 1024


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_SEED:
        raise SystemExit(f"seed {target}/{name} is {len(data)} bytes (limit {MAX_SEED})")
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def dumps(doc, indent=None):
    return json.dumps(doc, indent=indent, ensure_ascii=False)


# ---- fuzz_engine_config: TOML ------------------------------------------------------------------
def engine_config_seeds():
    t = "fuzz_engine_config"
    for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
        if name.endswith(".toml"):
            write(t, name, read(os.path.join(ROOT, "configs", name)))
    write(t, "minimal.toml", "schema_version = 1\n")
    write(t, "every_key.toml", """schema_version = 1
[model]
path = "models/x"
[engine]
backend = "cpu"
max_batch_size = 4
max_num_tokens = 64
max_seq_len = 0
num_threads = 1
check_kv_integrity = true
[kv_cache]
block_size = 8
num_pages = 0
memory_mb = 1.5
dtype = "float32"
[scheduler]
policy = "max_utilization"
[generation]
max_new_tokens = 16
temperature = 0.7
top_k = 40
top_p = 0.9
min_p = 0.05
seed = 18446744073709551615
[speculative]
enabled = true
draft_provider = "draft"
verification = "full"
max_draft_tokens = 4
[[plugins]]
name = "draft"
path = "/tmp/libdraft.so"
[plugins.draft]
n_sink_blocks = 2
nested = { a = [1, 2.5, "x"], b = { c = true } }
when = 1979-05-27T07:32:00Z
[[plugins]]
name = "other"
""")
    write(t, "inline_tables.toml",
          'schema_version = 1\nmodel = { path = "m" }\nengine = { backend = "cuda", max_batch_size = 1 }\n'
          'plugins = [ { name = "a" }, { name = "b", path = "" } ]\n')
    write(t, "bad_values.toml", """schema_version = 2
[engine]
backend = "tpu"
max_batch_size = -1
max_num_tokens = 9223372036854775807
[kv_cache]
memory_mb = nan
dtype = "int8"
[generation]
temperature = -inf
top_p = 0.0
seed = -1
unknown_key = 'literal'
""")
    write(t, "strings.toml", 'schema_version = 1\n[model]\npath = """multi\nline \\u00e9 \\U0001F600"""\n'
          "[scheduler]\npolicy = '''raw\\n'''\n")


# ---- fuzz_model_config: config.json ------------------------------------------------------------
def model_config_seeds(shared):
    t = "fuzz_model_config"
    for sub in ("golden", "models"):
        base = os.path.join(shared, sub)
        if not os.path.isdir(base):
            continue
        for d in sorted(os.listdir(base)):
            p = os.path.join(base, d, "config.json")
            if os.path.isfile(p):
                write(t, f"{d}.json", read(p))
    base = {"model_type": "llama", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
    variants = {
        "llama3_rope_scaling.json": {**base, "rope_theta": 500000.0, "max_position_embeddings": 131072,
                                     "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                      "high_freq_factor": 4.0,
                                                      "original_max_position_embeddings": 8192},
                                     "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]},
        "linear_rope_parameters.json": {**base, "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                                                                    "rope_theta": 10000}},
        "legacy_type_key.json": {**base, "rope_scaling": {"type": "linear", "factor": 4}},
        "mistral.json": {**base, "model_type": "mistral", "sliding_window": None, "tie_word_embeddings": False},
        "qwen2.json": {**base, "model_type": "qwen2", "attention_bias": False, "rms_norm_eps": 1e-6},
        "qwen3_head_dim.json": {**base, "model_type": "qwen3", "head_dim": 128, "eos_token_id": None},
        "bad_types.json": {**base, "vocab_size": "32", "hidden_size": 1.5, "num_attention_heads": 0,
                           "mlp_bias": True, "bos_token_id": -1, "rope_scaling": {"rope_type": "yarn"}},
    }
    for name, doc in variants.items():
        write(t, name, dumps(doc, indent=1))


# ---- fuzz_special_tokens: mask byte + documents separated by "\n----\n" ---------------------------
SEP = "\n----\n"


def special_tokens_seeds(shared):
    t = "fuzz_special_tokens"
    files = ["config.json", "generation_config.json", "tokenizer_config.json"]

    def combo(mask_char, docs):
        return mask_char + SEP.join(docs)

    for sub in ("golden", "models"):
        base = os.path.join(shared, sub)
        if not os.path.isdir(base):
            continue
        for d in sorted(os.listdir(base)):
            folder = os.path.join(base, d)
            present = [f for f in files if os.path.isfile(os.path.join(folder, f))]
            if not present:
                continue
            mask = sum(1 << files.index(f) for f in present)
            if os.path.isfile(os.path.join(folder, "tokenizer.model")):
                mask |= 8
            docs = [read(os.path.join(folder, f)).decode("utf-8") for f in present]
            write(t, f"{d}.txt", combo(chr(0x30 | mask), docs))
    # Tokenizer configs: Llama-3 and Qwen3 style (added_tokens_decoder trimmed to a few entries).
    for name in ("llama3", "qwen3"):
        p = os.path.join(shared, "tokenizers", name, "tokenizer_config.json")
        if not os.path.isfile(p):
            continue
        cfg = json.loads(read(p))
        cfg.pop("chat_template", None)
        dec = cfg.get("added_tokens_decoder", {})
        cfg["added_tokens_decoder"] = dict(list(dec.items())[:6])
        write(t, f"{name}_tokenizer_config.txt", combo("4", [dumps(cfg, indent=2)]))
    write(t, "object_tokens.txt", combo("7", [
        '{"bos_token_id": 0, "eos_token_id": 2, "pad_token_id": null}',
        '{"eos_token_id": [1, 2], "bos_token_id": [5], "pad_token_id": 3}',
        '{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,'
        ' "add_bos_token": true, "add_eos_token": false,'
        ' "added_tokens_decoder": {"1": {"content": "<s>"}, "2": {"content": "</s>"},'
        ' "99999999999999999999": {"content": "x"}, "-3": {"content": "y"}}}']))
    write(t, "bad_fields.txt", combo("?", [
        '{"eos_token_id": [1, "2"]}', '{"bos_token_id": 2147483648}',
        '{"eos_token": 7, "add_bos_token": "yes"}']))
    write(t, "not_json.txt", combo("3", ["{", "[1, 2"]))


# ---- fuzz_tokenizer_json ------------------------------------------------------------------------
# The component settings below are those of the real Llama-3 / Qwen3 / Llama-2 (HF-converted)
# tokenizer.json files; the vocabularies are tiny or trimmed.
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def added(i, content, special=True, **kw):
    tok = {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
           "normalized": False, "special": special}
    tok.update(kw)
    return tok


def byte_level_alphabet():
    """GPT-2's bytes_to_unicode: the 256 characters byte-level BPE uses for the bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def trimmed_qwen3(shared, keep=1200):
    p = os.path.join(shared, "tokenizers", "qwen3", "tokenizer.json")
    if not os.path.isfile(p):
        return None
    doc = json.loads(read(p))
    model = doc["model"]
    vocab = {tok: i for tok, i in model["vocab"].items() if i < keep}
    merges = []
    for m in model["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if a in vocab and b in vocab and a + b in vocab:
            merges.append([a, b])
    model["vocab"] = vocab
    model["merges"] = merges
    # Added tokens renumbered right after the trimmed vocabulary (the first few are enough).
    doc["added_tokens"] = [dict(tok, id=keep + k) for k, tok in enumerate(doc["added_tokens"][:8])]
    return doc


def tokenizer_json_seeds(shared):
    t = "fuzz_tokenizer_json"
    tiny = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
            "post_processor": None, "decoder": None,
            "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, " ": 5},
                      "merges": ["a b", ["ab", "c"]]}}
    write(t, "tiny_bpe.json", dumps(tiny))
    tiny_added = json.loads(json.dumps(tiny))
    tiny_added["added_tokens"] = [added(10, "<L>", lstrip=True), added(11, "<R>", rstrip=True),
                                  added(12, "cab", special=False, single_word=True), added(13, "<R>x"),
                                  added(14, "ab", special=False, normalized=True)]
    write(t, "tiny_added_tokens.json", dumps(tiny_added))

    # SentencePiece-style (HF LlamaConverter layout): byte fallback, Prepend/Replace, TemplateProcessing.
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = 3 + b
    pieces = ["▁", "h", "i", "e", "l", "o", "w", "r", "d", "hi", "▁hi", "he", "ll", "hel", "hell", "hello", "▁hello", "▁w", "or",
              "▁wor", "ld", "▁world", "1", "2"]
    for p in pieces:
        vocab[p] = len(vocab)
    sp = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
          "normalizer": {"type": "Sequence", "normalizers": [
              {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
          "pre_tokenizer": None,
          "post_processor": {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                             "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                             "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
          "decoder": {"type": "Sequence", "decoders": [
              {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
              {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
          "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                    "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                    "vocab": vocab,
                    "merges": ["h i", "▁ hi", "h e", "l l", "he l", "hel l", "hell o", "▁ hello", "▁ w", "o r",
                               "▁w or", "l d", "▁wor ld"]}}
    write(t, "sentencepiece_style.json", dumps(sp, indent=1))

    # Metaspace + Digits pre-tokenizers, Metaspace decoder.
    meta = {"added_tokens": [],
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
                {"type": "Digits", "individual_digits": True}]},
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
            "model": {"type": "BPE", "vocab": {"▁": 0, "a": 1, "▁a": 2, "1": 3, "2": 4}, "merges": ["▁ a"]}}
    write(t, "metaspace_digits.json", dumps(meta))

    # Byte-level BPE in the Llama-3 layout (Split regex + ByteLevel; ByteLevel post-processor and
    # decoder), over the 256-character byte alphabet and a few merges.
    alphabet = byte_level_alphabet()
    bl_vocab = {c: i for i, c in enumerate(alphabet)}
    bl_merges = []
    for a, b in [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("o", "n"), ("Ġ", "Ġ"),
                 ("ĠĠ", "ĠĠ"), ("1", "2"), ("12", "3"), ("'", "s"), ("Ċ", "Ċ")]:
        bl_vocab.setdefault(a + b, len(bl_vocab))
        bl_merges.append(f"{a} {b}")
    llama3 = {"version": "1.0", "truncation": None, "padding": None,
              "added_tokens": [added(len(bl_vocab), "<|begin_of_text|>"), added(len(bl_vocab) + 1, "<|end_of_text|>"),
                               added(len(bl_vocab) + 2, "<|eot_id|>")],
              "normalizer": None,
              "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                  {"type": "Split", "pattern": {"Regex": LLAMA3_REGEX}, "behavior": "Isolated", "invert": False},
                  {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
              "post_processor": {"type": "Sequence", "processors": [
                  {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                  {"type": "TemplateProcessing",
                   "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                              {"Sequence": {"id": "A", "type_id": 0}}],
                   "pair": [],
                   "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [len(bl_vocab)],
                                                             "tokens": ["<|begin_of_text|>"]}}}]},
              "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
              "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                        "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                        "vocab": bl_vocab, "merges": bl_merges}}
    write(t, "byte_level_llama3_layout.json", dumps(llama3))

    qwen = trimmed_qwen3(shared)
    if qwen is not None:
        write(t, "qwen3_trimmed.json", dumps(qwen, indent=None))
    else:  # no shared data: the same layout over the byte-level toy vocabulary
        qwen = json.loads(json.dumps(llama3))
        qwen["normalizer"] = {"type": "NFC"}
        qwen["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN3_REGEX
        write(t, "qwen3_layout.json", dumps(qwen))

    # Other normalizers / pre-tokenizers / decoders the loader knows, on the tiny vocabulary.
    misc = json.loads(json.dumps(tiny))
    misc["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFKD"}, {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
        {"type": "Strip", "strip_left": True, "strip_right": False}, {"type": "NFKC"}]}
    misc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Split", "pattern": {"String": "b"}, "behavior": "MergedWithNext",
                                      "invert": False},
        {"type": "Split", "pattern": {"Regex": "c+"}, "behavior": "MergedWithPrevious", "invert": True},
        {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Contiguous", "invert": False},
        {"type": "Whitespace"}, {"type": "Digits", "individual_digits": False}]}
    misc["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"Regex": "b+"}, "content": "B"},
        {"type": "Strip", "content": "a", "start": 0, "stop": 1}, {"type": "Fuse"}]}
    write(t, "misc_components.json", dumps(misc))


# ---- safetensors --------------------------------------------------------------------------------
def f16(x):
    return struct.pack("<e", x)


def bf16(x):
    return struct.pack("<I", struct.unpack("<I", struct.pack("<f", x))[0])[2:]


def safetensors(tensors, metadata=None, align=8):
    """tensors: [(name, dtype, shape, bytes)] -> the file's bytes (data laid out in order)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if align:
        text += b" " * (-len(text) % align)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    t = "fuzz_safetensors_header"
    f32 = lambda *xs: b"".join(struct.pack("<f", x) for x in xs)
    i32 = lambda *xs: b"".join(struct.pack("<i", x) for x in xs)
    write(t, "f32_matrix.safetensors", safetensors([("w", "F32", [2, 3], f32(1, 2, 3, 4, 5, 6))]))
    write(t, "mixed_dtypes.safetensors", safetensors([
        ("model.embed_tokens.weight", "F16", [2, 2], b"".join(f16(x) for x in (0.5, -1, 65504, 1e-7))),
        ("model.norm.weight", "BF16", [3], b"".join(bf16(x) for x in (1, -2.5, 3e38))),
        ("ids", "I32", [4], i32(0, 1, -1, 2**31 - 1)),
        ("scalar", "F32", [], f32(3.5)),
        ("empty", "F32", [0, 4], b""),
    ], metadata={"format": "pt", "total_size": "42"}))
    write(t, "metadata_only.safetensors", safetensors([], metadata={"format": "pt"}))
    write(t, "empty_header.safetensors", safetensors([]))
    write(t, "unaligned_header.safetensors",
          safetensors([("a", "F32", [1], f32(1)), ("b", "F32", [1], f32(2))], metadata={"n": 1}, align=0))
    write(t, "unsupported_dtype.safetensors", safetensors([("x", "F64", [1], b"\0" * 8)]))
    # Structurally broken: offsets past the end, overlap, gap, header longer than the file.
    write(t, "offsets_past_end.safetensors",
          struct.pack("<Q", 64) + b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'.ljust(64) + f32(1, 2))
    write(t, "overlap.safetensors",
          struct.pack("<Q", 96) + b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
          b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}'.ljust(96) + f32(1, 2, 3))
    write(t, "header_too_long.safetensors", struct.pack("<Q", 1 << 40) + b"{}")

    t = "fuzz_safetensors_index"
    write(t, "two_shards.json", json.dumps({
        "metadata": {"total_size": 1234},
        "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors",
                       "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                       "model.layers.0.self_attn.q_proj.weight": "model-00001-of-00002.safetensors",
                       "model.norm.weight": "model-00002-of-00002.safetensors"}}, indent=2))
    write(t, "subfolder.json", json.dumps({"weight_map": {"a": "shards/one.safetensors", "b": "./two.safetensors"}}))
    write(t, "escapes.json", json.dumps({"weight_map": {"../a": "..", "b": "/etc/passwd", "c": "a/../../x",
                                                        "d": "", "e": "x\u0000y", "f": 3}}))
    write(t, "duplicate_keys.json", '{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}')
    write(t, "no_weight_map.json", '{"metadata": {}}')


# ---- fuzz_openai_request: endpoint byte ('0' completions, '1' chat) + the request body ----------
def openai_request_seeds():
    t = "fuzz_openai_request"
    user = [{"role": "user", "content": "hello"}]
    completions = {
        "full": {"model": "fuzz", "prompt": "Once upon a time", "max_tokens": 7, "temperature": 0.8, "top_p": 0.9,
                 "top_k": 5, "min_p": 0.05, "seed": 18446744073709551615, "stop": ["x", "yz"], "stop_token_ids": [3],
                 "ignore_eos": True, "include_stop_str_in_output": True, "logprobs": 2, "stream": True,
                 "stream_options": {"include_usage": True}, "cache_salt": "a", "prefix_cache": False,
                 "speculative": {"draft_provider": "suffix_cache", "full_verification": True}},
        "ids": {"prompt": [[1, 2, 3]], "max_completion_tokens": 3, "speculative": {"enabled": False}},
        "no_ops": {"prompt": "a", "n": 1, "best_of": 1, "presence_penalty": 0, "frequency_penalty": 0, "logit_bias": {},
                   "min_tokens": 0, "guided_json": None, "echo": False, "suffix": "", "tool_choice": "none",
                   "response_format": {"type": "text"}, "add_special_tokens": True},
        "refused": {"prompt": "a", "guided_json": {"type": "object"}, "min_tokens": 3},
        "numbers": {"prompt": "a", "temperature": 2.5, "top_k": -1, "seed": -1, "max_tokens": 4,
                    "max_completion_tokens": 5},
        "long_prompt": {"prompt": "x" * 1100},
    }
    for name, body in completions.items():
        write(t, f"completion_{name}.json", "0" + json.dumps(body))
    write(t, "completion_1e400.json", '0{"prompt": "a", "temperature": 1e400, "seed": 1e19}')
    chats = {
        "plain": {"messages": [{"role": "system", "content": "be brief"}] + user, "logprobs": True, "top_logprobs": 2},
        "parts": {"messages": [{"role": "developer", "content": [{"type": "text", "text": "a"},
                                                                  {"type": "text", "text": "b"}]}] + user},
        "kwargs": {"messages": user, "chat_template_kwargs": {"enable_thinking": False}, "add_generation_prompt": False},
        "continue": {"messages": user + [{"role": "assistant", "content": "The answer is"}],
                     "continue_final_message": True},
        "bad_role": {"messages": [{"role": "robot", "content": "x"}], "stop": ["a", "b", "c", "d", "e"]},
        "tool": {"messages": user + [{"role": "assistant", "content": None}, {"role": "tool", "content": "42"}]},
    }
    for name, body in chats.items():
        write(t, f"chat_{name}.json", "1" + json.dumps(body))


def main():
    shared = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data"))
    if not os.path.isdir(shared):
        print(f"make_seeds: {shared} not found: seeds from the shared data are skipped", file=sys.stderr)
    for target in ("fuzz_engine_config", "fuzz_model_config", "fuzz_special_tokens", "fuzz_tokenizer_json",
                   "fuzz_safetensors_header", "fuzz_safetensors_index", "fuzz_openai_request"):
        shutil.rmtree(os.path.join(CORPUS, target), ignore_errors=True)
    engine_config_seeds()
    model_config_seeds(shared)
    special_tokens_seeds(shared)
    tokenizer_json_seeds(shared)
    safetensors_seeds()
    openai_request_seeds()
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(CORPUS) for f in fs)
    count = sum(len(fs) for _, _, fs in os.walk(CORPUS))
    print(f"make_seeds: {count} seeds, {total} bytes in {os.path.relpath(CORPUS, ROOT)}")


if __name__ == "__main__":
    main()
