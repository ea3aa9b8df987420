"""Timing shared by the Python peers: the same algorithm as bench/lib.js."""
import json
import math
import statistics
import sys
import time

KIB = 1024
MIB = 1024 * KIB


def size_label(n):
    if n % MIB == 0:
        return f"{n // MIB}MiB"
    if n % KIB == 0:
        return f"{n // KIB}KiB"
    return f"{n}B"


def _batch(fn, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return time.perf_counter_ns() - t0


def measure(fn, timing):
    """Median per-call time in ns of `repeats` timed batches, after warm-ups."""
    for _ in range(timing["warmupCalls"]):
        fn()
    target = timing["batchTargetMs"] * 1e6
    max_batch = timing["maxBatch"]
    n = 1
    while True:
        elapsed = max(_batch(fn, n), 1)
        if elapsed >= target or n >= max_batch:
            break
        n = min(max_batch, max(n + 1, min(n * 100, math.ceil(n * target / elapsed * 1.1))))
    for _ in range(timing["warmupBatches"]):
        _batch(fn, n)
    samples = [_batch(fn, n) / n for _ in range(timing["repeats"])]
    return {"ns": statistics.median(samples), "min_ns": min(samples), "batch": n, "samples": samples}


def make_runner(results, timing):
    """run(case_id, fn): measures fn into results[case_id], or records its error."""

    def run(case_id, fn):
        try:
            results[case_id] = measure(fn, timing)
        except Exception as exc:
            results[case_id] = {"error": f"{type(exc).__name__}: {exc}"}

    return run


def load_config():
    return json.loads(sys.argv[1])


def emit(obj):
    sys.stdout.write("\n@@BENCH-JSON@@" + json.dumps(obj) + "\n")
    sys.stdout.flush()
