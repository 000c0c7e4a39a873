#!/usr/bin/env bash
# Builds and runs every test suite (GoogleTest via CTest). The test data ships in the checkout
# (tests/data, models/, datasets/); DRIFT_TEST_DATA points the tests at another copy. Only the GPU
# suites skip, where no GPU exists.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${DRIFT_TEST_JOBS:-$(nproc)}" "$@"
