#!/usr/bin/env bash
# For a machine with an NVIDIA GPU: runs the sanitizer driver (`node scripts/soak.js
# --driver cuda:gpu:0`, described in scripts/soak.js) under NVIDIA's compute-sanitizer,
# memcheck tool with full leak checking, and fails on any error it reports.
#
# The driver allocates device (cuMemAlloc), host (pinned, cuMemHostAlloc) and shared
# (managed, cuMemAllocManaged) memory of odd sizes and alignments on the CUDA device, copies
# to, from and between them synchronously and asynchronously (plain, SharedArrayBuffer and
# pinned destinations; 16 MiB copies, above the 12 MiB threshold where pageable copies go
# through the pinned staging lanes), memsets, makes zero-copy and interface views, converts
# with `copy: true`, frees (also while async copies run), drops objects for the garbage
# collector, copies across contexts, and ends with poolTrim() and every allocation freed, so
# that what the leak check reports at exit was really lost.
#
#   NODE=/path/to/node bash scripts/gpu-sanitize.sh
#
# Environment: NODE (default node), COMPUTE_SANITIZER (default compute-sanitizer, else
# $CUDA_HOME/bin/compute-sanitizer), GPU_DEVICE (default cuda:gpu:0), GPU_SANITIZE_TOOLS
# (default "memcheck"; e.g. "memcheck initcheck synccheck"; memcheck always gets
# --leak-check full), GPU_SANITIZE_ARGS (extra arguments for every tool), DRIVER_ROUNDS
# (default 2), GPU_SANITIZE_KEEP=DIR (keep the logs there), GPU_SANITIZE_API_ERRORS
# (compute-sanitizer's --report-api-errors: explicit, the tool's default, all or no).
# CUDA API calls that return an error count as reported errors too ("Program hit
# CUDA_ERROR_... on CUDA API call to ..."); the summary lists them by call, so that a probe
# the library makes on purpose (if any) is told apart from a memory error.
# Exit: 0 clean, 1 an error was reported or the driver failed, 2 could not run.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
NODE=${NODE:-node}
DEVICE=${GPU_DEVICE:-cuda:gpu:0}
TOOLS=${GPU_SANITIZE_TOOLS:-memcheck}
CS=${COMPUTE_SANITIZER:-}
if [ -z "$CS" ]; then
  if command -v compute-sanitizer >/dev/null 2>&1; then
    CS=compute-sanitizer
  elif [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" ]; then
    CS="${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"
  else
    echo "gpu-sanitize.sh: compute-sanitizer not found (set COMPUTE_SANITIZER or CUDA_HOME)" >&2
    exit 2
  fi
fi
if ! command -v "$NODE" >/dev/null 2>&1 && [ ! -x "$NODE" ]; then
  echo "gpu-sanitize.sh: node not found: set NODE=/path/to/node" >&2
  exit 2
fi
if ! ls "$root"/dpctl-memory.*.node >/dev/null 2>&1; then
  echo "gpu-sanitize.sh: no dpctl-memory.*.node beside index.js: build or copy the addon first" >&2
  exit 2
fi
work=${GPU_SANITIZE_KEEP:-$(mktemp -d)}
mkdir -p "$work"

command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used --format=csv
echo "gpu-sanitize.sh: $("$CS" --version 2>&1 | grep -i version | head -1); node $("$NODE" --version); device $DEVICE; logs in $work"

# The device must be there, or the run proves nothing.
if ! "$NODE" -e "
  const a = require('$root/index.js');
  const d = a.getDevices('$DEVICE');
  if (!d.length) { console.error('gpu-sanitize.sh: no device $DEVICE; found: ' + a.getDevices().map((x) => x.filterString).join(', ') + '; ' + a.getRuntimeDiagnostics().join('; ')); process.exit(1); }
  console.log('gpu-sanitize.sh: ' + d[0].filterString + ' is ' + d[0].name);
"; then
  exit 2
fi

failed=0
for tool in $TOOLS; do
  log="$work/$tool.log"
  out="$work/$tool.out"
  extra=()
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  start=$(date +%s)
  # --error-exitcode: any reported error makes the run fail even if the driver passes.
  "$CS" --tool "$tool" "${extra[@]}" --error-exitcode 86 --print-limit 100 \
    --report-api-errors "${GPU_SANITIZE_API_ERRORS:-explicit}" \
    --log-file "$log" ${GPU_SANITIZE_ARGS:-} \
    "$NODE" --expose-gc "$root/scripts/soak.js" --driver "$DEVICE" >"$out" 2>&1
  status=$?
  elapsed=$(( $(date +%s) - start ))
  cat "$out"
  summary=$(grep -E 'ERROR SUMMARY' "$log" | tail -1)
  leaks=$(grep -E 'LEAK SUMMARY' "$log" | tail -1)
  errors=$(echo "$summary" | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' || true)
  echo "gpu-sanitize.sh: $tool: exit $status after ${elapsed} s; ${summary:-no ERROR SUMMARY line}${leaks:+; $leaks}"
  api=$(grep -oE 'Program hit [A-Z_]+ \(error [0-9]+\)[^"]*"[^"]*" on CUDA API call to [A-Za-z0-9_]+' "$log" | sed -E 's/.*Program hit ([A-Z_]+).* to ([A-Za-z0-9_]+)/\2 -> \1/' | sort | uniq -c)
  [ -n "$api" ] && { echo "gpu-sanitize.sh: $tool: CUDA API calls that returned errors:"; echo "$api"; }
  kinds=$(grep -oE '^========= (Invalid [a-z_ ]+ of size [0-9]+|Leaked [0-9]+ bytes|Uninitialized __global__ memory read|Race reported|Barrier error)' "$log" | sed -E 's/^========= //; s/[0-9]+ bytes/N bytes/; s/size [0-9]+/size N/' | sort | uniq -c)
  [ -n "$kinds" ] && { echo "gpu-sanitize.sh: $tool: reports by kind:"; echo "$kinds"; }
  bad=0
  if [ -z "$summary" ]; then
    echo "gpu-sanitize.sh: $tool printed no summary: did it run? last lines of its log:"
    tail -20 "$log"
    bad=1
  elif [ "${errors:-0}" != 0 ]; then
    bad=1
  fi
  if echo "$leaks" | grep -qE '[1-9][0-9]* bytes leaked'; then bad=1; fi
  [ "$status" -ne 0 ] && bad=1
  grep -q '^driver: [0-9]* passed, 0 failed' "$out" || { echo "gpu-sanitize.sh: $tool: the driver did not report success"; bad=1; }
  if [ "$bad" -ne 0 ]; then
    echo "gpu-sanitize.sh: $tool FAILED; first reports:"
    grep -nE '^========= (Invalid|Program hit|Leaked|Error|Uninitialized|Race|Barrier|Host API|.*error)' "$log" | head -40
    failed=1
  else
    echo "gpu-sanitize.sh: $tool clean"
  fi
done
exit $failed
