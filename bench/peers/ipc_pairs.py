"""The Python side of bench/ipc-pairs.js (CUDA machines with CuPy): a CuPy exporter and a
CuPy child for the exporter/child pairings, and a probe of one handle with the bare
driver through ctypes.

  python3 ipc_pairs.py child REQUESTS ANSWERS   opens and closes each handle requested
  python3 ipc_pairs.py parent CHILD...          exports to the child command CHILD..., its
                                                words {requests} and {answers} the two
                                                FIFOs' paths; prints the microseconds of a
                                                cycle
  python3 ipc_pairs.py probe HEX                the size of the mapping the handle opens,
                                                and open + close in a loop, alone and with
                                                16 more threads that have run
  python3 ipc_pairs.py calls HEX                the runtime's open and close against the
                                                driver's, back to back and with a gap
  python3 ipc_pairs.py per-cpu HEX              open + close on each CPU in turn, twice
  python3 ipc_pairs.py export-probe             probe of a handle CuPy exported here

The requests are bench/ipc-pipe.js's: an op byte, the 64 handle bytes, nbytes (float64).
The timed modes measure with bench/config.js's timing, which bench/ipc-pairs.js passes as
JSON in IPC_PAIRS_TIMING.
"""
import ctypes
import json
import os
import struct
import subprocess
import sys
import statistics
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure  # noqa: E402

REQUEST = 1 + 64 + 8


def per_call_us(fn):
    """Microseconds a call of fn, measured as every bench case is, with the timing
    bench/ipc-pairs.js passes in IPC_PAIRS_TIMING (bench/config.js's)."""
    return measure(fn, json.loads(os.environ["IPC_PAIRS_TIMING"]))["ns"] / 1e3


def cupy_runtime():
    import cupy
    cupy.cuda.Device(0).use()
    return cupy.cuda.runtime


def read_exact(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def child(requests, answers):
    rt = cupy_runtime()
    inp, out = os.open(requests, os.O_RDONLY), os.open(answers, os.O_WRONLY)
    while True:
        request = read_exact(inp, REQUEST)
        if request is None or request[:1] == b"q":
            return
        rt.ipcCloseMemHandle(rt.ipcOpenMemHandle(request[1:65]))
        os.write(out, b"k")


def parent(command):
    rt = cupy_runtime()
    memory = rt.malloc(1 << 20)
    folder = tempfile.mkdtemp()
    requests, answers = os.path.join(folder, "requests"), os.path.join(folder, "answers")
    os.mkfifo(requests)
    os.mkfifo(answers)
    out = os.open(requests, os.O_RDWR)
    paths = {"{requests}": requests, "{answers}": answers}
    process = subprocess.Popen([paths.get(word, word) for word in command])
    inp = os.open(answers, os.O_RDONLY)
    tail = struct.pack("<d", 1 << 20)

    def cycle():
        os.write(out, b"c" + rt.ipcGetMemHandle(memory) + tail)
        if os.read(inp, 1) != b"k":
            raise RuntimeError("the child ended")

    us = per_call_us(cycle)
    os.write(out, b"q" + bytes(REQUEST - 1))
    process.wait()
    print(f"{us:.2f}")


class Handle(ctypes.Structure):
    """The driver's CUipcMemHandle, passed by value."""
    _fields_ = [("reserved", ctypes.c_char * 64)]


def bare_driver(handle):
    """libcuda through ctypes with the first device's primary context current, and the
    handle bytes as the driver's struct."""
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuInit(0)
    device, context = ctypes.c_int(), ctypes.c_void_p()
    cuda.cuDeviceGet(ctypes.byref(device), 0)
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
    cuda.cuCtxSetCurrent(context)
    raw = Handle()
    ctypes.memmove(ctypes.byref(raw), handle, 64)
    return cuda, raw


def spin(us):
    until = time.perf_counter_ns() + us * 1000
    while time.perf_counter_ns() < until:
        pass


def split_us(open_, close, cycles=2000, gap_us=0):
    """Mean microseconds of open_() and of close(opened) over alternating calls, each
    cycle followed by gap_us of spinning (untimed): a message's time between cycles."""
    opening = closing = 0
    for _ in range(cycles):
        t0 = time.perf_counter_ns()
        opened = open_()
        t1 = time.perf_counter_ns()
        close(opened)
        closing += time.perf_counter_ns() - t1
        opening += t1 - t0
        if gap_us:
            spin(gap_us)
    return {"openUs": round(opening / cycles / 1e3, 2), "closeUs": round(closing / cycles / 1e3, 2)}


def driver_calls(cuda, raw, flags=1):
    """(open, close) of the handle `raw` through the driver `cuda` (bare_driver's):
    open() returns the mapped address, close(address) unmaps it; each raises on failure."""
    def open_():
        pointer = ctypes.c_uint64()
        status = cuda.cuIpcOpenMemHandle_v2(ctypes.byref(pointer), raw, flags)
        if status:
            raise RuntimeError(f"cuIpcOpenMemHandle: {status}")
        return pointer.value

    def close(pointer):
        status = cuda.cuIpcCloseMemHandle(ctypes.c_uint64(pointer))
        if status:
            raise RuntimeError(f"cuIpcCloseMemHandle: {status}")

    return open_, close


def probe(handle):
    cuda, raw = bare_driver(handle)
    open_, close = driver_calls(cuda, raw)
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    mapped = open_()
    cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(mapped))
    close(mapped)

    def open_close():
        close(open_())

    alone = per_call_us(open_close)
    parts = split_us(open_, close)
    with open("/proc/self/maps") as maps:
        mappings = sum(1 for _ in maps)
    threads_before = len(os.listdir("/proc/self/task"))
    stop = threading.Event()

    def run_then_sleep():
        until = time.perf_counter() + 0.01
        while time.perf_counter() < until:
            pass
        stop.wait()

    threads = [threading.Thread(target=run_then_sleep) for _ in range(16)]
    for thread in threads:
        thread.start()
    time.sleep(0.05)
    crowded = per_call_us(open_close)
    stop.set()
    for thread in threads:
        thread.join()
    print(json.dumps({"mappedBytes": size.value, "openCloseUs": alone, **parts, "threads": threads_before,
                      "mappings": mappings, "openCloseWith16ThreadsUs": crowded}))


def calls(handle):
    """The runtime's open and close (CuPy's calls) against the driver's, in one process on
    one handle, in alternating rounds, back to back and with a gap after each cycle; and
    whether the runtime's close leaves the mapping in place."""
    rt = cupy_runtime()
    cuda, raw = bare_driver(handle)
    base, size = ctypes.c_uint64(), ctypes.c_size_t()

    ways = {
        "driverLazyPeer": driver_calls(cuda, raw, 1),
        "driverNoFlags": driver_calls(cuda, raw, 0),
        "runtime": (lambda: rt.ipcOpenMemHandle(handle), rt.ipcCloseMemHandle),
    }

    def attempt(fn):
        try:
            return fn()
        except Exception as exc:  # a way that fails is reported, the others still run
            return {"error": f"{type(exc).__name__}: {exc}"}

    rounds = []
    for _ in range(3):
        rounds.append({
            name: attempt(lambda: {"backToBack": split_us(o, c), "gap15us": split_us(o, c, gap_us=15)})
            for name, (o, c) in ways.items()
        })
    # After the runtime's close: is the mapping still there, and can the driver open the handle?
    pointer = rt.ipcOpenMemHandle(handle)
    rt.ipcCloseMemHandle(pointer)
    after_close = cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pointer))
    open_, close = driver_calls(cuda, raw, 1)
    reopened = attempt(lambda: close(open_()))
    print(json.dumps({"addressRangeStatusAfterRuntimeClose": after_close, "driverOpenAfterRuntimeClose": reopened or "ok",
                      "rounds": rounds}))


def per_cpu(handle):
    """The bare driver's open and close back to back on each CPU this process may use,
    the process moving from one to the next, twice: medians of 400 cycles each, in us."""
    open_, close = driver_calls(*bare_driver(handle))
    cpus = sorted(os.sched_getaffinity(0))
    passes = {cpu: [] for cpu in cpus}
    for _ in range(2):
        for cpu in cpus:
            os.sched_setaffinity(0, {cpu})
            time.sleep(0.002)
            opening, closing = [], []
            for _ in range(400):
                t0 = time.perf_counter_ns()
                mapped = open_()
                t1 = time.perf_counter_ns()
                close(mapped)
                opening.append(t1 - t0)
                closing.append(time.perf_counter_ns() - t1)
            passes[cpu].append([round(statistics.median(opening) / 1e3, 1), round(statistics.median(closing) / 1e3, 1)])
    print(json.dumps(passes))


def export_probe():
    rt = cupy_runtime()
    memory = rt.malloc(1 << 20)
    handle = rt.ipcGetMemHandle(memory).hex()
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "probe", handle], capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    rt.free(memory)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "child":
        child(sys.argv[2], sys.argv[3])
    elif mode == "parent":
        parent(sys.argv[2:])
    elif mode == "probe":
        probe(bytes.fromhex(sys.argv[2]))
    elif mode == "per-cpu":
        per_cpu(bytes.fromhex(sys.argv[2]))
    elif mode == "calls":
        calls(bytes.fromhex(sys.argv[2]))
    elif mode == "export-probe":
        export_probe()
    else:
        sys.exit(f"unknown mode {mode}")
