#!/usr/bin/env bash
# Builds DriftEngine with AddressSanitizer + UndefinedBehaviorSanitizer (and the libFuzzer
# targets, tests/fuzz) in ./build-san with clang, then runs the whole ctest suite there, the
# fuzz targets' seed/regression replays included. Arguments go to ctest (e.g. -R golden);
# `--build-only` just configures and builds (scripts/fuzz.sh uses it).
# Env: DRIFT_BUILD_JOBS (build parallelism), DRIFT_TEST_JOBS (ctest -j), ASAN_OPTIONS /
# UBSAN_OPTIONS (appended to the defaults below, so they win).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

if [ ! -f build-san/build.ninja ]; then
  cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DDRIFT_SANITIZE=ON -DDRIFT_FUZZ=ON
fi
cmake --build build-san -j "${DRIFT_BUILD_JOBS:-$(nproc)}"
[ "${1:-}" = "--build-only" ] && exit 0

# Any report is fatal, with a symbolized stack; leaks are errors (LeakSanitizer runs at exit).
# Reports go to files under build-san/sanitizer-reports/ (log_path), not to the failing test's
# output: tests also run `drift` as a child process and some only expect it to fail, so a report
# there would otherwise pass unseen. Every report found after the run is printed and fails this
# script. Suppressions, if ever needed, belong in tests/sanitizers/ with a comment saying why.
reports=$root/build-san/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
common="halt_on_error=1:print_stacktrace=1:log_path=$reports/report:log_exe_name=1"
asan="$common:abort_on_error=0:detect_leaks=1:strict_string_checks=1"
asan+=":check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1"
export ASAN_OPTIONS="$asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="$common:report_error_type=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && command -v llvm-symbolizer >/dev/null; then
  export ASAN_SYMBOLIZER_PATH=$(command -v llvm-symbolizer)
fi

cd "$root/build-san"
status=0
ctest --output-on-failure -j "${DRIFT_TEST_JOBS:-$(nproc)}" "$@" || status=$?

shopt -s nullglob
found=("$reports"/*)
if [ ${#found[@]} -gt 0 ]; then
  echo
  echo "sanitize: ${#found[@]} sanitizer report(s) in ${reports#$root/}:"
  for f in "${found[@]}"; do
    echo "---- ${f#$root/}"
    cat "$f"
  done
  echo "sanitize: summaries:"
  grep -h "SUMMARY:" "${found[@]}" | sort | uniq -c
  [ $status -ne 0 ] || status=1
fi
exit $status
