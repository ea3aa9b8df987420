// Every size, repeat count and warm-up of the benchmark, in one place. The Python peers
// receive this object (as JSON on their command line), so both sides measure the same cases.
'use strict';

const KiB = 1024;
const MiB = 1024 * KiB;

const quick = process.env.BENCH_QUICK === '1';

module.exports = {
  // Each section runs `rounds` times, ours and the peer in turn, so that a burst of load on a
  // shared machine falls on both; the samples of all rounds make one median.
  // Timing: each case runs `warmupCalls` untimed calls, then one calibration batch that picks
  // how many calls a timed batch holds (enough for `batchTargetMs`, within 1..maxBatch), then
  // `warmupBatches` untimed batches and `repeats` timed ones. The figure is the median of the
  // per-call times of the timed batches.
  timing: {
    warmupCalls: quick ? 1 : 3,
    warmupBatches: 1,
    repeats: quick ? 5 : 10,
    batchTargetMs: quick ? 5 : 20,
    maxBatch: 100000,
  },
  cpu: {
    filter: 'opencl:cpu',
    rounds: quick ? 1 : 3,
    allocSizes: [4 * KiB, 1 * MiB, 64 * MiB],
    copySizes: [4 * KiB, 64 * MiB],
    overheadSize: 64,
    viewSize: 4 * KiB,
    kinds: ['device', 'host', 'shared'],
    // The kernels of the submit rows (OpenCL C; dpctl builds the same source).
    kernels: {
      source:
        '__kernel void empty(void) {}\n' +
        '__kernel void saxpy(__global float *y, __global const float *x, float a) {\n' +
        '  size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }\n',
      saxpyItems: 1 << 20,
    },
    // dpctl from PyPI on the same SYCL runtime as the addon (scripts/install-runtime.js).
    dpctl: {
      version: '0.21.1',
      requirements: [
        'dpctl==0.21.1',
        'numpy',
        // Keep dpctl on the runtime the addon uses: the 2026 wheels would replace it.
        'intel-sycl-rt==2025.3.3',
        'intel-cmplr-lib-ur==2025.3.3',
        'intel-cmplr-lib-rt==2025.3.3',
        'intel-opencl-rt==2025.3.3',
        'umf==1.0.3',
        'tbb==2022.3.1',
        'tcmlib==1.6.0',
      ],
      runtimeVersion: '2025.3.3',
    },
  },
  gpu: {
    filter: 'cuda:gpu:0',
    // At least three rounds: the GPU machine is noisy, and a row's spread over its rounds
    // is printed beside it.
    rounds: quick ? 1 : 3,
    copySize: 256 * MiB,
    overheadSize: 64,
    allocSizes: [4 * KiB, 1 * MiB, 256 * MiB, 1024 * MiB],
    kinds: ['device', 'host', 'shared'],
    // Pageable copies below copySize (the mid sizes), and the buffer whose
    // register/unregister cost is timed (registerHost).
    midSizes: [1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB],
    registerSize: 1024 * MiB,
    registerRepeats: quick ? 2 : 5,
    // The kernel rows: the tests' PTX (empty, and saxpy(y, x, a, n)), loaded by us and by
    // CuPy's RawModule alike; saxpy over vectors of 256 MiB in blocks of 256.
    kernels: {
      ptx: '__test__/fixtures/kernels/saxpy.ptx',
      saxpyItems: 64 * MiB,
      block: 256,
    },
  },
  // A peer process that runs longer than this is stopped and reported as an error.
  peerTimeoutS: 300,
  // Per-call time (not bandwidth) below this many bytes is the figure that matters.
  latencyBelow: 64 * KiB,
};
