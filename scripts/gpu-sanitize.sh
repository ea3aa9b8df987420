#!/usr/bin/env bash
# For a machine with an NVIDIA GPU: runs the sanitizer driver (`node scripts/soak.js
# --driver cuda:gpu:0`, described in scripts/soak.js) under NVIDIA's compute-sanitizer,
# memcheck with full leak checking and initcheck, and fails on any error either reports.
#
# The driver allocates device (cuMemAlloc), host (pinned, cuMemHostAlloc) and shared
# (managed, cuMemAllocManaged) memory of odd sizes and alignments on the CUDA device, copies
# to, from and between them synchronously and asynchronously (plain, SharedArrayBuffer and
# pinned destinations; 16 MiB copies, above the 12 MiB threshold where pageable copies go
# through the pinned staging lanes), memsets, makes zero-copy and interface views, converts
# with `copy: true`, frees (also while async copies run), drops objects for the garbage
# collector, copies across contexts, runs kernels (CUDA C through NVRTC, where installed) and
# the UCX transport over loopback (where it loads).
#
# memcheck: the driver ends with live objects of every kind and blocks in the pool's cache
# left on purpose (DRIVER_LEAVE_ALIVE=1): the library gives them back at exit, with the
# staging buffers and scratch, so the leak check must report 0 bytes; the library's own
# exit report (DPCTL_MEMORY_EXIT_REPORT=1: blocks, bytes, staging and scratch still held
# after its exit hook) must say 0 too.
# initcheck: the driver writes every byte before it reads it, so any uninitialized read
# reported is one the library made (its staging, pool blocks, scratch): must be 0. The
# summary groups the reports by CUDA call and by the first dpctl_memory frame of their host
# backtrace. Then a control run (DRIVER_FRESH_READS=only: reads of never-written memory on
# purpose) must be reported, which shows the tool sees such reads here.
#
#   NODE=/path/to/node bash scripts/gpu-sanitize.sh
#
# Environment: NODE (default node), COMPUTE_SANITIZER (default compute-sanitizer, else
# $CUDA_HOME/bin/compute-sanitizer), GPU_DEVICE (default cuda:gpu:0), GPU_SANITIZE_TOOLS
# (default "memcheck initcheck"; e.g. "memcheck initcheck synccheck"; memcheck always gets
# --leak-check full), GPU_SANITIZE_CONTROL (default 1: initcheck's control run; 0 skips it), GPU_SANITIZE_ARGS (extra arguments for every tool), DRIVER_ROUNDS
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
TOOLS=${GPU_SANITIZE_TOOLS:-memcheck initcheck}
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

# Reports of uninitialized reads in a log, by kind of report, CUDA call and the first
# dpctl_memory frame of the host backtrace (which path of the library made the read).
initcheck_summary() {
  awk '
    function flush() { if (head != "") print head " | " call " | " (frame != "" ? frame : (any != "" ? any : "no dpctl_memory frame")) }
    /^========= / && /[Uu]ninitialized/ && !/^=========  / { flush(); head = $0; sub(/^========= /, "", head); gsub(/0x[0-9a-f]+/, "ADDR", head); gsub(/[0-9]+ bytes/, "N bytes", head); call = "?"; frame = ""; any = ""; next }
    head != "" && call == "?" && match($0, /(cu|cuda)[A-Z][A-Za-z0-9_]*/) { call = substr($0, RSTART, RLENGTH) }
    head != "" && frame == "" && match($0, /dpctl_memory::[A-Za-z0-9_:<>]+/) {
      f = substr($0, RSTART, RLENGTH); sub(/::h[0-9a-f]+$/, "", f)
      if (any == "") any = f
      # The first frame above the driver wrappers says which path of the library read.
      if (f !~ /^dpctl_memory::provider::cuda::driver::/) frame = f
    }
    END { flush() }
  ' "$1" | sort | uniq -c | sort -rn
}

failed=0
for tool in $TOOLS; do
  log="$work/$tool.log"
  out="$work/$tool.out"
  extra=()
  envs=(DPCTL_MEMORY_EXIT_REPORT=1)
  [ "$tool" = memcheck ] && { extra=(--leak-check full); envs+=(DRIVER_LEAVE_ALIVE=1); }
  start=$(date +%s)
  # --error-exitcode: any reported error makes the run fail even if the driver passes.
  env "${envs[@]}" "$CS" --tool "$tool" "${extra[@]}" --error-exitcode 86 --print-limit 100 \
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
  # The library's own count of what it still held after its exit hook (last stderr line).
  exitline=$(grep -E '^dpctl-memory exit: ' "$out" | tail -1)
  echo "gpu-sanitize.sh: $tool: library's exit report: ${exitline:-none}"
  if [ "$tool" = memcheck ]; then
    grep -q '^driver: left alive at exit on purpose' "$out" || { echo "gpu-sanitize.sh: memcheck: the driver left nothing alive for the teardown to give back"; bad=1; }
    echo "$exitline" | grep -q '{"blocks":0,"bytes":0,"staging":0,"scratch":0}' || { echo "gpu-sanitize.sh: memcheck: the library still held memory at exit"; bad=1; }
  fi
  if [ "$tool" = initcheck ]; then
    uninit=$(initcheck_summary "$log")
    n=$(echo "$uninit" | awk '{ s += $1 } END { print s + 0 }')
    echo "gpu-sanitize.sh: initcheck: $n uninitialized reads over the driver (which writes before it reads: each is the library's; must be 0)"
    [ -n "$uninit" ] && { echo "gpu-sanitize.sh: initcheck: by report | CUDA call | first dpctl_memory frame:"; echo "$uninit"; bad=1; }
    if [ "${GPU_SANITIZE_CONTROL:-1}" != 0 ]; then
      # The control: reads of never-written memory on purpose must be reported.
      DRIVER_FRESH_READS=only "$CS" --tool initcheck --print-limit 100 --log-file "$work/initcheck-control.log" \
        ${GPU_SANITIZE_ARGS:-} "$NODE" --expose-gc "$root/scripts/soak.js" --driver "$DEVICE" >"$work/initcheck-control.out" 2>&1
      control=$(initcheck_summary "$work/initcheck-control.log")
      cn=$(echo "$control" | awk '{ s += $1 } END { print s + 0 }')
      echo "gpu-sanitize.sh: initcheck control (DRIVER_FRESH_READS=only, $(grep -c 'fresh read on purpose' "$work/initcheck-control.out") reads of fresh memory on purpose): $cn reported"
      [ -n "$control" ] && echo "$control"
      [ "$cn" -gt 0 ] || { echo "gpu-sanitize.sh: initcheck reported none of the deliberate reads: the tool did not see them, so its clean run proves nothing"; bad=1; }
    fi
  fi
  if [ "$bad" -ne 0 ]; then
    echo "gpu-sanitize.sh: $tool FAILED; first reports:"
    grep -nE '^========= (Invalid|Program hit|Leaked|Error|Uninitialized|Race|Barrier|Host API|.*error)' "$log" | head -40
    failed=1
  else
    echo "gpu-sanitize.sh: $tool clean"
  fi
done
exit $failed
