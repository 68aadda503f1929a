#!/usr/bin/env bash
# Installs the Restate server golem-restate's tests start, pinned, under a cargo target
# directory:
#   <target>/restate-node  @restatedev/restate-server (`npm ci` from package-lock.json);
#                          the binary is node_modules/@restatedev/restate-server-<os>-<cpu>/bin/restate-server
#
#   golem-restate/tests/restate/install.sh [TARGET_DIR]
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target. Idempotent: a stamp with the
# lock file's checksum skips what is installed already; a lock file serializes concurrent
# runs. The tests run this themselves (tests/restate/server.rs) and fail if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

exec 9>"$target/restate-install.lock"
flock 9

dir="$target/restate-node"
stamp="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]]; then
    exit 0
fi
echo "installing the Restate server into $dir" >&2
rm -rf "$dir"
mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
# --ignore-scripts: nothing runs at install time (it skips the analytics postinstall); the
# server is a static binary in the package for this platform.
npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error >&2
echo "$stamp" >"$dir/.stamp"
