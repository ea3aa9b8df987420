// What a C program can reach for the copies the GPU bench targets, on the machine it runs
// on: 64-byte copies by each driver call shape and by two ways around the copy engine
// (stream memory operations, a kernel's parameters), pageable copies of 1-16 MiB staged by
// hand (pinned buffers, the host memcpy split over T threads, one stream per chunk), and
// of 16-256 MiB through a ring of pinned buffers (COPY_FLOOR_NO_RING=1 leaves those out),
// each beside the cudaMemcpy the bench's CuPy peer makes. The staged rows are the limit a
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

// Pageable host -> device through a ring of `buffers` pinned buffers of `chunk` bytes: each
// chunk copied into its buffer by `threads` threads and its DMA queued at once, so it
// overlaps the next chunk's memcpy; a buffer is reused once its last DMA is done (its
// stream synchronised). With a buffer per chunk, nothing is reused.
static void ring_h2d(CUdeviceptr d, const char *src, size_t n, size_t chunk, int buffers, int threads) {
  size_t count = (n + chunk - 1) / chunk;
  for (size_t k = 0; k < count; k++) {
    int b = (int)(k % buffers);
    size_t off = k * chunk, len = std::min(chunk, n - off);
    if (k >= (size_t)buffers) CHECK(cuStreamSynchronize(streams[b]));
    par_memcpy(pinned[b], src + off, len, threads);
    CHECK(cuMemcpyHtoDAsync(d + off, pinned[b], len, streams[b]));
  }
  for (int b = 0; b < buffers; b++) CHECK(cuStreamSynchronize(streams[b]));
}

// Device -> pageable host through the same ring: the first `buffers` DMAs queued, then
// each chunk copied out once its stream is done and the buffer's next DMA queued (with a
// buffer per chunk: every DMA queued first).
static void ring_d2h(char *dst, CUdeviceptr d, size_t n, size_t chunk, int buffers, int threads) {
  size_t count = (n + chunk - 1) / chunk;
  for (size_t k = 0; k < count && k < (size_t)buffers; k++) {
    size_t off = k * chunk, len = std::min(chunk, n - off);
    CHECK(cuMemcpyDtoHAsync(pinned[k], d + off, len, streams[k]));
  }
  for (size_t k = 0; k < count; k++) {
    int b = (int)(k % buffers);
    size_t off = k * chunk, len = std::min(chunk, n - off);
    CHECK(cuStreamSynchronize(streams[b]));
    par_memcpy(dst + off, pinned[b], len, threads);
    size_t next = k + buffers;
    if (next < count) {
      size_t noff = next * chunk, nlen = std::min(chunk, n - noff);
      CHECK(cuMemcpyDtoHAsync(pinned[b], d + noff, nlen, streams[b]));
    }
  }
}

// A kernel whose parameters carry 64 bytes, which it stores at `dst` (8-byte aligned):
// a small copy to the device without the copy engine.
static const char *PUT64_PTX = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry put64(.param .u64 dst, .param .align 8 .b8 data[64])
{
  .reg .b64 %rd<10>;
  ld.param.u64 %rd0, [dst];
  cvta.to.global.u64 %rd0, %rd0;
  ld.param.b64 %rd1, [data];
  ld.param.b64 %rd2, [data+8];
  ld.param.b64 %rd3, [data+16];
  ld.param.b64 %rd4, [data+24];
  ld.param.b64 %rd5, [data+32];
  ld.param.b64 %rd6, [data+40];
  ld.param.b64 %rd7, [data+48];
  ld.param.b64 %rd8, [data+56];
  st.global.b64 [%rd0], %rd1;
  st.global.b64 [%rd0+8], %rd2;
  st.global.b64 [%rd0+16], %rd3;
  st.global.b64 [%rd0+24], %rd4;
  st.global.b64 [%rd0+32], %rd5;
  st.global.b64 [%rd0+40], %rd6;
  st.global.b64 [%rd0+48], %rd7;
  st.global.b64 [%rd0+56], %rd8;
  ret;
}
)";

int main() {
  cudaFree(0);  // the primary context, current on this thread
  CUcontext ctx;
  CHECK(cuCtxGetCurrent(&ctx));
  const size_t MAX = 256 << 20;
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


  // 64 B without the copy engine: the bytes as stream memory operations (8 writes of 64
  // bits, batched), and as a kernel's parameters.
  {
    CUdevice dev;
    CHECK(cuCtxGetDevice(&dev));
    int memops64 = 0;
    cuDeviceGetAttribute(&memops64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev);
    printf("# 64-bit stream memory operations: %d\n", memops64);
    CUstreamBatchMemOpParams ops[8];
    auto batch = [&](const char *from) {
      memset(ops, 0, sizeof ops);
      for (int i = 0; i < 8; i++) {
        ops[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        ops[i].writeValue.address = d + 8 * i;
        memcpy(&ops[i].writeValue.value64, from + 8 * i, 8);
        ops[i].writeValue.flags = 0;
      }
      return cuStreamBatchMemOp(s, 8, ops, 0);
    };
    CUresult r = batch(src);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS) {
      const char *e = nullptr;
      cuGetErrorString(r, &e);
      printf("64B H2D memops   cuStreamBatchMemOp: %s\n", e ? e : "?");
    } else {
      printf("64B H2D pageable cuStreamBatchMemOp(8 x 64 bit) + sync %.2f us\n",
             per_call_us([&] { batch(src); cuStreamSynchronize(s); }, 20000));
      printf("64B H2D pageable 8 x cuStreamWriteValue64 + sync     %.2f us\n", per_call_us([&] {
               for (int i = 0; i < 8; i++) {
                 cuuint64_t v;
                 memcpy(&v, src + 8 * i, 8);
                 cuStreamWriteValue64(s, d + 8 * i, v, 0);
               }
               cuStreamSynchronize(s);
             }, 20000));
      memset(dst, 0, 64);
      CHECK(cuMemcpyDtoH(dst, d, 64));
      printf("# memops wrote %s\n", memcmp(dst, src, 64) == 0 ? "the bytes" : "WRONG bytes");
      // Larger writes as batches of 64-bit values (at most 255 a batch), beside the copy.
      static CUstreamBatchMemOpParams many[255];
      for (size_t n : {(size_t)256, (size_t)1024, (size_t)2040}) {
        auto batch_n = [&] {
          memset(many, 0, sizeof many);
          for (size_t i = 0; i < n / 8; i++) {
            many[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
            many[i].writeValue.address = d + 8 * i;
            memcpy(&many[i].writeValue.value64, src + 8 * i, 8);
          }
          cuStreamBatchMemOp(s, (unsigned)(n / 8), many, 0);
          cuStreamSynchronize(s);
        };
        printf("%4zuB H2D pageable memops %.2f us, cuMemcpyHtoDAsync + sync %.2f us, cudaMemcpy %.2f us\n", n,
               per_call_us(batch_n, 20000),
               per_call_us([&] { cuMemcpyHtoDAsync(d, src, n, s); cuStreamSynchronize(s); }, 20000),
               per_call_us([&] { cudaMemcpy((void *)d, src, n, cudaMemcpyHostToDevice); }, 20000));
      }
    }
    printf("cuStreamQuery of an idle stream                      %.3f us\n",
           per_call_us([&] { cuStreamQuery(s); }, 200000));
    CUmodule module;
    CUfunction put64;
    CHECK(cuModuleLoadData(&module, PUT64_PTX));
    CHECK(cuModuleGetFunction(&put64, module, "put64"));
    auto launch = [&](const char *from) {
      CUdeviceptr to = d;
      void *args[] = {&to, (void *)from};
      return cuLaunchKernel(put64, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr);
    };
    CHECK(launch(src));
    CHECK(cuStreamSynchronize(s));
    printf("64B H2D pageable kernel with the bytes as parameters + sync %.2f us\n",
           per_call_us([&] { launch(src); cuStreamSynchronize(s); }, 20000));
    printf("64B H2D pageable cudaMemcpy (CuPy's), again          %.2f us\n",
           per_call_us([&] { cudaMemcpy((void *)d, src, 64, cudaMemcpyHostToDevice); }, 20000));
  }

  // 64 B pageable by the unified call against the call that names its direction, in
  // alternating rounds so that drift touches both alike.
  {
    std::vector<double> unified, named;
    for (int round = 0; round < 7; round++) {
      unified.push_back(per_call_us([&] { cuMemcpyAsync(d, (CUdeviceptr)src, 64, s); cuStreamSynchronize(s); }, 20000, 1));
      named.push_back(per_call_us([&] { cuMemcpyHtoDAsync(d, src, 64, s); cuStreamSynchronize(s); }, 20000, 1));
    }
    std::sort(unified.begin(), unified.end());
    std::sort(named.begin(), named.end());
    printf("64B H2D pageable cuMemcpyAsync / cuMemcpyHtoDAsync, + sync %.2f / %.2f us (medians of 7 alternating)\n",
           unified[3], named[3]);
  }

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


  // 16-256 MiB pageable through a ring of pinned buffers, by chunk, buffers and threads.
  if (!getenv("COPY_FLOOR_NO_RING")) {
    const size_t big[] = {16 << 20, 64 << 20, 256 << 20};
    const size_t ring_chunks[] = {1 << 20, 2 << 20, 4 << 20};
    const int ring_buffers[] = {4, 8, 16};
    const int ring_threads[] = {2, 4, 8, 16};
    for (size_t n : big) {
      int calls = (int)std::max<size_t>(4, (1024u << 20) / n);
      auto gbps = [&](double us) { return n / us / 1e3; };
      double h = per_call_us([&] { cudaMemcpy((void *)d, src, n, cudaMemcpyHostToDevice); }, calls, 3);
      double g = per_call_us([&] { cudaMemcpy(dst, (void *)d, n, cudaMemcpyDeviceToHost); }, calls, 3);
      printf("%3zu MiB pageable cudaMemcpy (CuPy's)            H2D %6.2f GB/s  D2H %6.2f GB/s\n", n >> 20, gbps(h), gbps(g));
      double best_h = 0, best_d = 0;
      for (size_t chunk : ring_chunks) {
        for (int buffers : ring_buffers) {
          if (chunk * buffers > (32u << 20)) continue;
          for (int t : ring_threads) {
            if (t > omp_get_max_threads()) continue;
            double a = gbps(per_call_us([&] { ring_h2d(d, src, n, chunk, buffers, t); }, calls, 3));
            double b = gbps(per_call_us([&] { ring_d2h(dst, d, n, chunk, buffers, t); }, calls, 3));
            best_h = std::max(best_h, a);
            best_d = std::max(best_d, b);
            printf("%3zu MiB ring chunk %zu MiB x %2d, %2d thread(s) H2D %6.2f GB/s  D2H %6.2f GB/s\n", n >> 20,
                   chunk >> 20, buffers, t, a, b);
          }
        }
      }
      printf("%3zu MiB ring best                             H2D %6.2f GB/s  D2H %6.2f GB/s\n", n >> 20, best_h, best_d);
      if (dst[0] != 1 || dst[n - 1] != 1) {
        fprintf(stderr, "round trip of %zu bytes wrong\n", n);
        return 1;
      }
    }
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
        size_t chunk = (n + chunks - 1) / chunks;  // a buffer per chunk
        double a = gbps(per_call_us([&] { ring_h2d(d, src, n, chunk, chunks, t); }, calls, 5));
        double b = gbps(per_call_us([&] { ring_d2h(dst, d, n, chunk, chunks, t); }, calls, 5));
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
