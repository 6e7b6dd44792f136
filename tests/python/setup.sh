#!/usr/bin/env bash
# Creates (or reuses) the Python virtual environment the tests use as real
# clients: .venv-tests/ at the repository root, with the pinned packages of
# tests/python/requirements.txt. Reused as long as the requirements file is
# unchanged (its SHA-256 is kept in the environment); rebuilt otherwise.
# Safe to run from several test processes at once (one lock).
# Prints the environment's python on its last line.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${NSIMAGE_TEST_VENV:-$root/.venv-tests}"
req="$root/tests/python/requirements.txt"
python="${PYTHON:-python3}"
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/python" || "$(cat "$venv/requirements.sha256" 2>/dev/null)" != "$want" ]]; then
    echo "setting up $venv from $req" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-input -r "$req" >&2
    "$venv/bin/python" -m pip check >&2
    echo "$want" >"$venv/requirements.sha256"
fi
echo "$venv/bin/python"
