#!/usr/bin/env bash
# Builds and runs every test suite (GoogleTest via CTest). Test data comes from DRIFT_TEST_DATA,
# default ../shared beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${DRIFT_TEST_JOBS:-$(nproc)}" "$@"
