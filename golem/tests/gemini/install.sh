#!/usr/bin/env bash
# Installs Google's official Python SDK (PyPI google-genai, pinned in requirements.txt) into
# a venv under a cargo target directory, for validate.py:
#
#   golem/tests/gemini/install.sh [TARGET_DIR]     ->  <target>/gemini-venv
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target. Idempotent: a stamp with the
# requirements' checksum skips an installed venv; a lock file serializes concurrent runs.
# The tests run this themselves (golem/tests/common/gemini.rs) and fail if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

exec 9>"$target/gemini-install.lock"
flock 9

dir="$target/gemini-venv"
stamp="$(sha256sum <"$here/requirements.txt" | cut -d' ' -f1)"
if [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]]; then
    exit 0
fi
echo "installing google-genai into $dir" >&2
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt" >&2
"$dir/bin/python" -c "import google.genai.types" >&2
echo "$stamp" >"$dir/.stamp"
