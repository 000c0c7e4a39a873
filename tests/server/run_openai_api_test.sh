#!/usr/bin/env bash
# Runs tests/server/openai_api_test.py in a venv holding its PyPI packages (requirements.txt),
# made once in .venv/server-tests beside the checkout's other venvs (shared by build/ and
# build-san/). Usage: run_openai_api_test.sh DRIFT_EXE [unittest args]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${DRIFT_SERVER_TEST_VENV:-$root/.venv/server-tests}"
requirements="$root/tests/server/requirements.txt"
stamp="$venv/.requirements"
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" || {
    echo "run_openai_api_test: installing $requirements from PyPI into $venv failed" >&2
    exit 1
  }
  cp "$requirements" "$stamp"
fi
exec "$venv/bin/python" "$root/tests/server/openai_api_test.py" --drift "$1" --root "$root" "${@:2}"
