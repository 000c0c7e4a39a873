#!/usr/bin/env python3
"""Writes tests/data/smollm2/*.json[l] from llama.cpp (see tools/smollm2/README.md).

Called by tools/smollm2/record_llama_cpp.sh (which builds llama.cpp and the recorder and writes the
F32 copy of the GGUF). Needs python3 with jinja2 (to render the GGUF's chat template as
transformers' apply_chat_template does).

  record_llama_cpp.py --tokenize BIN/llama-tokenize --greedy BUILD/llama_cpp_greedy \
      --gguf SmolLM2-135M-Instruct.Q4_1.gguf --gguf-f32 F32.gguf \
      --mt-bench ../shared/datasets/mt_bench.jsonl --out tests/data/smollm2
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import jinja2

# llama-tokenize flags: raw ids, no BOS (the GGUF says tokenizer.ggml.add_bos_token = false anyway),
# the file's bytes verbatim (no escape processing), special-token text parsed as special tokens
# (llama-tokenize's default; stated explicitly by recording parse_special below).
TOKENIZE_FLAGS = ["--ids", "--no-bos", "--no-escape", "--log-disable"]

EDGE_CASES = [
    "12345",
    "3.14159",
    "1,000,000 and 2024-01-31",
    "  leading spaces",
    "trailing spaces   ",
    "multiple     spaces   between words",
    "line one\nline two\n\nline four\n",
    "\n\n\n",
    "tab\tseparated\tvalues\t",
    "Café naïve résumé déjà vu — Ångström",
    "北京是中国的首都。東京は日本の首都です。",
    "안녕하세요 세계",
    "Emoji: 😀🎉👍🏽 and ❤️",
    "don't I'll we're they've she'd it's",
    "DON'T I'LL",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) { sum += x[i]; }",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>text after a special token",
    "<|im_start",
    "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct?x=1&y=2",
    "MixedCASE camelCaseWords snake_case_words",
    "a",
    " ",
]

RAW_PROMPTS = [
    "The capital of France is",
    "Once upon a time, there was a little",
    "def fibonacci(n):\n",
    "The three primary colors are",
    "Water boils at a temperature of",
    "In 1492, Christopher Columbus",
    "Here is a list of the planets in our solar system:\n1.",
    "Photosynthesis is the process by which",
]

GREEDY_TOKENS = 48
CHAT_QUESTION = "What is the capital of France?"
CHAT_MAX_TOKENS = 64


def run_tokenize(tokenize_bin, gguf, text):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        out = subprocess.run([tokenize_bin, "-m", gguf, "-f", path] + TOKENIZE_FLAGS, check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode()
    finally:
        os.unlink(path)
    lines = [line for line in out.splitlines() if line.startswith("[")]
    if len(lines) != 1:
        sys.exit(f"unexpected llama-tokenize output for {text!r}: {out!r}")
    return json.loads(lines[0])


def run_greedy(greedy_bin, gguf, threads, requests, extra=()):
    inp = "".join(json.dumps(r) + "\n" for r in requests)
    out = subprocess.run([greedy_bin, "--model", gguf, "--threads", str(threads), *extra], input=inp.encode(),
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    results = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(results) == len(requests)
    return results


def chat_prompt(template, question):
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)  # as transformers renders chat templates
    return env.from_string(template).render(messages=[{"role": "user", "content": question}],
                                            add_generation_prompt=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenize", required=True)
    ap.add_argument("--greedy", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--gguf-f32", required=True, help="the same GGUF dequantized to F32 (gguf_to_f32.py)")
    ap.add_argument("--mt-bench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--command", default="tools/smollm2/record_llama_cpp.sh")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    mt_bench = [json.loads(line) for line in open(args.mt_bench, encoding="utf-8") if line.strip()]

    # tokenize.jsonl: every turn of every MT-Bench question, then the edge cases.
    texts = [(f"mt_bench/{q['question_id']}/turn{i}", t) for q in mt_bench for i, t in enumerate(q["turns"])]
    texts += [(f"edge/{i}", t) for i, t in enumerate(EDGE_CASES)]
    with open(os.path.join(args.out, "tokenize.jsonl"), "w", encoding="utf-8") as f:
        for name, text in texts:
            ids = run_tokenize(args.tokenize, args.gguf, text)
            f.write(json.dumps({"name": name, "text": text, "ids": ids, "parse_special": True, "add_bos": False},
                               ensure_ascii=False) + "\n")
    print(f"tokenize.jsonl: {len(texts)} texts")

    template = subprocess.run([args.greedy, "--model", args.gguf, "--print-chat-template"], check=True,
                              stdout=subprocess.PIPE).stdout.decode()

    # greedy.jsonl: raw prompts, then chat prompts from the first MT-Bench question of each category.
    firsts = {}
    for q in mt_bench:
        firsts.setdefault(q["category"], q)
    prompts = [(f"raw/{i}", p) for i, p in enumerate(RAW_PROMPTS)]
    prompts += [(f"chat/mt_bench/{q['question_id']}", chat_prompt(template, q["turns"][0])) for q in firsts.values()]
    requests = [{"name": name, "prompt": p, "prompt_ids": run_tokenize(args.tokenize, args.gguf, p),
                 "n_predict": GREEDY_TOKENS, "stop_at_eog": False} for name, p in prompts]
    chat_prompt_text = chat_prompt(template, CHAT_QUESTION)
    chat_request = {"name": "chat_capital", "prompt": chat_prompt_text,
                    "prompt_ids": run_tokenize(args.tokenize, args.gguf, chat_prompt_text),
                    "n_predict": CHAT_MAX_TOKENS, "stop_at_eog": True}
    recorder = f"llama_cpp_greedy --threads {args.threads}"
    tokenizer = f"prompt_ids from llama-tokenize {' '.join(TOKENIZE_FLAGS)}"
    # Two runs: the Q4_1 GGUF itself (llama.cpp's Q4_1 x Q8_1 dot products, f16 KV cache), and the
    # same GGUF dequantized to F32 with an fp32 KV cache -- the very weights of our fp32 checkpoint.
    runs = [("", args.gguf, [], f"{recorder} --model {os.path.basename(args.gguf)}"),
            ("_f32", args.gguf_f32, ["--kv-f32"],
             f"{recorder} --kv-f32 --model {os.path.basename(args.gguf)} dequantized to F32 by tools/smollm2/gguf_to_f32.py")]
    for suffix, gguf, extra, how in runs:
        results = run_greedy(args.greedy, gguf, args.threads, requests + [chat_request], extra)
        with open(os.path.join(args.out, f"greedy{suffix}.jsonl"), "w", encoding="utf-8") as f:
            for r in results[:-1]:
                f.write(json.dumps({k: r[k] for k in ("name", "prompt", "prompt_ids", "output_ids", "top2_ids", "margins",
                                                      "text")}, ensure_ascii=False) + "\n")
        print(f"greedy{suffix}.jsonl: {len(results) - 1} prompts x {GREEDY_TOKENS} tokens")
        r = results[-1]
        chat = {"question": CHAT_QUESTION, "prompt": r["prompt"], "prompt_ids": r["prompt_ids"],
                "output_ids": r["output_ids"], "top2_ids": r["top2_ids"], "margins": r["margins"], "text": r["text"],
                "command": f"{args.command}  ({how}; {tokenizer}; greedy until an end-of-generation token or"
                           f" {CHAT_MAX_TOKENS} tokens)"}
        # chat_capital.json (what `drift chat` must print) comes from the F32 run: on the Q4_1 GGUF
        # the very first token is a near-tie (see README).
        name = "chat_capital.json" if suffix == "_f32" else "chat_capital_q4_1.json"
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            # One key per line, each value compact.
            f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in chat.items())
                    + "\n}\n")
        print(f"{name}: {chat['text']!r}")


if __name__ == "__main__":
    main()
