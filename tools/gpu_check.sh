#!/usr/bin/env bash
# The whole GPU check in one command (issue 14). On a GPU machine of the device tool, from the project root:
#   tools/gpu_check.sh            (results to $OUT; wheels from .whl/, made here by ../shared/device/wheels.sh)
# Anywhere else: tools/gpu_check.sh OUTDIR [--cpu]. All options: tools/gpu_check.sh --help
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-$(command -v python3 || command -v python)}
exec "$PY" tools/gpu_check.py "$@"
