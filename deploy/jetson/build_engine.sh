#!/usr/bin/env bash
# trtexec equivalent of build_engine.py: build a TensorRT engine ON the Jetson that runs it.
# UNTESTED in CI (no GPU/TensorRT there). trtexec ships with JetPack: /usr/src/tensorrt/bin/trtexec
#
# Usage: deploy/jetson/build_engine.sh ONNX SAMPLE_DIMS
#   ONNX:        e.g. MODEL_DIR/student.int8.tensorrt.onnx (symmetric QDQ: --int8 uses its scales);
#                the engine is written next to it with the .engine suffix
#   SAMPLE_DIMS: one sample's shape joined by x, e.g. 1x120x160 (thermal) or 1x64x101 (audio log-mel)
# Env: INPUT_NAME=input MIN_BATCH=1 OPT_BATCH=8 MAX_BATCH=32 WORKSPACE_MIB=1024
#      TIMING_CACHE=/var/cache/linewatch/timing.cache TRTEXEC=/usr/src/tensorrt/bin/trtexec
set -euo pipefail

ONNX="${1:?usage: $0 ONNX SAMPLE_DIMS}"
DIMS="${2:?give the dims of one sample, e.g. 1x120x160}"
INPUT_NAME="${INPUT_NAME:-input}"
MIN_BATCH="${MIN_BATCH:-1}" OPT_BATCH="${OPT_BATCH:-8}" MAX_BATCH="${MAX_BATCH:-32}"
WORKSPACE_MIB="${WORKSPACE_MIB:-1024}"
TIMING_CACHE="${TIMING_CACHE:-/var/cache/linewatch/timing.cache}"
TRTEXEC="${TRTEXEC:-$(command -v trtexec || echo /usr/src/tensorrt/bin/trtexec)}"

ENGINE="${ONNX%.onnx}.engine"
[[ -f "$ONNX" ]] || { echo "no $ONNX: export/quantize the model first" >&2; exit 1; }
PRECISION=(--fp16)
[[ "$(basename "$ONNX")" == *int8* ]] && PRECISION=(--int8 --fp16)  # INT8 scales come from the QDQ nodes
mkdir -p "$(dirname "$TIMING_CACHE")"

# --memPoolSize sizes are MiB when no unit is given (TensorRT 8.5+ and 10.x).
"$TRTEXEC" \
    --onnx="$ONNX" \
    --saveEngine="$ENGINE" \
    "${PRECISION[@]}" \
    --timingCacheFile="$TIMING_CACHE" \
    --memPoolSize=workspace:"$WORKSPACE_MIB" \
    --minShapes="$INPUT_NAME:${MIN_BATCH}x$DIMS" \
    --optShapes="$INPUT_NAME:${OPT_BATCH}x$DIMS" \
    --maxShapes="$INPUT_NAME:${MAX_BATCH}x$DIMS" \
    --skipInference
echo "wrote $ENGINE"
