#!/usr/bin/env bash
# Installs the OTLP receiver golem-otel's tests send spans to, pinned, under a cargo target
# directory:
#   <target>/oteltap-venv  a Python venv with PyPI `oteltap` and its dependencies
#                          (requirements.txt)
#
#   golem-otel/tests/install.sh [TARGET_DIR]
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else the workspace's ./target. Idempotent: a
# stamp with requirements.txt's checksum skips an install that is there already; a lock
# file serializes concurrent runs. The tests run this themselves (tests/otlp.rs) and fail
# if it fails. Prints the venv's python on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

exec 9>"$target/oteltap-install.lock"
flock 9

dir="$target/oteltap-venv"
stamp="$(sha256sum <"$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -f "$dir/.stamp" || "$(cat "$dir/.stamp")" != "$stamp" ]]; then
    echo "installing oteltap into $dir" >&2
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps \
        -r "$here/requirements.txt" >&2
    echo "$stamp" >"$dir/.stamp"
fi
echo "$dir/bin/python"
