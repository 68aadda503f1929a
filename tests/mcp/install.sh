#!/usr/bin/env bash
# Installs the MCP servers golem's tests start, pinned, under a cargo target directory:
#   <target>/mcp-node  @modelcontextprotocol/server-everything and its dependencies
#                      (`npm ci` from package-lock.json)
#   <target>/mcp-venv  a Python venv with `mcp` and its dependencies (requirements.txt)
#
#   tests/mcp/install.sh [TARGET_DIR] [node|python|all]
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target. Idempotent: a stamp with the
# lock file's checksum skips what is installed already; a lock file serializes concurrent
# runs. The tests run this themselves (tests/mcp/servers.rs) and fail if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../target}}"
what="${2:-all}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

exec 9>"$target/mcp-install.lock"
flock 9

install_node() {
    local dir="$target/mcp-node" stamp
    stamp="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]]; then
        return
    fi
    echo "installing the npm MCP servers into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    # --ignore-scripts: nothing runs at install time; the servers are plain JavaScript.
    npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error >&2
    echo "$stamp" >"$dir/.stamp"
}

install_python() {
    local dir="$target/mcp-venv" stamp
    stamp="$(cat "$here/requirements.txt" | sha256sum | cut -d' ' -f1)"
    if [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]]; then
        return
    fi
    echo "installing the Python MCP server's packages into $dir" >&2
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt" >&2
    echo "$stamp" >"$dir/.stamp"
}

case "$what" in
node) install_node ;;
python) install_python ;;
all)
    install_node
    install_python
    ;;
*)
    echo "usage: $0 [TARGET_DIR] [node|python|all]" >&2
    exit 2
    ;;
esac
