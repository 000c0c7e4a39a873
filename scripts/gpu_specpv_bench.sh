#!/usr/bin/env bash
# SpecPV on the GPU (docs/specpv.md): the random-weight Llama-3-8B shape at one long context per
# call, `drift bench --scenario single-<ctx>` with four variants side by side in one process --
#   off, off     plain decoding, twice: the first prefills the context into the prefix cache, the
#                second (like every later variant) adopts it and recomputes only the last page, so
#                all measured variants round alike; its outputs are the oracle's reference;
#   oracle/full  the oracle draft provider replaying them (chains of 5, corruption 0.1: tau ~ 4.05
#                measured, near EAGLE-3's published acceptance) verified against the whole context;
#   oracle       the same drafts verified by specpv (partial views, refreshes). SpecPV is lossy and
#                random weights attend nearly uniformly over the whole context, so its outputs part
#                from plain decoding at once and the oracle's drafts are rejected from there on; it
#                keeps drafting (follow_position) so every step still verifies a chain of 5: the
#                partial and full verify steps and the refreshes are timed in steady state, and
#                scripts/specpv_projection.py combines them with the full-verification acceptance;
# the prefix cache keeps the prompt's KV between variants (--warm-cache), so the context is
# prefilled once. Decode speed is 1000 / TPOT (the prefill is not part of it); the verify-step
# times of full and partial verification are the bench's `verify` line.
#   usage: gpu_specpv_bench.sh 16k|32k|64k
# Needs shared/ in the checkout (tools/golden/make_shape.py, datasets/); writes under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.deps/rt:${LD_LIBRARY_PATH:-}
export DRIFT_TEST_DATA=${DRIFT_TEST_DATA:-$PWD/tests/data}
drift=./build/apps/drift
oracle=$PWD/build/tests/speculation/plugins/libdrift_oracle.so
ckpt=${CKPT:-/tmp/llama3-8b}
ctx=${1:?usage: $0 16k|32k|64k}
new_tokens=${NEW_TOKENS:-256}
work=$(mktemp -d)
quiet() { grep -vE "\] \[info\]|prompts$" >&2; }

[ -f "$ckpt/config.json" ] || python3 shared/tools/golden/make_shape.py llama3-8b "$ckpt" 2>&1 | tail -1
python3 - "$work/prompts.jsonl" <<'PY'
import json, random, sys
random.seed(11)
with open(sys.argv[1], "w") as f:
    for _ in range(16):
        f.write(json.dumps({"prompt_ids": [random.randrange(1000, 120000) for _ in range(random.randint(64, 200))]}) + "\n")
PY
ref=$work/reference.jsonl
: > "$ref"  # the oracle reads it again once the "off" variant has written it
config() {  # $1: reference file
  cat <<TOML
schema_version = 1
[model]
path = "$ckpt"
[engine]
backend = "cuda"
max_batch_size = 1
max_num_tokens = 65536
max_seq_len = 66560
[kv_cache]
block_size = 16
memory_fraction = ${MEMORY_FRACTION:-0.6}
[speculative]
enabled = true
draft_provider = "oracle"
verification = "specpv"
max_draft_tokens = 5
[[plugins]]
name = "prefix_cache"
[[plugins]]
name = "oracle"
path = "$oracle"
[plugins.oracle]
reference = "$1"
corruption = 0.1
branching = 1
depth = 5
follow_position = true
[[plugins]]
name = "specpv"
[plugins.specpv]
${SPECPV_SETTINGS:-}
TOML
}
config "$ref" > "$work/specpv.toml"
echo "== single-$ctx: plain, oracle verified fully, oracle verified by specpv ($new_tokens tokens)"
"$drift" bench --config "$work/specpv.toml" --scenario "single-$ctx" --prompts "$work/prompts.jsonl" \
  --max-new-tokens "$new_tokens" --ignore-eos --variants off,off,config/full,config --warm-cache \
  --write-reference "$ref" --json "$out/specpv_$ctx.json" 2> >(quiet)
