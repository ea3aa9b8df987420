"""The two-GPU cases of bench/multigpu.js through the CUDA runtime (CuPy), as JSON.

Run by multigpu.js as `python3 cuda_multigpu.py '<config json>'`. Case ids match
multigpu.js: `d2d.peer_off.0to1.<size>` (cudaMemcpyPeer before any peer access is
enabled), `d2d.peer_on.*` (after cudaDeviceEnablePeerAccess both ways, where the pair can),
and `d2d.pinned_roundtrip.*` (GPU to pinned host, then pinned host to the other GPU).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import emit, load_config, make_runner, size_label  # noqa: E402

H2D, D2H = 1, 2  # cudaMemcpyKind


def main():
    cfg = load_config()
    timing = cfg["timing"]
    try:
        import cupy
    except Exception as exc:  # the peer is missing, not an error of the bench
        emit({"status": "missing", "error": f"cupy: {type(exc).__name__}: {exc}"})
        return
    rt = cupy.cuda.runtime
    if rt.getDeviceCount() < 2:
        emit({"status": "missing", "error": f"needs 2 CUDA devices, found {rt.getDeviceCount()}"})
        return
    n = cfg["size"]
    lab = size_label(n)
    results = {}
    run = make_runner(results, timing)
    buffers = {}
    for dev in (0, 1):
        with cupy.cuda.Device(dev):
            buffers[dev] = rt.malloc(n)
            rt.memset(buffers[dev], dev + 1, n)
            rt.deviceSynchronize()
    pinned = rt.hostAlloc(n, 1)  # cudaHostAllocPortable

    def sync_both():
        for dev in (0, 1):
            with cupy.cuda.Device(dev):
                rt.deviceSynchronize()

    def peer(src, dst):
        def copy():
            with cupy.cuda.Device(dst):
                rt.memcpyPeer(buffers[dst], dst, buffers[src], src, n)
            sync_both()
        return copy

    def roundtrip(src, dst):
        def copy():
            with cupy.cuda.Device(src):
                rt.memcpy(pinned, buffers[src], n, D2H)
            with cupy.cuda.Device(dst):
                rt.memcpy(buffers[dst], pinned, n, H2D)
        return copy

    can = {(a, b): bool(rt.deviceCanAccessPeer(a, b)) for a, b in ((0, 1), (1, 0))}
    try:
        for a, b in ((0, 1), (1, 0)):
            run(f"d2d.peer_off.{a}to{b}.{lab}", peer(a, b))
            run(f"d2d.pinned_roundtrip.{a}to{b}.{lab}", roundtrip(a, b))
        if all(can.values()):
            for a, b in ((0, 1), (1, 0)):
                with cupy.cuda.Device(a):
                    rt.deviceEnablePeerAccess(b)
            for a, b in ((0, 1), (1, 0)):
                run(f"d2d.peer_on.{a}to{b}.{lab}", peer(a, b))
    finally:
        rt.freeHost(pinned)
        for dev in (0, 1):
            with cupy.cuda.Device(dev):
                rt.free(buffers[dev])
    emit({"status": "ok", "meta": {"cupy": cupy.__version__, "canAccessPeer": {f"{a}to{b}": v for (a, b), v in can.items()}},
          "results": results})


if __name__ == "__main__":
    main()
