#!/usr/bin/env bash
# Create the two side virtual environments that the model runtimes need besides the main .venv.
#
#   .venv-triton    PyTriton 0.7.0 (bundled tritonserver 2.51, Python backend) + onnxruntime:
#                   the real Triton server that tests/models/test_triton.py and the bench start.
#   .venv-services  the project WITHOUT the flink extra + tritonclient[grpc,http]: apache-beam
#                   (pulled by apache-flink) caps grpcio < 1.66 and protobuf < 6, which breaks
#                   tritonclient.grpc and tritonclient's model_config_pb2 in the main .venv.
#
# Usage:  scripts/setup_model_venvs.sh [triton|services|all]     (default: all)
# Env:    PYTHON=python3.11 (interpreter for the venvs), VENV_ROOT=<repo root>
#
# Idempotent: each venv carries a stamp with the hash of its requirements (for .venv-services also
# the project's core + services dependencies from pyproject.toml; the project itself is installed
# editable, so code changes need no reinstall); when the stamp matches and a smoke import works,
# nothing is installed (~3 s). Fresh: ~30 s (.venv-triton, ~480 MB), ~55 s (.venv-services, ~550 MB).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_ROOT="${VENV_ROOT:-$REPO_ROOT}"
PYTHON="${PYTHON:-python3.11}"
WHAT="${1:-all}"

TRITON_REQS=("nvidia-pytriton==0.7.0" "onnxruntime>=1.18" "numpy<2")
SERVICES_REQS=("tritonclient[grpc,http]>=2.51" "onnxruntime>=1.18" "numpy<2.2")

stamp_of() {  # stamp_of <extra text...>: hash identifying a venv's wanted contents
    printf '%s\n' "$@" | sha256sum | cut -c1-16
}

project_deps() {  # project_deps <extra>: the pyproject dependencies that the venv installs
    "$PYTHON" - "$REPO_ROOT/pyproject.toml" "$1" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print(sorted(project["dependencies"]), sorted(project["optional-dependencies"].get(sys.argv[2], [])))
PY
}

ensure_venv() {  # ensure_venv <dir> <stamp> <smoke-python-code> <pip args...>
    local dir="$1" stamp="$2" smoke="$3"
    shift 3
    if [[ -f "$dir/.linewatch-stamp" && "$(cat "$dir/.linewatch-stamp")" == "$stamp" ]] \
        && "$dir/bin/python" -c "$smoke" >/dev/null 2>&1; then
        echo "[setup_model_venvs] $dir is up to date (stamp $stamp)"
        return 0
    fi
    local t0=$SECONDS
    echo "[setup_model_venvs] building $dir ..."
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1
    "$dir/bin/python" -m pip install --quiet "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    "$dir/bin/python" -c "$smoke"
    echo "$stamp" >"$dir/.linewatch-stamp"
    echo "[setup_model_venvs] $dir ready in $((SECONDS - t0)) s ($(du -sh "$dir" | cut -f1))"
}

setup_triton() {
    ensure_venv "$VENV_ROOT/.venv-triton" \
        "$(stamp_of triton "${TRITON_REQS[@]}")" \
        "import pytriton, onnxruntime, numpy; from pytriton.triton import Triton" \
        "${TRITON_REQS[@]}"
}

setup_services() {
    ensure_venv "$VENV_ROOT/.venv-services" \
        "$(stamp_of services "${SERVICES_REQS[@]}" "$(project_deps services)")" \
        "import tritonclient.grpc, tritonclient.http, onnxruntime, models.runtime" \
        -e "$REPO_ROOT[services]" "${SERVICES_REQS[@]}"
}

case "$WHAT" in
    triton) setup_triton ;;
    services) setup_services ;;
    all) setup_triton; setup_services ;;
    *) echo "usage: $0 [triton|services|all]" >&2; exit 2 ;;
esac
