#!/usr/bin/env bash
# Installs the `openai` Python SDK, pinned, into a venv under a cargo target directory:
#   <target>/openai-types-venv  (requirements.txt, every dependency pinned)
# golem's Responses tests validate the request bodies golem sends, and the recorded
# responses and events they answer with, against the SDK's types (validate.py).
#
#   tests/openai-types/install.sh [TARGET_DIR]
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target. Idempotent: a stamp with the
# requirements' checksum skips an install that is there already; a lock file serializes
# concurrent runs. The tests run this themselves and fail if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

exec 9>"$target/openai-types-install.lock"
flock 9

dir="$target/openai-types-venv"
stamp="$(sha256sum <"$here/requirements.txt" | cut -d' ' -f1)"
if [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]]; then
    exit 0
fi
echo "installing the openai SDK's types into $dir" >&2
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt" >&2
echo "$stamp" >"$dir/.stamp"
