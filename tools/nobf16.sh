#!/usr/bin/env bash
# Run a command on the code paths of a CPU without bf16 arithmetic, on one that has it (issue 62's test-time target):
# /proc/cpuinfo without avx512_bf16/amx_bf16 (so fastperf's `cpu_has_bf16` and the tests take the no-bf16 path) and
# oneDNN limited to AVX2. Needs root (a private mount namespace). It emulates the code paths, not a slower CPU.
# Leave ATen's ISA alone: with ATEN_CPU_CAPABILITY=avx2, torch.compile (2.14.1) gave wrong results here and its cached
# kernels crashed later processes run without it (clear /tmp/torchinductor_$USER after such a run).
# e.g. tools/nobf16.sh bash -c 'nbdev-test --n-workers 1 && pytest -q tests'
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: tools/nobf16.sh COMMAND [ARGS...]" >&2; exit 2; }
info=$(mktemp); sed -E 's/ (avx512_bf16|amx_bf16)//g' /proc/cpuinfo > "$info"
exec unshare -m bash -c 'mount --bind "$0" /proc/cpuinfo && rm -f "$0" && ONEDNN_MAX_CPU_ISA=AVX2 exec "$@"' "$info" "$@"
