"""The CPU cases of bench/bench.js through dpctl.memory (the peer), printed as JSON.

Run by bench.js as `python dpctl_cpu.py '<config json>'` in the venv that bench/dpctl-venv.js
makes. Case ids match bench/cpu.js.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import emit, load_config, measure, size_label  # noqa: E402


def main():
    cfg = load_config()
    timing, cpu = cfg["timing"], cfg["cpu"]
    try:
        import dpctl
        import dpctl.memory as dpmem
        import numpy as np
    except Exception as exc:  # the peer is missing, not an error of the bench
        emit({"status": "missing", "error": f"{type(exc).__name__}: {exc}"})
        return
    q = dpctl.SyclQueue(cpu["filter"])
    results = {}
    meta = {
        "dpctl": dpctl.__version__,
        "numpy": np.__version__,
        "device": q.sycl_device.name,
        "filter": q.sycl_device.filter_string,
        "driver": q.sycl_device.driver_version,
    }
    try:
        import importlib.metadata as md
        meta["intel-sycl-rt"] = md.version("intel-sycl-rt")
    except Exception:
        pass
    classes = {"device": dpmem.MemoryUSMDevice, "host": dpmem.MemoryUSMHost, "shared": dpmem.MemoryUSMShared}

    def run(case_id, fn):
        results[case_id] = measure(fn, timing)

    # alloc + free: the object is dropped at once, and CPython frees it by refcount.
    for kind in cpu["kinds"]:
        cls = classes[kind]
        for n in cpu["allocSizes"]:
            run(f"alloc.{kind}.{size_label(n)}", lambda cls=cls, n=n: cls(n, queue=q))
    # alloc + zero-copy view + free: what using host memory from Python costs.
    for n in cpu["allocSizes"][:2]:
        run(f"alloc_view.host.{size_label(n)}",
            lambda n=n: np.frombuffer(dpmem.MemoryUSMHost(n, queue=q), dtype=np.uint8))

    for n in cpu["copySizes"]:
        src = np.ones(n, dtype=np.uint8)  # touched: no first-touch faults in the timing
        dst = np.zeros(n, dtype=np.uint8)
        a = dpmem.MemoryUSMDevice(n, queue=q)
        b = dpmem.MemoryUSMDevice(n, queue=q)
        a.copy_from_host(src)
        b.copy_from_host(src)
        lab = size_label(n)
        run(f"h2d.{lab}", lambda a=a, src=src: a.copy_from_host(src))
        run(f"d2h.{lab}", lambda a=a, dst=dst: a.copy_to_host(dst))
        run(f"d2d.{lab}", lambda a=a, b=b: b.copy_from_device(a))
        del a, b

    # Per-call overhead and its parts.
    n = cpu["overheadSize"]
    lab = size_label(n)
    src = np.ones(n, dtype=np.uint8)
    dst = np.zeros(n, dtype=np.uint8)
    a = dpmem.MemoryUSMDevice(n, queue=q)
    b = dpmem.MemoryUSMDevice(n, queue=q)
    a.copy_from_host(src)
    run(f"overhead.h2d.{lab}", lambda: a.copy_from_host(src))
    run(f"overhead.d2h.{lab}", lambda: a.copy_to_host(dst))
    run(f"overhead.d2d.{lab}", lambda: b.copy_from_device(a))
    run(f"overhead.memset.{lab}", lambda: a.memset(0))
    run(f"overhead.memcpy.{lab}", lambda: q.memcpy(b, a, n))  # queue.memcpy + wait: the SYCL floor
    # The same copy on an in-order queue, for reference (the addon's queues are out-of-order,
    # as dpctl's default ones: each operation waits on its own event).
    q_io = dpctl.SyclQueue(cpu["filter"], property="in_order")
    a_io = dpmem.MemoryUSMDevice(n, queue=q_io)
    run(f"overhead.h2d_in_order.{lab}", lambda: a_io.copy_from_host(src))
    del a_io
    run("overhead.wait", lambda: q.wait())
    run("overhead.getter", lambda: a.nbytes)
    del a, b

    # Zero-copy view of host memory.
    n = cpu["viewSize"]
    h = dpmem.MemoryUSMHost(n, queue=q)
    run(f"view.{size_label(n)}", lambda: np.frombuffer(h, dtype=np.uint8))
    del h
    # A view of a memory object, dropped at once (refcounting frees it).
    m = dpmem.MemoryUSMDevice(n, queue=q)
    run(f"view_of_memory.device.{size_label(n)}", lambda: dpmem.MemoryUSMDevice(m))
    del m

    # Kernels: an empty kernel's submit (dpctl's submit waits), and saxpy over the same items.
    try:
        import ctypes
        try:
            import dpctl.program as dpctl_program
        except ImportError:  # renamed dpctl.compiler at dpctl's HEAD
            import dpctl.compiler as dpctl_program
        kcfg = cpu["kernels"]
        prog = dpctl_program.create_program_from_source(q, kcfg["source"])
        empty = prog.get_sycl_kernel("empty")
        run("kernel.empty_submit", lambda: q.submit(empty, [], [1]))
        n = kcfg["saxpyItems"]
        x = dpmem.MemoryUSMShared(n * 4, queue=q)
        y = dpmem.MemoryUSMShared(n * 4, queue=q)
        np.frombuffer(x, dtype=np.float32)[:] = 1
        np.frombuffer(y, dtype=np.float32)[:] = 0
        saxpy = prog.get_sycl_kernel("saxpy")
        a = ctypes.c_float(2.0)
        run("kernel.saxpy_submit", lambda: q.submit(saxpy, [y, x, a], [n]))
        del x, y
    except Exception as exc:  # a peer without the program API misses these rows only
        meta["kernels_error"] = f"{type(exc).__name__}: {exc}"

    # numpy's host copy, for reference.
    for n in cpu["copySizes"]:
        s = np.ones(n, dtype=np.uint8)
        d = np.zeros(n, dtype=np.uint8)
        run(f"hostcopy.{size_label(n)}", lambda s=s, d=d: np.copyto(d, s))

    emit({"status": "ok", "meta": meta, "results": results})


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:
        emit({"status": "error", "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
        sys.exit(0)
