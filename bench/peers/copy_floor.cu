// What a C program can reach for the copies the GPU bench targets, on the machine it runs
// on: 64-byte copies by each driver call shape, and pageable copies of 1-16 MiB staged by
// hand (pinned buffers, the host memcpy split over T threads, one stream per chunk), each
// beside the cudaMemcpy the bench's CuPy peer makes. The staged rows are the limit a
// staging library can aim for; a row of ours below them has room, one at them does not.
// Build and run on the GPU machine (bench/README.md):
//   nvcc -O2 -Xcompiler -fopenmp -o /tmp/copy_floor bench/peers/copy_floor.cu -lcuda
//   OMP_WAIT_POLICY=active OMP_PROC_BIND=false /tmp/copy_floor
#include <cuda.h>
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using clk = std::chrono::steady_clock;

#define CHECK(x)                                                                       \
  do {                                                                                 \
    CUresult r_ = (x);                                                                 \
    if (r_ != CUDA_SUCCESS) {                                                          \
      const char *s_ = nullptr;                                                        \
      cuGetErrorString(r_, &s_);                                                       \
      fprintf(stderr, "%s failed: %s (line %d)\n", #x, s_ ? s_ : "?", __LINE__);       \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

// Median over `rounds` of the mean time of `n` calls, in microseconds.
template <class F>
double per_call_us(F f, int n, int rounds = 7) {
  for (int i = 0; i < std::max(1, n / 10); i++) f();
  std::vector<double> r;
  for (int k = 0; k < rounds; k++) {
    auto t0 = clk::now();
    for (int i = 0; i < n; i++) f();
    auto t1 = clk::now();
    r.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

static const int MAX_BUFFERS = 16;
static const size_t BUFFER = 4 << 20;
static char *pinned[MAX_BUFFERS];
static CUstream streams[MAX_BUFFERS];

// `len` bytes from `src` to `dst` on `threads` OpenMP threads, in contiguous pieces.
static void par_memcpy(char *dst, const char *src, size_t len, int threads) {
  if (threads <= 1) {
    memcpy(dst, src, len);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads();
    size_t piece = (len + n - 1) / n;
    size_t begin = std::min(len, piece * t), end = std::min(len, begin + piece);
    if (end > begin) memcpy(dst + begin, src + begin, end - begin);
  }
}

// Pageable host -> device in `chunks` chunks, each copied into a buffer of its own by
// `threads` threads and its DMA queued at once, so it overlaps the next chunk's memcpy.
static void staged_h2d(CUdeviceptr d, const char *src, size_t n, int chunks, int threads) {
  size_t chunk = (n + chunks - 1) / chunks;
  for (int k = 0; k < chunks; k++) {
    size_t off = k * chunk, len = std::min(chunk, n - off);
    par_memcpy(pinned[k], src + off, len, threads);
    CHECK(cuMemcpyHtoDAsync(d + off, pinned[k], len, streams[k]));
  }
  for (int k = 0; k < chunks; k++) CHECK(cuStreamSynchronize(streams[k]));
}

// Device -> pageable host: every DMA queued first, each chunk copied out once its
// stream is done.
static void staged_d2h(char *dst, CUdeviceptr d, size_t n, int chunks, int threads) {
  size_t chunk = (n + chunks - 1) / chunks;
  for (int k = 0; k < chunks; k++) {
    size_t off = k * chunk, len = std::min(chunk, n - off);
    CHECK(cuMemcpyDtoHAsync(pinned[k], d + off, len, streams[k]));
  }
  for (int k = 0; k < chunks; k++) {
    size_t off = k * chunk, len = std::min(chunk, n - off);
    CHECK(cuStreamSynchronize(streams[k]));
    par_memcpy(dst + off, pinned[k], len, threads);
  }
}

int main() {
  cudaFree(0);  // the primary context, current on this thread
  CUcontext ctx;
  CHECK(cuCtxGetCurrent(&ctx));
  const size_t MAX = 16 << 20;
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, MAX));
  char *src = (char *)malloc(MAX), *dst = (char *)malloc(MAX);
  memset(src, 1, MAX);
  memset(dst, 0, MAX);
  for (int k = 0; k < MAX_BUFFERS; k++) {
    CHECK(cuMemHostAlloc((void **)&pinned[k], BUFFER, CU_MEMHOSTALLOC_PORTABLE));
    memset(pinned[k], 0, BUFFER);
    CHECK(cuStreamCreate(&streams[k], CU_STREAM_NON_BLOCKING));
  }
  CUstream s = streams[0];
  char *ph = pinned[MAX_BUFFERS - 1];
  printf("# copy_floor: %d OpenMP threads available\n", omp_get_max_threads());

  // 64 B: the call shapes.
  printf("64B H2D pinned   cudaMemcpy (CuPy's)                 %.2f us\n",
         per_call_us([&] { cudaMemcpy((void *)d, ph, 64, cudaMemcpyHostToDevice); }, 20000));
  printf("64B H2D pinned   cuMemcpyAsync + cuStreamSynchronize %.2f us\n",
         per_call_us([&] { cuMemcpyAsync(d, (CUdeviceptr)ph, 64, s); cuStreamSynchronize(s); }, 20000));
  printf("64B H2D pinned   cuMemcpyHtoDAsync + sync            %.2f us\n",
         per_call_us([&] { cuMemcpyHtoDAsync(d, ph, 64, s); cuStreamSynchronize(s); }, 20000));
  printf("64B H2D pinned   cuMemcpyHtoDAsync + cuStreamQuery spin %.2f us\n", per_call_us([&] {
           cuMemcpyHtoDAsync(d, ph, 64, s);
           while (cuStreamQuery(s) == CUDA_ERROR_NOT_READY) {
           }
         }, 20000));
  printf("64B H2D pinned   push + HtoDAsync + sync + pop        %.2f us\n", per_call_us([&] {
           cuCtxPushCurrent(ctx);
           cuMemcpyHtoDAsync(d, ph, 64, s);
           cuStreamSynchronize(s);
           CUcontext c;
           cuCtxPopCurrent(&c);
         }, 20000));
  printf("64B H2D pinned   cuMemcpyHtoD (legacy stream)        %.2f us\n",
         per_call_us([&] { cuMemcpyHtoD(d, ph, 64); }, 20000));
  printf("64B H2D pageable cudaMemcpy (CuPy's)                 %.2f us\n",
         per_call_us([&] { cudaMemcpy((void *)d, src, 64, cudaMemcpyHostToDevice); }, 20000));
  printf("64B H2D pageable cuMemcpyAsync + cuStreamSynchronize %.2f us\n",
         per_call_us([&] { cuMemcpyAsync(d, (CUdeviceptr)src, 64, s); cuStreamSynchronize(s); }, 20000));
  printf("64B H2D pageable cuMemcpyHtoDAsync + sync            %.2f us\n",
         per_call_us([&] { cuMemcpyHtoDAsync(d, src, 64, s); cuStreamSynchronize(s); }, 20000));
  printf("64B H2D pageable cuMemcpyHtoD (legacy stream)        %.2f us\n",
         per_call_us([&] { cuMemcpyHtoD(d, src, 64); }, 20000));
  printf("64B D2H pageable cudaMemcpy (CuPy's)                 %.2f us\n",
         per_call_us([&] { cudaMemcpy(dst, (void *)d, 64, cudaMemcpyDeviceToHost); }, 20000));
  printf("64B D2H pageable cuMemcpyAsync + cuStreamSynchronize %.2f us\n",
         per_call_us([&] { cuMemcpyAsync((CUdeviceptr)dst, d, 64, s); cuStreamSynchronize(s); }, 20000));
  printf("64B D2H pageable cuMemcpyDtoHAsync + sync            %.2f us\n",
         per_call_us([&] { cuMemcpyDtoHAsync(dst, d, 64, s); cuStreamSynchronize(s); }, 20000));

  // A context pushed and popped around each call on a thread with none current, against
  // one left current; rounds alternate so that drift touches both alike.
  {
    std::vector<double> pushed, kept;
    for (int round = 0; round < 7; round++) {
      CUcontext none;
      CHECK(cuCtxSetCurrent(nullptr));
      pushed.push_back(per_call_us([&] {
        cuCtxPushCurrent(ctx);
        cuMemcpyAsync(d, (CUdeviceptr)ph, 64, s);
        cuStreamSynchronize(s);
        cuCtxPopCurrent(&none);
      }, 20000, 1));
      CHECK(cuCtxSetCurrent(ctx));
      kept.push_back(per_call_us([&] { cuMemcpyAsync(d, (CUdeviceptr)ph, 64, s); cuStreamSynchronize(s); }, 20000, 1));
    }
    std::sort(pushed.begin(), pushed.end());
    std::sort(kept.begin(), kept.end());
    printf("64B H2D pinned   push+pop on a bare thread / kept current %.2f / %.2f us (medians of 7 alternating)\n",
           pushed[3], kept[3]);
  }

  // 1-16 MiB pageable: the peer, then staged by hand.
  const size_t sizes[] = {1 << 20, 4 << 20, 16 << 20};
  const int threads[] = {1, 2, 4, 8, 16};
  const int chunk_counts[] = {1, 2, 4, 8};
  for (size_t n : sizes) {
    int calls = (int)std::max<size_t>(20, (256u << 20) / n);
    auto gbps = [&](double us) { return n / us / 1e3; };
    double h = per_call_us([&] { cudaMemcpy((void *)d, src, n, cudaMemcpyHostToDevice); }, calls, 5);
    double g = per_call_us([&] { cudaMemcpy(dst, (void *)d, n, cudaMemcpyDeviceToHost); }, calls, 5);
    printf("%2zu MiB pageable cudaMemcpy (CuPy's)       H2D %6.2f GB/s  D2H %6.2f GB/s\n", n >> 20, gbps(h), gbps(g));
    double best_h = 0, best_d = 0;
    for (int chunks : chunk_counts) {
      if ((n + chunks - 1) / chunks > BUFFER) continue;
      for (int t : threads) {
        if (t > omp_get_max_threads()) continue;
        double a = gbps(per_call_us([&] { staged_h2d(d, src, n, chunks, t); }, calls, 5));
        double b = gbps(per_call_us([&] { staged_d2h(dst, d, n, chunks, t); }, calls, 5));
        best_h = std::max(best_h, a);
        best_d = std::max(best_d, b);
        printf("%2zu MiB staged %d chunk(s), %2d thread(s)    H2D %6.2f GB/s  D2H %6.2f GB/s\n", n >> 20, chunks,
               t, a, b);
      }
    }
    printf("%2zu MiB staged best                       H2D %6.2f GB/s (%.2fx)  D2H %6.2f GB/s (%.2fx)\n", n >> 20,
           best_h, best_h / gbps(h), best_d, best_d / gbps(g));
    if (dst[0] != 1 || dst[n - 1] != 1) {
      fprintf(stderr, "round trip of %zu bytes wrong\n", n);
      return 1;
    }
  }
  return 0;
}
