// program.cpp: programs, kernels, submissions and events of dpctl_memory_shim.h.
//
// Programs: built by the OpenCL runtime under the device's SYCL backend, through SYCL's
// interop with OpenCL (the native cl_context and cl_device_id of the SYCL objects), with
// the OpenCL library dlopen'ed at the first program (the shim links libsycl only).
// Kernels: sycl::make_kernel over the cl_kernel, submitted with handler::set_arg and
// parallel_for(range, kernel), which host-only SYCL (g++, no -fsycl) compiles: no kernel
// is compiled here, the runtime's OpenCL compiler built it.
//
// Every extern "C" function body runs inside guard().
#include "shim_internal.hpp"

#include <sycl/backend/opencl.hpp>

#include <CL/cl.h>
#include <dlfcn.h>

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

// SYCL-source kernels (the kernel_compiler extension) with the 2026 runtime's API; the
// 2025 shim reports them unsupported (its PyPI runtime lacks the device library they link).
#if defined(SYCL_EXT_ONEAPI_KERNEL_COMPILER) && __LIBSYCL_MAJOR_VERSION >= 9
#define DPM_SYCL_SOURCE 1
#else
#define DPM_SYCL_SOURCE 0
#endif

using namespace dpm_detail;

// glibc 2.34 moved the dl* functions into libc under a new symbol version; the old one is
// still there. Binding the old one keeps the shim on the runtime's own glibc floor (2.28,
// checked by __test__/glibc.spec.mjs).
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");

struct dpm_program_s {
  sycl::context ctx;
  sycl::device dev;
  cl_program program;  // owned: released in dpm_program_free; nullptr for SYCL source
#if DPM_SYCL_SOURCE
  // SYCL source: the built bundle, and the names it was asked to register.
  std::optional<sycl::kernel_bundle<sycl::bundle_state::executable>> bundle{};
  std::vector<std::string> registered{};
#endif
};

struct dpm_kernel_s {
  sycl::kernel kernel;  // holds its own reference to the cl_kernel
  sycl::device dev;
  uint32_t num_args;
  std::vector<int> arg_kinds;  // DPM_ARG_*
  std::vector<std::string> arg_types;
};

struct dpm_event_s {
  sycl::event ev;
};

namespace {

// The OpenCL entry points the shim calls, from the ICD loader the SYCL runtime uses.
struct OpenCl {
  decltype(&clCreateProgramWithSource) create_program_with_source;
  decltype(&clCreateProgramWithIL) create_program_with_il;
  decltype(&clBuildProgram) build_program;
  decltype(&clGetProgramBuildInfo) get_program_build_info;
  decltype(&clGetProgramInfo) get_program_info;
  decltype(&clReleaseProgram) release_program;
  decltype(&clCreateKernel) create_kernel;
  decltype(&clReleaseKernel) release_kernel;
  decltype(&clGetKernelInfo) get_kernel_info;
  decltype(&clGetKernelArgInfo) get_kernel_arg_info;
  decltype(&clGetKernelWorkGroupInfo) get_kernel_work_group_info;
  decltype(&clReleaseContext) release_context;
  decltype(&clReleaseEvent) release_event;
  decltype(&clSetEventCallback) set_event_callback;
};

// The directory of the loaded libsycl (where the runtime's libOpenCL.so.1 lives too).
std::string sycl_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&sycl::device::get_devices), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// Loads the OpenCL library once: the one already in the process (the runtime's OpenCL
// adapter loaded it), else the one beside libsycl, else the system's. Never unloaded.
// The outcome of loading the OpenCL library: the table, or why not.
struct Loaded {
  const OpenCl *table = nullptr;
  std::string why;
};

Loaded load_opencl() {
  Loaded out;
  void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
  std::string dir = sycl_library_dir();
  if (lib == nullptr && !dir.empty()) lib = dlopen((dir + "/libOpenCL.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char *e = dlerror();
    out.why = std::string("could not load the OpenCL library libOpenCL.so.1: ") + (e ? e : "not found");
    return out;
  }
  auto table = std::make_unique<OpenCl>();
  bool ok = true;
  auto get = [&](auto &field, const char *name) {
    void *sym = dlsym(lib, name);
    if (sym == nullptr) {
      ok = false;
      out.why += std::string(out.why.empty() ? "the OpenCL library lacks " : ", ") + name;
    }
    field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(sym);
  };
  get(table->create_program_with_source, "clCreateProgramWithSource");
  get(table->create_program_with_il, "clCreateProgramWithIL");
  get(table->build_program, "clBuildProgram");
  get(table->get_program_build_info, "clGetProgramBuildInfo");
  get(table->get_program_info, "clGetProgramInfo");
  get(table->release_program, "clReleaseProgram");
  get(table->create_kernel, "clCreateKernel");
  get(table->release_kernel, "clReleaseKernel");
  get(table->get_kernel_info, "clGetKernelInfo");
  get(table->get_kernel_arg_info, "clGetKernelArgInfo");
  get(table->get_kernel_work_group_info, "clGetKernelWorkGroupInfo");
  get(table->release_context, "clReleaseContext");
  get(table->release_event, "clReleaseEvent");
  get(table->set_event_callback, "clSetEventCallback");
  if (ok) out.table = table.release();  // kept for the process, as the library
  return out;
}

// Loads the OpenCL library once (a function-local static: thread-safe, and no
// pthread_once): the one already in the process (the runtime's OpenCL adapter loaded
// it), else the one beside libsycl, else the system's. Never unloaded.
const OpenCl &opencl() {
  static const Loaded loaded = load_opencl();
  if (loaded.table == nullptr) fail(DPM_ERR_OPENCL, loaded.why);
  return *loaded.table;
}

void check_cl(cl_int code, const char *call) {
  if (code != CL_SUCCESS) fail(DPM_ERR_OPENCL, std::string(call) + " failed with OpenCL error " + std::to_string(code));
}

char *dup_text(const std::string &s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

std::string build_log(const OpenCl &cl, cl_program program, cl_device_id dev) {
  size_t size = 0;
  if (cl.get_program_build_info(program, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return {};
  std::string log(size, '\0');
  if (size > 0 && cl.get_program_build_info(program, dev, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) != CL_SUCCESS) {
    return {};
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

// The native cl_context of a SYCL context (get_native retains it: released here).
struct NativeContext {
  const OpenCl &cl;
  cl_context ctx;
  NativeContext(const OpenCl &c, const sycl::context &sc) : cl(c), ctx(sycl::get_native<sycl::backend::opencl>(sc)) {}
  ~NativeContext() { cl.release_context(ctx); }
  NativeContext(const NativeContext &) = delete;
  NativeContext &operator=(const NativeContext &) = delete;
};

std::vector<sycl::event> events_of(const dpm_event *const *deps, size_t ndeps) {
  if (ndeps > 0) require(deps, "deps");
  std::vector<sycl::event> events;
  events.reserve(ndeps);
  for (size_t i = 0; i < ndeps; ++i) {
    require(deps[i], "a dependency");
    events.push_back(deps[i]->ev);
  }
  return events;
}

int arg_kind(cl_kernel_arg_address_qualifier q) {
  switch (q) {
    case CL_KERNEL_ARG_ADDRESS_GLOBAL:
    case CL_KERNEL_ARG_ADDRESS_CONSTANT: return DPM_ARG_GLOBAL;
    case CL_KERNEL_ARG_ADDRESS_LOCAL: return DPM_ARG_LOCAL;
    case CL_KERNEL_ARG_ADDRESS_PRIVATE: return DPM_ARG_VALUE;
    default: return DPM_ARG_UNKNOWN;
  }
}

// r is in SYCL's order, as dpctl's submit takes it (dimension 0 the slowest): the runtime
// hands SYCL's last dimension to an OpenCL kernel as its dimension 0 (get_global_id(0)).
template <int D>
sycl::range<D> range_of(const uint64_t *r) {
  if constexpr (D == 1) return sycl::range<1>(r[0]);
  if constexpr (D == 2) return sycl::range<2>(r[0], r[1]);
  if constexpr (D == 3) return sycl::range<3>(r[0], r[1], r[2]);
}

template <int D>
void launch(sycl::handler &h, const sycl::kernel &k, const uint64_t *global, const uint64_t *local) {
  if (local == nullptr) {
    h.parallel_for(range_of<D>(global), k);
  } else {
    h.parallel_for(sycl::nd_range<D>(range_of<D>(global), range_of<D>(local)), k);
  }
}

void set_scalar(sycl::handler &h, int index, uint32_t size, uint64_t bits) {
  switch (size) {
    case 1: h.set_arg(index, static_cast<uint8_t>(bits)); break;
    case 2: h.set_arg(index, static_cast<uint16_t>(bits)); break;
    case 4: h.set_arg(index, static_cast<uint32_t>(bits)); break;
    case 8: h.set_arg(index, bits); break;
    default: fail(DPM_ERR_ARG, "a scalar argument of " + std::to_string(size) + " bytes (1, 2, 4 or 8 only)");
  }
}

// The work this process has in flight, waited for at exit. When exit() runs with
// commands still executing, the OpenCL CPU runtime's library destructor (dll_fini of
// libintelocl.so, run by the dynamic loader after every atexit handler) releases its
// queues under them and crashes: the process dies with SIGSEGV instead of its own status.
// So the first submission registers an atexit handler that waits for every event the
// shim handed out and for every completion callback to return. Registered then (after the
// SYCL and OpenCL runtimes made their own static objects), it runs before their
// destructors, which atexit runs in reverse order of registration. Made once and never
// destroyed, so it is there whenever the handler runs.
class InFlight {
 public:
  static InFlight &get() {
    static InFlight *const made = new InFlight();
    return *made;
  }

  // Records the event of a submission. Completed ones are dropped each time the list has
  // doubled, so it holds about what is in flight.
  void add(const sycl::event &ev) {
    std::lock_guard<std::mutex> hold(lock_);
    if (!hooked_) {
      hooked_ = std::atexit(&InFlight::at_exit) == 0;
    }
    if (events_.size() >= prune_at_) {
      using status = sycl::info::event_command_status;
      std::vector<sycl::event> kept;
      kept.reserve(events_.size() + 1);
      for (sycl::event &e : events_) {
        bool done = false;
        try {
          done = e.get_info<sycl::info::event::command_execution_status>() == status::complete;
        } catch (...) {
          done = false;  // kept: the exit wait decides
        }
        if (!done) kept.push_back(std::move(e));
      }
      events_.swap(kept);
      prune_at_ = std::max<size_t>(kMinPrune, 2 * events_.size());
    }
    events_.push_back(ev);
  }

  // A completion callback is pending (begin) or has returned (end). A pthread condition
  // variable: std::condition_variable::wait is of GLIBCXX_3.4.30, above the shim's floor.
  void callback_begin() {
    pthread_mutex_lock(&callbacks_lock_);
    ++callbacks_;
    pthread_mutex_unlock(&callbacks_lock_);
  }
  void callback_end() {
    pthread_mutex_lock(&callbacks_lock_);
    if (--callbacks_ == 0) pthread_cond_broadcast(&callbacks_idle_);
    pthread_mutex_unlock(&callbacks_lock_);
  }

  // Waits for every recorded event (and for what is recorded meanwhile), then for every
  // pending completion callback to return.
  void drain() noexcept {
    for (;;) {
      std::vector<sycl::event> batch;
      {
        std::lock_guard<std::mutex> hold(lock_);
        batch.swap(events_);
      }
      if (batch.empty()) break;
      for (sycl::event &e : batch) {
        try {
          e.wait();
        } catch (...) {
          // A failed command is finished too; its error was the submitter's to report.
        }
      }
    }
    pthread_mutex_lock(&callbacks_lock_);
    while (callbacks_ != 0) pthread_cond_wait(&callbacks_idle_, &callbacks_lock_);
    pthread_mutex_unlock(&callbacks_lock_);
  }

 private:
  static constexpr size_t kMinPrune = 64;
  static void at_exit() { get().drain(); }

  std::mutex lock_;  // guards events_, prune_at_ and hooked_
  std::vector<sycl::event> events_;
  size_t prune_at_ = kMinPrune;
  bool hooked_ = false;
  pthread_mutex_t callbacks_lock_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t callbacks_idle_ = PTHREAD_COND_INITIALIZER;
  size_t callbacks_ = 0;
};

dpm_event *new_event(sycl::event ev) {
  InFlight::get().add(ev);
  return new dpm_event_s{std::move(ev)};
}

struct Completion {
  void (*done)(void *, int);
  void *user;
};

void CL_CALLBACK on_cl_complete(cl_event, cl_int status, void *data) {
  Completion *c = static_cast<Completion *>(data);
  c->done(c->user, status == CL_COMPLETE ? 0 : static_cast<int>(status));
  delete c;
  InFlight::get().callback_end();
}

}  // namespace

extern "C" {

int dpm_queue_properties(const dpm_queue *q, int *out) {
  return guard([&] {
    require(q, "queue");
    require(out, "out");
    *out = q->properties;
  });
}

int dpm_queue_native(const dpm_queue *q, void **queue, void **context, void **device) {
  return guard([&] {
    require(q, "queue");
    require(queue, "queue out");
    require(context, "context out");
    require(device, "device out");
    *queue = const_cast<sycl::queue *>(&q->q);
    *context = const_cast<sycl::context *>(&q->ctx);
    *device = const_cast<sycl::device *>(&q->dev);
  });
}

int dpm_program_create(const dpm_context *ctx, const dpm_device *dev, int format, const void *data, size_t len,
                       const char *options, dpm_program **out, char **log) {
  if (log != nullptr) *log = nullptr;
  return guard([&] {
    require(ctx, "context");
    require(dev, "device");
    require(out, "out");
    if (len > 0) require(static_cast<const char *>(data), "data");
    if (dev->dev.get_backend() != sycl::backend::opencl) {
      fail(DPM_ERR_ARG, "programs are built for devices of the OpenCL backend only (this device's backend is not)");
    }
    const OpenCl &cl = opencl();
    NativeContext native(cl, ctx->ctx);
    cl_device_id device = sycl::get_native<sycl::backend::opencl>(dev->dev);
    cl_int err = CL_SUCCESS;
    cl_program program = nullptr;
    if (format == DPM_PROGRAM_OPENCL_C) {
      // A length of 0 tells OpenCL the text is NUL-terminated: an empty source is passed
      // as a string that is (its data pointer may dangle).
      const char *text = len > 0 ? static_cast<const char *>(data) : "";
      program = cl.create_program_with_source(native.ctx, 1, &text, &len, &err);
      check_cl(err, "clCreateProgramWithSource");
    } else if (format == DPM_PROGRAM_SPIRV) {
      program = cl.create_program_with_il(native.ctx, data, len, &err);
      if (err == CL_INVALID_VALUE || err == CL_INVALID_BINARY) {
        fail(DPM_ERR_BUILD, "the OpenCL runtime does not take these bytes as a SPIR-V module (clCreateProgramWithIL: " +
                                std::to_string(err) + ")");
      }
      check_cl(err, "clCreateProgramWithIL");
    } else {
      fail(DPM_ERR_ARG, "unknown program format " + std::to_string(format));
    }
    err = cl.build_program(program, 1, &device, options == nullptr ? "" : options, nullptr, nullptr);
    std::string text;
    try {
      text = build_log(cl, program, device);
    } catch (...) {
      cl.release_program(program);
      throw;
    }
    if (err != CL_SUCCESS) {
      cl.release_program(program);
      if (log != nullptr) *log = dup_text(text);
      if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS || err == CL_COMPILER_NOT_AVAILABLE) {
        fail(DPM_ERR_BUILD, "clBuildProgram failed with OpenCL error " + std::to_string(err));
      }
      check_cl(err, "clBuildProgram");
    }
    std::unique_ptr<dpm_program_s> made;
    try {
      made.reset(new dpm_program_s{ctx->ctx, dev->dev, program});
      if (log != nullptr) *log = dup_text(text);
    } catch (...) {
      if (!made) cl.release_program(program);
      throw;
    }
    *out = made.release();
  });
}

void dpm_program_free(dpm_program *p) {
  (void)guard([&] {
    if (p == nullptr) return;
    std::unique_ptr<dpm_program_s> owned(p);
    if (owned->program != nullptr) opencl().release_program(owned->program);
  });
}

int dpm_device_can_compile_sycl(const dpm_device *dev, int *out) {
  return guard([&] {
    require(dev, "device");
    require(out, "out");
#if DPM_SYCL_SOURCE
    sycl::device device = dev->dev;  // the query is not const
    *out = device.ext_oneapi_can_compile(sycl::ext::oneapi::experimental::source_language::sycl) ? 1 : 0;
#else
    *out = 0;
#endif
  });
}

int dpm_program_create_sycl(const dpm_context *ctx, const dpm_device *dev, const char *source, size_t len,
                            const char *const *header_names, const char *const *header_contents, size_t nheaders,
                            const char *const *registered, size_t nregistered, const char *const *options,
                            size_t noptions, dpm_program **out, char **log) {
  if (log != nullptr) *log = nullptr;
  return guard([&] {
    require(ctx, "context");
    require(dev, "device");
    require(out, "out");
    if (len > 0) require(source, "source");
    if (nheaders > 0) {
      require(header_names, "header_names");
      require(header_contents, "header_contents");
    }
    if (nregistered > 0) require(registered, "registered");
    if (noptions > 0) require(options, "options");
#if DPM_SYCL_SOURCE
    namespace syclex = sycl::ext::oneapi::experimental;
    sycl::device device = dev->dev;  // the query is not const
    if (!device.ext_oneapi_can_compile(syclex::source_language::sycl)) {
      fail(DPM_ERR_UNSUPPORTED, "the SYCL runtime cannot compile SYCL source for this device");
    }
    syclex::include_files includes;
    for (size_t i = 0; i < nheaders; ++i) {
      require(header_names[i], "a header name");
      require(header_contents[i], "a header's content");
      includes.add(header_names[i], header_contents[i]);
    }
    syclex::registered_names names;
    std::vector<std::string> kept;
    for (size_t i = 0; i < nregistered; ++i) {
      require(registered[i], "a registered name");
      names.names.emplace_back(registered[i]);
      kept.emplace_back(registered[i]);
    }
    std::vector<std::string> flags;
    for (size_t i = 0; i < noptions; ++i) {
      require(options[i], "an option");
      flags.emplace_back(options[i]);
    }
    const std::string text(len > 0 ? source : "", len);
    std::string compiler_log;
    std::optional<sycl::kernel_bundle<sycl::bundle_state::executable>> built;
    try {
      auto from_source = syclex::create_kernel_bundle_from_source(ctx->ctx, syclex::source_language::sycl, text,
                                                                  syclex::properties{includes});
      built = syclex::build(from_source, std::vector<sycl::device>{dev->dev},
                            syclex::properties{names, syclex::build_options{flags}, syclex::save_log{&compiler_log}});
    } catch (const sycl::exception &e) {
      // The compiler's diagnostics are the exception's text; a runtime fault is not a build's.
      if (e.code() != sycl::errc::build && e.code() != sycl::errc::invalid) throw;
      std::string message = e.what();
      if (log != nullptr) *log = dup_text(compiler_log.empty() ? message : compiler_log + "\n" + message);
      fail(DPM_ERR_BUILD, message);
    }
    auto made = std::make_unique<dpm_program_s>(dpm_program_s{ctx->ctx, dev->dev, nullptr, std::move(built), std::move(kept)});
    if (log != nullptr) *log = dup_text(compiler_log);
    *out = made.release();
#else
    (void)source;
    (void)len;
    (void)header_names;
    (void)header_contents;
    (void)registered;
    (void)options;
    (void)log;
    fail(DPM_ERR_UNSUPPORTED, "this shim's SYCL runtime (DPC++ 2025) does not compile SYCL source");
#endif
  });
}

int dpm_program_kernel_names(const dpm_program *p, char **out) {
  return guard([&] {
    require(p, "program");
    require(out, "out");
#if DPM_SYCL_SOURCE
    if (p->bundle) {
      // A bundle does not list its free-function kernels by name: the names it was asked
      // to register that it has.
      auto bundle = *p->bundle;  // a handle: its queries are not const
      std::string names;
      for (const std::string &name : p->registered) {
        if (!bundle.ext_oneapi_has_kernel(name)) continue;
        if (!names.empty()) names += ';';
        names += name;
      }
      *out = dup_text(names);
      return;
    }
#endif
    const OpenCl &cl = opencl();
    // A built program with no kernel (an empty source, only helper functions) has no
    // names to list: the CPU runtime answers CL_PROGRAM_KERNEL_NAMES with
    // CL_INVALID_PROGRAM_EXECUTABLE for it, but counts its kernels.
    size_t count = 0;
    check_cl(cl.get_program_info(p->program, CL_PROGRAM_NUM_KERNELS, sizeof count, &count, nullptr),
             "clGetProgramInfo");
    if (count == 0) {
      *out = dup_text("");
      return;
    }
    size_t size = 0;
    check_cl(cl.get_program_info(p->program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size), "clGetProgramInfo");
    std::string names(size, '\0');
    if (size > 0) {
      check_cl(cl.get_program_info(p->program, CL_PROGRAM_KERNEL_NAMES, size, names.data(), nullptr),
               "clGetProgramInfo");
    }
    while (!names.empty() && names.back() == '\0') names.pop_back();
    *out = dup_text(names);
  });
}

void dpm_string_free(char *s) { std::free(s); }

int dpm_kernel_create(const dpm_program *p, const char *name, dpm_kernel **out) {
  return guard([&] {
    require(p, "program");
    require(name, "name");
    require(out, "out");
#if DPM_SYCL_SOURCE
    if (p->bundle) {
      auto bundle = *p->bundle;  // a handle: its queries are not const
      if (!bundle.ext_oneapi_has_kernel(name)) {
        fail(DPM_ERR_NOT_FOUND, std::string("the program has no kernel named '") + name + "'");
      }
      sycl::kernel k = bundle.ext_oneapi_get_kernel(name);
      const uint32_t nargs = k.get_info<sycl::info::kernel::num_args>();
      // Free-function kernels carry no OpenCL argument information: kinds unknown.
      *out = new dpm_kernel_s{std::move(k), p->dev, nargs, std::vector<int>(nargs, DPM_ARG_UNKNOWN),
                              std::vector<std::string>(nargs)};
      return;
    }
#endif
    const OpenCl &cl = opencl();
    cl_int err = CL_SUCCESS;
    cl_kernel k = cl.create_kernel(p->program, name, &err);
    if (err == CL_INVALID_KERNEL_NAME) fail(DPM_ERR_NOT_FOUND, std::string("the program has no kernel named '") + name + "'");
    check_cl(err, "clCreateKernel");
    // make_kernel takes a reference of its own; ours goes at the end of this scope.
    struct Release {
      const OpenCl &cl;
      cl_kernel k;
      ~Release() { cl.release_kernel(k); }
    } release{cl, k};
    cl_uint nargs = 0;
    check_cl(cl.get_kernel_info(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr), "clGetKernelInfo");
    auto made = std::make_unique<dpm_kernel_s>(
        dpm_kernel_s{sycl::make_kernel<sycl::backend::opencl>(k, p->ctx), p->dev, nargs, {}, {}});
    for (cl_uint i = 0; i < nargs; ++i) {
      cl_kernel_arg_address_qualifier q = 0;
      int kind = DPM_ARG_UNKNOWN;
      std::string type;
      if (cl.get_kernel_arg_info(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q, nullptr) == CL_SUCCESS) {
        kind = arg_kind(q);
        size_t size = 0;
        if (cl.get_kernel_arg_info(k, i, CL_KERNEL_ARG_TYPE_NAME, 0, nullptr, &size) == CL_SUCCESS && size > 0) {
          type.assign(size, '\0');
          if (cl.get_kernel_arg_info(k, i, CL_KERNEL_ARG_TYPE_NAME, size, type.data(), nullptr) != CL_SUCCESS) type.clear();
          while (!type.empty() && type.back() == '\0') type.pop_back();
        }
      }
      made->arg_kinds.push_back(kind);
      made->arg_types.push_back(type);
    }
    *out = made.release();
  });
}

void dpm_kernel_free(dpm_kernel *k) {
  (void)guard([&] { delete k; });
}

int dpm_kernel_get_info(const dpm_kernel *k, dpm_kernel_info *out) {
  return guard([&] {
    require(k, "kernel");
    require(out, "out");
    namespace ks = sycl::info::kernel_device_specific;
    dpm_kernel_info info{};
    info.num_args = k->num_args;
    info.work_group_size = k->kernel.get_info<ks::work_group_size>(k->dev);
    info.preferred_work_group_size_multiple = k->kernel.get_info<ks::preferred_work_group_size_multiple>(k->dev);
    info.private_mem_size = k->kernel.get_info<ks::private_mem_size>(k->dev);
    if (k->dev.get_backend() != sycl::backend::opencl) {
      *out = info;
      return;
    }
    const OpenCl &cl = opencl();
    cl_kernel native = sycl::get_native<sycl::backend::opencl>(k->kernel);
    struct Release {
      const OpenCl &cl;
      cl_kernel k;
      ~Release() { cl.release_kernel(k); }
    } release{cl, native};
    cl_device_id device = sycl::get_native<sycl::backend::opencl>(k->dev);
    cl_ulong local = 0;
    if (cl.get_kernel_work_group_info(native, device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr) == CL_SUCCESS) {
      info.local_mem_size = local;
    }
    size_t reqd[3] = {0, 0, 0};
    if (cl.get_kernel_work_group_info(native, device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof reqd, reqd, nullptr) ==
        CL_SUCCESS) {
      for (int i = 0; i < 3; ++i) info.compile_work_group_size[i] = reqd[i];
    }
    *out = info;
  });
}

int dpm_kernel_arg_info(const dpm_kernel *k, uint32_t index, int *kind, char **type_name) {
  return guard([&] {
    require(k, "kernel");
    require(kind, "kind");
    require(type_name, "type_name");
    if (index >= k->num_args) fail(DPM_ERR_ARG, "argument index " + std::to_string(index) + " is out of range");
    char *type = dup_text(k->arg_types[index]);
    *kind = k->arg_kinds[index];
    *type_name = type;
  });
}

namespace {

// Queues k on sq after events, with args (checked against the kernel by the caller).
sycl::event submit_kernel(sycl::queue &sq, const dpm_kernel *k, const dpm_kernel_arg *args, size_t nargs,
                          uint32_t dims, const uint64_t *global, const uint64_t *local,
                          const std::vector<sycl::event> &events) {
  return sq.submit([&](sycl::handler &h) {
    if (!events.empty()) h.depends_on(events);
    for (size_t i = 0; i < nargs; ++i) {
      const dpm_kernel_arg &a = args[i];
      const int index = static_cast<int>(i);
      switch (a.kind) {
        case DPM_KARG_POINTER: h.set_arg(index, reinterpret_cast<void *>(static_cast<uintptr_t>(a.value))); break;
        case DPM_KARG_SCALAR: set_scalar(h, index, a.size, a.value); break;
        case DPM_KARG_LOCAL:
          h.set_arg(index, sycl::local_accessor<unsigned char, 1>(sycl::range<1>(a.value), h));
          break;
        default: fail(DPM_ERR_ARG, "unknown argument kind " + std::to_string(a.kind));
      }
    }
    switch (dims) {
      case 1: launch<1>(h, k->kernel, global, local); break;
      case 2: launch<2>(h, k->kernel, global, local); break;
      default: launch<3>(h, k->kernel, global, local); break;
    }
  });
}

void check_submission(const dpm_queue *q, const dpm_kernel *k, const dpm_kernel_arg *args, size_t nargs,
                      uint32_t dims, const uint64_t *global) {
  require(q, "queue");
  require(k, "kernel");
  require(global, "global");
  if (nargs > 0) require(args, "args");
  if (dims < 1 || dims > 3) fail(DPM_ERR_ARG, "a kernel runs over 1, 2 or 3 dimensions, not " + std::to_string(dims));
  if (nargs != k->num_args) {
    fail(DPM_ERR_ARG, "the kernel takes " + std::to_string(k->num_args) + " arguments, not " + std::to_string(nargs));
  }
}

// The queue dpm_submit_wait runs on: q's own when it is in order (a wait on all of it is a
// wait on the last submission) or records profiling, else q's lane.
sycl::queue &wait_queue(dpm_queue *q) {
  if ((q->properties & (DPM_QUEUE_IN_ORDER | DPM_QUEUE_ENABLE_PROFILING)) != 0) return q->q;
  std::lock_guard<std::mutex> hold(q->lane_mutex);
  if (!q->lane) {
    std::shared_ptr<AsyncErrors> errors = q->errors;
    sycl::async_handler handler = [errors](sycl::exception_list list) {
      for (auto &e : list) errors->push(e);
    };
    q->lane.emplace(q->ctx, q->dev, handler, sycl::property_list{sycl::property::queue::in_order{}});
  }
  return *q->lane;
}

}  // namespace

int dpm_submit(dpm_queue *q, const dpm_kernel *k, const dpm_kernel_arg *args, size_t nargs, uint32_t dims,
               const uint64_t *global, const uint64_t *local, const dpm_event *const *deps, size_t ndeps,
               dpm_event **out) {
  return guard([&] {
    check_submission(q, k, args, nargs, dims, global);
    require(out, "out");
    std::vector<sycl::event> events = events_of(deps, ndeps);
    *out = new_event(submit_kernel(q->q, k, args, nargs, dims, global, local, events));
  });
}

int dpm_submit_wait(dpm_queue *q, const dpm_kernel *k, const dpm_kernel_arg *args, size_t nargs, uint32_t dims,
                    const uint64_t *global, const uint64_t *local) {
  return guard([&] {
    check_submission(q, k, args, nargs, dims, global);
    sycl::queue &sq = wait_queue(q);
    submit_kernel(sq, k, args, nargs, dims, global, local, {});
    wait_and_report(q, sq);
  });
}

int dpm_memcpy_async(dpm_queue *q, void *dst, const void *src, size_t nbytes, const dpm_event *const *deps,
                     size_t ndeps, dpm_event **out) {
  return guard([&] {
    require(q, "queue");
    require(out, "out");
    *out = new_event(q->q.memcpy(dst, src, nbytes, events_of(deps, ndeps)));
  });
}

int dpm_fill_async(dpm_queue *q, void *dst, const void *pattern, size_t pattern_size, size_t count,
                   const dpm_event *const *deps, size_t ndeps, dpm_event **out) {
  return guard([&] {
    require(q, "queue");
    require(out, "out");
    require(static_cast<const char *>(pattern), "pattern");
    std::vector<sycl::event> events = events_of(deps, ndeps);
    sycl::event ev;
    switch (pattern_size) {
      case 1: ev = q->q.memset(dst, *static_cast<const unsigned char *>(pattern), count, events); break;
      case 2: ev = q->q.fill(dst, *static_cast<const uint16_t *>(pattern), count, events); break;
      case 4: ev = q->q.fill(dst, *static_cast<const uint32_t *>(pattern), count, events); break;
      case 8: ev = q->q.fill(dst, *static_cast<const uint64_t *>(pattern), count, events); break;
      case 16: {
        struct Sixteen {
          uint64_t lo, hi;
        } value;
        std::memcpy(&value, pattern, sizeof value);
        ev = q->q.fill(dst, value, count, events);
        break;
      }
      default: fail(DPM_ERR_ARG, "a fill pattern of " + std::to_string(pattern_size) + " bytes (1, 2, 4, 8 or 16 only)");
    }
    *out = new_event(std::move(ev));
  });
}

int dpm_barrier(dpm_queue *q, const dpm_event *const *deps, size_t ndeps, dpm_event **out) {
  return guard([&] {
    require(q, "queue");
    require(out, "out");
    std::vector<sycl::event> events = events_of(deps, ndeps);
    *out = new_event(events.empty() ? q->q.ext_oneapi_submit_barrier() : q->q.ext_oneapi_submit_barrier(events));
  });
}

int dpm_event_on_complete(const dpm_event *e, void (*done)(void *user, int status), void *user) {
  return guard([&] {
    require(e, "event");
    if (done == nullptr) fail(DPM_ERR_ARG, "done is NULL");
    const OpenCl &cl = opencl();
    std::vector<cl_event> natives;
    try {
      natives = sycl::get_native<sycl::backend::opencl>(e->ev);
    } catch (const sycl::exception &) {
      natives.clear();  // an event with no OpenCL event under it (done on the host)
    }
    if (natives.empty()) {
      using status = sycl::info::event_command_status;
      if (e->ev.get_info<sycl::info::event::command_execution_status>() == status::complete) {
        done(user, 0);
        return;
      }
      // Rare: nothing to attach a callback to. A thread of its own waits for it.
      sycl::event ev = e->ev;
      InFlight::get().callback_begin();
      try {
        std::thread([ev, done, user]() mutable {
          int result = 0;
          try {
            ev.wait_and_throw();
          } catch (...) {
            result = -1;
          }
          done(user, result);
          InFlight::get().callback_end();
        }).detach();
      } catch (...) {
        InFlight::get().callback_end();
        throw;
      }
      return;
    }
    // The last native event completes last (an event of several commands lists them in order).
    for (size_t i = 0; i + 1 < natives.size(); ++i) cl.release_event(natives[i]);
    cl_event last = natives.back();
    auto *c = new Completion{done, user};
    InFlight::get().callback_begin();
    cl_int err = cl.set_event_callback(last, CL_COMPLETE, on_cl_complete, c);
    cl.release_event(last);  // get_native retained it; the runtime keeps it while a callback is pending
    if (err != CL_SUCCESS) {
      delete c;
      InFlight::get().callback_end();
      check_cl(err, "clSetEventCallback");
    }
  });
}

int dpm_event_wait(dpm_queue *q, const dpm_event *e) {
  return guard([&] {
    require(q, "queue");
    require(e, "event");
    sycl::event ev = e->ev;
    wait_and_report(q, ev);
  });
}

int dpm_event_status(const dpm_event *e, int *out) {
  return guard([&] {
    require(e, "event");
    require(out, "out");
    using status = sycl::info::event_command_status;
    switch (e->ev.get_info<sycl::info::event::command_execution_status>()) {
      case status::submitted: *out = 0; break;
      case status::running: *out = 1; break;
      default: *out = 2; break;
    }
  });
}

int dpm_event_profiling(const dpm_event *e, uint64_t *submit, uint64_t *start, uint64_t *end) {
  return guard([&] {
    require(e, "event");
    require(submit, "submit");
    require(start, "start");
    require(end, "end");
    namespace p = sycl::info::event_profiling;
    uint64_t s = e->ev.get_profiling_info<p::command_submit>();
    uint64_t b = e->ev.get_profiling_info<p::command_start>();
    uint64_t f = e->ev.get_profiling_info<p::command_end>();
    *submit = s;
    *start = b;
    *end = f;
  });
}

void dpm_event_free(dpm_event *e) {
  (void)guard([&] { delete e; });
}

}  // extern "C"
