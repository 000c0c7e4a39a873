#!/usr/bin/env bash
# Structured output's cost on the GPU (docs/structured_output.md#cost): the Llama-3-8B-shape
# checkpoint (made if missing, as gpu_bench.sh does) with the Llama 3 tokenizer and
# configs/schemas/person.json. Each round runs a fresh process per arm with the variants off,
# off/grammar (cold: the schema's masks are computed as the requests go) and off/grammar again
# (warm: every mask cached), at each batch size. Arms: `workers` (the default mask workers, each
# new schema explored from its compilation on), `unexplored` (the workers with [engine]
# grammar_explored_masks = 0: masks only one token ahead) and `none` ([engine] grammar_threads =
# 0). The tokens/s ratio against off is the cost.
#   ROUNDS=3 BATCHES="1 32" ARMS="workers unexplored none" scripts/gpu_structured_bench.sh
# Needs build/apps/drift, build/plugins and .deps carried, shared/tools/make_shape.py.
source "$(dirname "$0")/gpu_env.sh"
llama3_checkpoint
tok=$PWD/tests/data/tokenizers/llama3
[ -f "$tok/tokenizer.json" ] || tar xJf "$tok/tokenizer.json.tar.xz" -C "$tok"
# The checkpoint with a tokenizer (structured output needs one) beside it, links to its files:
# the other scripts' runs of $ckpt stay without one.
model=${ckpt%/}-tokenizer
mkdir -p "$model"
ln -sf "$ckpt"/* "$model"/
rm -f "$model"/tokenizer*.json  # never written through a link into $ckpt
cp "$tok/tokenizer.json" "$tok/tokenizer_config.json" "$model/"
printf 'schema_version = 1\n[engine]\nbackend = "cuda"\ngrammar_threads = 0\n' > "$out/no_workers.toml"
printf 'schema_version = 1\n[engine]\nbackend = "cuda"\ngrammar_explored_masks = 0\n' > "$out/unexplored.toml"
echo "cores: $(nproc)"
for round in $(seq "${ROUNDS:-3}"); do
  for batch in ${BATCHES:-1 32}; do
    for arm in ${ARMS:-workers unexplored none}; do
      config=()
      [ "$arm" = none ] && config=(--config "$out/no_workers.toml")
      [ "$arm" = unexplored ] && config=(--config "$out/unexplored.toml")
      echo "== round $round, batch $batch, $arm"
      ./build/apps/drift bench "${config[@]}" --model "$model" --backend cuda --json-schema configs/schemas/person.json \
        --variants off,off/grammar,off/grammar --ignore-eos --max-new-tokens 128 --concurrency "$batch" \
        --num-prompts "$batch" 2>&1 | grep -E "^/|^structured|error"
    done
  done
done
