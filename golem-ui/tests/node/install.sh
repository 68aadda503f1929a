#!/usr/bin/env bash
# Installs the npm clients golem-ui's tests drive (`ai`, `@ag-ui/client`) and the browser
# driver of the chat-web example's test (`puppeteer-core`, no browser of its own), pinned by
# package-lock.json, under a cargo target directory, with the test scripts beside them:
#
#   golem-ui/tests/node/install.sh [TARGET_DIR]     -> TARGET_DIR/ui-node
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target. Idempotent: a stamp with the
# lock file's checksum skips `npm ci` when the packages are installed already; a lock file
# serializes concurrent runs. tests/clients.rs runs this itself and fails if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
dir="$target/ui-node"

exec 9>"$target/ui-node-install.lock"
flock 9

stamp="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$dir/.stamp" || "$(cat "$dir/.stamp")" != "$stamp" ]]; then
    echo "installing golem-ui's npm clients into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    # --ignore-scripts: nothing runs at install time; the clients are plain JavaScript.
    npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error >&2
    echo "$stamp" >"$dir/.stamp"
fi
# The scripts import the packages by name, so they run from beside node_modules.
cp "$here"/*.mjs "$dir/"
