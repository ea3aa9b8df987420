// The SYCL runtime's own cost of a sync submit of an empty OpenCL C kernel, in C++ with no
// Python or JS above it: the floor under dpctl's `SyclQueue.submit` and under ours. Built
// and run by bench/sycl-floor.js against the runtime the addon uses. Cases:
//   kernel.empty_submit         out-of-order queue, submit + event wait (dpctl's path)
//   kernel.empty_submit_lane    in-order queue, submit + queue wait (the addon's path)
//   kernel.empty_submit_opencl  clEnqueueNDRangeKernel + clWaitForEvents, in-order queue
// Timing as bench/lib.js: warm-up calls, a batch sized to the target, warm-up batches,
// then the median of `repeats` batches. argv: warmupCalls batchTargetMs maxBatch
// warmupBatches repeats. Prints one line: @@BENCH-JSON@@{...}.
#include <sycl/sycl.hpp>
#include <sycl/backend/opencl.hpp>

#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Timing {
  long warmup_calls, batch_target_ms, max_batch, warmup_batches, repeats;
};

double batch_ns(const std::function<void()> &fn, long n) {
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) fn();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

std::string measure(const char *id, const std::function<void()> &fn, const Timing &t) {
  for (long i = 0; i < t.warmup_calls; ++i) fn();
  const double target = t.batch_target_ms * 1e6;
  long n = 1;
  for (;;) {
    double elapsed = std::max(batch_ns(fn, n), 1.0);
    if (elapsed >= target || n >= t.max_batch) break;
    long grown = static_cast<long>(n * target / elapsed * 1.1) + 1;
    n = std::min(t.max_batch, std::max(n + 1, std::min(n * 100, grown)));
  }
  for (long i = 0; i < t.warmup_batches; ++i) batch_ns(fn, n);
  std::vector<double> samples;
  for (long i = 0; i < t.repeats; ++i) samples.push_back(batch_ns(fn, n) / n);
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size();
  const double median = m % 2 ? sorted[m / 2] : (sorted[m / 2 - 1] + sorted[m / 2]) / 2;
  std::string out = "\"" + std::string(id) + "\":{\"ns\":" + std::to_string(median) +
                    ",\"min_ns\":" + std::to_string(sorted.front()) + ",\"batch\":" + std::to_string(n) + ",\"samples\":[";
  for (size_t i = 0; i < samples.size(); ++i) out += (i ? "," : "") + std::to_string(samples[i]);
  return out + "]}";
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: sycl_floor warmupCalls batchTargetMs maxBatch warmupBatches repeats\n");
    return 2;
  }
  Timing t{std::atol(argv[1]), std::atol(argv[2]), std::atol(argv[3]), std::atol(argv[4]), std::atol(argv[5])};
  try {
    sycl::device dev{sycl::cpu_selector_v};
    if (dev.get_backend() != sycl::backend::opencl) throw std::runtime_error("the CPU device is not an OpenCL one");
    sycl::context ctx(dev);
    sycl::queue ooo(ctx, dev);
    sycl::queue lane(ctx, dev, sycl::property::queue::in_order{});
    cl_context cl_ctx = sycl::get_native<sycl::backend::opencl>(ctx);
    cl_device_id cl_dev = sycl::get_native<sycl::backend::opencl>(dev);
    const char *source = "__kernel void empty(void) {}";
    cl_int err = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(cl_ctx, 1, &source, nullptr, &err);
    if (err != CL_SUCCESS || clBuildProgram(program, 1, &cl_dev, "", nullptr, nullptr) != CL_SUCCESS)
      throw std::runtime_error("the empty kernel did not build");
    cl_kernel cl_k = clCreateKernel(program, "empty", &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateKernel failed");
    sycl::kernel k = sycl::make_kernel<sycl::backend::opencl>(cl_k, ctx);
    cl_command_queue cl_q = clCreateCommandQueueWithProperties(cl_ctx, cl_dev, nullptr, &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateCommandQueueWithProperties failed");
    const size_t one = 1;
    std::string out = "{\"status\":\"ok\",\"meta\":{\"device\":\"" + dev.get_info<sycl::info::device::name>() + "\"},\"results\":{";
    out += measure("kernel.empty_submit", [&] { ooo.submit([&](sycl::handler &h) { h.parallel_for(sycl::range<1>(1), k); }).wait(); }, t);
    out += ",";
    out += measure("kernel.empty_submit_lane", [&] {
      lane.submit([&](sycl::handler &h) { h.parallel_for(sycl::range<1>(1), k); });
      lane.wait();
    }, t);
    out += ",";
    out += measure("kernel.empty_submit_opencl", [&] {
      cl_event e = nullptr;
      if (clEnqueueNDRangeKernel(cl_q, cl_k, 1, nullptr, &one, nullptr, 0, nullptr, &e) != CL_SUCCESS) std::abort();
      clWaitForEvents(1, &e);
      clReleaseEvent(e);
    }, t);
    out += "}}";
    std::printf("\n@@BENCH-JSON@@%s\n", out.c_str());
    clReleaseCommandQueue(cl_q);
    clReleaseKernel(cl_k);
    clReleaseProgram(program);
  } catch (const std::exception &e) {
    std::printf("\n@@BENCH-JSON@@{\"status\":\"error\",\"error\":\"%s\"}\n", e.what());
    return 1;
  }
  return 0;
}
