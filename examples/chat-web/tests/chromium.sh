#!/usr/bin/env bash
# Prints the path of a headless Chromium for the chat-web browser test: Debian's
# `chromium-headless-shell`, installed with apt-get when it is missing.
#
#   examples/chat-web/tests/chromium.sh [TARGET_DIR]
#
# The binary is looked up where Debian's package puts it (/usr/lib/chromium/), then on PATH
# (`chromium-headless-shell`, `chrome-headless-shell`). When none is found, the package
# is installed (as root, or with `sudo -n`; a lock file under TARGET_DIR serializes
# concurrent installs, and apt waits for another apt's lock). TARGET_DIR defaults to
# $CARGO_TARGET_DIR, else ./target. The test (tests/browser.rs) runs this itself and fails
# if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

find_chromium() {
    local candidate
    # Debian's binary itself first: /usr/bin/chromium-headless-shell is a shell script that
    # runs it as a child, which a driver that kills the browser would leave running.
    for candidate in /usr/lib/chromium/chromium-headless-shell \
        "$(command -v chromium-headless-shell 2>/dev/null || true)" \
        "$(command -v chrome-headless-shell 2>/dev/null || true)"; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            echo "$candidate"
            return
        fi
    done
}

chromium="$(find_chromium)"
if [[ -z "$chromium" ]]; then
    exec 9>"$target/chromium-install.lock"
    flock 9
    chromium="$(find_chromium)"
    if [[ -z "$chromium" ]]; then
        echo "installing Debian's chromium-headless-shell package" >&2
        sudo=()
        if [[ "$(id -u)" != 0 ]]; then
            sudo=(sudo -n)
        fi
        "${sudo[@]}" apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
            -o DPkg::Lock::Timeout=300 --no-install-recommends chromium-headless-shell >&2
        chromium="$(find_chromium)"
    fi
    exec 9>&-
fi
if [[ -z "$chromium" ]]; then
    echo "no headless Chromium binary after installing chromium-headless-shell" >&2
    exit 1
fi
echo "$chromium"
