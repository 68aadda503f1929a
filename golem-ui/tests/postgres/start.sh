#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for golem-ui's tests on 127.0.0.1:PORT, its cluster in
# a fresh directory under a cargo target directory, and stops it (and removes the cluster)
# when its standard input closes:
#
#   golem-ui/tests/postgres/start.sh PORT [TARGET_DIR]
#
# Prints `ready postgres://postgres@127.0.0.1:PORT/postgres` on standard output once the
# server accepts connections (trust authentication, loopback only). TARGET_DIR defaults to
# $CARGO_TARGET_DIR, else ./target.
#
# The server's binaries (initdb, pg_ctl, postgres) are looked up on PATH, then under
# /usr/lib/postgresql/*/bin (newest first); when none are found, Debian's `postgresql`
# package is installed with apt-get (a lock file serializes concurrent installs). initdb
# refuses to run as root, so as root the cluster belongs to, and the server runs as, the
# user `nobody`. The tests run this themselves (tests/postgres/mod.rs) and fail if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
port="${1:?usage: start.sh PORT [TARGET_DIR]}"
target="${2:-${CARGO_TARGET_DIR:-$here/../../../target}}"
mkdir -p "$target/tmp"
target="$(cd "$target" && pwd)"

# The directory holding initdb, pg_ctl and postgres, or nothing.
find_bindir() {
    local dir
    for dir in "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")" \
        $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" && -x "$dir/postgres" ]]; then
            echo "$dir"
            return
        fi
    done
}

bindir="$(find_bindir)"
if [[ -z "$bindir" ]]; then
    exec 9>"$target/postgres-install.lock"
    flock 9
    bindir="$(find_bindir)"
    if [[ -z "$bindir" ]]; then
        echo "installing Debian's postgresql package" >&2
        sudo=()
        if [[ "$(id -u)" != 0 ]]; then
            sudo=(sudo -n)
        fi
        "${sudo[@]}" apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
            postgresql >&2
        bindir="$(find_bindir)"
    fi
    exec 9>&-
fi
if [[ -z "$bindir" ]]; then
    echo "no PostgreSQL server binaries (initdb, pg_ctl, postgres) after installing postgresql" >&2
    exit 1
fi

# As root, the cluster is `nobody`'s; its directory must be one `nobody` can reach, and short
# enough for the server's socket path (107 bytes).
as=()
cluster="$target/tmp/postgres-$$"
if [[ "$(id -u)" == 0 ]]; then
    as=(runuser -u nobody --)
fi
mkdir -p "$cluster"
if [[ ${#as[@]} -gt 0 ]]; then
    chown nobody "$cluster"
fi
if ((${#cluster} > 80)) || ! "${as[@]}" test -w "$cluster"; then
    rm -rf "$cluster"
    cluster="$(mktemp -d "${TMPDIR:-/tmp}/golem-ui-postgres.XXXXXX")"
    if [[ ${#as[@]} -gt 0 ]]; then
        chown nobody "$cluster"
    fi
fi

# The server's user may not reach the directory this runs from.
cd "$cluster"

stop() {
    "${as[@]}" "$bindir/pg_ctl" stop -D "$cluster/data" -m immediate -s >/dev/null 2>&1 || true
    rm -rf "$cluster"
}
trap stop EXIT
trap 'exit 1' INT TERM HUP

"${as[@]}" "$bindir/initdb" -D "$cluster/data" -U postgres -A trust -E UTF8 --locale=C \
    --no-sync >"$cluster/initdb.log" 2>&1 || {
    cat "$cluster/initdb.log" >&2
    exit 1
}
# fsync off: a test cluster is thrown away, never recovered.
"${as[@]}" "$bindir/pg_ctl" start -D "$cluster/data" -l "$cluster/server.log" -w -t 60 -s \
    -o "-k $cluster -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" || {
    cat "$cluster/server.log" >&2
    exit 1
}
echo "ready postgres://postgres@127.0.0.1:$port/postgres"
# Runs until the test process closes our standard input (it exits, or is killed).
cat >/dev/null
