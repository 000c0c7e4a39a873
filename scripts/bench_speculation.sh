#!/usr/bin/env bash
# Speculative decoding on stories260K with MT-Bench prompts, measured side by side in ONE drift
# bench process: no speculation, the ngram provider, and the test oracle at corruption 0, 0.3,
# 0.7 and 1.0 (chains of depth 4, and trees 3 wide at corruption 0.3). The oracle replays the
# plain run's outputs, written by a first bench run (--write-reference).
#   bash scripts/bench_speculation.sh [--num-prompts N] [--max-new-tokens N] ...   (extra args go to drift bench)
set -euo pipefail
cd "$(dirname "$0")/.."
drift=build/apps/drift
oracle=build/tests/speculation/plugins/libdrift_oracle.so
[[ -x $drift && -f $oracle ]] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
shared=$(realpath "${DRIFT_TEST_DATA:-../shared}")
out=$(mktemp -d)

# The plain run's outputs: what the oracle replays.
"$drift" bench --config configs/stories260k.toml --write-reference "$out/reference.jsonl" --log-level warn "$@" > /dev/null

config="$out/speculation.toml"
sed -e "s#\.\./\.\./shared#$shared#" configs/stories260k-ngram.toml > "$config"
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
