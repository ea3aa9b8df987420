#!/usr/bin/env bash
# Runs the test suite on a Linux machine with an NVIDIA GPU (any device the addon finds is
# tested; the GPU-only cases run instead of skipping). Needs Node >= 20.4 and the built
# addon: run `npm run build` (or `npm test` once) first, or put a prebuilt
# dpctl-memory.linux-x64-gnu.node beside index.js. Uses cargo for the Rust tests when it is
# installed, or a prebuilt test binary named by DPCTL_MEMORY_CARGO_TEST_BIN; either way the
# cargo tests marked `#[ignore = "needs CUDA"]` run too (--include-ignored), and fail when
# no CUDA device is found. GPU_SUITE_SANITIZE=1 then runs scripts/gpu-sanitize.sh too
# (compute-sanitizer memcheck with its leak check, and initcheck, over the sanitizer driver).
set -uo pipefail
cd "$(dirname "$0")/.."
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used --format=csv
else
  echo "gpu-suite: nvidia-smi not found: is the NVIDIA driver installed?"
fi
node -e "
const m = require('.');
const devices = m.getDevices();
console.log('devices: ' + (devices.map((d) => d.filterString + ' (' + d.name + ')').join(', ') || 'none'));
for (const line of m.getRuntimeDiagnostics()) console.log('  not loaded: ' + line);
if (!devices.some((d) => d.backend === 'cuda')) console.log('gpu-suite: no CUDA device: the GPU cases of ava will skip, those of cargo fail');
" || exit 1
status=0
if [ -n "${DPCTL_MEMORY_CARGO_TEST_BIN:-}" ]; then
  "$DPCTL_MEMORY_CARGO_TEST_BIN" --test-threads=1 --include-ignored || status=1
elif command -v cargo >/dev/null; then
  # The lints scripts/test.js runs first, then the cargo tests with the GPU-only ones.
  cargo fmt --check || status=1
  cargo clippy --release --all-targets -- -D warnings || status=1
  cargo test --release -- --include-ignored || status=1
else
  echo "gpu-suite: cargo not found: running the ava suite only"
fi
# The Rust side ran above (scripts/test.js would run the cargo tests without the ignored ones).
export DPCTL_MEMORY_SKIP_CARGO=1
node scripts/test.js "$@" || status=1
if [ "${GPU_SUITE_SANITIZE:-0}" = 1 ]; then
  NODE="${NODE:-$(command -v node)}" bash scripts/gpu-sanitize.sh || status=1
fi
exit $status
