#!/usr/bin/env bash
# Runs a driver exercising every API path of the addon under valgrind's memcheck, on the
# SYCL OpenCL CPU device, and fails on invalid reads, invalid writes, invalid frees or uses
# of freed memory with a frame in OUR code (the addon, dpctl-memory.*.node, or the SYCL
# shim, dpctl_memory_shim.so) anywhere in the error's stack. `npm run sanitize` runs it.
#
# The driver (`node scripts/soak.js --driver`, described there) allocates every kind (odd
# sizes, alignments), reads and writes `buffer` through TypedArrays and DataViews, makes
# zero-copy views, interface views (`new Class(exporter)`, asUsmMemory, offsets and
# sub-ranges) and `copy: true` conversions, copies between kinds and contexts, sync and
# async (plain, SharedArrayBuffer and USM destinations; sizes above the 4 MiB threshold of
# the parallel host copy), memsets, frees (also during async copies), uses freed objects
# (ERR_USM_FREED), drops objects for the garbage collector (gc(), so the finalizers run
# under memcheck), and reads poolStats()/poolTrim(), devices and errors.
#
# Noise from node, V8 and the SYCL/OpenCL runtime (uninitialised conditions, syscall
# parameters, leaks at exit) is suppressed by scripts/valgrind.supp; every suppression is
# anchored on a top frame outside our objects. Invalid accesses are never suppressed: an
# invalid access in foreign code is printed as a warning (with its stack) but only fails
# the run when one of our frames is on the stack.
#
# Environment: NODE (default node), VALGRIND (default valgrind), VALGRIND_ARGS (extra
# arguments), VALGRIND_STRICT=1 (also fail on uninitialised values and definite leaks in
# our frames), VALGRIND_KEEP=DIR (keep the XML and log there), VALGRIND_DEVICE (default
# opencl:cpu), DRIVER_ROUNDS (default 2). Exit: 0 clean, 1 errors in our frames (or the
# driver failed), 2 could not run. `valgrind.sh --selftest` checks that an error in our
# frames does fail the run (a C program named like the addon; exit 0 when it is caught).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
NODE=${NODE:-node}
VALGRIND=${VALGRIND:-valgrind}

if ! command -v "$VALGRIND" >/dev/null 2>&1; then
  echo "valgrind.sh: $VALGRIND not found (apt-get install valgrind)" >&2
  exit 2
fi
if ! command -v "$NODE" >/dev/null 2>&1; then
  echo "valgrind.sh: $NODE not found" >&2
  exit 2
fi
addon=$(ls "$root"/dpctl-memory.*.node 2>/dev/null | head -1)
if [ -z "$addon" ]; then
  echo "valgrind.sh: no dpctl-memory.*.node: build the addon first (npm run build)" >&2
  exit 2
fi

work=${VALGRIND_KEEP:-$(mktemp -d)}
mkdir -p "$work"
xml="$work/memcheck.xml"
log="$work/memcheck.log"
out="$work/driver.out"

# `valgrind.sh --selftest`: the control. A small C program, named like our addon so that
# its frames count as ours, reads freed memory and writes past a block; the run must FAIL.
selftest=0
command=("$NODE" --expose-gc "$root/scripts/soak.js" --driver "${VALGRIND_DEVICE:-opencl:cpu}")
if [ "${1:-}" = --selftest ]; then
  selftest=1
  cat >"$work/selftest.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) static int use_after_free(void) {
  char *p = malloc(64);
  memset(p, 1, 64);
  free(p);
  return p[10];            /* read of freed memory */
}
__attribute__((noinline)) static void overflow(void) {
  char *p = malloc(16);
  p[16] = 2;               /* write one past the block */
  free(p);
}
int main(void) {
  int v = use_after_free();
  overflow();
  printf("driver: 1 passed, 0 failed (%d)\n", v & 0);
  return 0;
}
C
  if ! cc -g -O0 -o "$work/dpctl-memory.selftest.node" "$work/selftest.c"; then
    echo "valgrind.sh: --selftest needs a C compiler (cc)" >&2
    exit 2
  fi
  command=("$work/dpctl-memory.selftest.node")
fi

echo "valgrind.sh: $($VALGRIND --version) on $addon; node $("$NODE" --version)"
if [ "$selftest" = 1 ]; then
  echo "valgrind.sh: self-test: $work/dpctl-memory.selftest.node must be caught (a read of freed memory, a write past a block)"
else
  echo "valgrind.sh: driver: node --expose-gc scripts/soak.js --driver ${VALGRIND_DEVICE:-opencl:cpu} (DRIVER_ROUNDS=${DRIVER_ROUNDS:-2}); logs in $work"
fi
start=$(date +%s)
# --smc-check: V8 writes and patches machine code. --trace-children=no: the runtime may
# spawn helpers (not ours). Leaks: only definite ones, reported in the XML for the count.
"$VALGRIND" --tool=memcheck \
  --suppressions="$root/scripts/valgrind.supp" \
  --smc-check=all-non-file \
  --error-limit=no \
  --num-callers=40 \
  --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
  --xml=yes --xml-file="$xml" --log-file="$log" \
  ${VALGRIND_ARGS:-} \
  "${command[@]}" >"$out" 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
echo "valgrind.sh: node exited with $status after ${elapsed} s under memcheck"

# Classify every error of the XML by kind, and by whether a frame of ours is on its stack.
"$NODE" - "$xml" "$elapsed" "${VALGRIND_STRICT:-0}" <<'PARSE'
const fs = require('node:fs');
const [xmlPath, elapsed, strict] = process.argv.slice(2);
let xml = '';
try { xml = fs.readFileSync(xmlPath, 'utf8'); } catch (e) { console.log(`valgrind.sh: no XML output (${e.message})`); process.exit(3); }
const OURS = /dpctl-memory\.[^/]*\.node|dpctl_memory_shim\.so|dpctl_memory::|dpm_/;
const INVALID = /^(InvalidRead|InvalidWrite|InvalidFree|MismatchedFree|InvalidJump|InvalidMemPool|Overlap|FishyValue|ClientCheck)$/;
const UNINIT = /^(UninitCondition|UninitValue|SyscallParam)$/;
const errors = [...xml.matchAll(/<error>([\s\S]*?)<\/error>/g)].map((m) => {
  const body = m[1];
  const kind = (/<kind>([^<]*)<\/kind>/.exec(body) || [])[1] || '?';
  const what = ((/<what>([\s\S]*?)<\/what>/.exec(body) || /<text>([\s\S]*?)<\/text>/.exec(body) || [])[1] || '').trim();
  const stacks = [...body.matchAll(/<stack>([\s\S]*?)<\/stack>/g)].map((s) => [...s[1].matchAll(/<frame>([\s\S]*?)<\/frame>/g)].map((f) => {
    const get = (tag) => ((new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(f[1]) || [])[1] || '');
    return { fn: get('fn'), obj: get('obj'), file: get('file'), line: get('line') };
  }));
  const aux = [...body.matchAll(/<auxwhat>([\s\S]*?)<\/auxwhat>/g)].map((x) => x[1].trim());
  const ours = stacks.some((frames) => frames.some((f) => OURS.test(f.obj) || OURS.test(f.fn)));
  const freed = aux.some((x) => /free'd|freed/.test(x));
  return { kind, what, stacks, aux, ours, freed };
});
const suppressed = [...xml.matchAll(/<pair>\s*<count>(\d+)<\/count>\s*<name>([^<]*)<\/name>\s*<\/pair>/g)].map((m) => [m[2], Number(m[1])]);
const count = (pred) => errors.filter(pred).length;
const show = (e) => {
  const frames = (e.stacks[0] || []).slice(0, 14).map((f) => `      ${f.fn || '???'} (${(f.obj || '').split('/').pop()}${f.file ? ` ${f.file}:${f.line}` : ''})`).join('\n');
  return `  ${e.kind}${e.ours ? ' [OUR FRAMES]' : ''}: ${e.what}\n${e.aux.map((x) => `    ${x}`).join('\n')}\n${frames}`;
};
const oursInvalid = errors.filter((e) => e.ours && (INVALID.test(e.kind) || e.freed));
const oursUninit = errors.filter((e) => e.ours && UNINIT.test(e.kind));
const oursLeak = errors.filter((e) => e.ours && /^Leak_/.test(e.kind));
const foreignInvalid = errors.filter((e) => !e.ours && (INVALID.test(e.kind) || e.freed));
const byKind = {};
for (const e of errors) byKind[e.kind] = (byKind[e.kind] || 0) + 1;
console.log(`valgrind.sh: ${errors.length} unsuppressed errors (${Object.entries(byKind).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}); ${suppressed.reduce((s, [, n]) => s + n, 0)} suppressed (${suppressed.length} suppressions used)`);
console.log(`valgrind.sh: in our frames: ${oursInvalid.length} invalid accesses/frees or uses of freed memory, ${oursUninit.length} uses of uninitialised values, ${oursLeak.length} definite leaks; outside them: ${foreignInvalid.length} invalid accesses`);
for (const e of oursInvalid) console.log(show(e));
for (const e of oursUninit) console.log(show(e));
for (const e of oursLeak) console.log(show(e));
if (foreignInvalid.length) {
  console.log('valgrind.sh: warning: invalid accesses outside our frames (node, V8 or the runtime):');
  for (const e of foreignInvalid.slice(0, 10)) console.log(show(e));
}
for (const e of errors.filter((x) => !x.ours && !INVALID.test(x.kind) && !x.freed).slice(0, 5)) console.log(`valgrind.sh: note: not suppressed (add to valgrind.supp if it is noise):\n${show(e)}`);
const fail = oursInvalid.length > 0 || (strict === '1' && (oursUninit.length > 0 || oursLeak.length > 0));
console.log(`valgrind.sh: ${fail ? 'FAILED' : 'clean'} (${elapsed} s under memcheck)`);
process.exit(fail ? 1 : 0);
PARSE
verdict=$?
if [ "$selftest" = 1 ]; then
  if [ "$verdict" -eq 1 ]; then
    echo "valgrind.sh: self-test passed: the errors in our frames fail the run"
    exit 0
  fi
  echo "valgrind.sh: self-test FAILED: errors in our frames were not caught (verdict $verdict)"
  exit 1
fi
if [ "$verdict" -eq 3 ]; then
  echo "valgrind.sh: memcheck produced no XML; its log:" >&2
  tail -50 "$log" >&2
  exit 2
fi
if [ "$status" -ne 0 ]; then
  echo "valgrind.sh: the driver failed under memcheck (exit $status)"
  tail -30 "$log"
  exit 1
fi
if ! grep -q '^driver: [0-9]* passed, 0 failed' "$out"; then
  echo "valgrind.sh: the driver did not report success"
  exit 1
fi
exit "$verdict"
