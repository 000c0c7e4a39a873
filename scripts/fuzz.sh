#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each (default 60), one after the other,
# from ./build-san (built first through scripts/sanitize.sh --build-only if needed), then replays
# tests/fuzz/regressions/<target>/, and prints per target: executions, final cov/ft, crashes.
# Exit status 1 when any target found a crash (or a regression input fails again).
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Each run starts from a fresh copy of tests/fuzz/corpus/<target> in build-san/fuzz/<target>/
# (libFuzzer adds the inputs it finds there; the checked-in corpus is never modified). A crashing
# input lands in build-san/fuzz/<target>/artifacts/; copy it to tests/fuzz/regressions/<target>/
# to keep it as a regression. Logs: build-san/fuzz/<target>/fuzz.log and replay.log.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))

bash scripts/sanitize.sh --build-only

# The same sanitizer settings as the test suite; leaks are findings too.
export ASAN_OPTIONS="halt_on_error=1:print_stacktrace=1:detect_leaks=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && command -v llvm-symbolizer >/dev/null; then
  export ASAN_SYMBOLIZER_PATH=$(command -v llvm-symbolizer)
fi

# Per target: the longest input worth trying and the dictionary.
declare -A max_len=(
  [fuzz_engine_config]=4096 [fuzz_model_config]=4096 [fuzz_special_tokens]=8192
  [fuzz_tokenizer_json]=65536 [fuzz_safetensors_header]=4096 [fuzz_safetensors_index]=4096
  [fuzz_openai_request]=4096)
declare -A dict=([fuzz_engine_config]=toml.dict)

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.cc; do targets+=("$(basename "$src" .cc)"); done
fi

failed=0
rows=()
for t in "${targets[@]}"; do
  bin=$root/build-san/tests/fuzz/$t
  work=$root/build-san/fuzz/$t
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -r "tests/fuzz/corpus/$t/." "$work/corpus/" 2>/dev/null || true
  echo "fuzz: $t for ${seconds}s (log: ${work#$root/}/fuzz.log)"
  status=ok
  "$bin" "$work/corpus" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 \
         -max_len="${max_len[$t]:-4096}" -dict="tests/fuzz/${dict[$t]:-json.dict}" \
         -artifact_prefix="$work/artifacts/" >"$work/fuzz.log" 2>&1 || status=crash
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$work/fuzz.log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
  crashes=$(find "$work/artifacts" -type f | wc -l)
  if [ "$status" = crash ]; then
    [ "$crashes" -gt 0 ] || crashes="error"  # failed without an input, e.g. a bad option
    failed=1
    echo "fuzz: $t FAILED; $(grep -m1 -E 'SUMMARY|ERROR: libFuzzer|==ERROR' "$work/fuzz.log" || tail -1 "$work/fuzz.log")"
    for a in "$work"/artifacts/*; do [ -f "$a" ] && echo "      input: ${a#$root/}"; done
  fi

  # Regression inputs: each run once; a failure here is a crash that came back.
  regress="-"
  mapfile -t inputs < <(find "tests/fuzz/regressions/$t" -type f 2>/dev/null | sort)
  if [ ${#inputs[@]} -gt 0 ]; then
    if "$bin" -timeout=60 -rss_limit_mb=2048 "${inputs[@]}" >"$work/replay.log" 2>&1; then
      regress="${#inputs[@]} ok"
    else
      regress="FAIL"
      failed=1
      echo "fuzz: $t regression replay FAILED (log: ${work#$root/}/replay.log)"
    fi
  fi
  rows+=("$(printf '%-26s %10s %7s %8s %12s %8s %12s' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
            "$crashes" "$regress")")
done

echo
printf '%-26s %10s %7s %8s %12s %8s %12s\n' target executions cov ft corpus crashes regressions
for r in "${rows[@]}"; do echo "$r"; done
exit $failed
