// dpctl_memory_shim.cpp: the C ABI of dpctl_memory_shim.h over <sycl/sycl.hpp>.
//
// Host-only SYCL: no kernels, so the machine's g++ compiles it against the runtime's
// headers (build.rs: -std=c++17 -fPIC -shared, linked against the shared libstdc++ and
// libsycl.so.8; -static-libstdc++ aborts on libsycl's first exception).
//
// Every extern "C" function body runs inside guard(): an exception escaping into Rust
// (and Node) would abort the process.
#include "shim_internal.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace dpm_detail;

char *dup_string(const std::string &s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

const char *backend_name(sycl::backend b) {
  switch (b) {
    case sycl::backend::opencl: return "opencl";
    case sycl::backend::ext_oneapi_level_zero: return "level_zero";
    case sycl::backend::ext_oneapi_cuda: return "cuda";
    case sycl::backend::ext_oneapi_hip: return "hip";
    case sycl::backend::ext_oneapi_native_cpu: return "native_cpu";
    case sycl::backend::ext_oneapi_offload: return "offload";
    default: return "unknown";
  }
}

uint32_t device_type_code(sycl::info::device_type t) {
  switch (t) {
    case sycl::info::device_type::cpu: return DPM_DEVICE_TYPE_CPU;
    case sycl::info::device_type::gpu: return DPM_DEVICE_TYPE_GPU;
    case sycl::info::device_type::accelerator: return DPM_DEVICE_TYPE_ACCELERATOR;
    case sycl::info::device_type::custom: return DPM_DEVICE_TYPE_CUSTOM;
    default: return DPM_DEVICE_TYPE_UNKNOWN;
  }
}

// The current (non-deprecated) aspects the device has, by their SYCL names.
std::string aspect_names(const sycl::device &dev) {
  std::string names;
  auto add = [&](sycl::aspect a, const char *name) {
    bool has = false;
    try {
      has = dev.has(a);
    } catch (...) {
      has = false;  // an aspect the backend cannot answer is an aspect it lacks
    }
    if (has) {
      if (!names.empty()) names += ' ';
      names += name;
    }
  };
#define __SYCL_ASPECT(ASPECT, ID) add(sycl::aspect::ASPECT, #ASPECT);
#include <sycl/info/aspects.def>
#undef __SYCL_ASPECT
  return names;
}

// Writes the first `cap` of `devices` into out as new handles; *count = devices.size().
void write_devices(const std::vector<sycl::device> &devices, dpm_device **out, size_t cap,
                   size_t *count) {
  require(count, "count");
  if (cap > 0) require(out, "out");
  size_t n = devices.size() < cap ? devices.size() : cap;
  std::vector<std::unique_ptr<dpm_device_s>> made;
  made.reserve(n);
  for (size_t i = 0; i < n; ++i) made.emplace_back(new dpm_device_s{devices[i]});
  for (size_t i = 0; i < n; ++i) out[i] = made[i].release();
  *count = devices.size();
}

int usm_kind_code(sycl::usm::alloc a) {
  switch (a) {
    case sycl::usm::alloc::device: return DPM_USM_DEVICE;
    case sycl::usm::alloc::shared: return DPM_USM_SHARED;
    case sycl::usm::alloc::host: return DPM_USM_HOST;
    default: return DPM_USM_UNKNOWN;
  }
}


// The OpenCL adapter of the unified runtime enqueues a marker for prefetch and advice:
// they are accepted and do nothing.
bool hints_are_no_ops(const sycl::queue &queue) { return queue.get_backend() == sycl::backend::opencl; }

}  // namespace

extern "C" {

uint32_t dpm_abi_version(void) { return DPM_ABI_VERSION; }

const char *dpm_last_error(void) { return t_error; }

int dpm_get_devices(dpm_device **out, size_t cap, size_t *count) {
  return guard([&] { write_devices(sycl::device::get_devices(), out, cap, count); });
}

void dpm_device_free(dpm_device *dev) {
  (void)guard([&] { delete dev; });
}

int dpm_device_get_info(const dpm_device *dev, dpm_device_info *out) {
  return guard([&] {
    require(dev, "device");
    require(out, "out");
    const sycl::device &d = dev->dev;
    dpm_device_info info{};
    try {
      info.name = dup_string(d.get_info<sycl::info::device::name>());
      info.vendor = dup_string(d.get_info<sycl::info::device::vendor>());
      info.backend = dup_string(backend_name(d.get_backend()));
      info.driver_version = dup_string(d.get_info<sycl::info::device::driver_version>());
      info.aspects = dup_string(aspect_names(d));
      info.device_type = device_type_code(d.get_info<sycl::info::device::device_type>());
      info.global_mem_size = d.get_info<sycl::info::device::global_mem_size>();
      info.max_mem_alloc_size = d.get_info<sycl::info::device::max_mem_alloc_size>();
      info.local_mem_size = d.get_info<sycl::info::device::local_mem_size>();
    } catch (...) {
      dpm_device_info_free(&info);
      throw;
    }
    *out = info;
  });
}

void dpm_device_info_free(dpm_device_info *info) {
  if (info == nullptr) return;
  char **fields[] = {&info->name, &info->vendor, &info->backend, &info->driver_version,
                     &info->aspects};
  for (char **f : fields) {
    std::free(*f);
    *f = nullptr;
  }
}

int dpm_device_equal(const dpm_device *a, const dpm_device *b, int *out) {
  return guard([&] {
    require(a, "device a");
    require(b, "device b");
    require(out, "out");
    *out = a->dev == b->dev ? 1 : 0;
  });
}

int dpm_device_default_context(const dpm_device *dev, dpm_context **out) {
  return guard([&] {
    require(dev, "device");
    require(out, "out");
    *out = new dpm_context_s{dev->dev.get_platform().khr_get_default_context()};
  });
}

int dpm_context_create(const dpm_device *dev, dpm_context **out) {
  return guard([&] {
    require(dev, "device");
    require(out, "out");
    // Errors of queues made on this context go to each queue's own handler; this one only
    // keeps SYCL's default handler (print + std::terminate) away.
    sycl::async_handler ignore = [](sycl::exception_list) {};
    *out = new dpm_context_s{sycl::context(dev->dev, ignore)};
  });
}

void dpm_context_free(dpm_context *ctx) {
  (void)guard([&] { delete ctx; });
}

int dpm_context_equal(const dpm_context *a, const dpm_context *b, int *out) {
  return guard([&] {
    require(a, "context a");
    require(b, "context b");
    require(out, "out");
    *out = a->ctx == b->ctx ? 1 : 0;
  });
}

int dpm_context_get_devices(const dpm_context *ctx, dpm_device **out, size_t cap, size_t *count) {
  return guard([&] {
    require(ctx, "context");
    write_devices(ctx->ctx.get_devices(), out, cap, count);
  });
}

int dpm_free(const dpm_context *ctx, void *ptr) {
  return guard([&] {
    require(ctx, "context");
    if (ptr != nullptr) sycl::free(ptr, ctx->ctx);
  });
}

int dpm_pointer_type(const dpm_context *ctx, const void *ptr, int *out) {
  return guard([&] {
    require(ctx, "context");
    require(out, "out");
    *out = usm_kind_code(sycl::get_pointer_type(ptr, ctx->ctx));
  });
}

int dpm_pointer_device(const dpm_context *ctx, const void *ptr, dpm_device **out) {
  return guard([&] {
    require(ctx, "context");
    require(out, "out");
    *out = new dpm_device_s{sycl::get_pointer_device(ptr, ctx->ctx)};
  });
}

int dpm_queue_create(const dpm_context *ctx, const dpm_device *dev, dpm_queue **out) {
  return dpm_queue_create_with(ctx, dev, 0, out);
}

int dpm_queue_create_with(const dpm_context *ctx, const dpm_device *dev, int properties, dpm_queue **out) {
  return guard([&] {
    require(ctx, "context");
    require(dev, "device");
    require(out, "out");
    if ((properties & ~(DPM_QUEUE_IN_ORDER | DPM_QUEUE_ENABLE_PROFILING)) != 0) {
      fail(DPM_ERR_ARG, "unknown queue properties " + std::to_string(properties));
    }
    auto errors = std::make_shared<AsyncErrors>();
    sycl::async_handler handler = [errors](sycl::exception_list list) {
      for (auto &e : list) errors->push(e);
    };
    // Out-of-order by default, as dpctl's queues: every operation here waits on its own
    // event, and the runtime's in-order queues cost about twice as much per small copy.
    const bool in_order = (properties & DPM_QUEUE_IN_ORDER) != 0;
    const bool profiling = (properties & DPM_QUEUE_ENABLE_PROFILING) != 0;
    sycl::property_list props;
    if (in_order && profiling) {
      props = sycl::property_list{sycl::property::queue::in_order{}, sycl::property::queue::enable_profiling{}};
    } else if (in_order) {
      props = sycl::property_list{sycl::property::queue::in_order{}};
    } else if (profiling) {
      props = sycl::property_list{sycl::property::queue::enable_profiling{}};
    }
    sycl::queue q(ctx->ctx, dev->dev, handler, props);
    *out = new dpm_queue_s{errors, std::move(q), properties, ctx->ctx, dev->dev};
  });
}

void dpm_queue_free(dpm_queue *q) {
  (void)guard([&] { delete q; });
}

int dpm_malloc(const dpm_queue *q, int kind, size_t nbytes, size_t alignment, void **out) {
  return guard([&] {
    require(q, "queue");
    require(out, "out");
    const sycl::queue &queue = q->q;
    void *p = nullptr;
    const char *what = nullptr;
    switch (kind) {
      case DPM_USM_DEVICE:
        what = "device";
        p = alignment == 0 ? sycl::malloc_device(nbytes, queue)
                           : sycl::aligned_alloc_device(alignment, nbytes, queue);
        break;
      case DPM_USM_SHARED:
        what = "shared";
        p = alignment == 0 ? sycl::malloc_shared(nbytes, queue)
                           : sycl::aligned_alloc_shared(alignment, nbytes, queue);
        break;
      case DPM_USM_HOST:
        what = "host";
        p = alignment == 0 ? sycl::malloc_host(nbytes, queue)
                           : sycl::aligned_alloc_host(alignment, nbytes, queue);
        break;
      default:
        fail(DPM_ERR_ARG, "unknown USM kind " + std::to_string(kind));
    }
    if (p == nullptr) {
      std::string text = "the SYCL runtime could not allocate ";
      text += std::to_string(nbytes);
      text += " bytes of USM-";
      text += what;
      text += " memory";
      if (alignment != 0) text += " aligned to " + std::to_string(alignment) + " bytes";
      text += " on " + queue.get_device().get_info<sycl::info::device::name>();
      fail(DPM_ERR_ALLOC, text);
    }
    *out = p;
  });
}

int dpm_memcpy(dpm_queue *q, void *dst, const void *src, size_t nbytes) {
  return guard([&] {
    require(q, "queue");
    if (nbytes == 0) return;
    wait_and_report(q, q->q.memcpy(dst, src, nbytes));
  });
}

int dpm_memset(dpm_queue *q, void *dst, int value, size_t nbytes) {
  return guard([&] {
    require(q, "queue");
    if (nbytes == 0) return;
    wait_and_report(q, q->q.memset(dst, static_cast<unsigned char>(value), nbytes));
  });
}

int dpm_host_register(const dpm_context *ctx, void *ptr, size_t nbytes, int *registered) {
  return guard([&] {
    require(ctx, "context");
    require(registered, "registered");
    try {
      sycl::ext::oneapi::experimental::prepare_for_device_copy(ptr, nbytes, ctx->ctx);
    } catch (const sycl::exception &e) {
      // A backend without the feature (the OpenCL adapter) answers UNSUPPORTED_FEATURE,
      // which this runtime surfaces as errc::runtime with the unified runtime's name in
      // the text; later runtimes may use errc::feature_not_supported.
      const bool unsupported = e.code() == sycl::errc::feature_not_supported ||
                               std::strstr(e.what(), "UR_RESULT_ERROR_UNSUPPORTED_FEATURE") != nullptr;
      if (!unsupported) throw;
      *registered = 0;
      return;
    }
    *registered = 1;
  });
}

int dpm_host_unregister(const dpm_context *ctx, void *ptr) {
  return guard([&] {
    require(ctx, "context");
    sycl::ext::oneapi::experimental::release_from_device_copy(ptr, ctx->ctx);
  });
}

int dpm_prefetch(dpm_queue *q, const void *ptr, size_t nbytes, int to_host, int *applied) {
  return guard([&] {
    require(q, "queue");
    require(applied, "applied");
    if (to_host != 0 || nbytes == 0) {
      *applied = 0;
      return;
    }
    wait_and_report(q, q->q.prefetch(ptr, nbytes));
    *applied = hints_are_no_ops(q->q) ? 0 : 1;
  });
}

int dpm_mem_advise(dpm_queue *q, const void *ptr, size_t nbytes, int advice, int *applied) {
  return guard([&] {
    require(q, "queue");
    require(applied, "applied");
    if (nbytes == 0) {
      *applied = 0;
      return;
    }
    wait_and_report(q, q->q.mem_advise(ptr, nbytes, advice));
    *applied = hints_are_no_ops(q->q) ? 0 : 1;
  });
}

int dpm_queue_wait(dpm_queue *q) {
  return guard([&] {
    require(q, "queue");
    q->q.wait_and_throw();
    q->errors->rethrow_first();
  });
}

}  // extern "C"
