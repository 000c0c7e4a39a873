#!/usr/bin/env python3
"""Makes a small tokenizer.json of GPT-OSS's form and records what Hugging Face does with it.

GPT-OSS's tokenizer (o200k_harmony, 201,088 ids) is a byte-level BPE whose pre-tokenizer is a
Sequence of a Split on the o200k regex (letters split by case class, contractions in any case,
digits in runs of at most three, punctuation runs taking trailing newlines and slashes) and a
ByteLevel without its own regex, with the harmony special tokens (<|start|>, <|channel|>,
<|message|>, <|end|>, <|return|>, <|call|>, <|constrain|>, ...) as added tokens. Its 27 MB file
is not in any package this project can fetch, so this script trains a 2,000-entry BPE of exactly
that form (HF tokenizers' BpeTrainer on the repository's own prompt and tokenizer texts) and adds
the harmony special tokens in o200k_harmony's order and spacing (199998 + k there, vocab + k
here). The tokenizer.json structure, not the vocabulary, is what an engine's code depends on.

It writes:
- tests/data/tokenizers/o200k-style/tokenizer.json and tokenizer_config.json (the harmony chat
  template of tests/data/chat_templates/openai-gpt-oss-120b.jinja, eos <|return|>, pad
  <|endoftext|>, no BOS);
- tests/data/golden/tokenizers/o200k-style.jsonl: {"text", "ids", "decoded"} per line
  (add_special_tokens=False; decoded with skip_special_tokens=False) for the tokenizer golden
  texts, the edge strings of tests/core/tokenizer/hf_edge_cases.py and harmony text with special
  tokens inline;
- tests/data/tokenizers/o200k-style/pre_tokens.jsonl: the pre-tokenizer's pieces of the same texts
  (pre_tokenize_str, byte-level alphabet), which depend on the regex and not on the vocabulary;
- tests/data/tokenizers/o200k-style/harmony_chats.json: conversations with transformers'
  apply_chat_template text and ids (tokenize=True), strftime_now pinned to 2026-07-26 as
  tools/chat_templates/record_expected.py pins it.

Command (from the repository root; recorded with tokenizers 0.23.3, transformers 5.25.0):
    TZ=UTC /tmp/hfenv/bin/python tools/gptoss/make_o200k_style_tokenizer.py
"""
import datetime
import json
import sys
from pathlib import Path

import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
import transformers
import transformers.utils.chat_template_utils as ctu

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "tokenizers" / "o200k-style"
GOLDEN = REPO / "tests" / "data" / "golden" / "tokenizers" / "o200k-style.jsonl"
TEMPLATE = REPO / "tests" / "data" / "chat_templates" / "openai-gpt-oss-120b.jinja"
sys.path.insert(0, str(REPO / "tests" / "core" / "tokenizer"))
import hf_edge_cases  # noqa: E402  (its TEXTS)

# o200k's pre-tokenizer pattern, as GPT-OSS's tokenizer.json writes it.
O200K_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
VOCAB_SIZE = 2000
# o200k_harmony's special tokens from id 199998 on; None marks a reserved id (<|reserved_N|>).
HARMONY_SPECIALS = ["<|startoftext|>", "<|endoftext|>", None, None, "<|return|>", "<|constrain|>", None,
                    "<|channel|>", "<|start|>", "<|end|>", "<|message|>", None, None, None, "<|call|>"]
FIXED_NOW = datetime.datetime(2026, 7, 26, 12, 0, 0)  # local time; run with TZ=UTC


class _FixedDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW if tz is None else FIXED_NOW.replace(tzinfo=datetime.timezone.utc).astimezone(tz)


def training_texts():
    texts = [json.loads(line)["turns"][0] for line in open(REPO / "datasets" / "mt_bench.jsonl")]
    for name in ("llama3", "qwen3"):
        texts += [json.loads(line)["text"] for line in open(REPO / "tests/data/golden/tokenizers" / f"{name}.jsonl")]
    return texts


def build_tokenizer():
    tok = Tokenizer(models.BPE(ignore_merges=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(O200K_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_texts(), trainer)
    base = tok.get_vocab_size()
    specials = []
    for k, name in enumerate(HARMONY_SPECIALS):
        content = name or f"<|reserved_{199998 + k}|>"
        specials.append(tokenizers.AddedToken(content, special=True, normalized=False))
    tok.add_special_tokens(specials)
    assert tok.token_to_id("<|startoftext|>") == base
    return tok


def golden_texts():
    texts = [json.loads(line)["text"] for line in open(REPO / "tests/data/golden/tokenizers/llama3.jsonl")]
    texts += hf_edge_cases.TEXTS
    texts += [
        "<|start|>user<|message|>What is 2+2?<|end|><|start|>assistant",
        "<|channel|>analysis<|message|>We need to add.<|end|>",
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
        "text<|return|>after", "<|reserved_200000|><|endoftext|>", "<|start|", "<|message|>>", "I'D'VE DON'T WON'T",
        "ÉCOLE école ÀÉÎÕÜ", "camelCaseWords and HTTPServer", "path/to/file\n\nnext", "x = 1234567;\r\n",
    ]
    return texts


CHATS = [
    {"messages": [{"role": "user", "content": "What is the capital of France?"}]},
    {"messages": [{"role": "system", "content": "You are terse."},
                  {"role": "user", "content": "Hi!"},
                  {"role": "assistant", "content": "Hello.", "thinking": "Greet back."},
                  {"role": "user", "content": "Count to 12345, please."}],
     "kwargs": {"reasoning_effort": "high"}},
    {"messages": [{"role": "developer", "content": "Answer in JSON."},
                  {"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "tool_calls": [{"type": "function", "function": {
                      "name": "get_weather", "arguments": {"city": "Paris"}}}]},
                  {"role": "tool", "content": "{\"temp\": 21}"}],
     "tools": [{"type": "function", "function": {
         "name": "get_weather", "description": "Current weather for a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]},
]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    tok.save(str(OUT / "tokenizer.json"))
    template = TEMPLATE.read_text()
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 131072,
              "bos_token": "<|startoftext|>", "eos_token": "<|return|>", "pad_token": "<|endoftext|>",
              "add_bos_token": False, "chat_template": template}
    (OUT / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")

    with open(GOLDEN, "w") as f:
        for text in golden_texts():
            ids = tok.encode(text, add_special_tokens=False).ids
            f.write(json.dumps({"text": text, "ids": ids,
                                "decoded": tok.decode(ids, skip_special_tokens=False)}, ensure_ascii=False) + "\n")

    with open(OUT / "pre_tokens.jsonl", "w") as f:
        for text in golden_texts():
            pieces = [piece for piece, _ in tok.pre_tokenizer.pre_tokenize_str(text)]
            f.write(json.dumps({"text": text, "pieces": pieces}, ensure_ascii=False) + "\n")

    ctu.datetime = _FixedDatetime  # the template prints the current date (strftime_now)
    hf = transformers.AutoTokenizer.from_pretrained(str(OUT))
    chats = []
    for chat in CHATS:
        for generation_prompt in (False, True):
            kwargs = dict(chat.get("kwargs", {}), tools=chat.get("tools"), add_generation_prompt=generation_prompt)
            text = hf.apply_chat_template(chat["messages"], tokenize=False, **kwargs)
            ids = hf.apply_chat_template(chat["messages"], tokenize=True, return_dict=False, **kwargs)
            assert ids == tok.encode(text, add_special_tokens=False).ids
            chats.append(dict(chat, add_generation_prompt=generation_prompt, text=text, ids=ids))
    (OUT / "harmony_chats.json").write_text(json.dumps(chats, indent=1, ensure_ascii=False) + "\n")
    print(f"{tok.get_vocab_size()} ids; {len(golden_texts())} golden lines; {len(chats)} chats; tokenizers "
          f"{tokenizers.__version__}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
