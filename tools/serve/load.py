#!/usr/bin/env python3
"""Load generator for `drift serve` (or any OpenAI-compatible server).

It runs N concurrent streaming completions through the official `openai` client, over MT-Bench
questions or given prompts, with max_tokens drawn from a list. It can turn speculation off for a
share of the requests (DriftEngine's `speculative` extension field). It prints the request count,
output tokens/s, TTFT and inter-chunk latency percentiles, and the server's /metrics counters
over the run.

  python3 tools/serve/load.py --base-url http://127.0.0.1:8000 --clients 64 --requests 64 \\
      --max-tokens 16,64,128 --no-spec-share 0.5 --dataset ../shared/datasets/mt_bench.jsonl

Needs `openai` (pip install openai); the venv tests/server/run_openai_api_test.sh makes has it.
"""
import argparse
import concurrent.futures
import json
import time
import urllib.request

import openai


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))] if values else float("nan")


def load_prompts(args):
    if args.prompt:
        return args.prompt
    prompts = []
    with open(args.dataset) as f:
        for line in f:
            record = json.loads(line)
            turns = record.get("turns") or record.get("prompt")
            prompts.append(turns[0] if isinstance(turns, list) else turns)
    return prompts


def counters(base_url):
    """The server's /metrics samples without labels (name -> value)."""
    text = urllib.request.urlopen(base_url + "/metrics", timeout=30).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def one_request(client, args, prompt, max_tokens, speculate):
    extra = {} if speculate else {"speculative": {"enabled": False}}
    start, stamps, tokens = time.time(), [], 0
    stream = client.completions.create(model=args.model, prompt=prompt, max_tokens=max_tokens, temperature=0,
                                       stream=True, stream_options={"include_usage": True}, extra_body=extra)
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if any(choice.text for choice in chunk.choices):
            stamps.append(time.time())
    return start, stamps, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--api-key", default="unused")
    parser.add_argument("--model", default=None, help="default: the server's first /v1/models entry")
    parser.add_argument("--clients", type=int, default=64, help="concurrent streams")
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--max-tokens", default="16,64,128", help="comma-separated, cycled over requests")
    parser.add_argument("--no-spec-share", type=float, default=0.0, help="share of requests with speculation off")
    parser.add_argument("--dataset", default="../shared/datasets/mt_bench.jsonl")
    parser.add_argument("--prompt", action="append", help="prompt text (repeatable; overrides --dataset)")
    args = parser.parse_args()

    client = openai.OpenAI(base_url=args.base_url + "/v1", api_key=args.api_key, max_retries=0, timeout=600)
    args.model = args.model or client.models.list().data[0].id
    prompts = load_prompts(args)
    lengths = [int(n) for n in args.max_tokens.split(",")]
    off_every = round(1 / args.no_spec_share) if args.no_spec_share > 0 else 0
    jobs = [(prompts[i % len(prompts)], lengths[i % len(lengths)], not (off_every and i % off_every == off_every - 1))
            for i in range(args.requests)]

    before = counters(args.base_url)
    wall = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
        results = list(pool.map(lambda job: one_request(client, args, *job), jobs))
    wall = time.time() - wall
    after = counters(args.base_url)

    tokens = sum(r[2] for r in results)
    ttft = [(r[1][0] - r[0]) * 1000 for r in results if r[1]]
    gaps = [(b - a) * 1000 for r in results for a, b in zip(r[1], r[1][1:])]
    print(f"{len(results)} requests ({sum(1 for j in jobs if not j[2])} without speculation), {args.clients} concurrent: "
          f"{tokens} tokens in {wall:.2f} s = {tokens / wall:.1f} output tokens/s")
    print(f"TTFT ms: p50 {percentile(ttft, .5):.1f}  p90 {percentile(ttft, .9):.1f}  p99 {percentile(ttft, .99):.1f}")
    print(f"inter-chunk ms: p50 {percentile(gaps, .5):.1f}  p90 {percentile(gaps, .9):.1f}  p99 {percentile(gaps, .99):.1f}")
    for name in ("drift_generation_tokens_total", "drift_spec_draft_tokens_total", "drift_spec_accepted_tokens_total",
                 "drift_engine_steps_total"):
        if name in after:
            print(f"{name}: +{after[name] - before.get(name, 0):.0f}")
    if "drift_spec_acceptance_length" in after:
        print(f"drift_spec_acceptance_length (since start): {after['drift_spec_acceptance_length']:.2f}")


if __name__ == "__main__":
    main()
