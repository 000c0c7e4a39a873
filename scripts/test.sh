#!/usr/bin/env bash
# Builds and runs every test suite (GoogleTest via CTest). Test data comes from DRIFT_TEST_DATA,
# default ../shared beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
data="${DRIFT_TEST_DATA:-$(cd .. && pwd)/shared}"
if [ ! -d "$data" ] && [ "${DRIFT_REQUIRE_TEST_DATA:-0}" != "1" ]; then
  echo "test: $data (DRIFT_TEST_DATA) is missing: the tests that need its goldens and models are skipped"
fi
cd build
ctest --output-on-failure -j "${DRIFT_TEST_JOBS:-$(nproc)}" "$@"
