#!/usr/bin/env bash
# Install everything linewatch's demo and tests need, from a fresh clone:
#   .venv          the project with all extras (Flink, training, runtimes, services, governance, dev)
#   .venv-triton   PyTriton's bundled tritonserver, for the Triton tests and local serving
#   .venv-services the service install without Flink (tritonclient gRPC works there)
# Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"linewatch needs Python 3.11, found {sys.version}"'

if ! command -v java >/dev/null 2>&1; then
    echo "Java is missing (PyFlink needs a JDK/JRE 11 or 17)." >&2
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless
    else
        echo "Install OpenJDK 17 (e.g. apt-get install openjdk-17-jre-headless) and re-run." >&2
        exit 1
    fi
fi

# The alerts tests publish to a real MQTT broker on 127.0.0.1:1883 (.ci/run starts it when missing).
if ! command -v mosquitto >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq mosquitto || echo "could not install mosquitto: the MQTT tests need a broker on 127.0.0.1:1883" >&2
fi

# The web app's browser tests drive Debian's Chromium with Playwright (no Playwright browser download).
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq chromium || echo "could not install chromium: the web browser tests need /usr/bin/chromium" >&2
    else
        echo "Chromium is missing: apt-get install chromium (the web browser tests need /usr/bin/chromium)." >&2
    fi
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[all]"

PYTHON="$PYTHON" bash scripts/setup_model_venvs.sh all
echo "linewatch installed: .venv/bin/linewatch --help"
