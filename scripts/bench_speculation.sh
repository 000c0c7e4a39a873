#!/usr/bin/env bash
# Speculative decoding measured side by side in ONE drift bench process: no speculation, the ngram
# provider, and the test oracle at corruption 0, 0.3, 0.7 and 1.0 (chains of depth 4) and 0.3 as
# trees 3 wide. The oracle replays the plain run's outputs, written by a first bench run
# (--write-reference). Default: stories260K with MT-Bench prompts.
#   bash scripts/bench_speculation.sh [drift bench args: --num-prompts N --max-new-tokens N --prompts F ...]
#   BENCH_CONFIG=my.toml bash scripts/bench_speculation.sh ...   (another base config, without [speculative])
set -euo pipefail
cd "$(dirname "$0")/.."
drift=build/apps/drift
oracle=build/tests/speculation/plugins/libdrift_oracle.so
[[ -x $drift && -f $oracle ]] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
base=${BENCH_CONFIG:-configs/stories260k.toml}
out=$(mktemp -d)

# The plain run's outputs: what the oracle replays.
"$drift" bench --config "$base" --write-reference "$out/reference.jsonl" --log-level warn "$@" > /dev/null

# The base config with its model path made absolute, plus the providers.
config="$out/speculation.toml"
model=$(sed -n 's/^path *= *"\(.*\)".*/\1/p' "$base" | head -1)
[[ $model = /* ]] || model=$(realpath "$(dirname "$base")/$model")
sed -e "0,/^path *= *\".*\"/s##path = \"$model\"#" "$base" > "$config"
cat >> "$config" <<TOML

[speculative]
enabled = true
draft_provider = "ngram"
max_draft_tokens = 8

[[plugins]]
name = "ngram"
[plugins.ngram]
min_ngram = 2
TOML
oracle_entry() {  # name corruption branching
  printf '\n[[plugins]]\nname = "%s"\npath = "%s"\n[plugins.%s]\nreference = "%s"\ncorruption = %s\nbranching = %s\ndepth = 4\n' \
    "$1" "$(realpath $oracle)" "$1" "$out/reference.jsonl" "$2" "$3" >> "$config"
}
oracle_entry oracle_c0 0.0 1
oracle_entry oracle_c03 0.3 1
oracle_entry oracle_c07 0.7 1
oracle_entry oracle_c10 1.0 1
oracle_entry oracle_c03_tree 0.3 3

"$drift" bench --config "$config" --variants off,ngram,oracle_c0,oracle_c03,oracle_c07,oracle_c10,oracle_c03_tree \
  --json "$out/bench.json" --log-level warn "$@"
echo "results: $out/bench.json" >&2
