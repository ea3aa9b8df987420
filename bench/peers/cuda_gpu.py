"""The GPU cases of bench/bench.js through raw CUDA runtime calls (CuPy) and PyTorch, as JSON.

Run by bench.js as `python3 cuda_gpu.py '<config json>'` with the GPU machine's own python3.
Case ids match bench/gpu.js. A peer that does not import is reported missing, not an error.
"""
import json
import os
import struct
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import emit, load_config, make_runner, measure, size_label  # noqa: E402

H2D, D2H, D2D = 1, 2, 3  # cudaMemcpyKind


def device_index(filter_string):
    parts = filter_string.split(":")
    return int(parts[2]) if len(parts) > 2 and parts[2] else 0


def bench_cupy(cfg, timing, np):
    import cupy
    rt = cupy.cuda.runtime
    gpu = cfg["gpu"]
    dev = device_index(gpu["filter"])
    cupy.cuda.Device(dev).use()
    results = {}
    run = make_runner(results, timing)

    props = rt.getDeviceProperties(dev)
    name = props["name"]
    meta = {"cupy": cupy.__version__, "device": name.decode() if isinstance(name, bytes) else name,
            "runtime": rt.runtimeGetVersion(), "driver": rt.driverGetVersion()}

    n = gpu["copySize"]
    lab = size_label(n)
    pinned = rt.hostAlloc(n, 0)
    d1, d2 = rt.malloc(n), rt.malloc(n)
    src = np.ones(n, dtype=np.uint8)  # pageable, touched
    dst = np.zeros(n, dtype=np.uint8)
    try:
        rt.memset(d1, 1, n)
        rt.deviceSynchronize()
        run(f"h2d.pinned.{lab}", lambda: rt.memcpy(d1, pinned, n, H2D))
        run(f"d2h.pinned.{lab}", lambda: rt.memcpy(pinned, d1, n, D2H))
        run(f"h2d.pageable.{lab}", lambda: rt.memcpy(d1, src.ctypes.data, n, H2D))
        run(f"d2h.pageable.{lab}", lambda: rt.memcpy(dst.ctypes.data, d1, n, D2H))

        def d2d():
            rt.memcpy(d2, d1, n, D2D)  # asynchronous to the host for device-to-device
            rt.deviceSynchronize()
        run(f"d2d.{lab}", d2d)
    finally:
        rt.freeHost(pinned)
        rt.free(d1)
        rt.free(d2)

    for n in gpu["midSizes"]:
        lab = size_label(n)
        d = rt.malloc(n)
        src = np.ones(n, dtype=np.uint8)
        dst = np.zeros(n, dtype=np.uint8)
        try:
            run(f"h2d.pageable.{lab}", lambda: rt.memcpy(d, src.ctypes.data, n, H2D))
            run(f"d2h.pageable.{lab}", lambda: rt.memcpy(dst.ctypes.data, d, n, D2H))
        finally:
            rt.free(d)

    try:
        register_cost(rt, gpu, np, results)
    except Exception as exc:
        lab = size_label(gpu["registerSize"])
        results[f"register.{lab}"] = results[f"unregister.{lab}"] = {"error": f"{type(exc).__name__}: {exc}"}

    n = gpu["overheadSize"]
    lab = size_label(n)
    pinned = rt.hostAlloc(n, 0)
    d = rt.malloc(n)
    src = np.ones(n, dtype=np.uint8)
    dst = np.zeros(n, dtype=np.uint8)
    try:
        run(f"overhead.h2d.pinned.{lab}", lambda: rt.memcpy(d, pinned, n, H2D))
        run(f"overhead.h2d.pageable.{lab}", lambda: rt.memcpy(d, src.ctypes.data, n, H2D))
        run(f"overhead.d2h.pageable.{lab}", lambda: rt.memcpy(dst.ctypes.data, d, n, D2H))
    finally:
        rt.freeHost(pinned)
        rt.free(d)

    bench_cupy_kernels(cupy, gpu, np, run)

    free_bytes, _total = rt.memGetInfo()
    for n in gpu["allocSizes"]:
        lab = size_label(n)
        run(f"alloc.device.{lab}", lambda n=n: rt.free(rt.malloc(n)))
        run(f"alloc.host.{lab}", lambda n=n: rt.freeHost(rt.hostAlloc(n, 0)))
        if n * 4 < free_bytes:  # never ask for managed memory the device does not have free
            run(f"alloc.shared.{lab}", lambda n=n: rt.free(rt.mallocManaged(n, 1)))
    bench_cupy_ipc(rt, dev, run, results, timing)
    return {"status": "ok", "meta": meta, "results": results}


def _set_madvise_hugepage(enabled):
    """numpy's switch for madvise(MADV_HUGEPAGE) on large arrays; the previous setting, or None."""
    import importlib
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            return importlib.import_module(name)._set_madvise_hugepage(enabled)
        except (ImportError, AttributeError):
            continue
    return None


def bench_cupy_kernels(cupy, gpu, np, run):
    """RawKernel calls of the same PTX as bench/gpu.js: the empty kernel with and without a
    stream synchronize (our submit waits), and saxpy over the same vectors, synchronized."""
    k = gpu["kernels"]
    ptx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", k["ptx"])
    module = cupy.RawModule(path=ptx)
    empty = module.get_function("empty")
    stream = cupy.cuda.get_current_stream()

    def empty_submit():
        empty((1,), (1,), ())
        stream.synchronize()
    run("kernel.empty_submit", empty_submit)
    run("kernel.empty_launch", lambda: empty((1,), (1,), ()))
    stream.synchronize()
    n, block = k["saxpyItems"], k["block"]
    x = cupy.ones(n, dtype=cupy.float32)
    y = cupy.zeros(n, dtype=cupy.float32)
    saxpy = module.get_function("saxpy")
    args = (y, x, np.float32(2), np.uint32(n))

    def saxpy_submit():
        saxpy(((n + block - 1) // block,), (block,), args)
        stream.synchronize()
    run("kernel.saxpy_submit", saxpy_submit)
    del x, y


def register_cost(rt, gpu, np, results):
    """cudaHostRegister / cudaHostUnregister of registerSize touched bytes, one call each.

    The driver pins page by page, so the buffer's page size decides the cost. numpy asks
    for huge pages for large arrays (madvise); a Node ArrayBuffer has ordinary pages. The
    targeted row (register.*) is measured on ordinary pages, as ours; register_hugepages.*
    is numpy's default, for context.
    """
    import time
    n = gpu["registerSize"]
    lab = size_label(n)

    def record(samples):
        ordered = sorted(samples)
        mid = len(ordered) // 2
        median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        return {"ns": median, "min_ns": ordered[0], "batch": 1, "samples": samples}

    def measure(huge, prefix):
        previous = _set_madvise_hugepage(huge)
        try:
            buf = np.ones(n, dtype=np.uint8)
        finally:
            if previous is not None:
                _set_madvise_hugepage(previous)
        if previous is None and not huge:
            raise RuntimeError("this numpy cannot turn off huge pages for a like-for-like buffer")
        reg, unreg = [], []
        for _ in range(gpu["registerRepeats"]):
            t0 = time.perf_counter_ns()
            rt.hostRegister(buf.ctypes.data, n, 0)
            t1 = time.perf_counter_ns()
            rt.hostUnregister(buf.ctypes.data)
            t2 = time.perf_counter_ns()
            reg.append(t1 - t0)
            unreg.append(t2 - t1)
        del buf
        results[f"{prefix}.{lab}"] = record(reg)
        results[f"un{prefix}.{lab}"] = record(unreg)

    measure(False, "register")
    try:
        measure(True, "register_hugepages")
    except Exception as exc:
        results[f"register_hugepages.{lab}"] = results[f"unregister_hugepages.{lab}"] = {"error": f"{type(exc).__name__}: {exc}"}


IPC_REQUEST = 1 + 64 + 8  # op byte, handle, nbytes (float64): bench/ipc-pipe.js's shape


def ipc_cycle(child, rt, memory, nbytes):
    """One cycle with a child of ipc_child: the export of `memory`, sent; the open and
    close there; its answer read."""
    child.stdin.write(b"c" + rt.ipcGetMemHandle(memory) + struct.pack("<d", nbytes))
    child.stdin.flush()
    if child.stdout.read(1) != b"k":
        raise RuntimeError("the IPC child ended")


def end_ipc_child(child):
    """Asks a child of ipc_child to quit, and waits for it (kills it if it does not)."""
    try:
        child.stdin.write(b"q" + bytes(IPC_REQUEST - 1))
        child.stdin.close()
        child.wait(timeout=30)
    except Exception:
        child.kill()


def bench_cupy_ipc(rt, dev, run, results, timing):
    """Export + open + close of 1 MiB, the open and close in a child process kept alive
    and driven over its pipes, as bench/gpu.js drives its child over FIFOs; and the
    cycle's parts, as bench/gpu.js measures them."""
    n = 1 << 20
    d = rt.malloc(n)
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--ipc-child", str(dev), json.dumps(timing)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        def send(op, handle, nbytes):
            child.stdin.write(op + handle + struct.pack("<d", nbytes))
            child.stdin.flush()

        run(f"ipc.cycle.{size_label(n)}", lambda: ipc_cycle(child, rt, d, n))
        run(f"ipc.export.{size_label(n)}", lambda: rt.ipcGetMemHandle(d))

        def ping():
            send(b"p", bytes(64), 0)
            if child.stdout.read(1) != b"k":
                raise RuntimeError("the IPC child ended")
        run("ipc.ping", ping)
        try:
            send(b"l", rt.ipcGetMemHandle(d), n)
            length = struct.unpack("<I", child.stdout.read(4))[0]
            results[f"ipc.openclose.{size_label(n)}"] = json.loads(child.stdout.read(length))
        except Exception as exc:
            results[f"ipc.openclose.{size_label(n)}"] = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        end_ipc_child(child)
        rt.free(d)


def ipc_child(dev, timing):
    """The child of bench_cupy_ipc: opens each handle it reads and closes it ("c"),
    answers with no open ("p"), or times open + close itself and answers JSON ("l")."""
    import cupy
    rt = cupy.cuda.runtime
    cupy.cuda.Device(dev).use()
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    while True:
        request = requests.read(IPC_REQUEST)
        if len(request) < IPC_REQUEST or request[:1] == b"q":
            return
        op, handle = request[:1], request[1:65]
        if op == b"l":
            def open_close():
                rt.ipcCloseMemHandle(rt.ipcOpenMemHandle(handle))
            text = json.dumps(measure(open_close, timing)).encode()
            answers.write(struct.pack("<I", len(text)) + text)
            answers.flush()
            continue
        if op != b"p":
            ptr = rt.ipcOpenMemHandle(handle)  # flags: cudaIpcMemLazyEnablePeerAccess
            rt.ipcCloseMemHandle(ptr)
        answers.write(b"k")
        answers.flush()


def ipc_batches(filter_string, commands, replies, exporter_cpu, child_cpu):
    """CuPy's pair of bench/ipc-interleaved.js: this process exports 1 MiB (its main
    thread on exporter_cpu when given), a child of ipc_child opens and closes (its main
    thread put on child_cpu by the line "pin"); each line N read from the commands FIFO runs
    N cycles, answered on the replies FIFO with the nanoseconds they took; "q" ends. The
    FIFOs are opened first: should anything below fail, bench/ipc-interleaved.js reads the
    end of its input."""
    inp, out = open(commands, "rb", buffering=0), open(replies, "wb", buffering=0)
    import cupy
    dev = device_index(filter_string)
    cupy.cuda.Device(dev).use()
    rt = cupy.cuda.runtime
    if exporter_cpu:
        os.sched_setaffinity(0, {int(exporter_cpu)})
    n = 1 << 20
    d = rt.malloc(n)
    command = [sys.executable, os.path.abspath(__file__), "--ipc-child", str(dev), "{}"]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with inp, out:
        try:
            for line in iter(inp.readline, b""):
                if line.strip() == b"q":
                    break
                if line.strip() == b"pin":
                    # The thread whose id is the pid: the child's main thread alone.
                    if child_cpu:
                        os.sched_setaffinity(child.pid, {int(child_cpu)})
                    continue
                try:
                    t0 = time.perf_counter_ns()
                    for _ in range(int(line)):
                        ipc_cycle(child, rt, d, n)
                    out.write(f"{time.perf_counter_ns() - t0}\n".encode())
                except Exception as exc:
                    out.write(f"{type(exc).__name__}: {exc}\n".encode())
        finally:
            end_ipc_child(child)
            rt.free(d)


def bench_torch(cfg, timing):
    import torch
    gpu = cfg["gpu"]
    dev = torch.device("cuda", device_index(gpu["filter"]))
    torch.cuda.set_device(dev)
    results = {}
    run = make_runner(results, timing)

    meta = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(dev)}
    u8 = torch.uint8
    n = gpu["copySize"]
    lab = size_label(n)
    pinned = torch.ones(n, dtype=u8).pin_memory()
    pageable = torch.ones(n, dtype=u8)
    pageable_dst = torch.zeros(n, dtype=u8)
    g = torch.ones(n, dtype=u8, device=dev)
    g2 = torch.zeros(n, dtype=u8, device=dev)
    torch.cuda.synchronize()
    run(f"h2d.pinned.{lab}", lambda: pinned.cuda(dev))
    run(f"d2h.pinned.{lab}", lambda: pinned.copy_(g))
    run(f"h2d.pageable.{lab}", lambda: pageable.cuda(dev))
    run(f"d2h.pageable.{lab}", lambda: g.cpu())
    run(f"d2h.pageable_into.{lab}", lambda: pageable_dst.copy_(g))

    def d2d():
        g2.copy_(g)
        torch.cuda.synchronize()
    run(f"d2d.{lab}", d2d)
    del pinned, pageable, pageable_dst, g, g2

    for n in gpu["allocSizes"]:
        lab = size_label(n)
        run(f"alloc.device.{lab}", lambda n=n: torch.empty(n, dtype=u8, device=dev))
        run(f"alloc.host.{lab}", lambda n=n: torch.empty(n, dtype=u8, pin_memory=True))
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return {"status": "ok", "meta": meta, "results": results}


def attempt(name, fn):
    try:
        return fn()
    except ImportError as exc:
        return {"status": "missing", "error": f"{name} does not import: {exc}"}
    except Exception as exc:
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}


def main():
    cfg = load_config()
    timing = cfg["timing"]
    try:
        import numpy as np
    except ImportError as exc:
        missing = {"status": "missing", "error": f"numpy does not import: {exc}"}
        emit({"status": "ok", "peers": {"cupy": missing, "torch": missing}})
        return
    peers = {
        "cupy": attempt("cupy", lambda: bench_cupy(cfg, timing, np)),
        "torch": attempt("torch", lambda: bench_torch(cfg, timing)),
    }
    emit({"status": "ok", "python": sys.version.split()[0], "peers": peers})


if __name__ == "__main__":
    if len(sys.argv) > 6 and sys.argv[1] == "--ipc-batches":
        ipc_batches(*sys.argv[2:7])
        sys.exit(0)
    if len(sys.argv) > 3 and sys.argv[1] == "--ipc-child":
        ipc_child(int(sys.argv[2]), json.loads(sys.argv[3]))
        sys.exit(0)
    try:
        main()
    except Exception as exc:
        emit({"status": "error", "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
